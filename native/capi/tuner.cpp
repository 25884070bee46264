// rh_cpu.h: inference for the tuner's models (native/tuner, docs/tuner.md "C++ inference").

#include <nlohmann/json.hpp>

#include <cstddef>
#include <span>
#include <string>

#include "capi.hpp"
#include "rh/tuner/model.hpp"

struct rh_cpu_model_s {
  rh::tuner::Model model;
};

extern "C" {

using rh::capi::guarded;
using rh::capi::need;

int rh_cpu_model_load(const char* path, rh_cpu_model_t* out) {
  return guarded([&] {
    need(out, "out");
    *out = new rh_cpu_model_s{rh::tuner::Model::load(need(path, "path"))};
  });
}

int rh_cpu_model_from_bytes(const void* data, uint64_t size, rh_cpu_model_t* out) {
  return guarded([&] {
    need(out, "out");
    const auto* bytes = static_cast<const std::byte*>(size ? need(data, "data") : data);
    *out = new rh_cpu_model_s{rh::tuner::Model::from_bytes(std::span(bytes, size))};
  });
}

int rh_cpu_model_free(rh_cpu_model_t model) {
  return guarded([&] { delete model; });
}

int rh_cpu_model_info_json(rh_cpu_model_t model, rh_cpu_string* out) {
  return guarded([&] {
    const rh::tuner::Model& m = need(model, "model")->model;
    need(out, "out");
    nlohmann::json metadata = nlohmann::json::object();
    for (const auto& [key, value] : m.metadata()) metadata[key] = value;
    const nlohmann::json info = {{"kind", std::string(rh::tuner::to_string(m.kind()))},
                                 {"n_features", m.n_features()},
                                 {"n_outputs", m.n_outputs()},
                                 {"n_trees", m.n_trees()},
                                 {"feature_names", m.feature_names()},
                                 {"metadata", std::move(metadata)}};
    *out = rh::capi::new_string(info.dump());
  });
}

int rh_cpu_model_predict(rh_cpu_model_t model, const double* x, int64_t rows, int64_t cols,
                         double* out) {
  return guarded([&] {
    const rh::tuner::Model& m = need(model, "model")->model;
    const std::size_t d = m.n_features();
    const std::size_t k = m.n_outputs();
    if (rows < 0 || static_cast<std::size_t>(cols) != d) {
      rh::fail("x has ", cols, " features, the model ", d);
    }
    if (rows == 0) return;
    need(x, "x");
    need(out, "out");
    for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) {
      m.predict(std::span<const double>(x + r * d, d), std::span<double>(out + r * k, k));
    }
  });
}

}  // extern "C"
