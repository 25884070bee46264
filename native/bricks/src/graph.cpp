#include "rh/bricks/graph.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <stdexcept>

namespace rh::bricks {

std::string_view to_string(NodeKind k) noexcept {
  constexpr std::array<std::string_view, 5> names = {"batch", "iteration", "brick", "kernel",
                                                     "transfer"};
  return names[static_cast<std::size_t>(k)];
}

std::string_view to_string(EdgeKind k) noexcept {
  constexpr std::array<std::string_view, kEdgeKindCount> names = {
      "contains", "sequence", "launches", "depends_on", "transfer"};
  return names[static_cast<std::size_t>(k)];
}

NodeId ExecutionGraph::add_node(Node node) {
  nodes_.push_back(std::move(node));
  return static_cast<NodeId>(nodes_.size() - 1);
}

void ExecutionGraph::add_edge(NodeId src, NodeId dst, EdgeKind kind) {
  if (src >= nodes_.size() || dst >= nodes_.size()) {
    throw std::out_of_range("edge " + std::to_string(src) + " -> " + std::to_string(dst) +
                            " names a node outside the graph (" + std::to_string(nodes_.size()) +
                            " nodes)");
  }
  if (src == dst) throw std::invalid_argument("self-loop on node " + std::to_string(src));
  edges_.push_back(Edge{src, dst, kind});
}

CsrGraph ExecutionGraph::to_csr() const {
  CsrGraph csr;
  csr.offsets.assign(nodes_.size() + 1, 0);
  for (const Edge& e : edges_) ++csr.offsets[e.src + 1];
  for (std::size_t i = 0; i < nodes_.size(); ++i) csr.offsets[i + 1] += csr.offsets[i];
  csr.targets.resize(edges_.size());
  csr.kinds.resize(edges_.size());
  std::vector<std::uint32_t> next(csr.offsets.begin(), csr.offsets.end() - 1);
  for (const Edge& e : edges_) {
    const std::uint32_t slot = next[e.src]++;
    csr.targets[slot] = e.dst;
    csr.kinds[slot] = e.kind;
  }
  return csr;
}

namespace {

std::string format_duration(std::int64_t ns) {
  char buf[32];
  const double v = double(ns);
  if (ns < 1000) std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  else if (ns < 1000000) std::snprintf(buf, sizeof buf, "%.3f us", v / 1e3);
  else if (ns < 1000000000) std::snprintf(buf, sizeof buf, "%.3f ms", v / 1e6);
  else std::snprintf(buf, sizeof buf, "%.3f s", v / 1e9);
  return buf;
}

std::string describe(const Node& n) {
  std::string s = n.label + "  " + format_duration(n.duration_ns);
  switch (n.kind) {
    case NodeKind::brick:
      s += "  (" + std::to_string(n.elements) + " elem, " + std::to_string(n.bytes) + " B, " +
           std::to_string(n.flops) + " flop)";
      break;
    case NodeKind::transfer:
      s += "  [" + std::string(to_string(n.direction)) + " " + std::to_string(n.bytes) + " B]";
      break;
    case NodeKind::kernel: s += "  [kernel]"; break;
    default: break;
  }
  return s;
}

bool hierarchical(EdgeKind k) {
  return k == EdgeKind::contains || k == EdgeKind::launches || k == EdgeKind::transfer;
}

void dot_escape(std::string& out, std::string_view s) {
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
}

}  // namespace

std::string ExecutionGraph::to_dot() const {
  constexpr std::array<std::string_view, kEdgeKindCount> style = {
      "solid", "dashed", "bold", "dotted", "tapered"};
  constexpr std::array<std::string_view, 5> shape = {"folder", "box3d", "box", "ellipse",
                                                     "cds"};
  std::string out = "digraph execution {\n  rankdir=TB;\n";
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    out += "  n" + std::to_string(i) + " [shape=" +
           std::string(shape[static_cast<std::size_t>(nodes_[i].kind)]) + ", label=\"";
    dot_escape(out, describe(nodes_[i]));
    out += "\"];\n";
  }
  for (const Edge& e : edges_) {
    out += "  n" + std::to_string(e.src) + " -> n" + std::to_string(e.dst) + " [label=\"" +
           std::string(to_string(e.kind)) + "\", style=" +
           std::string(style[static_cast<std::size_t>(e.kind)]) + "];\n";
  }
  out += "}\n";
  return out;
}

namespace {

struct TreePrinter {
  const std::vector<Node>& nodes;
  const std::vector<std::vector<NodeId>>& children;
  std::vector<bool> seen;
  std::string out;

  // Recursion depth is the scope nesting depth, which a profiler keeps small. A node reached a
  // second time (hand-built graphs may share children or loop) is marked, not expanded again.
  void list(const std::vector<NodeId>& ids, const std::string& prefix) {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const bool last = i + 1 == ids.size();
      const NodeId id = ids[i];
      out += prefix + (last ? "└── " : "├── ") + describe(nodes[id]) + (seen[id] ? " (again)\n" : "\n");
      if (seen[id]) continue;
      seen[id] = true;
      list(children[id], prefix + (last ? "    " : "│   "));
    }
  }
};

}  // namespace

std::string ExecutionGraph::to_ascii_tree() const {
  if (nodes_.empty()) return "(empty graph)\n";
  std::vector<std::vector<NodeId>> children(nodes_.size());
  std::vector<bool> has_parent(nodes_.size(), false);
  for (const Edge& e : edges_) {
    if (!hierarchical(e.kind)) continue;
    children[e.src].push_back(e.dst);
    has_parent[e.dst] = true;
  }
  auto by_start = [this](NodeId a, NodeId b) {
    if (nodes_[a].start_ns != nodes_[b].start_ns) return nodes_[a].start_ns < nodes_[b].start_ns;
    return a < b;
  };
  std::vector<NodeId> roots;
  for (NodeId i = 0; i < nodes_.size(); ++i) {
    std::sort(children[i].begin(), children[i].end(), by_start);
    if (!has_parent[i]) roots.push_back(i);
  }
  std::sort(roots.begin(), roots.end(), by_start);

  TreePrinter p{nodes_, children, std::vector<bool>(nodes_.size(), false), {}};
  if (roots.size() == 1) {
    p.out = describe(nodes_[roots[0]]) + "\n";
    p.seen[roots[0]] = true;
    p.list(children[roots[0]], "");
  } else {
    // Several roots (or none, when hierarchy edges form a cycle) hang under a synthetic root.
    p.out = "run\n";
    p.list(roots, "");
  }
  return p.out;
}

}  // namespace rh::bricks
