"""Turn user inputs (NumPy, pandas, PyTorch CPU tensors, lists) into host arrays.

PyTorch tensors are taken as detached values: the estimator never joins an autograd graph.
Device tensors are not silently copied to the host: the host engines refuse them.
"""

from __future__ import annotations

from typing import Any


def _is_torch_tensor(a: Any) -> bool:
    return type(a).__module__.split(".")[0] == "torch" and hasattr(a, "detach")


def as_host_input(a: Any, name: str) -> Any:
    """Return ``a`` unchanged unless it is a PyTorch tensor, which becomes a NumPy view."""
    if a is None or not _is_torch_tensor(a):
        return a
    if a.device.type != "cpu":
        raise ValueError(
            f"{name} is a PyTorch tensor on device {a.device}; the host engines take CPU tensors "
            "only (move it with .cpu(), or use backend='cuda')"
        )
    return a.detach().numpy()
