#pragma once
// A batch arriving through the C ABI: its descriptors checked, its values validated
// (docs/numerics.md, "Validation order", with the CPU engine's messages), and its arrays on the
// device: host arrays staged into the workspace, device arrays read in place.

#include <concepts>

#include "engine_internal.hpp"
#include "objective.hpp"
#include "rh/config.hpp"
#include "rh/state.hpp"
#include "rh_cuda.h"

namespace rh::cuda {

// `state` is the caller's state (validated against the batch); the workspace must be reserved
// for the batch's shape.
template <std::floating_point T>
DeviceBatch<T> prepare_batch(EngineCore& core, Workspace<T>& workspace,
                             const StateView<T>& state, const rh_cuda_array& X,
                             const rh_cuda_array& y, const rh_cuda_array* sample_weight,
                             const Config& config);

// The layout, dtype and device checks every array of the ABI goes through; `name` is the
// caller's word for it ("X", "y", "sample_weight", "out").
void check_descriptor(const EngineCore& core, const rh_cuda_array& array, const char* name,
                      std::int32_t dtype);

}  // namespace rh::cuda
