#pragma once
// The error model: every failure a caller can act on is a typed exception whose message speaks
// the caller's language (argument names, shapes), never a bare status code.

#include <sstream>
#include <stdexcept>

namespace rh {

// Base of every error the library throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input data, a bad parameter, or a state that does not fit the batch.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// The computation produced a value that is not finite; no state is produced from it.
class NumericalError : public Error {
 public:
  using Error::Error;
};

// Throws E with the parts streamed into one message: fail("X has ", n, " rows").
template <class E = InvalidArgument, class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream message;
  (message << ... << parts);
  throw E(message.str());
}

}  // namespace rh
