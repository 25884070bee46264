// Analyses over an ExecutionGraph: critical path and slack, PageRank, the god-brick query and
// host<->device ping-pong detection. Definitions in docs/bricks.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rh/bricks/graph.hpp"

namespace rh::bricks {

// The schedule DAG: top-level work nodes (brick, kernel or transfer nodes not nested in another
// work node) and the sequence / depends_on edges between them; a node weighs its duration.
struct CriticalPath {
  std::vector<NodeId> path;         // longest path, source to sink
  std::int64_t length_ns = 0;       // sum of durations along it
  std::vector<std::int64_t> slack;  // per node: length_ns - longest path through it; -1 off the DAG
};
// Throws std::invalid_argument when sequence / depends_on edges form a cycle.
CriticalPath critical_path(const ExecutionGraph& g);
// One line per path node, then the length: stable text for logs and snapshot tests.
std::string format_critical_path(const ExecutionGraph& g, const CriticalPath& cp);

struct PageRankOptions {
  double damping = 0.85;
  double tolerance = 1e-10;  // stop when the L1 change of an iteration is below this
  int max_iterations = 100;
};
struct PageRankResult {
  std::vector<double> rank;  // sums to 1
  int iterations = 0;
  bool converged = false;
};
// Over every edge, in the edge's direction; dangling nodes spread their rank uniformly.
PageRankResult pagerank(const ExecutionGraph& g, const PageRankOptions& options = {});

struct BrickRank {
  BrickId brick = kNoBrick;
  std::string name;
  std::int64_t self_ns = 0;     // node durations minus their nested work children
  double time_share = 0.0;      // self_ns / self time of all work nodes
  double pagerank = 0.0;        // summed over the brick's nodes
  std::uint32_t fan_in = 0;     // distinct nodes with an edge into the brick's nodes
  std::uint32_t launches = 0;   // kernel and transfer nodes under the brick's nodes
};
// Every brick in the graph, best first: time share, then PageRank, then fan-in, then id.
std::vector<BrickRank> rank_bricks(const ExecutionGraph& g, const PageRankOptions& options = {});
struct GodBrick {
  BrickRank rank;
  bool dominant = false;  // time_share >= share_threshold
};
// The first of rank_bricks(); empty when the graph has no brick nodes.
std::optional<GodBrick> god_brick(const ExecutionGraph& g, double share_threshold = 0.5);

// Transfers of one iteration whose direction flips (h2d <-> d2h) with compute in between.
struct PingPong {
  std::uint32_t batch = kNoBatch;
  std::uint32_t iteration = 0;
  std::uint32_t flips = 0;
  std::uint64_t bytes = 0;  // moved by the transfers taking part in a flip
};
// Iterations with at least `min_flips` flips. One flip (upload, compute, download) is the normal
// shape of an offloaded iteration; two or more means data went back and forth.
std::vector<PingPong> detect_ping_pong(const ExecutionGraph& g, std::uint32_t min_flips = 2);

}  // namespace rh::bricks
