// Pins the public layout of rh_cuda.h to native/contracts/rh_cuda_contract.json at compile time:
// a field moved, resized or retyped fails the build. tests/test_cuda_abi.py checks that these
// assertions and the contract agree, so the header, this file and the contract change together.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "rh_cuda.h"

namespace {

template <class Field, class Expected>
constexpr bool has_type = std::is_same_v<Field, Expected>;

}  // namespace

static_assert(RH_CUDA_ABI_VERSION == (5 << 16 | 0));

static_assert(RH_CUDA_OK == 0);
static_assert(RH_CUDA_ERROR_INVALID_ARGUMENT == 1);
static_assert(RH_CUDA_ERROR_NUMERICAL == 2);
static_assert(RH_CUDA_ERROR_NO_DEVICE == 3);
static_assert(RH_CUDA_ERROR_OUT_OF_MEMORY == 4);
static_assert(RH_CUDA_ERROR_UNSUPPORTED == 5);
static_assert(RH_CUDA_ERROR_CUDA == 6);
static_assert(RH_CUDA_ERROR_INTERNAL == 7);
static_assert(RH_CUDA_FLOAT32 == 1);
static_assert(RH_CUDA_FLOAT64 == 2);
static_assert(RH_CUDA_DEVICE_CPU == 1);
static_assert(RH_CUDA_DEVICE_CUDA == 2);
static_assert(RH_CUDA_STREAM_NONE == 0);
static_assert(RH_CUDA_STREAM_LEGACY == 1);
static_assert(RH_CUDA_STREAM_PER_THREAD == 2);
static_assert(RH_CUDA_SOLVER_CHOLESKY == 0);
static_assert(RH_CUDA_SOLVER_LU == 1);
static_assert(RH_CUDA_SOLVER_SVD == 2);
static_assert(RH_CUDA_SOLVER_LAMM == 3);
static_assert(RH_CUDA_SOLVER_QR == 4);
static_assert(RH_CUDA_PROFILE_OFF == 0);
static_assert(RH_CUDA_PROFILE_PER_BATCH == 1);
static_assert(RH_CUDA_PROFILE_DEFERRED == 2);
static_assert(RH_CUDA_PROFILE_FORMAT_REPORT == 0);
static_assert(RH_CUDA_PROFILE_FORMAT_TRACE == 1);
static_assert(RH_CUDA_CURVATURE_INDICATOR == 0);
static_assert(RH_CUDA_CURVATURE_SMOOTHED == 1);
static_assert(RH_CUDA_FACTORIZATION_CHOLESKY == 0);
static_assert(RH_CUDA_FACTORIZATION_QR == 1);

static_assert(std::is_same_v<rh_cuda_engine_t, struct rh_cuda_engine_s*>);
static_assert(std::is_same_v<rh_cuda_state_t, struct rh_cuda_state_s*>);

static_assert(std::is_standard_layout_v<rh_cuda_array> && std::is_trivially_copyable_v<rh_cuda_array>);
static_assert(sizeof(rh_cuda_array) == 56);
static_assert(alignof(rh_cuda_array) == 8);
static_assert(offsetof(rh_cuda_array, data) == 0);
static_assert(has_type<decltype(rh_cuda_array::data), void*>);
static_assert(offsetof(rh_cuda_array, rows) == 8);
static_assert(has_type<decltype(rh_cuda_array::rows), int64_t>);
static_assert(offsetof(rh_cuda_array, cols) == 16);
static_assert(has_type<decltype(rh_cuda_array::cols), int64_t>);
static_assert(offsetof(rh_cuda_array, row_stride) == 24);
static_assert(has_type<decltype(rh_cuda_array::row_stride), int64_t>);
static_assert(offsetof(rh_cuda_array, dtype) == 32);
static_assert(has_type<decltype(rh_cuda_array::dtype), int32_t>);
static_assert(offsetof(rh_cuda_array, device_type) == 36);
static_assert(has_type<decltype(rh_cuda_array::device_type), int32_t>);
static_assert(offsetof(rh_cuda_array, device_id) == 40);
static_assert(has_type<decltype(rh_cuda_array::device_id), int32_t>);
static_assert(offsetof(rh_cuda_array, reserved) == 44);
static_assert(has_type<decltype(rh_cuda_array::reserved), int32_t>);
static_assert(offsetof(rh_cuda_array, stream) == 48);
static_assert(has_type<decltype(rh_cuda_array::stream), uint64_t>);

static_assert(std::is_standard_layout_v<rh_cuda_engine_options> && std::is_trivially_copyable_v<rh_cuda_engine_options>);
static_assert(sizeof(rh_cuda_engine_options) == 16);
static_assert(alignof(rh_cuda_engine_options) == 8);
static_assert(offsetof(rh_cuda_engine_options, device) == 0);
static_assert(has_type<decltype(rh_cuda_engine_options::device), int32_t>);
static_assert(offsetof(rh_cuda_engine_options, borrow_stream) == 4);
static_assert(has_type<decltype(rh_cuda_engine_options::borrow_stream), int32_t>);
static_assert(offsetof(rh_cuda_engine_options, stream) == 8);
static_assert(has_type<decltype(rh_cuda_engine_options::stream), uint64_t>);

static_assert(std::is_standard_layout_v<rh_cuda_config> && std::is_trivially_copyable_v<rh_cuda_config>);
static_assert(sizeof(rh_cuda_config) == 112);
static_assert(alignof(rh_cuda_config) == 8);
static_assert(offsetof(rh_cuda_config, fit_intercept) == 0);
static_assert(has_type<decltype(rh_cuda_config::fit_intercept), int32_t>);
static_assert(offsetof(rh_cuda_config, has_tau) == 4);
static_assert(has_type<decltype(rh_cuda_config::has_tau), int32_t>);
static_assert(offsetof(rh_cuda_config, has_tol) == 8);
static_assert(has_type<decltype(rh_cuda_config::has_tol), int32_t>);
static_assert(offsetof(rh_cuda_config, reserved) == 12);
static_assert(has_type<decltype(rh_cuda_config::reserved), int32_t>);
static_assert(offsetof(rh_cuda_config, epsilon) == 16);
static_assert(has_type<decltype(rh_cuda_config::epsilon), double>);
static_assert(offsetof(rh_cuda_config, tau) == 24);
static_assert(has_type<decltype(rh_cuda_config::tau), double>);
static_assert(offsetof(rh_cuda_config, alpha) == 32);
static_assert(has_type<decltype(rh_cuda_config::alpha), double>);
static_assert(offsetof(rh_cuda_config, ridge) == 40);
static_assert(has_type<decltype(rh_cuda_config::ridge), double>);
static_assert(offsetof(rh_cuda_config, tol) == 48);
static_assert(has_type<decltype(rh_cuda_config::tol), double>);
static_assert(offsetof(rh_cuda_config, max_iter) == 56);
static_assert(has_type<decltype(rh_cuda_config::max_iter), int64_t>);
static_assert(offsetof(rh_cuda_config, has_lambda_scale) == 64);
static_assert(has_type<decltype(rh_cuda_config::has_lambda_scale), int32_t>);
static_assert(offsetof(rh_cuda_config, curvature) == 68);
static_assert(has_type<decltype(rh_cuda_config::curvature), int32_t>);
static_assert(offsetof(rh_cuda_config, inference_matrices) == 72);
static_assert(has_type<decltype(rh_cuda_config::inference_matrices), int32_t>);
static_assert(offsetof(rh_cuda_config, reserved2) == 76);
static_assert(has_type<decltype(rh_cuda_config::reserved2), int32_t>);
static_assert(offsetof(rh_cuda_config, lambda_scale) == 80);
static_assert(has_type<decltype(rh_cuda_config::lambda_scale), double>);
static_assert(offsetof(rh_cuda_config, bandwidth_scale) == 88);
static_assert(has_type<decltype(rh_cuda_config::bandwidth_scale), double>);
static_assert(offsetof(rh_cuda_config, has_half_life) == 96);
static_assert(has_type<decltype(rh_cuda_config::has_half_life), int32_t>);
static_assert(offsetof(rh_cuda_config, factorization) == 100);
static_assert(has_type<decltype(rh_cuda_config::factorization), int32_t>);
static_assert(offsetof(rh_cuda_config, half_life) == 104);
static_assert(has_type<decltype(rh_cuda_config::half_life), double>);

static_assert(std::is_standard_layout_v<rh_cuda_state_info> && std::is_trivially_copyable_v<rh_cuda_state_info>);
static_assert(sizeof(rh_cuda_state_info) == 104);
static_assert(alignof(rh_cuda_state_info) == 8);
static_assert(offsetof(rh_cuda_state_info, dtype) == 0);
static_assert(has_type<decltype(rh_cuda_state_info::dtype), int32_t>);
static_assert(offsetof(rh_cuda_state_info, has_factor) == 4);
static_assert(has_type<decltype(rh_cuda_state_info::has_factor), int32_t>);
static_assert(offsetof(rh_cuda_state_info, dim) == 8);
static_assert(has_type<decltype(rh_cuda_state_info::dim), int64_t>);
static_assert(offsetof(rh_cuda_state_info, n_samples_seen) == 16);
static_assert(has_type<decltype(rh_cuda_state_info::n_samples_seen), int64_t>);
static_assert(offsetof(rh_cuda_state_info, effective_weight) == 24);
static_assert(has_type<decltype(rh_cuda_state_info::effective_weight), double>);
static_assert(offsetof(rh_cuda_state_info, batch_count) == 32);
static_assert(has_type<decltype(rh_cuda_state_info::batch_count), int64_t>);
static_assert(offsetof(rh_cuda_state_info, previous_lambda) == 40);
static_assert(has_type<decltype(rh_cuda_state_info::previous_lambda), double>);
static_assert(offsetof(rh_cuda_state_info, scale) == 48);
static_assert(has_type<decltype(rh_cuda_state_info::scale), double>);
static_assert(offsetof(rh_cuda_state_info, score_sq_sum) == 56);
static_assert(has_type<decltype(rh_cuda_state_info::score_sq_sum), double>);
static_assert(offsetof(rh_cuda_state_info, curvature_sum) == 64);
static_assert(has_type<decltype(rh_cuda_state_info::curvature_sum), double>);
static_assert(offsetof(rh_cuda_state_info, curvature_sq_sum) == 72);
static_assert(has_type<decltype(rh_cuda_state_info::curvature_sq_sum), double>);
static_assert(offsetof(rh_cuda_state_info, inference_weight) == 80);
static_assert(has_type<decltype(rh_cuda_state_info::inference_weight), double>);
static_assert(offsetof(rh_cuda_state_info, inference_batches) == 88);
static_assert(has_type<decltype(rh_cuda_state_info::inference_batches), int64_t>);
static_assert(offsetof(rh_cuda_state_info, has_matrices) == 96);
static_assert(has_type<decltype(rh_cuda_state_info::has_matrices), int32_t>);
static_assert(offsetof(rh_cuda_state_info, reserved2) == 100);
static_assert(has_type<decltype(rh_cuda_state_info::reserved2), int32_t>);

static_assert(std::is_standard_layout_v<rh_cuda_diagnostics> && std::is_trivially_copyable_v<rh_cuda_diagnostics>);
static_assert(sizeof(rh_cuda_diagnostics) == 88);
static_assert(alignof(rh_cuda_diagnostics) == 8);
static_assert(offsetof(rh_cuda_diagnostics, converged) == 0);
static_assert(has_type<decltype(rh_cuda_diagnostics::converged), int32_t>);
static_assert(offsetof(rh_cuda_diagnostics, solver) == 4);
static_assert(has_type<decltype(rh_cuda_diagnostics::solver), int32_t>);
static_assert(offsetof(rh_cuda_diagnostics, n_iter) == 8);
static_assert(has_type<decltype(rh_cuda_diagnostics::n_iter), int64_t>);
static_assert(offsetof(rh_cuda_diagnostics, objective) == 16);
static_assert(has_type<decltype(rh_cuda_diagnostics::objective), double>);
static_assert(offsetof(rh_cuda_diagnostics, lambda) == 24);
static_assert(has_type<decltype(rh_cuda_diagnostics::lambda), double>);
static_assert(offsetof(rh_cuda_diagnostics, bandwidth) == 32);
static_assert(has_type<decltype(rh_cuda_diagnostics::bandwidth), double>);
static_assert(offsetof(rh_cuda_diagnostics, line_search_halvings) == 40);
static_assert(has_type<decltype(rh_cuda_diagnostics::line_search_halvings), int64_t>);
static_assert(offsetof(rh_cuda_diagnostics, rcond) == 48);
static_assert(has_type<decltype(rh_cuda_diagnostics::rcond), double>);
static_assert(offsetof(rh_cuda_diagnostics, drift_statistic) == 56);
static_assert(has_type<decltype(rh_cuda_diagnostics::drift_statistic), double>);
static_assert(offsetof(rh_cuda_diagnostics, drift_df) == 64);
static_assert(has_type<decltype(rh_cuda_diagnostics::drift_df), double>);
static_assert(offsetof(rh_cuda_diagnostics, drift_pvalue) == 72);
static_assert(has_type<decltype(rh_cuda_diagnostics::drift_pvalue), double>);
static_assert(offsetof(rh_cuda_diagnostics, stationarity_step) == 80);
static_assert(has_type<decltype(rh_cuda_diagnostics::stationarity_step), double>);

static_assert(std::is_standard_layout_v<rh_cuda_engine_stats> && std::is_trivially_copyable_v<rh_cuda_engine_stats>);
static_assert(sizeof(rh_cuda_engine_stats) == 32);
static_assert(alignof(rh_cuda_engine_stats) == 8);
static_assert(offsetof(rh_cuda_engine_stats, updates) == 0);
static_assert(has_type<decltype(rh_cuda_engine_stats::updates), int64_t>);
static_assert(offsetof(rh_cuda_engine_stats, device_allocations) == 8);
static_assert(has_type<decltype(rh_cuda_engine_stats::device_allocations), int64_t>);
static_assert(offsetof(rh_cuda_engine_stats, device_bytes) == 16);
static_assert(has_type<decltype(rh_cuda_engine_stats::device_bytes), int64_t>);
static_assert(offsetof(rh_cuda_engine_stats, pinned_bytes) == 24);
static_assert(has_type<decltype(rh_cuda_engine_stats::pinned_bytes), int64_t>);
