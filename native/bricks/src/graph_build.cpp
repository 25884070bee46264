#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "rh/bricks/graph.hpp"

namespace rh::bricks {

namespace {

struct Span {
  std::int64_t start = std::numeric_limits<std::int64_t>::max();
  std::int64_t end = std::numeric_limits<std::int64_t>::min();
  void cover(const Event& e) {
    start = std::min(start, e.start_ns);
    end = std::max(end, e.start_ns + e.duration_ns);
  }
};

NodeKind node_kind(EventKind k) {
  switch (k) {
    case EventKind::kernel: return NodeKind::kernel;
    case EventKind::transfer: return NodeKind::transfer;
    default: return NodeKind::brick;
  }
}

EdgeKind edge_to(const Node& parent, const Node& child) {
  if (child.kind == NodeKind::transfer) return EdgeKind::transfer;
  if (child.kind == NodeKind::kernel && parent.kind == NodeKind::brick) return EdgeKind::launches;
  return EdgeKind::contains;
}

}  // namespace

ExecutionGraph build_graph(const std::vector<Event>& events, const BrickTable& table) {
  std::vector<Event> sorted = events;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Event& a, const Event& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    if (a.duration_ns != b.duration_ns) return a.duration_ns > b.duration_ns;
    return a.depth < b.depth;
  });

  // Batch and iteration nodes span the events recorded in them.
  std::map<std::uint32_t, Span> batch_span;
  std::map<std::pair<std::uint32_t, std::uint32_t>, Span> iter_span;
  for (const Event& e : sorted) {
    if (e.batch == kNoBatch) continue;
    batch_span[e.batch].cover(e);
    iter_span[{e.batch, e.iteration}].cover(e);
  }

  ExecutionGraph g;
  std::map<std::uint32_t, NodeId> batch_node;
  std::map<std::pair<std::uint32_t, std::uint32_t>, NodeId> iter_node;
  NodeId prev_batch = 0;
  for (const auto& [b, span] : batch_span) {
    Node n;
    n.kind = NodeKind::batch;
    n.label = "batch " + std::to_string(b);
    n.batch = b;
    n.start_ns = span.start;
    n.duration_ns = span.end - span.start;
    const NodeId id = g.add_node(std::move(n));
    if (!batch_node.empty()) g.add_edge(prev_batch, id, EdgeKind::sequence);
    batch_node[b] = prev_batch = id;
  }
  std::uint32_t last_batch = kNoBatch;
  NodeId prev_iter = 0;
  for (const auto& [key, span] : iter_span) {
    Node n;
    n.kind = NodeKind::iteration;
    n.label = "iteration " + std::to_string(key.second);
    n.batch = key.first;
    n.iteration = key.second;
    n.start_ns = span.start;
    n.duration_ns = span.end - span.start;
    const NodeId id = g.add_node(std::move(n));
    g.add_edge(batch_node[key.first], id, EdgeKind::contains);
    if (last_batch == key.first) g.add_edge(prev_iter, id, EdgeKind::sequence);
    last_batch = key.first;
    iter_node[key] = prev_iter = id;
  }

  // Work nodes: per thread, the enclosing open event is the parent (scopes nest strictly).
  struct Open {
    NodeId id;
    std::int64_t start, end;
  };
  std::vector<Open> stack;
  std::uint32_t thread = 0;
  bool have_prev_top = false;
  NodeId prev_top = 0;
  for (const Event& e : sorted) {
    if (e.thread != thread) {
      stack.clear();
      have_prev_top = false;
      thread = e.thread;
    }
    const std::int64_t end = e.start_ns + e.duration_ns;
    while (!stack.empty() && !(stack.back().start <= e.start_ns && end <= stack.back().end)) {
      stack.pop_back();
    }
    Node n;
    n.kind = node_kind(e.kind);
    if (e.kind == EventKind::kernel) {
      n.label = e.site && e.site->label ? e.site->label : "kernel";
    } else {
      n.label = e.brick < table.size() ? table[e.brick].name : "brick " + std::to_string(e.brick);
    }
    n.brick = e.brick;
    n.batch = e.batch;
    n.iteration = e.iteration;
    n.thread = e.thread;
    n.start_ns = e.start_ns;
    n.duration_ns = e.duration_ns;
    n.elements = e.elements;
    n.bytes = e.bytes;
    n.flops = e.flops;
    n.direction = e.direction;
    const NodeId id = g.add_node(std::move(n));
    if (stack.empty()) {
      if (e.batch != kNoBatch) {
        const NodeId parent = iter_node[{e.batch, e.iteration}];
        g.add_edge(parent, id, edge_to(g.nodes()[parent], g.nodes()[id]));
      }
      if (have_prev_top) g.add_edge(prev_top, id, EdgeKind::sequence);
      prev_top = id;
      have_prev_top = true;
    } else {
      const NodeId parent = stack.back().id;
      g.add_edge(parent, id, edge_to(g.nodes()[parent], g.nodes()[id]));
    }
    stack.push_back(Open{id, e.start_ns, end});
  }
  return g;
}

}  // namespace rh::bricks
