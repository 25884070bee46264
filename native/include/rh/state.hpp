#pragma once
// The renewable state carried from batch to batch (shared/spec/method.md, "State").

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rh {

// Contract v3, inference: sums over the batches they cover, each taken at that batch's final
// beta_b, in float64 (psi = clip(r, -tau_b, tau_b), c the information update's curvature).
struct InferenceSums {
  double score_sq_sum = 0.0;      // sum w psi^2
  double curvature_sum = 0.0;     // sum w c
  double curvature_sq_sum = 0.0;  // sum w c^2
  double inference_weight = 0.0;  // sum w
  std::int64_t inference_batches = 0;
};

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
  InferenceSums inference;
  // G and K (d x d, row-major), empty when the state keeps none.
  std::span<const T> gram;
  std::span<const T> score_gram;
  // factorization="qr" (contract v4): the history is 1/2 ||R~ beta - z~||^2, R~ d x d upper
  // triangular row-major with a non-negative diagonal; both empty in the Cholesky mode.
  std::span<const T> information_factor;
  std::span<const T> information_vector;

  std::size_t dim() const { return coef.size(); }
  bool square_root() const { return !information_factor.empty(); }
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
  InferenceSums inference;
  std::vector<T> gram;        // G = sum X~^T diag(w) X~, empty when the state keeps none
  std::vector<T> score_gram;  // K = sum X~^T diag(w psi^2) X~, likewise
  // factorization="qr": R~ and z~ (StateView); `information` then holds R~^T R~ for readers.
  std::vector<T> information_factor;
  std::vector<T> information_vector;

  // The state before any batch: all zeros.
  static State empty(std::size_t dim) {
    State state;
    state.coef.assign(dim, T{0});
    state.information.assign(dim * dim, T{0});
    return state;
  }

  std::size_t dim() const { return coef.size(); }

  StateView<T> view() const {
    return {coef,  information, n_samples_seen, effective_weight, batch_count, previous_lambda,
            scale, inference,   gram,           score_gram,      information_factor,
            information_vector};
  }
};

}  // namespace rh
