#pragma once
// Square-root information, factorization="qr" (shared/spec/method.md, contract v4): the history
// enters the batch objective as 1/2 ||R~ beta - z~||^2, and the state carries R~ (upper
// triangular, diagonal >= 0) and z~ as orthogonal transformations produce them, never z~ as
// R~ beta~ (that loses the digits the mode exists for). The engines compute the QR steps
// (SquareRootOps); this header holds what is the same on every engine: the history an engine
// builds its Ops from (a Cholesky state converted, J~ = R~^T R~ formed for the parts of the
// solvers that read J~ v), on the host.

#include <cmath>
#include <concepts>
#include <cstddef>
#include <span>
#include <vector>

#include "rh/config.hpp"
#include "rh/error.hpp"
#include "rh/state.hpp"

namespace rh {

// J = R^T R of a d x d upper triangular R (row-major), in float64, rounded to T once: exactly
// symmetric.
template <std::floating_point T>
void factor_gram(std::span<const T> factor, std::size_t d, std::span<T> out) {
  for (std::size_t i = 0; i < d; ++i) {
    for (std::size_t j = 0; j <= i; ++j) {
      double sum = 0.0;
      for (std::size_t k = 0; k <= j; ++k) {  // R[k][i] R[k][j], zero below the diagonal
        sum += static_cast<double>(factor[k * d + i]) * static_cast<double>(factor[k * d + j]);
      }
      out[i * d + j] = static_cast<T>(sum);
      out[j * d + i] = static_cast<T>(sum);
    }
  }
}

namespace detail {

// R with R^T R = J (upper, row-major), by Cholesky in float64 of J's symmetric part; throws
// InvalidArgument naming the mode when J is not positive definite.
template <std::floating_point T>
std::vector<T> cholesky_factor(std::span<const T> information, std::size_t d) {
  std::vector<double> r(d * d, 0.0);
  for (std::size_t j = 0; j < d; ++j) {
    for (std::size_t i = 0; i <= j; ++i) {
      double sum = 0.5 * (static_cast<double>(information[i * d + j]) +
                          static_cast<double>(information[j * d + i]));
      for (std::size_t k = 0; k < i; ++k) sum -= r[k * d + i] * r[k * d + j];
      if (i == j) {
        if (!(sum > 0.0) || !std::isfinite(sum)) {
          throw InvalidArgument(
              "a Cholesky-mode state continues in factorization='qr' from R~ = chol(J~), but its "
              "information matrix is not positive definite (pivot " +
              std::to_string(j) + "); continue it with factorization='cholesky'");
        }
        r[j * d + j] = std::sqrt(sum);
      } else {
        r[i * d + j] = sum / r[i * d + i];
      }
    }
  }
  return {r.begin(), r.end()};
}

}  // namespace detail

// The history an engine builds its Ops from for `config`'s factorization (kept in `storage`
// where it differs from `previous`):
// - qr: R~ and z~ as stored; for the first batch zeros; for a Cholesky-mode state R~ = chol(J~),
//   z~ = R~ beta~. The view's information is J~ = R~^T R~ (factor_gram).
// - cholesky: a qr state continues as J~ = R~^T R~, its factor dropped.
template <std::floating_point T>
StateView<T> history_for_factorization(const StateView<T>& previous, const Config& config,
                                       State<T>& storage) {
  const std::size_t d = previous.dim();
  const bool qr = config.factorization == Factorization::qr;
  if (!qr && !previous.square_root()) return previous;
  storage.coef.assign(previous.coef.begin(), previous.coef.end());
  storage.n_samples_seen = previous.n_samples_seen;
  storage.effective_weight = previous.effective_weight;
  storage.batch_count = previous.batch_count;
  storage.previous_lambda = previous.previous_lambda;
  storage.scale = previous.scale;
  storage.inference = previous.inference;
  storage.gram.assign(previous.gram.begin(), previous.gram.end());
  storage.score_gram.assign(previous.score_gram.begin(), previous.score_gram.end());
  storage.information.assign(d * d, T{0});
  if (previous.square_root()) {
    storage.information_factor.assign(previous.information_factor.begin(),
                                      previous.information_factor.end());
    storage.information_vector.assign(previous.information_vector.begin(),
                                      previous.information_vector.end());
  } else if (previous.batch_count == 0) {
    storage.information_factor.assign(d * d, T{0});
    storage.information_vector.assign(d, T{0});
  } else {
    storage.information_factor = detail::cholesky_factor(previous.information, d);
    storage.information_vector.assign(d, T{0});
    for (std::size_t i = 0; i < d; ++i) {
      double sum = 0.0;
      for (std::size_t j = i; j < d; ++j) {
        sum += static_cast<double>(storage.information_factor[i * d + j]) *
               static_cast<double>(previous.coef[j]);
      }
      storage.information_vector[i] = static_cast<T>(sum);
    }
  }
  factor_gram(std::span<const T>(storage.information_factor), d, std::span<T>(storage.information));
  if (!qr) {
    storage.information_factor.clear();
    storage.information_vector.clear();
  }
  return storage.view();
}

}  // namespace rh
