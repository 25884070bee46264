#pragma once
// The L1 penalty's regime screen (docs/tuner.md, "The penalty's regime"; the NumPy reference is
// rhuber.engines.regime.start_gradient_numpy): the gradient of the smooth part at a stream's start
// point over a batch's first rows, g_j = |x_jᵀ ψ_τ(r₀)| / n with r₀ = y − median(y) (y itself
// without an intercept), and τ given or ε·MAD(r₀). The tuner reads a penalized stream's regime from
// it before the stream's first batch runs; in NumPy it cost ~0.3 ms a stream (many small calls on a
// cold first batch), here one call of ~0.1 ms (~20 µs on warm data).

#include <cstddef>
#include <optional>
#include <span>

namespace rh {

// g (`gradient`, cols entries) over the `rows` × `cols` row-major rows `x` and the targets `y`
// (rows entries), and the τ it used: `tau` where given, else mad_factor · the median absolute
// deviation of r₀ (about 0 with an intercept: r₀ is centred at its median; about r₀'s median
// without). τ not finite or not positive: g is 0 and 0 is returned. Sums in float64; throws
// InvalidArgument on shapes that disagree.
template <class T>
double start_gradient(std::span<const T> x, std::size_t rows, std::size_t cols,
                      std::span<const double> y, std::optional<double> tau, double mad_factor,
                      bool fit_intercept, std::span<double> gradient);

}  // namespace rh
