#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "rh/bricks/graph_algorithms.hpp"

namespace rh::bricks {

namespace {

// Top-level work: a brick, kernel or transfer node with no hierarchy edge from another work node.
std::vector<bool> schedule_nodes(const ExecutionGraph& g) {
  std::vector<bool> in(g.size(), false);
  for (NodeId i = 0; i < g.size(); ++i) in[i] = g.is_work(i);
  for (const Edge& e : g.edges()) {
    const bool hierarchy = e.kind == EdgeKind::contains || e.kind == EdgeKind::launches ||
                           e.kind == EdgeKind::transfer;
    if (hierarchy && g.is_work(e.src)) in[e.dst] = false;
  }
  return in;
}

}  // namespace

CriticalPath critical_path(const ExecutionGraph& g) {
  const std::size_t n = g.size();
  const std::vector<bool> in = schedule_nodes(g);
  std::vector<std::vector<NodeId>> succ(n), pred(n);
  for (const Edge& e : g.edges()) {
    if (e.kind != EdgeKind::sequence && e.kind != EdgeKind::depends_on) continue;
    if (!in[e.src] || !in[e.dst]) continue;
    succ[e.src].push_back(e.dst);
    pred[e.dst].push_back(e.src);
  }

  // Kahn's algorithm, lowest id first among ready nodes, so ties resolve the same way every run.
  std::vector<std::size_t> indeg(n, 0);
  for (NodeId v = 0; v < n; ++v) indeg[v] = pred[v].size();
  std::vector<NodeId> ready, order;
  for (NodeId v = 0; v < n; ++v) {
    if (in[v] && indeg[v] == 0) ready.push_back(v);
  }
  std::make_heap(ready.begin(), ready.end(), std::greater<>());
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), std::greater<>());
    const NodeId v = ready.back();
    ready.pop_back();
    order.push_back(v);
    for (const NodeId w : succ[v]) {
      if (--indeg[w] == 0) {
        ready.push_back(w);
        std::push_heap(ready.begin(), ready.end(), std::greater<>());
      }
    }
  }
  const auto dag_size = static_cast<std::size_t>(std::count(in.begin(), in.end(), true));
  if (order.size() != dag_size) {
    throw std::invalid_argument("sequence/depends_on edges form a cycle: " +
                                std::to_string(dag_size - order.size()) +
                                " nodes cannot be ordered, so there is no critical path");
  }

  auto dur = [&](NodeId v) { return std::max<std::int64_t>(g.nodes()[v].duration_ns, 0); };
  // to[v]: longest path ending with v (v included); from[v]: longest path starting with v.
  std::vector<std::int64_t> to(n, 0), from(n, 0);
  std::vector<NodeId> best_pred(n, static_cast<NodeId>(-1));
  for (const NodeId v : order) {
    std::int64_t best = 0;
    for (const NodeId u : pred[v]) {
      if (best_pred[v] == NodeId(-1) || to[u] > best || (to[u] == best && u < best_pred[v])) {
        best = to[u];
        best_pred[v] = u;
      }
    }
    to[v] = best + dur(v);
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    std::int64_t best = 0;
    for (const NodeId w : succ[*it]) best = std::max(best, from[w]);
    from[*it] = best + dur(*it);
  }

  CriticalPath cp;
  cp.slack.assign(n, -1);
  if (order.empty()) return cp;
  NodeId end = order.front();
  for (const NodeId v : order) {
    if (to[v] > to[end] || (to[v] == to[end] && v < end)) end = v;
  }
  cp.length_ns = to[end];
  for (NodeId v = end; v != NodeId(-1); v = best_pred[v]) cp.path.push_back(v);
  std::reverse(cp.path.begin(), cp.path.end());
  for (const NodeId v : order) cp.slack[v] = cp.length_ns - (to[v] + from[v] - dur(v));
  return cp;
}

std::string format_critical_path(const ExecutionGraph& g, const CriticalPath& cp) {
  std::string out = "critical path (" + std::to_string(cp.path.size()) + " nodes):\n";
  char line[256];
  for (const NodeId v : cp.path) {
    const Node& node = g.nodes()[v];
    std::snprintf(line, sizeof line, "  n%-6u %-10s %-24s %14lld ns\n", v,
                  std::string(to_string(node.kind)).c_str(), node.label.c_str(),
                  static_cast<long long>(node.duration_ns));
    out += line;
  }
  out += "length " + std::to_string(cp.length_ns) + " ns\n";
  return out;
}

}  // namespace rh::bricks
