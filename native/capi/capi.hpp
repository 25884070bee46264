#pragma once
// What the source files of librhuber_cpu.so (rh_cpu.h) share: the translation of C++ exceptions
// into status codes (rh/c_abi.hpp, with the classify below) and the calling thread's last message. Each source file
// implements one part of the header: library.cpp the library's calls, engine.cpp the engine,
// bricks.cpp the profiler, tuner.cpp the tuner's models, screen.cpp the regime screen,
// fault_hooks.cpp the test hooks.

#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "rh/bricks/bricks.hpp"
#include "rh/c_abi.hpp"
#include "rh/error.hpp"
#include "rh/tuner/safetensors.hpp"
#include "rh_cpu.h"

struct rh_cpu_profiler_s {
  std::shared_ptr<rh::bricks::Profiler> profiler;
};

namespace rh::capi {

// The message of the last failed call on this thread (rh_cpu_last_error).
std::string& last_error();

// Which status code and message each exception becomes (library.cpp).
std::pair<int, std::string> classify(const std::exception_ptr& failure);

// Runs `body`; an exception becomes its status code and the thread's message. Never throws.
template <class Body>
int guarded(Body&& body) noexcept {
  return c_abi::guarded(classify, last_error(), RH_CPU_OK, RH_CPU_ERROR_INTERNAL,
                        std::forward<Body>(body));
}

using c_abi::need;

// A copy the caller frees with rh_cpu_string_free.
inline rh_cpu_string new_string(std::string_view text) {
  auto* out = new char[text.size() + 1];
  std::memcpy(out, text.data(), text.size());
  out[text.size()] = '\0';
  return out;
}

}  // namespace rh::capi
