"""Information-weighted combination of independent renewable streams (docs/scale-out.md).

K streams fitted on disjoint parts of the data, with states (β_k, J_k, n_k, W_k, ...), combine
into one state by the aggregated estimating equation of Lin & Xi (2011):

    J = Σ_k J_k,   β = J⁻¹ Σ_k J_k β_k

(a Newton step of the sum of the K quadratic approximations, each taken at its own β_k). The
linear system is solved by the contract's equilibrated ladder (``core.ladder``), so a singular
Σ J_k gets the ladder's minimum-norm answer and is reported, as a batch's Newton system is.
Here with NumPy on the host: the system is d × d, small beside any batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import sqrt_info
from .inference import merged_fields
from .ladder import LadderResult, solve
from .types import State
from .xp import to_host


def combine_states(states: Sequence[State]) -> tuple[State, LadderResult]:
    """The combined state of independent unpenalized streams, and the ladder's report.

    Every field of the result, from the parts in their given order (the sums are formed left
    to right, so the same parts in the same order give the same bits):

    - ``information`` = Σ J_k;
    - ``coef`` = (Σ J_k)⁻¹ Σ J_k β_k, by the equilibrated ladder;
    - ``n_samples_seen``, ``effective_weight``, ``batch_count``: sums;
    - ``scale`` = Σ W_k s_k / Σ W_k, the effective-weight average: the running scale of one
      stream is that average of its batches' scales, so the combination keeps its meaning;
    - ``previous_lambda`` = 0: only unpenalized states combine (the L1 subgradient term of
      the renewable objective has no information-weighted counterpart);
    - the inference sums (S_ψ², S_c, Σ w c², their weight and batch count): sums; the matrices
      G and K: sums when every part has them, else None.

    Raises ValueError when fewer than two states are given, when their dtypes or sizes differ,
    or when a state is empty or penalized (``previous_lambda`` > 0).
    """
    if len(states) < 2:
        raise ValueError(f"combining needs at least two states, got {len(states)}")
    first = states[0]
    for k, s in enumerate(states):
        if s.dtype != first.dtype or s.n_coef != first.n_coef:
            raise ValueError(
                f"state {k} has {s.n_coef} coefficients of {s.dtype}, but state 0 has "
                f"{first.n_coef} of {first.dtype}; only states of one model combine")
        if s.batch_count == 0:
            raise ValueError(f"state {k} is empty (no batch seen); only fitted states combine")
        if s.previous_lambda > 0:
            raise ValueError(
                f"state {k} is L1-penalized (its last batch had alpha={s.previous_lambda:g}); "
                "the information-weighted combination is defined for unpenalized streams "
                "(alpha=0) only: the L1 term's historical subgradient has no information-"
                "weighted counterpart. Combine unpenalized streams, or stream the data in order "
                "(rhuber.dask.fit_stream)")
    modes = {s.factorization for s in states}
    if len(modes) > 1:
        raise ValueError(
            f"cannot combine states of different factorizations ({', '.join(sorted(modes))}): "
            "fit every stream with the same factorization")
    if first.factorization == "qr":
        return _combine_factors(states)
    coefs = [np.asarray(to_host(s.coef)) for s in states]
    infos = [np.asarray(to_host(s.information)) for s in states]
    information = infos[0].copy()
    rhs = infos[0] @ coefs[0]
    for J, beta in zip(infos[1:], coefs[1:], strict=True):
        information += J
        rhs += J @ beta
    result = solve(information, rhs)
    return _combined(states, result, information), result


def _combine_factors(states: Sequence[State]) -> tuple[State, LadderResult]:
    """The qr mode's combination (method.md, contract v4): the factor of the stacked
    [[R̃₁ | z̃₁]; [R̃₂ | z̃₂]; …] is the history of all parts, and coef its minimizer, R̃⁻¹z̃
    (the minimum-norm one, rung "svd", when R̃ is rank-deficient)."""
    host = [(np.asarray(to_host(s.information_factor)), np.asarray(to_host(s.information_vector)))
            for s in states]
    d, dtype = host[0][0].shape[0], host[0][0].dtype
    others = sqrt_info.ModelRows(np.concatenate([R for R, _ in host[1:]]),
                                 np.concatenate([z for _, z in host[1:]]), np.zeros(d, dtype))
    factor = sqrt_info.factorize(*host[0], others)
    zero = np.zeros(d, dtype)
    step, rung, rcond = sqrt_info.newton_step(factor, zero, zero, 0.0)  # from 0: the minimizer
    R = (factor.R / factor.scales[None, :]).astype(dtype, copy=False)
    z = factor.rhs
    result = LadderResult(step.astype(R.dtype, copy=False), rung, rcond)
    combined = _combined(states, result, sqrt_info.information_from_factor(R))
    return combined.replace(information_factor=R, information_vector=z), result


def _combined(states: Sequence[State], result: LadderResult, information) -> State:
    """The combined state with ``result``'s coefficients and ``information``."""
    first = states[0]
    weight = float(sum(s.effective_weight for s in states))
    scale = sum(s.effective_weight * s.scale for s in states) / weight
    return State(
        coef=result.step.astype(first.dtype, copy=False),
        information=information,
        n_samples_seen=int(sum(s.n_samples_seen for s in states)),
        effective_weight=weight,
        batch_count=int(sum(s.batch_count for s in states)),
        previous_lambda=0.0,
        scale=float(scale),
        **merged_fields(list(states)),
    )
