"""The hardware fingerprint: what a tuner measurement was taken on (bricks-and-tuner.md, "Tuner").

Identity fields — CPU model, cores, caches, SIMD level, the BLAS libraries, the GPU — are read from
the operating system, threadpoolctl and the CUDA driver; they name the machine, and
``hardware_id`` is a short hash of them alone. Measured fields — memory bandwidth and GEMM peak,
from the probes of :mod:`.probes` — vary from run to run, so they never enter the id; they are
measured once per machine and cached, per process and on disk (``cache_dir()``).
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import hashlib
import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import _native
from .._atomic import atomic_write
from ..errors import EngineNotAvailableError
from .paths import CACHE_DIR_VARIABLE as CACHE_DIR_VARIABLE  # re-exported: read here too
from .paths import cache_dir

#: Bumped when an identity field is added, removed or changes meaning: it enters the hash, so
#: fingerprints of different versions never share an id.
FINGERPRINT_VERSION = 1

#: The disk cache's format; a file of another format is ignored and rewritten.
CACHE_FORMAT = 1


#: SIMD levels from the least to the most capable; ``simd`` is the best one the CPU flags name.
SIMD_LEVELS = ("none", "sse2", "sse4_2", "avx", "avx2", "avx512f", "asimd", "sve")

_MEASURED = ("memory_bandwidth_bytes_per_s", "peak_flops_float64", "peak_flops_float32")


@dataclass(frozen=True)
class ProbeSizes:
    """The sizes of the bandwidth and GEMM probes (:func:`.probes.measure_machine_limits`).

    The default triad arrays are 256 MiB each (float64), larger than any last-level cache this
    engine meets; the GEMM is 1024 × 1024, large enough for BLAS to reach its peak. Measuring takes
    a few seconds, once per machine (the result is cached).
    """

    bandwidth_elements: int = 1 << 25
    gemm_n: int = 1024
    repeats: int = 3


@dataclass(frozen=True)
class Hardware:
    """One machine's fingerprint. Sizes in bytes, rates per second; ``None`` where unknown.

    Identity (hashed into ``hardware_id``): ``cpu_model``, ``machine``, ``logical_cores`` (the
    cores this process may use), ``physical_cores``, ``l1d_bytes``, ``l2_bytes``, ``l3_bytes``
    (cpu0's caches, per instance), ``simd``, the engine's BLAS (``blas_vendor``, ``blas_version``,
    ``blas_kernel``: threadpoolctl's internal API, version and architecture of the BLAS the
    native CPU engine loads), NumPy's BLAS (``numpy_blas_*``), and the first GPU (``gpu_*``:
    name, count, SMs, memory, L2, compute capability, theoretical bandwidth from the memory clock
    and bus width, driver and runtime versions), all ``None`` without one.

    Measured (not hashed): ``memory_bandwidth_bytes_per_s`` (STREAM triad, best over one core and
    all cores) and ``peak_flops_float64`` / ``peak_flops_float32`` (GEMM through NumPy's BLAS);
    ``None`` when the fingerprint was taken with ``measure=False``.
    """

    cpu_model: str
    machine: str
    logical_cores: int
    physical_cores: int
    l1d_bytes: int | None
    l2_bytes: int | None
    l3_bytes: int | None
    simd: str
    blas_vendor: str | None
    blas_version: str | None
    blas_kernel: str | None
    numpy_blas_vendor: str | None
    numpy_blas_version: str | None
    numpy_blas_kernel: str | None
    gpu_name: str | None = None
    gpu_count: int | None = None
    gpu_sms: int | None = None
    gpu_memory_bytes: int | None = None
    gpu_l2_bytes: int | None = None
    gpu_compute_capability: str | None = None
    gpu_bandwidth_bytes_per_s: float | None = None
    gpu_driver: str | None = None
    gpu_runtime: str | None = None
    memory_bandwidth_bytes_per_s: float | None = None
    peak_flops_float64: float | None = None
    peak_flops_float32: float | None = None

    def identity(self) -> dict[str, Any]:
        """The identity fields, the only input of ``hardware_id``."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name not in _MEASURED}

    @functools.cached_property
    def hardware_id(self) -> str:
        """A stable 16-hex-digit hash of the identity fields and ``FINGERPRINT_VERSION``;
        computed once per fingerprint (~40 µs, which every auto stream that looks up a trial's
        winner would pay otherwise)."""
        text = json.dumps({"version": FINGERPRINT_VERSION, **self.identity()}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def measured(self) -> bool:
        """Whether bandwidth and both GEMM peaks are known."""
        return all(getattr(self, name) is not None for name in _MEASURED)

    @property
    def cores(self) -> int:
        """The cores a plan's threads are bounded by (``logical_cores``; plans_for reads it)."""
        return self.logical_cores

    @property
    def has_gpu(self) -> bool:
        return self.gpu_name is not None

    def peak_flops(self, dtype: Any) -> float | None:
        """The measured GEMM peak for ``dtype`` (float32 or float64)."""
        return getattr(self, f"peak_flops_{np.dtype(dtype).name}")

    def as_dict(self) -> dict[str, Any]:
        """Every field and ``hardware_id``: JSON-ready, what the measurement store keeps."""
        return {"hardware_id": self.hardware_id, **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Hardware:
        """The inverse of :meth:`as_dict` (``hardware_id`` is recomputed, not trusted)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names - {"hardware_id"}
        if unknown:
            raise ValueError(f"unknown hardware fields {sorted(unknown)}; expected fields of "
                             f"FINGERPRINT_VERSION {FINGERPRINT_VERSION}")
        return cls(**{k: v for k, v in data.items() if k in names})


# --- identity ---------------------------------------------------------------------------------

def _usable_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:
        return list(range(os.cpu_count() or 1))


def cpuinfo() -> dict[str, str]:
    """The first processor's block of /proc/cpuinfo ({} where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if out:
                break
            continue
        key, _, value = line.partition(":")
        out.setdefault(key.strip(), value.strip())
    return out


def cpu_model(info: dict[str, str] | None = None) -> str:
    info = cpuinfo() if info is None else info
    return (info.get("model name") or info.get("Model") or info.get("Hardware")
            or platform.processor() or platform.machine() or "unknown")


def simd_level(flags: set[str]) -> str:
    """The most capable SIMD level among ``flags`` (``/proc/cpuinfo`` flags or Features)."""
    best = "none"
    for level in SIMD_LEVELS[1:]:
        if level in flags:
            best = level
    if best == "none" and "neon" in flags:  # 32-bit ARM names Advanced SIMD "neon"
        best = "asimd"
    return best


def _physical_cores(cpus: list[int]) -> int:
    cores = set()
    for cpu in cpus:
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add(((topology / "physical_package_id").read_text().strip(),
                       (topology / "core_id").read_text().strip()))
        except OSError:
            return len(cpus)
    return len(cores) or len(cpus)


def _parse_size(text: str) -> int | None:
    text = text.strip().upper()
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    try:
        if text and text[-1] in units:
            return int(text[:-1]) * units[text[-1]]
        return int(text)
    except ValueError:
        return None


def cache_sizes(cpu: int = 0) -> dict[str, int | None]:
    """L1 data, L2 and L3 sizes of ``cpu`` from sysfs (per instance; ``None`` where absent)."""
    out: dict[str, int | None] = {"l1d_bytes": None, "l2_bytes": None, "l3_bytes": None}
    root = Path(f"/sys/devices/system/cpu/cpu{cpu}/cache")
    for index in sorted(root.glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = _parse_size((index / "size").read_text())
        except OSError:
            continue
        key = {("1", "Data"): "l1d_bytes", ("2", "Unified"): "l2_bytes",
               ("3", "Unified"): "l3_bytes"}.get((level, kind))
        if key is not None:
            out[key] = size
    return out


def _blas_entry(info: dict[str, Any] | None) -> tuple[str | None, str | None, str | None]:
    if info is None:
        return None, None, None
    return info.get("internal_api"), info.get("version"), info.get("architecture")


def blas_libraries() -> dict[str, dict[str, Any] | None]:
    """The engine's and NumPy's BLAS, as threadpoolctl describes them.

    The native CPU engine is imported first (it loads its own BLAS). NumPy's is the one inside
    NumPy's installation. The engine's is the one whose version its ``blas_info()`` names, else
    the first that no wheel bundles (SciPy and others bundle their own, and whether they are
    loaded must not change the fingerprint).
    """
    from threadpoolctl import threadpool_info

    engine_version = None
    try:
        provider = str(_native.load("native_cpu").blas_info().get("provider", "")).split()
        engine_version = provider[1] if len(provider) > 1 else None
    except (EngineNotAvailableError, AttributeError):
        pass
    numpy_root = Path(np.__file__).resolve().parent
    numpy_dirs = (numpy_root, numpy_root.parent / "numpy.libs")
    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]

    def path(info: dict[str, Any]) -> Path:
        return Path(info.get("filepath") or "").resolve()

    numpy_blas = next((i for i in blas if any(path(i).is_relative_to(d) for d in numpy_dirs)),
                      None)
    others = [i for i in blas if i is not numpy_blas]
    engine = (next((i for i in others if engine_version and i.get("version") == engine_version),
                   None)
              or next((i for i in others if not path(i).parent.name.endswith(".libs")), None))
    return {"engine": engine, "numpy": numpy_blas}


def _version_text(code: int) -> str:
    """CUDA's ``1000 · major + 10 · minor`` as ``"major.minor"``."""
    return f"{code // 1000}.{(code % 1000) // 10}"


def _cuda_runtime_version() -> str | None:
    try:
        import cupy  # type: ignore[import-not-found]

        return _version_text(int(cupy.cuda.runtime.runtimeGetVersion()))
    except Exception:  # no CuPy or no runtime: try the shared library below
        pass
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int(0)
        if lib.cudaRuntimeGetVersion(ctypes.byref(version)) == 0 and version.value:
            return _version_text(version.value)
    return None


def _cuda_driver() -> Any:
    """The CUDA driver library, or None where there is no driver."""
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


def gpu_info(device: int = 0) -> dict[str, Any]:
    """The GPU's identity through the CUDA driver API (``libcuda``); ``{}`` without a GPU.

    The driver API is read directly so the fingerprint needs neither CuPy nor the CUDA engine;
    it creates no context. The bandwidth is the theoretical one, ``2 · memory clock · bus width``.
    """
    lib = _cuda_driver()
    if lib is None:
        return {}
    count = ctypes.c_int(0)
    if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
        return {}
    dev = ctypes.c_int(0)
    if lib.cuDeviceGet(ctypes.byref(dev), device) != 0:
        return {}

    def attribute(code: int) -> int | None:
        value = ctypes.c_int(0)
        ok = lib.cuDeviceGetAttribute(ctypes.byref(value), code, dev) == 0
        return value.value if ok and value.value > 0 else None

    name = ctypes.create_string_buffer(256)
    memory = ctypes.c_size_t(0)
    driver = ctypes.c_int(0)
    lib.cuDeviceGetName(name, len(name), dev)
    lib.cuDeviceTotalMem_v2(ctypes.byref(memory), dev)
    lib.cuDriverGetVersion(ctypes.byref(driver))
    # CUdevice_attribute codes (cuda.h): SMs 16, memory clock kHz 36, bus bits 37, L2 38,
    # compute capability 75 / 76.
    clock_khz, bus_bits = attribute(36), attribute(37)
    major, minor = attribute(75), attribute(76)
    return {
        "gpu_name": name.value.decode(errors="replace") or None,
        "gpu_count": count.value,
        "gpu_sms": attribute(16),
        "gpu_memory_bytes": memory.value or None,
        "gpu_l2_bytes": attribute(38),
        "gpu_compute_capability": None if major is None else f"{major}.{minor or 0}",
        "gpu_bandwidth_bytes_per_s": (2.0 * clock_khz * 1e3 * bus_bits / 8
                                      if clock_khz and bus_bits else None),
        "gpu_driver": _version_text(driver.value) if driver.value else None,
        "gpu_runtime": _cuda_runtime_version(),
    }


def identify() -> Hardware:
    """The identity fields of this machine; the measured ones ``None``."""
    info = cpuinfo()
    cpus = _usable_cpus()
    flags = set((info.get("flags") or info.get("Features") or "").split())
    blas = blas_libraries()
    engine, numpy_blas = _blas_entry(blas["engine"]), _blas_entry(blas["numpy"])
    return Hardware(
        cpu_model=cpu_model(info),
        machine=platform.machine(),
        logical_cores=len(cpus),
        physical_cores=_physical_cores(cpus),
        **cache_sizes(cpus[0] if cpus else 0),
        simd=simd_level(flags),
        blas_vendor=engine[0], blas_version=engine[1], blas_kernel=engine[2],
        numpy_blas_vendor=numpy_blas[0], numpy_blas_version=numpy_blas[1],
        numpy_blas_kernel=numpy_blas[2],
        **gpu_info(),
    )


#: This machine's identity as :func:`identified` last found it, in :func:`cache_dir`.
IDENTITY_FILE = "identity.json"


def _identity_key() -> str:
    """What the identity depends on that can change without the hardware changing, read
    cheaply: this boot (a GPU or a BLAS installed since needs a reboot or a new environment),
    the interpreter, NumPy and the native engine's file."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = "no boot id"

    try:
        origin = str(_native.cpu_library_path())
        engine = f"{origin}:{os.stat(origin).st_mtime_ns}"
    except (ImportError, ValueError, OSError):
        engine = "no engine"
    return "|".join((boot, os.path.realpath(sys.executable), np.__version__, engine,
                     str(len(_usable_cpus()))))


def peek_identity() -> Hardware | None:
    """The identity :func:`identified` stored for this boot and environment, or None — without
    identifying anything (a file read: ~0.2 ms)."""
    try:
        data = json.loads((cache_dir() / IDENTITY_FILE).read_text())
        if data.get("key") != _identity_key():
            return None
        return Hardware.from_dict(data["hardware"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def identified() -> Hardware:
    """:func:`identify`, kept for this boot and environment in :data:`IDENTITY_FILE`: the
    identity reads the BLAS libraries through threadpoolctl (~0.2 s), which every process that
    loads the advisor would pay again. A file that cannot be written is only a missed saving."""
    known = peek_identity()
    if known is not None:
        return known
    hw = identify()
    try:
        path = cache_dir() / IDENTITY_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as out:
            json.dump({"key": _identity_key(), "hardware": hw.as_dict()}, out, indent=1)
    except OSError:
        pass
    return hw


# --- measured fields and their cache ----------------------------------------------------------

_PROCESS_CACHE: dict[tuple[str, ProbeSizes], dict[str, float]] = {}


def cache_path(hardware_id: str, directory: Path | None = None) -> Path:
    return (cache_dir() if directory is None else Path(directory)) / f"hardware-{hardware_id}.json"


def _read_cache(path: Path, hardware_id: str, sizes: ProbeSizes) -> dict[str, float] | None:
    """The cached measured fields, or None when the file is absent, corrupt, of another format,
    for another machine or measured with other probe sizes."""
    try:
        data = json.loads(path.read_text())
        if (data["format"] != CACHE_FORMAT or data["hardware_id"] != hardware_id
                or data["probe"] != dataclasses.asdict(sizes)):
            return None
        values = {name: float(data["measured"][name]) for name in _MEASURED}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not all(np.isfinite(v) and v > 0 for v in values.values()):
        return None
    return values


def _write_cache(path: Path, hardware_id: str, sizes: ProbeSizes,
                 values: dict[str, float]) -> None:
    """Write atomically (a temporary file in the same directory, then a rename), so a reader
    never sees half a file; a cache that cannot be written is only a missed saving."""
    document = {"format": CACHE_FORMAT, "hardware_id": hardware_id,
                "probe": dataclasses.asdict(sizes), "measured": values,
                "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as out:
            json.dump(document, out, indent=1)
    except OSError:
        pass


def measure_limits(sizes: ProbeSizes = ProbeSizes()) -> dict[str, float]:
    """Run the probes: all-core memory bandwidth and GEMM peaks (the best over 1 and all cores)."""
    # The probes (threadpoolctl, a thread pool) load only to measure: a stream reading this
    # machine's identity for its rule does not need them.
    from . import probes

    limits = probes.measure_machine_limits(sizes.bandwidth_elements, sizes.gemm_n, sizes.repeats)
    return {
        "memory_bandwidth_bytes_per_s": float(limits["memory_bandwidth_bytes_per_s"]),
        "peak_flops_float64": float(limits["peak_flops_per_s"]["float64"]),
        "peak_flops_float32": float(limits["peak_flops_per_s"]["float32"]),
    }


def fingerprint(measure: bool = True, *, sizes: ProbeSizes = ProbeSizes(),
                directory: str | os.PathLike[str] | None = None,
                refresh: bool = False) -> Hardware:
    """This machine's fingerprint.

    Parameters
    ----------
    measure : bool, default=True
        Fill the measured fields: from this process's cache, else the disk cache, else by
        running the probes (a few seconds) and caching the result in both.
    sizes : ProbeSizes, optional
        The probe sizes; a cache entry measured with other sizes is not used.
    directory : path, optional
        The disk cache's directory; default :func:`cache_dir`.
    refresh : bool, default=False
        Measure again even if a cached value exists (and overwrite it).

    Returns
    -------
    Hardware
    """
    hw = identify()
    if not measure:
        return hw
    key = (hw.hardware_id, sizes)
    path = cache_path(hw.hardware_id, None if directory is None else Path(directory))
    values = None if refresh else _PROCESS_CACHE.get(key) or _read_cache(path, *key)
    if values is None:
        values = measure_limits(sizes)
        _write_cache(path, hw.hardware_id, sizes, values)
    _PROCESS_CACHE[key] = values
    return dataclasses.replace(hw, **values)


def cached_limits(hardware_id: str, sizes: ProbeSizes = ProbeSizes()) -> dict[str, float] | None:
    """The measured fields of machine ``hardware_id`` from this process's or the disk cache,
    never by probing (None when neither has them): for callers that must not spend seconds."""
    return _PROCESS_CACHE.get((hardware_id, sizes)) or _read_cache(cache_path(hardware_id),
                                                                   hardware_id, sizes)


# --- text -------------------------------------------------------------------------------------

def _bytes(n: float | None) -> str:
    if n is None:
        return "unknown"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{int(n)} B"


def _rate(n: float | None, unit: str, how: str = "measured") -> str:
    return "not measured" if n is None else f"{n / 1e9:.4g} G{unit} ({how})"


def describe(hw: Hardware) -> str:
    """A text block naming every field, for ``rhuber tune hardware``."""
    def blas(vendor: str | None, version: str | None, kernel: str | None) -> str:
        return "not found" if vendor is None else f"{vendor} {version} (kernel {kernel})"

    lines = [
        f"hardware_id      {hw.hardware_id}",
        f"cpu              {hw.cpu_model} ({hw.machine})",
        f"cores            {hw.logical_cores} logical, {hw.physical_cores} physical",
        f"caches           L1d {_bytes(hw.l1d_bytes)}, L2 {_bytes(hw.l2_bytes)}, "
        f"L3 {_bytes(hw.l3_bytes)}",
        f"simd             {hw.simd}",
        f"blas (engine)    {blas(hw.blas_vendor, hw.blas_version, hw.blas_kernel)}",
        f"blas (numpy)     "
        f"{blas(hw.numpy_blas_vendor, hw.numpy_blas_version, hw.numpy_blas_kernel)}",
        f"memory bandwidth {_rate(hw.memory_bandwidth_bytes_per_s, 'B/s')}",
        f"gemm peak        float64 {_rate(hw.peak_flops_float64, 'flop/s')}, "
        f"float32 {_rate(hw.peak_flops_float32, 'flop/s')}",
    ]
    if hw.has_gpu:
        lines += [
            f"gpu              {hw.gpu_name} (1 of {hw.gpu_count}), compute capability "
            f"{hw.gpu_compute_capability}",
            f"gpu resources    {hw.gpu_sms} SMs, memory {_bytes(hw.gpu_memory_bytes)}, "
            f"L2 {_bytes(hw.gpu_l2_bytes)}, bandwidth "
            f"{_rate(hw.gpu_bandwidth_bytes_per_s, 'B/s', 'theoretical')}",
            f"cuda             driver {hw.gpu_driver}, runtime {hw.gpu_runtime or 'not found'}",
        ]
    else:
        lines.append("gpu              none")
    return "\n".join(lines)
