"""Zero-copy device tensors for the CUDA engine, through DLPack (RFC 0001, "DLPack and stream
ownership").

A CuPy array or a PyTorch CUDA tensor is exported with the engine's stream as the consumer
stream, so the producer orders its pending work before ours. TensorFlow's exporter takes no
stream: eager GPU work is waited for first, and versions that cannot do that are refused. The
capsule is claimed once (renamed ``"used_dltensor"``, which tells the producer it no longer owns
the deleter call), and :meth:`ClaimedTensor.release` calls the deleter exactly once, after the
engine has finished with the memory. Tensors that are not C-contiguous, not float32/float64, or
not on the engine's device are rejected: never copied, cast or staged through the host.

The capsule handling is plain ``ctypes`` on the CPython capsule API, so its every path is tested
without a GPU (tests/test_dlpack_ownership.py).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

# DLPack's device types and type codes (dlpack.h, v0.8 layout; the legacy "dltensor" capsule).
KDL_CPU = 1
KDL_CUDA = 2
KDL_FLOAT = 2
_CAPSULE_NAME = b"dltensor"
_USED_CAPSULE_NAME = b"used_dltensor"  # module-level: the capsule keeps pointing at it


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


# The deleter runs with the GIL held (PYFUNCTYPE): producers whose deleter takes the GIL itself
# (CuPy) re-enter it safely, and none may run while we hold no GIL.
DELETER = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)

_api = ctypes.pythonapi
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", _api))
_get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", _api))

_DTYPES = {(KDL_FLOAT, 32): "float32", (KDL_FLOAT, 64): "float64"}


class DLPackError(ValueError):
    """A device tensor the CUDA engine refuses: the message says what was wrong and why it is
    not converted."""


@dataclass(frozen=True)
class TensorInfo:
    """What the engine needs of a claimed tensor."""

    data: int  # address of the first element (byte_offset applied)
    shape: tuple[int, ...]
    dtype: str
    device_id: int


def _describe_dtype(dtype: DLDataType) -> str:
    kinds = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 5: "complex", 6: "bool"}
    lanes = f"x{dtype.lanes}" if dtype.lanes != 1 else ""
    return f"{kinds.get(dtype.code, f'code{dtype.code}')}{dtype.bits}{lanes}"


def _c_contiguous(shape: tuple[int, ...], strides: tuple[int, ...] | None) -> bool:
    if strides is None:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


class ClaimedTensor:
    """One DLPack capsule, claimed: this object owes the producer exactly one deleter call.

    Use it as a context manager (or call :meth:`release`) so the deleter runs once the engine's
    work on the memory is done; the CUDA engine's update returns only after that point.
    """

    def __init__(self, capsule: Any, name: str):
        self.name = name
        if not _is_valid(capsule, _CAPSULE_NAME):
            try:
                found = _get_name(capsule)
            except (TypeError, ValueError):
                found = None
            if found == _USED_CAPSULE_NAME:
                raise DLPackError(
                    f"{name}: this DLPack capsule was already consumed; export the tensor again "
                    "(a capsule can be claimed only once)"
                )
            raise DLPackError(f"{name}: expected a DLPack capsule named 'dltensor', got {found!r}")
        address = _get_pointer(capsule, _CAPSULE_NAME)
        # Claimed from here on: the producer's capsule destructor will no longer call the
        # deleter, so every path below must end in release().
        if _set_name(capsule, _USED_CAPSULE_NAME) != 0:
            raise DLPackError(f"{name}: could not claim the DLPack capsule")
        self._capsule = capsule
        self._address = address
        self._managed = DLManagedTensor.from_address(address)
        self._released = False

    @property
    def released(self) -> bool:
        return self._released

    def inspect(self) -> tuple[TensorInfo, tuple[int, ...] | None, int]:
        """The tensor's description, its strides in elements (None: compact), its device type."""
        t = self._managed.dl_tensor
        shape = tuple(t.shape[k] for k in range(t.ndim))
        strides = None if not t.strides else tuple(t.strides[k] for k in range(t.ndim))
        dtype = _DTYPES.get((t.dtype.code, t.dtype.bits)) if t.dtype.lanes == 1 else None
        return TensorInfo(
            data=(t.data or 0) + t.byte_offset,
            shape=shape,
            dtype=dtype or _describe_dtype(t.dtype),
            device_id=t.device.device_id,
        ), strides, t.device.device_type

    def release(self) -> None:
        """Calls the producer's deleter; later calls do nothing."""
        if self._released:
            return
        self._released = True
        deleter = self._managed.deleter
        if deleter:
            DELETER(deleter)(self._address)

    def __enter__(self) -> ClaimedTensor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        # A safety net for a caller that forgot release(): the memory is returned, once.
        if not getattr(self, "_released", True):
            self.release()


def claim(capsule: Any, name: str, *, device_id: int, ndims: tuple[int, ...],
          dtype: str | None) -> tuple[ClaimedTensor, TensorInfo]:
    """Claims ``capsule`` and checks it for the engine; on a refusal the deleter has already run.

    ``dtype`` None accepts float32 or float64 (a first batch decides); otherwise it must match.
    """
    tensor = ClaimedTensor(capsule, name)
    try:
        info, strides, device_type = tensor.inspect()
        if device_type != KDL_CUDA:
            raise DLPackError(
                f"{name} is not in CUDA device memory (DLPack device type {device_type}); the "
                "CUDA engine reads device tensors in place and host arrays through NumPy"
            )
        if info.device_id != device_id:
            raise DLPackError(
                f"{name} is on cuda:{info.device_id}, but the engine runs on cuda:{device_id}; "
                "move it explicitly (tensors are never moved between devices)"
            )
        if len(info.shape) not in ndims:
            raise DLPackError(
                f"{name} must have {' or '.join(map(str, ndims))} dimension(s), got shape "
                f"{info.shape}"
            )
        if info.dtype not in ("float32", "float64"):
            raise DLPackError(
                f"{name} has dtype {info.dtype}; the CUDA engine takes float32 or float64 device "
                "tensors and never casts them"
            )
        if dtype is not None and info.dtype != dtype:
            raise DLPackError(
                f"{name} has dtype {info.dtype}, but the computation is {dtype}; device tensors "
                "are never cast: convert it first"
            )
        if not _c_contiguous(info.shape, strides):
            raise DLPackError(
                f"{name} is not C-contiguous (shape {info.shape}, strides {strides}); the CUDA "
                "engine never copies a device tensor: make it contiguous first"
            )
    except BaseException:
        tensor.release()
        raise
    return tensor, info


def _is_tensorflow(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "tensorflow"


def is_device_tensor(obj: Any) -> bool:
    """True for a tensor in CUDA device memory that exports DLPack (CuPy, PyTorch, TensorFlow)."""
    if obj is None:
        return False
    if _is_tensorflow(obj):
        return "GPU" in str(getattr(obj, "device", "")).upper()
    device = getattr(obj, "__dlpack_device__", None)
    if device is None or not hasattr(obj, "__dlpack__"):
        return False
    return int(device()[0]) == KDL_CUDA


def export(obj: Any, name: str, *, stream: int) -> Any:
    """The DLPack capsule of a device tensor, ordered before work queued on ``stream``."""
    if _is_tensorflow(obj):
        return _export_tensorflow(obj, name)
    try:
        return obj.__dlpack__(stream=stream)
    except TypeError as exc:  # an exporter without the stream parameter cannot be ordered
        raise DLPackError(
            f"{name}: its __dlpack__ does not take a stream, so the engine cannot order its "
            f"work after the producer's ({exc})"
        ) from exc


def _export_tensorflow(tensor: Any, name: str) -> Any:
    import tensorflow as tf

    if not tf.executing_eagerly():
        raise DLPackError(f"{name}: TensorFlow tensors are accepted in eager mode only")
    sync_devices = getattr(getattr(getattr(tf, "test", None), "experimental", None),
                           "sync_devices", None)
    if sync_devices is None:
        raise DLPackError(
            f"{name}: this TensorFlow ({getattr(tf, '__version__', '?')}) has no "
            "tf.test.experimental.sync_devices, so pending GPU work cannot be waited for before "
            "the zero-copy export; use TensorFlow >= 2.14, or pass a NumPy array"
        )
    sync_devices()  # the exporter has no stream: wait for every pending eager op first
    return tf.experimental.dlpack.to_dlpack(tensor)
