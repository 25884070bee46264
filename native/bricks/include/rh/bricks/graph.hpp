// The execution graph: batch -> iteration -> brick -> kernel / transfer nodes, built from traced
// events or by hand, with CSR, DOT and ASCII-tree exports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rh/bricks/brick_table.hpp"
#include "rh/bricks/event.hpp"

namespace rh::bricks {

enum class NodeKind : std::uint8_t { batch, iteration, brick, kernel, transfer };
// contains:   batch -> iteration -> top-level work; brick -> nested brick.
// launches:   brick -> kernel it launched.
// transfer:   brick or iteration -> transfer node.
// sequence:   program order: consecutive batches, consecutive iterations of a batch, consecutive
//             top-level work nodes of one thread.
// depends_on: an explicit cross-thread / cross-stream dependency (producer -> consumer).
enum class EdgeKind : std::uint8_t { contains, sequence, launches, depends_on, transfer };
inline constexpr std::size_t kEdgeKindCount = 5;

std::string_view to_string(NodeKind k) noexcept;
std::string_view to_string(EdgeKind k) noexcept;

using NodeId = std::uint32_t;

struct Node {
  NodeKind kind = NodeKind::brick;
  std::string label;
  BrickId brick = kNoBrick;
  std::uint32_t batch = kNoBatch;
  std::uint32_t iteration = 0;
  std::uint32_t thread = 0;
  std::int64_t start_ns = 0;
  std::int64_t duration_ns = 0;
  std::uint64_t elements = 0;
  std::uint64_t bytes = 0;
  std::uint64_t flops = 0;
  Direction direction = Direction::none;
};

struct Edge {
  NodeId src;
  NodeId dst;
  EdgeKind kind;
};

// Compressed sparse rows over out-edges, sources in id order and each row in insertion order.
struct CsrGraph {
  std::vector<std::uint32_t> offsets;  // nodes + 1
  std::vector<NodeId> targets;
  std::vector<EdgeKind> kinds;
};

class ExecutionGraph {
 public:
  NodeId add_node(Node node);
  // Throws std::out_of_range for an unknown node and std::invalid_argument for a self-loop.
  void add_edge(NodeId src, NodeId dst, EdgeKind kind);

  const std::vector<Node>& nodes() const noexcept { return nodes_; }
  const std::vector<Edge>& edges() const noexcept { return edges_; }
  std::size_t size() const noexcept { return nodes_.size(); }
  // Brick, kernel or transfer: the kinds that do work (NodeKind lists them after the hierarchy).
  bool is_work(NodeId id) const { return nodes_.at(id).kind >= NodeKind::brick; }

  CsrGraph to_csr() const;
  // Graphviz text; node ids are "n<index>", edge style says the kind.
  std::string to_dot() const;
  // The contains / launches / transfer hierarchy, children in start order. Several roots hang
  // under a synthetic "run"; an empty graph prints "(empty graph)". Byte-for-byte deterministic.
  std::string to_ascii_tree() const;

 private:
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
};

// Builds the graph from events (Profiler::events()): nesting per thread from time containment,
// kinds from the events, names from the table.
ExecutionGraph build_graph(const std::vector<Event>& events, const BrickTable& table);

}  // namespace rh::bricks
