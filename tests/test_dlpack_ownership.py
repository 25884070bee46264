"""DLPack ownership for the CUDA engine, on the CPU: capsules made here by producer objects that
count their deleter calls, so every path of rhuber.engines.dlpack (claim once, deleter
exactly once, each refusal) and of the engine wrapper around it runs without a GPU."""

from __future__ import annotations

import ctypes
import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from rhuber.core import Config, State
from rhuber.engines import dlpack as dl
from rhuber.engines.cuda import CudaEngine
from rhuber.engines.dlpack import DLPackError, claim, export, is_device_tensor

_api = ctypes.pythonapi
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", _api))
# The destructor gets the dying capsule as a raw pointer: no reference may be taken to it.
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))

_PRODUCERS: dict[int, Producer] = {}


@dl.DELETER
def _deleter(address):
    _PRODUCERS[address].deleter_calls += 1


@ctypes.PYFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule):
    # What CuPy and PyTorch do: an unclaimed capsule still owns the deleter call.
    if _raw_is_valid(capsule, b"dltensor"):
        _deleter(_raw_get_pointer(capsule, b"dltensor"))


class Producer:
    """A tensor exporting a legacy DLPack capsule, like CuPy or a PyTorch CUDA tensor. Its data
    pointer is host memory that nothing here reads: only the engine would."""

    def __init__(self, shape, *, code=dl.KDL_FLOAT, bits=64, device=(dl.KDL_CUDA, 0),
                 strides=None, byte_offset=0, with_stream=True):
        self.deleter_calls = 0
        self.streams: list = []
        self.device = device
        self._buffer = np.zeros(max(1, int(np.prod(shape))) + 8)
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        managed = dl.DLManagedTensor()
        t = managed.dl_tensor
        t.data = self._buffer.ctypes.data
        t.device = dl.DLDevice(*device)
        t.ndim = len(shape)
        t.dtype = dl.DLDataType(code, bits, 1)
        t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        t.strides = (None if self._strides is None
                     else ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64)))
        t.byte_offset = byte_offset
        managed.deleter = ctypes.cast(_deleter, ctypes.c_void_p).value
        self.managed = managed
        self.address = ctypes.addressof(managed)
        self.data = self._buffer.ctypes.data
        _PRODUCERS[self.address] = self
        if not with_stream:
            self.__dlpack__ = self._export_without_stream

    def capsule(self):
        return _capsule_new(self.address, b"dltensor",
                            ctypes.cast(_capsule_destructor, ctypes.c_void_p))

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, *, stream=None):
        self.streams.append(stream)
        return self.capsule()

    def _export_without_stream(self):
        return self.capsule()


def take(producer, name="X", *, device_id=0, ndims=(2,), dtype=None):
    return claim(producer.capsule(), name, device_id=device_id, ndims=ndims, dtype=dtype)


# --------------------------------------------------------------------------- claim and release


def test_an_unclaimed_capsule_is_deleted_by_its_producer_once():
    producer = Producer((4, 3))
    capsule = producer.capsule()
    del capsule
    assert producer.deleter_calls == 1


def test_claim_renames_the_capsule_and_release_calls_the_deleter_once():
    producer = Producer((4, 3))
    capsule = producer.capsule()
    tensor, info = claim(capsule, "X", device_id=0, ndims=(2,), dtype=None)
    assert _is_valid(capsule, b"used_dltensor") and not _is_valid(capsule, b"dltensor")
    assert (info.shape, info.dtype, info.device_id, info.data) == ((4, 3), "float64", 0,
                                                                    producer.data)
    del capsule  # the producer's destructor sees a claimed capsule and leaves the deleter to us
    assert producer.deleter_calls == 0
    tensor.release()
    tensor.release()
    assert producer.deleter_calls == 1 and tensor.released


def test_context_manager_releases_once_even_on_error():
    producer = Producer((2, 2))
    tensor, _ = take(producer)
    with pytest.raises(RuntimeError), tensor:
        raise RuntimeError("engine failed")
    assert producer.deleter_calls == 1


def test_a_capsule_is_claimed_only_once():
    producer = Producer((2, 2))
    capsule = producer.capsule()
    tensor, _ = claim(capsule, "X", device_id=0, ndims=(2,), dtype=None)
    with pytest.raises(DLPackError, match="already consumed"):
        claim(capsule, "X", device_id=0, ndims=(2,), dtype=None)
    assert producer.deleter_calls == 0
    tensor.release()
    assert producer.deleter_calls == 1


def test_a_forgotten_claim_is_released_when_collected():
    producer = Producer((2, 2))
    tensor, _ = take(producer)
    del tensor
    assert producer.deleter_calls == 1


def test_byte_offset_is_applied_to_the_data_address():
    producer = Producer((3,), byte_offset=16)
    tensor, info = take(producer, "y", ndims=(1,))
    assert info.data == producer.data + 16
    tensor.release()


@pytest.mark.parametrize(("shape", "strides"), [((4, 3), (3, 1)), ((1, 3), (99, 1)),
                                                ((4, 1), (1, 1)), ((4,), (1,))])
def test_compact_strides_are_accepted(shape, strides):
    producer = Producer(shape, strides=strides)
    tensor, _ = take(producer, ndims=(1, 2))
    tensor.release()
    assert producer.deleter_calls == 1


# ---------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("kwargs", "ndims", "dtype", "message"), [
    ({"shape": (4, 3), "strides": (1, 4)}, (2,), None, "X is not C-contiguous"),
    ({"shape": (4, 3), "strides": (6, 2)}, (2,), None, "X is not C-contiguous"),
    ({"shape": (4, 3), "code": 0, "bits": 64}, (2,), None, "X has dtype int64"),
    ({"shape": (4, 3), "bits": 16}, (2,), None, "X has dtype float16"),
    ({"shape": (4, 3), "bits": 32}, (2,), "float64", "X has dtype float32, but the computation"),
    ({"shape": (4, 3), "device": (dl.KDL_CUDA, 1)}, (2,), None, "X is on cuda:1"),
    ({"shape": (4, 3), "device": (dl.KDL_CPU, 0)}, (2,), None, "not in CUDA device memory"),
    ({"shape": (4, 3), "device": (13, 0)}, (2,), None, "not in CUDA device memory"),
    ({"shape": (4,)}, (2,), None, "X must have 2 dimension"),
])
def test_refusals_are_stable_and_still_call_the_deleter_once(kwargs, ndims, dtype, message):
    shape = kwargs.pop("shape")
    producer = Producer(shape, **kwargs)
    with pytest.raises(DLPackError, match=message):
        take(producer, ndims=ndims, dtype=dtype)
    assert producer.deleter_calls == 1


def test_refusals_say_nothing_is_converted():
    producer = Producer((4, 3), bits=32)
    with pytest.raises(DLPackError, match="never cast"):
        take(producer, dtype="float64")
    producer = Producer((4, 3), strides=(1, 4))
    with pytest.raises(DLPackError, match="never copies"):
        take(producer)


def test_a_non_capsule_is_refused():
    with pytest.raises(DLPackError, match="expected a DLPack capsule"):
        claim(object(), "X", device_id=0, ndims=(2,), dtype=None)


# ------------------------------------------------------------------------------------ export


def test_export_passes_the_engine_stream_to_dlpack():
    producer = Producer((2, 2))
    capsule = export(producer, "X", stream=0xC0FFEE)
    assert producer.streams == [0xC0FFEE]
    del capsule
    assert producer.deleter_calls == 1


def test_export_refuses_an_exporter_without_a_stream_parameter():
    producer = Producer((2, 2), with_stream=False)
    with pytest.raises(DLPackError, match="does not take a stream"):
        export(producer, "X", stream=7)


def test_only_cuda_tensors_count_as_device_tensors():
    assert is_device_tensor(Producer((2, 2)))
    assert not is_device_tensor(Producer((2, 2), device=(dl.KDL_CPU, 0)))
    assert not is_device_tensor(np.zeros((2, 2)))
    assert not is_device_tensor(None)


class _FakeTensorFlow:
    """Just enough of TensorFlow's eager API to watch the order of the export."""

    def __init__(self, *, eager=True, sync=True):
        self.calls: list[str] = []
        self.module = types.ModuleType("tensorflow")
        self.module.__version__ = "2.99-test"
        self.module.executing_eagerly = lambda: eager
        experimental = types.SimpleNamespace()
        if sync:
            experimental.sync_devices = lambda: self.calls.append("sync")
        self.module.test = types.SimpleNamespace(experimental=experimental)

        def to_dlpack(tensor):
            self.calls.append("export")
            return tensor.producer.capsule()

        self.module.experimental = types.SimpleNamespace(
            dlpack=types.SimpleNamespace(to_dlpack=to_dlpack))


def _tensorflow_tensor(producer):
    cls = type("EagerTensor", (), {"__module__": "tensorflow.python.framework.ops"})
    tensor = cls()
    tensor.producer = producer
    tensor.device = "/job:localhost/replica:0/task:0/device:GPU:0"
    return tensor


def test_tensorflow_waits_for_pending_work_before_the_export(monkeypatch):
    tf = _FakeTensorFlow()
    monkeypatch.setitem(sys.modules, "tensorflow", tf.module)
    producer = Producer((2, 2))
    tensor = _tensorflow_tensor(producer)
    assert is_device_tensor(tensor)
    claimed, _ = claim(export(tensor, "X", stream=5), "X", device_id=0, ndims=(2,), dtype=None)
    assert tf.calls == ["sync", "export"]
    claimed.release()
    assert producer.deleter_calls == 1


@pytest.mark.parametrize(("kwargs", "message"), [({"eager": False}, "eager mode only"),
                                                 ({"sync": False}, "sync_devices")])
def test_tensorflow_without_a_synchronization_boundary_is_refused(monkeypatch, kwargs, message):
    tf = _FakeTensorFlow(**kwargs)
    monkeypatch.setitem(sys.modules, "tensorflow", tf.module)
    with pytest.raises(DLPackError, match=message):
        export(_tensorflow_tensor(Producer((2, 2))), "X", stream=5)
    assert "export" not in tf.calls


# ------------------------------------------------------------------- the engine wrapper around it


_CONTRACT = Path(__file__).resolve().parents[1] / "native" / "contracts" / "rh_cuda_contract.json"


class _FakeNative:
    """The native module's surface (Engine, State, CONSTANTS), recording calls instead of
    computing."""

    CONSTANTS = json.loads(_CONTRACT.read_text())["constants"]
    CONTRACT_FEATURES = ()

    def __init__(self, fail_with=None):
        outer = self
        self.updates: list[tuple] = []
        self.loads = 0

        class FakeState:
            def __init__(self, dtype, dim):
                self.dtype, self.dim = dtype, dim

            def load(self, scalars, coef, information, gram, score_gram, factor=None,
                     vector=None):
                outer.loads += 1

            def read(self, coef, information, gram, score_gram, factor=None, vector=None):
                coef[:] = 1.0
                information[:] = 0.0
                return {"n_samples_seen": 4, "effective_weight": 4.0, "batch_count": 1,
                        "previous_lambda": 0.0, "scale": 1.0, "score_sq_sum": 1.0,
                        "curvature_sum": 4.0, "curvature_sq_sum": 4.0,
                        "inference_weight": 4.0, "inference_batches": 1,
                        "has_matrices": False, "has_factor": False}

        class FakeEngine:
            stream = 0xABC

            def __init__(self, device):
                self.device = device

            def new_state(self, dtype, dim):
                return FakeState(dtype, dim)

            def update(self, previous, following, X, y, w, config):
                outer.updates.append((X, y, w))
                if fail_with is not None:
                    raise fail_with
                return {"converged": True, "n_iter": 3, "objective": 1.0, "lambda": 0.0,
                        "bandwidth": 1.345, "solver": "cholesky", "line_search_halvings": 0,
                        "rcond": 0.5}

        self.Engine = FakeEngine


def test_engine_reads_device_tensors_in_place_on_its_stream_and_releases_them_after():
    native = _FakeNative()
    engine = CudaEngine(native, device=0)
    X, y = Producer((4, 2)), Producer((4,))
    state, diag = engine.update(None, X, y, None, Config())
    x_desc, y_desc, w_desc = native.updates[0]
    assert x_desc == (X.data, 4, 2, 2, 2, dl.KDL_CUDA, 0, 0xABC)
    assert y_desc == (y.data, 4, 1, 1, 2, dl.KDL_CUDA, 0, 0xABC)
    assert w_desc is None
    assert X.streams == [0xABC] and y.streams == [0xABC]
    assert (X.deleter_calls, y.deleter_calls) == (1, 1)
    assert diag.converged and state.batch_count == 1
    assert not state.coef.flags.writeable and not state.information.flags.writeable


def test_engine_releases_every_claimed_tensor_when_the_update_fails():
    native = _FakeNative(fail_with=ValueError("X contains a non-finite value at row 0, column 0"))
    engine = CudaEngine(native, device=0)
    X, y, w = Producer((4, 2)), Producer((4,)), Producer((4,))
    with pytest.raises(ValueError, match="non-finite"):
        engine.update(None, X, y, w, Config())
    assert (X.deleter_calls, y.deleter_calls, w.deleter_calls) == (1, 1, 1)


def test_engine_refuses_device_and_host_inputs_mixed():
    engine = CudaEngine(_FakeNative(), device=0)
    X = Producer((4, 2))
    with pytest.raises(ValueError, match="same device"):
        engine.update(None, X, np.zeros(4), None, Config())
    assert X.deleter_calls == 1


def test_engine_refuses_a_device_batch_of_another_dtype_than_the_state():
    engine = CudaEngine(_FakeNative(), device=0)
    state = State(coef=np.zeros(3), information=np.zeros((3, 3)), batch_count=1, scale=1.0)
    X, y = Producer((4, 2), bits=32), Producer((4,), bits=32)
    with pytest.raises(DLPackError, match="never cast"):
        engine.update(state, X, y, None, Config())
    assert X.deleter_calls == 1 and y.deleter_calls == 0  # y was never exported


def test_engine_refuses_device_resident_prediction():
    engine = CudaEngine(_FakeNative(), device=0)
    state = State(coef=np.zeros(3), information=np.zeros((3, 3)), batch_count=1, scale=1.0)
    X = Producer((4, 2))
    with pytest.raises(ValueError, match="device-resident prediction is not supported"):
        engine.predict(state, X)
    assert X.streams == [] and X.deleter_calls == 0  # never exported, so nothing to release


def test_engine_uploads_a_state_only_when_it_is_not_the_resident_one():
    native = _FakeNative()
    engine = CudaEngine(native, device=0)
    state, _ = engine.update(None, np.ones((4, 2)), np.ones(4), None, Config())
    loads = native.loads
    engine.update(state, np.ones((4, 2)), np.ones(4), None, Config())
    assert native.loads == loads  # the returned state is the resident one: no upload
    foreign = State(coef=np.zeros(3), information=np.eye(3), batch_count=1, scale=1.0)
    engine.update(foreign, np.ones((4, 2)), np.ones(4), None, Config())
    assert native.loads == loads + 1
