// _rhuber_native_cpu: the renewable Huber CPU engine for Python. This file is the module's entry
// and its error types; each thing bound has its own source file (bindings.hpp).

#include <nanobind/nanobind.h>

#include <exception>

#include "bindings.hpp"
#include "rh/error.hpp"

namespace nb = nanobind;

NB_MODULE(_rhuber_native_cpu, m) {
  m.doc() = "The renewable Huber CPU engine (C++, OpenBLAS/LAPACK).";
  m.attr("__version__") = RH_VERSION;

  // Translators run newest first: the two typed errors below, then any other rh::Error.
  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    try {
      std::rethrow_exception(error);
    } catch (const rh::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  // Subclasses of the built-in errors the reference engine raises, so callers may catch either.
  nb::exception<rh::InvalidArgument>(m, "InvalidArgument", PyExc_ValueError);
  nb::exception<rh::NumericalError>(m, "NumericalError", PyExc_RuntimeError);

  rh::python::bind_bricks(m);  // first: Engine.set_profiler takes its Profiler
  rh::python::bind_engine(m);
  rh::python::bind_tuner(m);
  rh::python::bind_fault_hooks(m);
}
