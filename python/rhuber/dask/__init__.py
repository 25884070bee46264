"""Streams over a Dask cluster (docs/scale-out.md); needs the ``[dask]`` extra.

- :func:`fit_stream`: the renewable stream itself, the partitions fed in order, the estimator
  travelling to the worker holding each one; restartable from atomic checkpoints. Equal, bit for
  bit, to ``partial_fit`` on the same partitions.
- :func:`fit_parallel`: one independent stream per group of partitions, all at once, combined
  by information weighting (:meth:`RenewableHuberRegressor.merge`); an approximation.

``dask_ml.wrappers.Incremental`` drives the estimator as well (in order, one worker at a time).
"""

try:
    import dask  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        f"rhuber.dask needs Dask ({exc}); install the extra: "
        "pip install 'rhuber[dask]'"
    ) from exc

from ._parallel import fit_parallel
from ._stream import fit_stream

__all__ = ["fit_parallel", "fit_stream"]
