#pragma once
// rh::SolverOps on the device: the solver drivers of the core (rh/update.hpp, newton.hpp,
// lamm.hpp) run on the host unchanged and call these operations, which queue cuBLAS calls and
// our kernels on the engine's stream. Vectors stay on the device; only the scalars a driver
// branches on come back, each with one small copy and one stream synchronization (the drivers
// decide on the host: RFC 0001, "fully device-side convergence decisions remain future work").
//
// X is read in place (row-major n x p is the column-major p x n matrix), and the intercept is the
// last coefficient, handled beside the BLAS calls exactly as the CPU engine does. The one place
// its column is written out is the Gram's staging buffer, as sqrt(w c), also as on the CPU.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "engine_internal.hpp"
#include "host_solver.hpp"
#include "linear_solver.hpp"
#include "rh/ops.hpp"
#include "rh/state.hpp"

namespace rh::cuda {

// A validated batch on the device (batch.cu).
template <std::floating_point T>
struct DeviceBatch {
  const T* X = nullptr;  // row-major rows x features
  const T* y = nullptr;
  const T* w = nullptr;
  std::size_t rows = 0;
  std::size_t features = 0;
  std::span<const T> host_weights;  // the drivers' weighted medians run on the host
  double weight_sum = 0.0;          // sequential float64 sum of host_weights, as on the CPU
};

template <std::floating_point T>
class DeviceOps {
 public:
  using Scalar = T;
  using Vector = DeviceVector<T>;

  // `previous_information` is J~ on the device (row-major, as stored); the state's host view
  // gives the previous coefficients and scalars. Both must outlive the object.
  DeviceOps(EngineCore& core, Workspace<T>& workspace, const StateView<T>& previous,
            const T* previous_information, const DeviceBatch<T>& batch, bool fit_intercept);
  DeviceOps(const DeviceOps&) = delete;
  DeviceOps& operator=(const DeviceOps&) = delete;

  std::size_t dim() const { return dim_; }
  bool intercept() const { return intercept_; }

  Vector make_vector();
  void assign(std::span<const T> host, Vector& out);
  void copy_to_host(const Vector& v, std::span<T> host);
  void copy(const Vector& v, Vector& out);
  void scale(double factor, Vector& out);
  void axpy(double factor, const Vector& v, Vector& out);
  double dot(const Vector& a, const Vector& b);
  double norm_inf(const Vector& v);
  void soft_threshold(const Vector& z, double level, Vector& out);

  double weight_sum() const { return batch_.weight_sum; }
  // A kernel of its own over X, once per batch (the evaluation's passes are cuBLAS calls).
  double diagonal_mean();
  std::span<const T> host_weights() const { return batch_.host_weights; }
  void residuals_to_host(const Vector& beta, std::span<T> out);

  void evaluate(const Vector& beta, double tau);
  void gradient(Vector& out);
  double objective(double lambda);
  void form_hessian(double ridge);
  void hessian_diagonal(std::span<T> out);
  void equilibrate_hessian(std::span<const T> scales);
  bool hessian_symmetric();
  SolveAttempt solve_cholesky(const Vector& rhs, Vector& out);
  SolveAttempt solve_lu(const Vector& rhs, Vector& out);
  std::size_t solve_min_norm(const Vector& rhs, double rcond, Vector& out);
  void project(const Vector& step);
  double objective_change(const Vector& step, double t);
  // The information pass at the current point (rh::SolverOps): J~ + J_b into the workspace's
  // next_information (device, row-major) and out.information (host); G_b and K_b, when asked,
  // formed on the device and added to out's (host) in the same download; the inference sums
  // reduced on the device and read with the one synchronization of the pass.
  InferenceSums information(const InformationRequest& request, InformationOutputs<T> out);

  // rh::SquareRootOps (factorization="qr", square_root.cu): the history is (R~, z~) when the
  // state before the batch holds them. The rows are stacked and reduced by cuSOLVER's geqrf on
  // the device; the (d+2) x (d+2) triangle comes back, and the d x d work on it is the CPU
  // engine's own (native/cpu/square_root_triangle.hpp), on the host.
  bool square_root() const { return square_root_; }
  SquareRootStep square_root_step(double ridge, Vector& out);
  bool pattern_repeats();
  InferenceSums square_root_information(const InformationRequest& request,
                                        SquareRootOutputs<T> out);

  // rh::DriftOps (rh/drift.hpp), at the current point after form_hessian(): its Gram (the
  // Newton matrix less J~ and ridge) brought to the host in float64, its sums of w psi^2 and
  // w c from the residuals brought to the host (n values, no pass over X), and the float64 host
  // solver of the test's d x d systems.
  void batch_gram_to_host(std::span<double> out);
  InferenceSums point_sums();
  // The score X~^T (w psi) of the current point itself: in factorization="qr" the gradient at
  // beta~ also holds the last solve's remainder R~^T (R~ beta~ - z~), which the test's score
  // does not.
  void score_to_host(std::span<T> out);
  HostSolver64& drift_solver() {
    drift_solver_.resize(dim_);
    return drift_solver_;
  }

 private:
  const DeviceScalars& fetch();               // one copy, one synchronization
  void residual_into(const T* beta, T* out);  // y - X~ beta
  // Lower triangle of X~^T diag(row_weights) X~ (one SYRK); w c of the current point by default.
  void gram_into(T* gram);
  void gram_into(const T* row_weights, T* gram);
  // Symmetry and ||H||_1 of the Newton matrix as it now is (H, or Ĥ once equilibrated): the
  // one-norm and one fetch, once per matrix.
  const DeviceScalars& hessian_facts();
  // factorization="qr": R~ and u0 = R~ beta~ - z~ up in float64 (the constructor).
  void upload_history(const StateView<T>& previous);
  // The QR of the stacked rows at the current point (a Newton step's, or the information
  // update's with its curvature): the n x n top of the result into ws_.root.host_triangle, the
  // columns' equilibration into `scales`, the linear term into `linear`; returns n.
  std::size_t stack_rows(bool step, double bandwidth, std::vector<T>& scales,
                         std::vector<double>& linear);
  // Whether every row's pattern matches `pattern`'s (and, with write, records the current one).
  bool pattern_matches(std::uint8_t* pattern, bool write);

  EngineCore& core_;
  rh::bricks::Profiler& prof_;      // the engine's, or an off one (profiling.hpp)
  std::uint32_t evaluations_ = 0;   // evaluate() calls: the profiler's iteration index
  Workspace<T>& ws_;
  DeviceBatch<T> batch_;
  LinearSolver<T> solver_;
  cudaStream_t stream_;
  bool intercept_;
  std::size_t features_;
  std::size_t dim_;
  std::size_t blocks_;              // row-reduction grid
  const T* information_;            // J~ (row-major)
  const double* information64_;     // J~ in float64
  double effective_weight_;         // W before this batch
  double history_weight_;           // W * previous lambda, rounded to T: the subgradient's scale
  T tau_ = 0;
  bool facts_known_ = false;
  std::optional<double> diagonal_mean_;  // diagonal_mean(), once formed
  DeviceScalars facts_{};
  HostSolver64 drift_solver_;
  // factorization="qr".
  bool square_root_ = false;
  std::span<const T> factor_;  // R~ (row-major) and z~ on the host
  std::span<const T> vector_;
  bool pattern_known_ = false;
  // The last Newton step's triangle [R_H | q | q_y], scales, linear term and bandwidth, kept for
  // an information update at a point of the same pattern.
  bool step_kept_ = false;
  T step_tau_ = 0;
  std::vector<T> step_triangle_;
  std::vector<T> step_scales_;
  std::vector<double> step_linear_;
};

extern template class DeviceOps<float>;
extern template class DeviceOps<double>;

}  // namespace rh::cuda
