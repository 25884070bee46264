"""The CUDA engine's Python side: the engine wrapper behind backend="cuda" and the DLPack
adapters. The compute lives in the native distribution rhuber-native-cuda (module
``_rhuber_native_cuda``); this package imports it only when an engine is made."""

from __future__ import annotations

from .dlpack import ClaimedTensor, DLPackError, claim, export, is_device_tensor
from .engine import CudaEngine

__all__ = ["ClaimedTensor", "CudaEngine", "DLPackError", "claim", "export", "is_device_tensor"]
