// rh_cpu.h: the library's own calls (version, errors, strings, BLAS).

#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "capi.hpp"
#include "rh/cpu/engine.hpp"

namespace rh::capi {

std::string& last_error() {
  thread_local std::string message;
  return message;
}

std::pair<int, std::string> classify(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const rh::tuner::ModelFormatError& e) {
    return {RH_CPU_ERROR_MODEL_FORMAT, e.what()};
  } catch (const rh::InvalidArgument& e) {
    return {RH_CPU_ERROR_INVALID_ARGUMENT, e.what()};
  } catch (const rh::NumericalError& e) {
    return {RH_CPU_ERROR_NUMERICAL, e.what()};
  } catch (const std::bad_alloc&) {
    return {RH_CPU_ERROR_OUT_OF_MEMORY, "out of memory"};
  } catch (const std::invalid_argument& e) {
    return {RH_CPU_ERROR_INVALID_ARGUMENT, e.what()};
  } catch (const std::exception& e) {
    return {RH_CPU_ERROR_INTERNAL, e.what()};
  } catch (...) {
    return {RH_CPU_ERROR_INTERNAL, "unknown C++ exception"};
  }
}

}  // namespace rh::capi

extern "C" {

uint32_t rh_cpu_abi_version(void) { return RH_CPU_ABI_VERSION; }

const char* rh_cpu_version(void) { return RH_VERSION; }

const char* rh_cpu_last_error(void) { return rh::capi::last_error().c_str(); }

const char* rh_cpu_status_name(int status) {
  switch (status) {
    case RH_CPU_OK:
      return "ok";
    case RH_CPU_ERROR_INVALID_ARGUMENT:
      return "invalid_argument";
    case RH_CPU_ERROR_NUMERICAL:
      return "numerical";
    case RH_CPU_ERROR_OUT_OF_MEMORY:
      return "out_of_memory";
    case RH_CPU_ERROR_MODEL_FORMAT:
      return "model_format";
    case RH_CPU_ERROR_INTERNAL:
      return "internal";
    default:
      return "unknown";
  }
}

void rh_cpu_string_free(rh_cpu_string string) { delete[] string; }

const char* rh_cpu_contract_features(void) {
  return "lambda_schedule,smoothed_curvature,inference_sums,inference_matrices,forgetting,"
         "drift_test,qr";
}

const char* rh_cpu_blas_provider(void) {
  static const std::string provider = rh::cpu::blas_provider();
  return provider.c_str();
}

int64_t rh_cpu_blas_threads(void) { return static_cast<int64_t>(rh::cpu::blas_threads()); }

}  // extern "C"
