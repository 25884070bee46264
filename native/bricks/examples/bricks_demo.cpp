// Profiles a made-up batch loop (two threads, nested bricks, transfers, kernels) and writes every
// export into a directory, so other layers can check the formats:
//   bricks_demo OUT_DIR  ->  report.json trace.json graph.dot tree.txt table.txt breakdown.txt
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "rh/bricks/bricks.hpp"

namespace rb = rh::bricks;

namespace {

enum class Brick : rb::BrickId { stage, residual, gram, solve, transfer };

void busy(std::chrono::microseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

bool write(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  rb::Options options;
  options.trace_capacity = 4096;
  rb::Profiler prof(rb::BrickTable({{0, "stage", rb::Category::data},
                                    {1, "residual", rb::Category::blas2},
                                    {2, "gram", rb::Category::blas3},
                                    {3, "solve", rb::Category::factor},
                                    {4, "transfer", rb::Category::data}},
                                   16),
                    options);
  prof.name_thread("driver");
  prof.set_metadata("example", "bricks_demo");
  constexpr std::uint64_t n = 1000, d = 20;
  for (int batch = 0; batch < 3; ++batch) {
    prof.begin_batch(n);
    { RH_BRICK_TRANSFER(prof, Brick::stage, rb::Direction::h2d, n * d * 8); busy(std::chrono::microseconds(40)); }
    for (std::uint32_t it = 0; it < 3; ++it) {
      prof.set_iteration(it);
      // The helper's gram overlaps the driver's residual. Nothing records the join, so the graph
      // sees two independent per-thread chains (a depends_on edge would tie them).
      std::thread helper([&prof] {
        RH_BRICK_SCOPE(prof, Brick::gram, n, n * d * 8, n * d * d);
        busy(std::chrono::microseconds(60));
      });
      {
        RH_BRICK_SCOPE(prof, Brick::residual, n * d, n * d * 8, 2 * n * d);
        RH_BRICK_KERNEL(prof, "residual_kernel");
        busy(std::chrono::microseconds(30));
      }
      helper.join();
      {
        RH_BRICK_SCOPE(prof, Brick::solve, d, d * d * 8, d * d * d / 3);
        busy(std::chrono::microseconds(10));
        { RH_BRICK_TRANSFER(prof, Brick::transfer, rb::Direction::d2h, d * 8); busy(std::chrono::microseconds(5)); }
      }
    }
    prof.end_batch();
  }

  const rb::ExecutionGraph graph = prof.graph();
  const rb::Report report = prof.report();
  const bool ok = write(dir + "/report.json", rb::to_json(report)) &&
                  write(dir + "/trace.json", prof.to_chrome_trace()) &&
                  write(dir + "/graph.dot", graph.to_dot()) &&
                  write(dir + "/tree.txt", graph.to_ascii_tree()) &&
                  write(dir + "/table.txt", rb::format_table(report)) &&
                  write(dir + "/breakdown.txt", rb::format_breakdown(prof.breakdown()));
  if (!ok) {
    std::fprintf(stderr, "bricks_demo: cannot write into '%s'\n", dir.c_str());
    return 1;
  }
  std::fputs(rb::format_table(report).c_str(), stdout);
  std::fputs(rb::format_critical_path(graph, rb::critical_path(graph)).c_str(), stdout);
  if (const auto god = rb::god_brick(graph)) {
    std::printf("god brick: %s (%.1f %% of self time%s)\n", god->rank.name.c_str(),
                100.0 * god->rank.time_share, god->dominant ? ", dominant" : "");
  }
  return 0;
}
