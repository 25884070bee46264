// _rhuber_native_cpu.tuner: inference for the tuner's models (native/tuner, docs/tuner.md
// "C++ inference").

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "rh/error.hpp"
#include "rh/tuner/model.hpp"

namespace rh::python {
namespace {

using namespace nb::literals;

nb::object tuner_predict(const rh::tuner::Model& model,
                         nb::ndarray<const double, nb::c_contig, nb::device::cpu> x) {
  const std::size_t d = model.n_features();
  const std::size_t k = model.n_outputs();
  if (x.ndim() != 1 && x.ndim() != 2) {
    throw rh::InvalidArgument("x must be 1-D (one row) or 2-D (rows), not " +
                              std::to_string(x.ndim()) + "-D");
  }
  const std::size_t rows = x.ndim() == 1 ? 1 : x.shape(0);
  const std::size_t cols = x.ndim() == 1 ? x.shape(0) : x.shape(1);
  if (cols != d) {
    throw rh::InvalidArgument("x has " + std::to_string(cols) + " features, the model " +
                              std::to_string(d));
  }
  std::vector<double> out(rows * k);
  {
    nb::gil_scoped_release release;
    for (std::size_t r = 0; r < rows; ++r) {
      model.predict(std::span<const double>(x.data() + r * d, d),
                    std::span<double>(out.data() + r * k, k));
    }
  }
  if (x.ndim() == 1) return to_numpy(std::move(out), {k});
  return to_numpy(std::move(out), {rows, k});
}

}  // namespace

void bind_tuner(nb::module_& m) {
  namespace rt = rh::tuner;
  nb::module_ t = m.def_submodule(
      "tuner", "Inference for the tuner's models, read from safetensors files (docs/tuner.md).");
  nb::exception<rt::ModelFormatError>(t, "ModelFormatError", PyExc_ValueError);
  nb::class_<rt::Model>(t, "Model",
                        "A tuner model (gbt_regressor, forest_classifier or logistic) loaded "
                        "and validated from a safetensors file.")
      .def_static(
          "load", [](const std::string& path) { return rt::Model::load(path); }, "path"_a,
          nb::call_guard<nb::gil_scoped_release>(),
          "Read and validate a model file; ModelFormatError (a ValueError) when it is corrupt.")
      .def_static(
          "from_bytes",
          [](const nb::bytes& data) {
            return rt::Model::from_bytes(std::span<const std::byte>(
                static_cast<const std::byte*>(data.data()), data.size()));
          },
          "data"_a)
      .def("predict", &tuner_predict, "x"_a,
           "x: one row (1-D) or rows (2-D) of float64 features -> an array of n_outputs per "
           "row: the regressor's prediction, or the classifiers' class probabilities.")
      .def_prop_ro("kind",
                   [](const rt::Model& model) { return std::string(rt::to_string(model.kind())); })
      .def_prop_ro("n_features", &rt::Model::n_features)
      .def_prop_ro("n_outputs", &rt::Model::n_outputs)
      .def_prop_ro("n_trees", &rt::Model::n_trees)
      .def_prop_ro("feature_names",
                   [](const rt::Model& model) {
                     nb::list names;
                     for (const std::string& name : model.feature_names()) names.append(name);
                     return names;
                   })
      .def_prop_ro("classes",
                   [](const rt::Model& model) -> nb::object {
                     const auto it = model.metadata().find("classes");
                     if (it == model.metadata().end()) return nb::list();
                     return nb::module_::import_("json").attr("loads")(it->second);
                   },
                   "The metadata's 'classes' list, decoded from its JSON.")
      .def_prop_ro("metadata", [](const rt::Model& model) {
        nb::dict meta;
        for (const auto& [key, value] : model.metadata()) meta[key.c_str()] = value;
        return meta;
      });
}

}  // namespace rh::python
