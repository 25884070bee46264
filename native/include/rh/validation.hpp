#pragma once
// Checks made before an update touches anything (shared/spec/method.md, "Validation";
// docs/numerics.md, "Validation order"). Each throws rh::InvalidArgument naming the argument
// the caller passed and what was expected.

#include <concepts>
#include <span>

#include "rh/config.hpp"
#include "rh/state.hpp"
#include "rh/views.hpp"

namespace rh {

// alpha >= 0, epsilon > 0, tau > 0 or unset, ridge >= 0, max_iter >= 1, tol > 0 or unset; all
// finite.
void validate_config(const Config& config);

// The whole update's input in the documented order: parameters, X, y, sample_weight, then the
// state against the batch.
template <std::floating_point T>
void validate_update(const StateView<T>& state, MatrixView<T> X, std::span<const T> y,
                     std::span<const T> sample_weight, const Config& config);

extern template void validate_update<float>(const StateView<float>&, MatrixView<float>,
                                            std::span<const float>, std::span<const float>,
                                            const Config&);
extern template void validate_update<double>(const StateView<double>&, MatrixView<double>,
                                             std::span<const double>, std::span<const double>,
                                             const Config&);

}  // namespace rh
