#pragma once
// Checks made before an update touches anything (shared/spec/method.md, "Validation";
// docs/numerics.md, "Validation order"). Each throws rh::InvalidArgument naming the argument
// the caller passed and what was expected.

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "rh/config.hpp"
#include "rh/state.hpp"
#include "rh/views.hpp"

namespace rh {

// alpha >= 0, epsilon > 0, tau > 0 or unset, ridge >= 0, max_iter >= 1, tol > 0 or unset; all
// finite.
void validate_config(const Config& config);

// Who scans the values of X for NaN and infinity.
enum class DesignValues {
  checked,   // validate_update, before anything reads X
  deferred,  // the engine, on its first pass over X, chunk by chunk from cache (a whole pass
             // over the batch saved): it must call require_finite_design on a find, before it
             // changes anything. validate_update still puts X's error before the later ones.
};

// What a scan of y's and the weights' values found, over some range of rows. Flags only, so
// ranges scanned apart (on an engine's threads) merge exactly in any order.
struct ValueScan {
  bool y_non_finite = false;
  bool weights_bad = false;       // a weight NaN, infinite or negative
  bool weights_positive = false;  // a weight > 0
  bool weights_units = true;      // every weight exactly 1 (the default weights)

  void merge(const ValueScan& other) {
    y_non_finite = y_non_finite || other.y_non_finite;
    weights_bad = weights_bad || other.weights_bad;
    weights_positive = weights_positive || other.weights_positive;
    weights_units = weights_units && other.weights_units;
  }
};

// One branch-free scan of y and sample_weight (of the same length), vectorized.
template <std::floating_point T>
ValueScan scan_values(std::span<const T> y, std::span<const T> sample_weight);

// The whole update's input in the documented order: parameters, X, y, sample_weight, then the
// state against the batch. With `scanned` (scan_values over the whole batch, merged), y's and
// the weights' values are judged by it instead of by a scan of their own; an error still names
// the first offending entry. Returns what the scan found (every weight 1, ...).
template <std::floating_point T>
ValueScan validate_update(const StateView<T>& state, MatrixView<T> X, std::span<const T> y,
                          std::span<const T> sample_weight, const Config& config,
                          DesignValues design_values = DesignValues::checked,
                          const ValueScan* scanned = nullptr);

// Throws validate_update's error for a non-finite value of X, naming the first one in row order;
// returns when there is none.
template <std::floating_point T>
void require_finite_design(MatrixView<T> X);

// Whether any of n values is NaN or infinite: an all-ones exponent, tested on the bits with an
// OR reduction and no early exit, so that the scan vectorizes.
template <std::floating_point T>
bool any_non_finite(const T* values, std::size_t n) {
  using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
  constexpr Bits exponent = sizeof(T) == 8 ? Bits(0x7ff0000000000000) : Bits(0x7f800000);
  Bits found = 0;
  for (std::size_t i = 0; i < n; ++i) {
    found |= static_cast<Bits>((std::bit_cast<Bits>(values[i]) & exponent) == exponent);
  }
  return found != 0;
}

extern template ValueScan validate_update<float>(const StateView<float>&, MatrixView<float>,
                                                 std::span<const float>, std::span<const float>,
                                                 const Config&, DesignValues, const ValueScan*);
extern template ValueScan validate_update<double>(const StateView<double>&, MatrixView<double>,
                                                  std::span<const double>,
                                                  std::span<const double>, const Config&,
                                                  DesignValues, const ValueScan*);
extern template ValueScan scan_values<float>(std::span<const float>, std::span<const float>);
extern template ValueScan scan_values<double>(std::span<const double>, std::span<const double>);
extern template void require_finite_design<float>(MatrixView<float>);
extern template void require_finite_design<double>(MatrixView<double>);

}  // namespace rh
