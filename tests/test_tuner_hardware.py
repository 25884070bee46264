"""The hardware fingerprint: a stable id of the identity fields only, measured
fields cached per process and on disk, a describe() text, and no GPU fields without a GPU."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from rhuber.tuner import hardware, paths
from rhuber.tuner.hardware import Hardware, ProbeSizes

FAKE_LIMITS = {"memory_bandwidth_bytes_per_s": 2.5e10, "peak_flops_float64": 8.0e10,
               "peak_flops_float32": 1.6e11}
TINY = ProbeSizes(bandwidth_elements=1 << 14, gemm_n=32, repeats=1)
DEFAULT = ProbeSizes()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty disk cache (via the environment variable) and an empty process cache."""
    monkeypatch.setenv(hardware.CACHE_DIR_VARIABLE, str(tmp_path))
    monkeypatch.setattr(hardware, "_PROCESS_CACHE", {})
    return tmp_path


@pytest.fixture
def probe_calls(monkeypatch):
    """Replace the probes with a fake that counts its calls."""
    calls = []

    def fake(sizes=DEFAULT):
        calls.append(sizes)
        return dict(FAKE_LIMITS)

    monkeypatch.setattr(hardware, "measure_limits", fake)
    return calls


def test_identity_is_stable_across_calls():
    first, second = hardware.identify(), hardware.identify()
    assert first == second
    assert first.hardware_id == second.hardware_id
    assert len(first.hardware_id) == 16 and int(first.hardware_id, 16) >= 0
    assert hardware.fingerprint(measure=False).hardware_id == first.hardware_id


def test_identity_fields_describe_this_machine():
    hw = hardware.identify()
    assert hw.cpu_model and hw.machine
    assert 1 <= hw.physical_cores <= hw.logical_cores == hw.cores
    assert hw.simd in hardware.SIMD_LEVELS
    assert not hw.measured and hw.memory_bandwidth_bytes_per_s is None


def test_id_ignores_measured_fields_and_follows_identity_fields():
    hw = hardware.identify()
    measured = dataclasses.replace(hw, **FAKE_LIMITS)
    again = dataclasses.replace(hw, memory_bandwidth_bytes_per_s=1.0, peak_flops_float64=2.0,
                                peak_flops_float32=3.0)
    assert hw.hardware_id == measured.hardware_id == again.hardware_id
    assert dataclasses.replace(hw, cpu_model=hw.cpu_model + "x").hardware_id != hw.hardware_id
    assert dataclasses.replace(hw, gpu_name="Some GPU").hardware_id != hw.hardware_id
    assert dataclasses.replace(hw, blas_version="0.0.1").hardware_id != hw.hardware_id


def test_measure_fills_the_measured_fields_from_the_probes(cache, probe_calls):
    hw = hardware.fingerprint()
    assert hw.measured and probe_calls == [ProbeSizes()]
    assert hw.memory_bandwidth_bytes_per_s == FAKE_LIMITS["memory_bandwidth_bytes_per_s"]
    assert hw.peak_flops("float32") == FAKE_LIMITS["peak_flops_float32"]
    assert hw.hardware_id == hardware.identify().hardware_id


def test_process_cache_answers_without_the_disk(cache, probe_calls):
    hardware.fingerprint()
    for path in cache.iterdir():
        path.unlink()
    hw = hardware.fingerprint()
    assert len(probe_calls) == 1 and hw.measured


def test_disk_cache_round_trip(cache, probe_calls, monkeypatch):
    first = hardware.fingerprint()
    path = hardware.cache_path(first.hardware_id)
    document = json.loads(path.read_text())
    assert document["hardware_id"] == first.hardware_id
    assert document["measured"] == FAKE_LIMITS
    assert [p.name for p in cache.iterdir()] == [path.name]  # no temporary file left behind
    monkeypatch.setattr(hardware, "_PROCESS_CACHE", {})  # a new process
    second = hardware.fingerprint()
    assert len(probe_calls) == 1
    assert second == first


@pytest.mark.parametrize("content", [
    "{not json",
    "",
    '{"format": 1}',
    json.dumps({"format": 99, "hardware_id": "x", "probe": {}, "measured": FAKE_LIMITS}),
    "NEGATIVE",
    "NAN",
    "OTHER_ID",
])
def test_a_corrupt_cache_is_ignored_and_rewritten(cache, probe_calls, content):
    hw_id = hardware.identify().hardware_id
    path = hardware.cache_path(hw_id)
    good = {"format": hardware.CACHE_FORMAT, "hardware_id": hw_id,
            "probe": dataclasses.asdict(ProbeSizes()), "measured": dict(FAKE_LIMITS)}
    if content == "NEGATIVE":
        good["measured"]["peak_flops_float64"] = -1.0
        content = json.dumps(good)
    elif content == "NAN":
        good["measured"]["memory_bandwidth_bytes_per_s"] = float("nan")
        content = json.dumps(good)
    elif content == "OTHER_ID":
        good["hardware_id"] = "0" * 16
        content = json.dumps(good)
    path.write_text(content)
    hw = hardware.fingerprint()
    assert len(probe_calls) == 1 and hw.measured
    assert json.loads(path.read_text())["measured"] == FAKE_LIMITS


def test_other_probe_sizes_and_refresh_measure_again(cache, probe_calls):
    hardware.fingerprint()
    hardware.fingerprint(sizes=TINY)
    assert probe_calls == [ProbeSizes(), TINY]
    hardware.fingerprint(refresh=True)
    assert len(probe_calls) == 3


def test_an_unwritable_cache_is_not_fatal(tmp_path, probe_calls, monkeypatch):
    monkeypatch.setattr(hardware, "_PROCESS_CACHE", {})
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    hw = hardware.fingerprint(directory=blocker / "cache")
    assert hw.measured


def test_real_probes_give_positive_finite_figures(cache):
    hw = hardware.fingerprint(sizes=TINY)
    for value in (hw.memory_bandwidth_bytes_per_s, hw.peak_flops_float64,
                  hw.peak_flops_float32):
        assert np.isfinite(value) and value > 0
    assert hardware.cache_path(hw.hardware_id).exists()


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(hardware.CACHE_DIR_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert hardware.cache_dir() == tmp_path / "rhuber"
    monkeypatch.setenv(hardware.CACHE_DIR_VARIABLE, str(tmp_path / "mine"))
    assert hardware.cache_dir() == tmp_path / "mine"
    monkeypatch.delenv(hardware.CACHE_DIR_VARIABLE)
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert hardware.cache_dir() == tmp_path / "home" / ".cache" / "rhuber"


@pytest.mark.parametrize("variable", ["RHUBER_CACHE_DIR", "XDG_CACHE_HOME", "HOME"])
def test_whether_local_models_exist_is_read_where_they_would_be(monkeypatch, tmp_path, variable):
    """paths.any_local_models (the string check every first auto stream makes) answers for the
    directory paths.local_models_root names, wherever the environment puts it."""
    for name in ("RHUBER_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, str(tmp_path))
    assert not paths.any_local_models() and not paths.local_models_root().exists()
    paths.local_models_root().mkdir(parents=True)
    assert paths.any_local_models()
    assert paths.local_models_root().is_relative_to(tmp_path)


def test_gpu_fields_are_none_without_a_gpu(monkeypatch):
    monkeypatch.setattr(hardware, "_cuda_driver", lambda: None)
    assert hardware.gpu_info() == {}
    hw = hardware.identify()
    assert not hw.has_gpu
    gpu = {f.name: getattr(hw, f.name) for f in dataclasses.fields(hw)
           if f.name.startswith("gpu_")}
    assert set(gpu) >= {"gpu_name", "gpu_sms", "gpu_memory_bytes", "gpu_bandwidth_bytes_per_s",
                        "gpu_l2_bytes", "gpu_compute_capability", "gpu_driver", "gpu_runtime"}
    assert all(value is None for value in gpu.values())
    assert "gpu              none" in hardware.describe(hw)


def test_describe_names_every_field():
    hw = dataclasses.replace(hardware.identify(), **FAKE_LIMITS)
    text = hardware.describe(hw)
    for needle in (hw.hardware_id, hw.cpu_model, "logical", "physical", "L1d", "L2", "L3",
                   f"simd             {hw.simd}", "blas (engine)", "blas (numpy)",
                   "25 GB/s (measured)", "float64 80 Gflop/s", "float32 160 Gflop/s", "gpu"):
        assert needle in text, needle
    assert "not measured" in hardware.describe(hardware.identify())

    gpu = dataclasses.replace(hw, gpu_name="NVIDIA H200", gpu_count=1, gpu_sms=132,
                              gpu_memory_bytes=141 << 30, gpu_l2_bytes=60 << 20,
                              gpu_compute_capability="9.0", gpu_bandwidth_bytes_per_s=4.8e12,
                              gpu_driver="13.0", gpu_runtime="13.0")
    text = hardware.describe(gpu)
    for needle in ("NVIDIA H200", "132 SMs", "141 GiB", "L2 60 MiB", "compute capability 9.0",
                   "4800 GB/s (theoretical)", "driver 13.0", "runtime 13.0"):
        assert needle in text, needle


def test_as_dict_round_trips_through_json():
    hw = dataclasses.replace(hardware.identify(), **FAKE_LIMITS)
    data = json.loads(json.dumps(hw.as_dict()))
    assert data["hardware_id"] == hw.hardware_id
    assert Hardware.from_dict(data) == hw
    with pytest.raises(ValueError, match="unknown hardware fields"):
        Hardware.from_dict({**data, "warp_drive": 1})


@pytest.mark.parametrize(("flags", "level"), [
    ({"sse2", "sse4_2", "avx", "avx2", "avx512f"}, "avx512f"),
    ({"sse2", "sse4_2", "avx", "avx2", "fma"}, "avx2"),
    ({"sse2", "sse4_2"}, "sse4_2"),
    ({"fp", "asimd"}, "asimd"),
    ({"neon"}, "asimd"),
    (set(), "none"),
])
def test_simd_level_is_the_best_flag(flags, level):
    assert hardware.simd_level(flags) == level


def test_cache_sizes_parse_sysfs_units():
    assert hardware._parse_size("48K") == 48 << 10
    assert hardware._parse_size("2M\n") == 2 << 20
    assert hardware._parse_size("junk") is None
    sizes = hardware.cache_sizes()
    assert set(sizes) == {"l1d_bytes", "l2_bytes", "l3_bytes"}
    assert all(v is None or v > 0 for v in sizes.values())


def test_plans_for_reads_the_fingerprint_cores():
    from rhuber.engines.plans import plans_for
    from rhuber.engines.workload import Workload

    hw = dataclasses.replace(hardware.identify(), logical_cores=1, physical_cores=1)
    plans = plans_for(Workload(rows=1024, features=8), hw)
    assert all(p.threads in (None, 1) for p in plans)


#: CUdevice_attribute code → value: SMs, memory clock (kHz), bus width (bits), L2, CC 9.0.
H200_ATTRIBUTES = {16: 132, 36: 2_619_000, 37: 6144, 38: 60 << 20, 75: 9, 76: 0}


class FakeDriver:
    """The few CUDA driver entry points gpu_info calls, answering like an H200 would."""

    def cuInit(self, flags):
        return 0

    def cuDeviceGetCount(self, count):
        count._obj.value = 1
        return 0

    def cuDeviceGet(self, dev, ordinal):
        dev._obj.value = ordinal
        return 0

    def cuDeviceGetAttribute(self, value, code, dev):
        value._obj.value = H200_ATTRIBUTES.get(code, 0)
        return 0

    def cuDeviceGetName(self, buffer, size, dev):
        buffer.value = b"NVIDIA H200"
        return 0

    def cuDeviceTotalMem_v2(self, memory, dev):
        memory._obj.value = 150_000_000_000
        return 0

    def cuDriverGetVersion(self, version):
        version._obj.value = 13000
        return 0


def test_gpu_fields_from_the_driver_api(monkeypatch):
    monkeypatch.setattr(hardware, "_cuda_driver", FakeDriver)
    monkeypatch.setattr(hardware, "_cuda_runtime_version", lambda: "12.8")
    info = hardware.gpu_info()
    assert info == {
        "gpu_name": "NVIDIA H200", "gpu_count": 1, "gpu_sms": 132,
        "gpu_memory_bytes": 150_000_000_000, "gpu_l2_bytes": 60 << 20,
        "gpu_compute_capability": "9.0",
        "gpu_bandwidth_bytes_per_s": 2.0 * 2_619_000e3 * 6144 / 8,
        "gpu_driver": "13.0", "gpu_runtime": "12.8",
    }
    hw = hardware.identify()
    assert hw.has_gpu and hw.gpu_sms == 132
    assert hw.hardware_id != dataclasses.replace(hw, **{k: None for k in info}).hardware_id
