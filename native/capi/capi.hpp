#pragma once
// What the source files of librhuber_cpu.so (rh_cpu.h) share: the one translation of C++
// exceptions into status codes and the calling thread's last message. Each source file
// implements one part of the header: library.cpp the library's calls, engine.cpp the engine,
// bricks.cpp the profiler, tuner.cpp the tuner's models, fault_hooks.cpp the test hooks.

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>

#include "rh/bricks/bricks.hpp"
#include "rh/error.hpp"
#include "rh/tuner/safetensors.hpp"
#include "rh_cpu.h"

struct rh_cpu_profiler_s {
  std::shared_ptr<rh::bricks::Profiler> profiler;
};

namespace rh::capi {

// The message of the last failed call on this thread (rh_cpu_last_error).
std::string& last_error();

// Runs `body`; an exception becomes its status code and the thread's message. Never throws.
template <class Body>
int guarded(Body&& body) noexcept {
  try {
    body();
    return RH_CPU_OK;
  } catch (const rh::tuner::ModelFormatError& e) {
    last_error() = e.what();
    return RH_CPU_ERROR_MODEL_FORMAT;
  } catch (const rh::InvalidArgument& e) {
    last_error() = e.what();
    return RH_CPU_ERROR_INVALID_ARGUMENT;
  } catch (const rh::NumericalError& e) {
    last_error() = e.what();
    return RH_CPU_ERROR_NUMERICAL;
  } catch (const std::bad_alloc&) {
    last_error() = "out of memory";
    return RH_CPU_ERROR_OUT_OF_MEMORY;
  } catch (const std::invalid_argument& e) {
    last_error() = e.what();
    return RH_CPU_ERROR_INVALID_ARGUMENT;
  } catch (const std::exception& e) {
    last_error() = e.what();
    return RH_CPU_ERROR_INTERNAL;
  } catch (...) {
    last_error() = "unknown C++ exception";
    return RH_CPU_ERROR_INTERNAL;
  }
}

// A required pointer argument: InvalidArgument naming it when null.
template <class P>
P* need(P* pointer, const char* name) {
  if (pointer == nullptr) fail(name, " must not be NULL");
  return pointer;
}

// A copy the caller frees with rh_cpu_string_free.
inline rh_cpu_string new_string(std::string_view text) {
  auto* out = new char[text.size() + 1];
  std::memcpy(out, text.data(), text.size());
  out[text.size()] = '\0';
  return out;
}

}  // namespace rh::capi
