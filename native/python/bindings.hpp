#pragma once
// What the source files of _rhuber_native_cpu share. Each binds one thing: engine.cpp the CPU
// engine, bricks.cpp the profiler, tuner.cpp the tuner's models, fault_hooks.cpp the engine's
// test hooks; module.cpp is the module's entry and its error types.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace rh::python {

namespace nb = nanobind;

// A new NumPy array that owns the vector's buffer.
template <class T>
nb::object to_numpy(std::vector<T>&& values, std::initializer_list<std::size_t> shape) {
  auto owner = std::make_unique<std::vector<T>>(std::move(values));
  T* data = owner->data();
  nb::capsule capsule(owner.get(),
                      [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  owner.release();  // the capsule owns it now
  return nb::cast(nb::ndarray<nb::numpy, T>(data, shape, capsule));
}

void bind_engine(nb::module_& m);
void bind_bricks(nb::module_& m);
void bind_tuner(nb::module_& m);
void bind_fault_hooks(nb::module_& m);

}  // namespace rh::python
