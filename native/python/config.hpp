#pragma once
// The one configuration transport of both Python modules (_rhuber_native_cpu and
// _rhuber_native_cuda): the dict of rhuber.core.Config.native_dict, read into an rh::Config
// here, key by key, with errors that name the key. The CUDA module then lays the rh::Config
// out as the C ABI's rh_cuda_config.

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <optional>
#include <string>

#include "rh/config.hpp"
#include "rh/error.hpp"

namespace rh::python {

namespace nb = nanobind;

inline nb::handle required(const nb::dict& dict, const char* dict_name, const char* key) {
  if (!dict.contains(key)) fail(dict_name, " is missing the key '", key, "'");
  return dict[key];
}

template <class Value>
Value scalar(const nb::dict& dict, const char* dict_name, const char* key) {
  const nb::handle value = required(dict, dict_name, key);
  try {
    return nb::cast<Value>(value);
  } catch (const nb::cast_error&) {
    fail(dict_name, "['", key, "'] has the wrong type");
  }
}

template <class Value>
std::optional<Value> optional_scalar(const nb::dict& dict, const char* dict_name,
                                     const char* key) {
  const nb::handle value = required(dict, dict_name, key);
  if (value.is_none()) return std::nullopt;
  return scalar<Value>(dict, dict_name, key);
}

inline L1Solver read_l1_solver(const nb::dict& config) {
  if (!config.contains("l1_solver")) return L1Solver::lamm;
  const auto name = scalar<std::string>(config, "config", "l1_solver");
  if (name == "lamm") return L1Solver::lamm;
  if (name == "prox_newton") return L1Solver::prox_newton;
  fail("config['l1_solver'] must be 'lamm' or 'prox_newton', got '", name, "'");
}

inline Curvature read_curvature(const nb::dict& config) {
  if (!config.contains("curvature")) return Curvature::indicator;
  const auto name = scalar<std::string>(config, "config", "curvature");
  if (name == "indicator") return Curvature::indicator;
  if (name == "smoothed") return Curvature::smoothed;
  fail("config['curvature'] must be 'indicator' or 'smoothed', got '", name, "'");
}

// The keys after l1_solver are contract v3's; a dict without them asks for none of it.
inline Config config_from_dict(const nb::dict& config) {
  Config c;
  c.fit_intercept = scalar<bool>(config, "config", "fit_intercept");
  c.epsilon = scalar<double>(config, "config", "epsilon");
  c.tau = optional_scalar<double>(config, "config", "tau");
  c.alpha = scalar<double>(config, "config", "alpha");
  c.ridge = scalar<double>(config, "config", "ridge");
  c.max_iter = scalar<std::int64_t>(config, "config", "max_iter");
  c.tol = optional_scalar<double>(config, "config", "tol");
  c.l1_solver = read_l1_solver(config);
  if (config.contains("lambda_scale")) {
    c.lambda_scale = optional_scalar<double>(config, "config", "lambda_scale");
  }
  c.curvature = read_curvature(config);
  if (config.contains("bandwidth_scale")) {
    c.bandwidth_scale = scalar<double>(config, "config", "bandwidth_scale");
  }
  if (config.contains("inference_matrices")) {
    c.inference_matrices = scalar<bool>(config, "config", "inference_matrices");
  }
  if (config.contains("half_life")) {
    c.half_life = optional_scalar<double>(config, "config", "half_life");
  }
  if (config.contains("factorization")) {
    const auto name = scalar<std::string>(config, "config", "factorization");
    if (name != "cholesky" && name != "qr") {
      fail("config['factorization'] must be 'cholesky' or 'qr', got '", name, "'");
    }
    c.factorization = name == "qr" ? Factorization::qr : Factorization::cholesky;
  }
  return c;
}

}  // namespace rh::python
