// Times a device sleep through the bricks profiler with the CUDA-event clock, in per-batch sync
// mode, and prints the report; then checks that a failing clock poisons itself instead of
// throwing. Without a GPU it explains why and exits with status 2.
#include <cuda_runtime.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cuda_event_clock.hpp"
#include "rh/bricks/scope.hpp"

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: nothing to time\n");
    return 2;
  }
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) return 1;
  {
    rh::bricks::Options options;
    options.sync_mode = rh::bricks::SyncMode::per_batch;
    options.track_page_faults = false;
    rh::bricks::Profiler profiler(rh::bricks::BrickTable({{0, "copy", rh::bricks::Category::data}}, 16),
                                  options, std::make_unique<rh::cuda::CudaEventClock>(stream));
    void* buffer = nullptr;
    constexpr std::size_t bytes = std::size_t{64} << 20;
    if (cudaMalloc(&buffer, bytes) != cudaSuccess) return 1;
    for (int batch = 0; batch < 3; ++batch) {
      profiler.begin_batch(1);
      {
        RH_BRICK_SCOPE(profiler, 0, 0, bytes, 0);
        cudaMemsetAsync(buffer, batch, bytes, stream);
      }
      profiler.end_batch();
    }
    cudaFree(buffer);
    std::printf("%s\n", profiler.to_json().c_str());
  }
  {
    // A failure never throws out of the profiler's noexcept scopes: the clock keeps it, reads 0
    // from then on, and error() names it for the engine to report when the profile is read.
    rh::cuda::CudaEventClock clock(stream, 4);
    const auto token = clock.mark();
    clock.synchronize();
    const bool healthy = clock.error().empty() && clock.resolve_ns(token) >= 0;
    clock.resolve_ns(token + 1);  // never issued
    const std::string error = clock.error();
    if (!healthy || error.find("not a live mark") == std::string::npos ||
        clock.resolve_ns(token) != 0) {
      std::printf("the poisoned clock misbehaves: healthy %d, error '%s'\n", healthy,
                  error.c_str());
      return 1;
    }
    std::printf("poisoned clock: %s\n", error.c_str());
  }
  cudaStreamDestroy(stream);
  return 0;
}
