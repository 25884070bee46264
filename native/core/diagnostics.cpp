#include "rh/diagnostics.hpp"

namespace rh {

std::string_view to_string(Solver solver) {
  switch (solver) {
    case Solver::cholesky:
      return "cholesky";
    case Solver::lu:
      return "lu";
    case Solver::svd:
      return "svd";
    case Solver::lamm:
      return "lamm";
    case Solver::prox_newton:
      return "prox_newton";
    case Solver::qr:
      return "qr";
  }
  return "unknown";
}

}  // namespace rh
