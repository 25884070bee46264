#pragma once
// The renewable state carried from batch to batch (shared/spec/method.md, "State").

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rh {

// A read-only view of a state owned elsewhere (a State, NumPy arrays, a checkpoint).
template <std::floating_point T>
struct StateView {
  std::span<const T> coef;         // d = p + fit_intercept; the intercept is last
  std::span<const T> information;  // d x d, row-major, used exactly as stored
  std::int64_t n_samples_seen = 0;
  double effective_weight = 0.0;  // W, the total sample weight seen
  std::int64_t batch_count = 0;
  double previous_lambda = 0.0;
  double scale = 0.0;

  std::size_t dim() const { return coef.size(); }
};

template <std::floating_point T>
struct State {
  std::vector<T> coef;
  std::vector<T> information;
  std::int64_t n_samples_seen = 0;
  double effective_weight = 0.0;
  std::int64_t batch_count = 0;
  double previous_lambda = 0.0;
  double scale = 0.0;

  // The state before any batch: all zeros.
  static State empty(std::size_t dim) {
    State state;
    state.coef.assign(dim, T{0});
    state.information.assign(dim * dim, T{0});
    return state;
  }

  std::size_t dim() const { return coef.size(); }

  StateView<T> view() const {
    return {coef,        information,     n_samples_seen, effective_weight,
            batch_count, previous_lambda, scale};
  }
};

}  // namespace rh
