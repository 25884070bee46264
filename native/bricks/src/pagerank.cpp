#include <algorithm>
#include <cmath>
#include <set>

#include "rh/bricks/graph_algorithms.hpp"

namespace rh::bricks {

PageRankResult pagerank(const ExecutionGraph& g, const PageRankOptions& options) {
  PageRankResult r;
  const std::size_t n = g.size();
  if (n == 0) {
    r.converged = true;
    return r;
  }
  std::vector<std::size_t> out_degree(n, 0);
  for (const Edge& e : g.edges()) ++out_degree[e.src];
  const double d = options.damping;
  const double inv_n = 1.0 / double(n);
  r.rank.assign(n, inv_n);
  std::vector<double> next(n);
  for (r.iterations = 1; r.iterations <= options.max_iterations; ++r.iterations) {
    // Rank of dangling nodes goes to every node alike, so the total stays 1.
    double dangling = 0.0;
    for (std::size_t v = 0; v < n; ++v) {
      if (out_degree[v] == 0) dangling += r.rank[v];
    }
    std::fill(next.begin(), next.end(), (1.0 - d) * inv_n + d * dangling * inv_n);
    // Edges in insertion order: the same floating-point sums every run.
    for (const Edge& e : g.edges()) next[e.dst] += d * r.rank[e.src] / double(out_degree[e.src]);
    double change = 0.0;
    for (std::size_t v = 0; v < n; ++v) change += std::fabs(next[v] - r.rank[v]);
    r.rank.swap(next);
    if (change < options.tolerance) {
      r.converged = true;
      return r;
    }
  }
  r.iterations = options.max_iterations;
  return r;
}

std::vector<BrickRank> rank_bricks(const ExecutionGraph& g, const PageRankOptions& options) {
  const auto& nodes = g.nodes();
  auto is_brick = [&](NodeId v) {
    return nodes[v].kind == NodeKind::brick || nodes[v].kind == NodeKind::transfer;
  };
  // Self time: a brick's duration minus the bricks and transfers nested directly in it, so
  // nested time is counted once. Kernels are the brick's own work and stay in it.
  std::vector<std::int64_t> self(g.size(), 0);
  for (NodeId v = 0; v < g.size(); ++v) self[v] = is_brick(v) ? nodes[v].duration_ns : 0;
  for (const Edge& e : g.edges()) {
    const bool hierarchy = e.kind == EdgeKind::contains || e.kind == EdgeKind::transfer;
    if (hierarchy && is_brick(e.src) && is_brick(e.dst)) self[e.src] -= nodes[e.dst].duration_ns;
  }

  const PageRankResult pr = pagerank(g, options);
  std::vector<BrickRank> ranks;
  std::vector<std::set<NodeId>> sources;
  std::int64_t total = 0;
  auto slot = [&](BrickId b, const std::string& name) -> std::size_t {
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i].brick == b) return i;
    }
    ranks.push_back(BrickRank{b, name, 0, 0.0, 0.0, 0, 0});
    sources.emplace_back();
    return ranks.size() - 1;
  };
  for (NodeId v = 0; v < g.size(); ++v) {
    if (!is_brick(v)) continue;
    BrickRank& r = ranks[slot(nodes[v].brick, nodes[v].label)];
    r.self_ns += std::max<std::int64_t>(self[v], 0);
    r.pagerank += pr.rank[v];
    total += std::max<std::int64_t>(self[v], 0);
  }
  for (const Edge& e : g.edges()) {
    if (is_brick(e.dst)) sources[slot(nodes[e.dst].brick, nodes[e.dst].label)].insert(e.src);
    if (is_brick(e.src) && (e.kind == EdgeKind::launches || e.kind == EdgeKind::transfer)) {
      ++ranks[slot(nodes[e.src].brick, nodes[e.src].label)].launches;
    }
  }
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    ranks[i].fan_in = static_cast<std::uint32_t>(sources[i].size());
    ranks[i].time_share = total > 0 ? double(ranks[i].self_ns) / double(total) : 0.0;
  }
  std::sort(ranks.begin(), ranks.end(), [](const BrickRank& a, const BrickRank& b) {
    if (a.time_share != b.time_share) return a.time_share > b.time_share;
    if (a.pagerank != b.pagerank) return a.pagerank > b.pagerank;
    if (a.fan_in != b.fan_in) return a.fan_in > b.fan_in;
    return a.brick < b.brick;
  });
  return ranks;
}

std::optional<GodBrick> god_brick(const ExecutionGraph& g, double share_threshold) {
  const std::vector<BrickRank> ranks = rank_bricks(g);
  if (ranks.empty()) return std::nullopt;
  return GodBrick{ranks.front(), ranks.front().time_share >= share_threshold};
}

}  // namespace rh::bricks
