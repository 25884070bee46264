#pragma once
// What the C ABIs (rh_cpu.h, rh_cuda.h) share at their boundary: no exception crosses it. A call
// that fails returns its status code and leaves its message for the calling thread's
// *_last_error(); each library says which exception means which code (its classify function:
// its exceptions and codes differ), this header does the rest the same way for both.
// C++ only, for the libraries' sources; no BLAS, CUDA or Python.

#include <exception>
#include <string>
#include <utility>

#include "rh/error.hpp"

namespace rh::c_abi {

// An exception's status code and message, as one library's C ABI reports them.
using Classify = std::pair<int, std::string> (*)(const std::exception_ptr&);

// The status of `failure`, its message stored in `last_error`; `internal` when even the message
// cannot be stored. Never throws.
inline int record(const std::exception_ptr& failure, Classify classify, std::string& last_error,
                  int internal) noexcept {
  try {
    auto [status, message] = classify(failure);
    last_error = std::move(message);
    return status;
  } catch (...) {
    return internal;
  }
}

// Runs `body`: `ok` when it returns, the recorded failure when it throws. Never throws.
template <class Body>
int guarded(Classify classify, std::string& last_error, int ok, int internal,
            Body&& body) noexcept {
  try {
    body();
    return ok;
  } catch (...) {
    return record(std::current_exception(), classify, last_error, internal);
  }
}

// A required pointer argument: InvalidArgument naming it when null.
template <class P>
P* need(P* pointer, const char* name) {
  if (pointer == nullptr) fail(name, " must not be NULL");
  return pointer;
}

}  // namespace rh::c_abi
