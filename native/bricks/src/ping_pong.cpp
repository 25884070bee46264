#include <algorithm>
#include <map>

#include "rh/bricks/graph_algorithms.hpp"

namespace rh::bricks {

std::vector<PingPong> detect_ping_pong(const ExecutionGraph& g, std::uint32_t min_flips) {
  const auto& nodes = g.nodes();
  // A brick that encloses a transfer is not compute *between* transfers: mark transfer ancestors.
  std::vector<NodeId> parent(g.size(), static_cast<NodeId>(-1));
  for (const Edge& e : g.edges()) {
    const bool hierarchy = e.kind == EdgeKind::contains || e.kind == EdgeKind::launches ||
                           e.kind == EdgeKind::transfer;
    if (hierarchy && g.is_work(e.src)) parent[e.dst] = e.src;
  }
  std::vector<bool> encloses_transfer(g.size(), false);
  for (NodeId v = 0; v < g.size(); ++v) {
    if (nodes[v].kind != NodeKind::transfer) continue;
    for (NodeId p = parent[v]; p != NodeId(-1) && !encloses_transfer[p]; p = parent[p]) {
      encloses_transfer[p] = true;
    }
  }

  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<NodeId>> by_iteration;
  for (NodeId v = 0; v < g.size(); ++v) {
    if (g.is_work(v) && nodes[v].batch != kNoBatch) {
      by_iteration[{nodes[v].batch, nodes[v].iteration}].push_back(v);
    }
  }

  std::vector<PingPong> found;
  for (auto& [key, ids] : by_iteration) {
    std::stable_sort(ids.begin(), ids.end(), [&](NodeId a, NodeId b) {
      return nodes[a].start_ns < nodes[b].start_ns;
    });
    PingPong pp{key.first, key.second, 0, 0};
    Direction last = Direction::none;
    std::uint64_t last_bytes = 0;
    bool last_counted = false, compute_since = false;
    for (const NodeId v : ids) {
      const Node& n = nodes[v];
      if (n.kind != NodeKind::transfer) {
        if (!encloses_transfer[v]) compute_since = true;
        continue;
      }
      if (n.direction != Direction::h2d && n.direction != Direction::d2h) continue;
      const bool flip = last != Direction::none && n.direction != last && compute_since;
      if (flip) {
        ++pp.flips;
        pp.bytes += n.bytes + (last_counted ? 0 : last_bytes);
      }
      last = n.direction;
      last_bytes = n.bytes;
      last_counted = flip;
      compute_since = false;
    }
    if (pp.flips >= min_flips && pp.flips > 0) found.push_back(pp);
  }
  return found;
}

}  // namespace rh::bricks
