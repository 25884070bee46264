#include <gtest/gtest.h>

#include "rh/bricks/graph_algorithms.hpp"

namespace rh::bricks {
namespace {

Node work(const std::string& label, BrickId brick, std::int64_t start, std::int64_t dur,
          NodeKind kind = NodeKind::brick, Direction dir = Direction::none, std::uint64_t bytes = 0) {
  Node n;
  n.kind = kind;
  n.label = label;
  n.brick = brick;
  n.batch = 0;
  n.iteration = 0;
  n.start_ns = start;
  n.duration_ns = dur;
  n.direction = dir;
  n.bytes = bytes;
  return n;
}

Node iteration(std::uint32_t i) {
  Node n;
  n.kind = NodeKind::iteration;
  n.label = "iteration " + std::to_string(i);
  n.batch = 0;
  n.iteration = i;
  return n;
}

// A(10) -> B(20) -> D(7) and A -> C(5) -> D, with E(4) nested in B. Longest: A B D = 37.
struct Diamond {
  ExecutionGraph g;
  NodeId it, a, b, c, d, e;
  Diamond() {
    it = g.add_node(iteration(0));
    a = g.add_node(work("A", 0, 0, 10));
    b = g.add_node(work("B", 1, 10, 20));
    c = g.add_node(work("C", 2, 10, 5));
    d = g.add_node(work("D", 3, 30, 7));
    e = g.add_node(work("E", 4, 12, 4));
    for (NodeId v : {a, b, c, d}) g.add_edge(it, v, EdgeKind::contains);
    g.add_edge(b, e, EdgeKind::contains);
    g.add_edge(a, b, EdgeKind::sequence);
    g.add_edge(a, c, EdgeKind::depends_on);
    g.add_edge(b, d, EdgeKind::sequence);
    g.add_edge(c, d, EdgeKind::depends_on);
  }
};

TEST(CriticalPath, LongestPathAndSlackOnADiamond) {
  Diamond x;
  const CriticalPath cp = critical_path(x.g);
  EXPECT_EQ(cp.length_ns, 37);
  EXPECT_EQ(cp.path, (std::vector<NodeId>{x.a, x.b, x.d}));
  EXPECT_EQ(cp.slack[x.a], 0);
  EXPECT_EQ(cp.slack[x.b], 0);
  EXPECT_EQ(cp.slack[x.d], 0);
  EXPECT_EQ(cp.slack[x.c], 15);
  EXPECT_EQ(cp.slack[x.e], -1);   // nested: not scheduled on its own
  EXPECT_EQ(cp.slack[x.it], -1);  // hierarchy, not work
  EXPECT_EQ(format_critical_path(x.g, cp), format_critical_path(x.g, critical_path(x.g)));
  EXPECT_NE(format_critical_path(x.g, cp).find("length 37 ns"), std::string::npos);
}

TEST(CriticalPath, DependsOnCanMakeTheLongerBranchCritical) {
  Diamond x;
  x.g.add_edge(x.c, x.b, EdgeKind::depends_on);  // now A C B D = 42
  const CriticalPath cp = critical_path(x.g);
  EXPECT_EQ(cp.length_ns, 42);
  EXPECT_EQ(cp.path, (std::vector<NodeId>{x.a, x.c, x.b, x.d}));
  EXPECT_EQ(cp.slack[x.c], 0);
}

TEST(CriticalPath, ACycleIsAnError) {
  Diamond x;
  x.g.add_edge(x.d, x.a, EdgeKind::sequence);
  EXPECT_THROW(critical_path(x.g), std::invalid_argument);
}

TEST(CriticalPath, EmptyGraph) {
  const CriticalPath cp = critical_path(ExecutionGraph());
  EXPECT_TRUE(cp.path.empty());
  EXPECT_EQ(cp.length_ns, 0);
}

TEST(PageRank, TwoNodesWithADanglingSinkMatchTheClosedForm) {
  ExecutionGraph g;
  const NodeId a = g.add_node(Node{}), b = g.add_node(Node{});
  g.add_edge(a, b, EdgeKind::sequence);
  const PageRankResult r = pagerank(g);
  // r_a = 0.075 + 0.425 r_b and r_a + r_b = 1  =>  r_a = 0.5 / 1.425.
  EXPECT_TRUE(r.converged);
  EXPECT_LT(r.iterations, 100);
  EXPECT_NEAR(r.rank[a], 0.5 / 1.425, 1e-9);
  EXPECT_NEAR(r.rank[b], 1.0 - 0.5 / 1.425, 1e-9);
}

TEST(PageRank, ACycleIsUniformAndRanksSumToOne) {
  ExecutionGraph g;
  for (int i = 0; i < 3; ++i) g.add_node(Node{});
  g.add_edge(0, 1, EdgeKind::sequence);
  g.add_edge(1, 2, EdgeKind::sequence);
  g.add_edge(2, 0, EdgeKind::sequence);
  const PageRankResult r = pagerank(g);
  for (double x : r.rank) EXPECT_NEAR(x, 1.0 / 3.0, 1e-12);
  Diamond d;
  const PageRankResult rd = pagerank(d.g);
  double sum = 0;
  for (double x : rd.rank) sum += x;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_EQ(rd.rank, pagerank(d.g).rank);  // bit-for-bit deterministic
}

TEST(GodBrick, LargestSelfTimeShareWins) {
  // gemm 60 ns holding factor 20 ns: gemm self 40, factor 20, load 30 => shares 4/9, 2/9, 3/9.
  ExecutionGraph g;
  const NodeId it = g.add_node(iteration(0));
  const NodeId gemm = g.add_node(work("gemm", 3, 0, 60));
  const NodeId factor = g.add_node(work("factor", 4, 10, 20));
  const NodeId load = g.add_node(work("load", 0, 60, 30));
  g.add_edge(it, gemm, EdgeKind::contains);
  g.add_edge(gemm, factor, EdgeKind::contains);
  g.add_edge(it, load, EdgeKind::contains);
  g.add_edge(gemm, load, EdgeKind::sequence);

  const auto ranks = rank_bricks(g);
  ASSERT_EQ(ranks.size(), 3u);
  EXPECT_EQ(ranks[0].name, "gemm");
  EXPECT_EQ(ranks[0].self_ns, 40);
  EXPECT_NEAR(ranks[0].time_share, 4.0 / 9.0, 1e-12);
  EXPECT_EQ(ranks[1].name, "load");
  EXPECT_EQ(ranks[1].fan_in, 2u);  // iteration and gemm
  EXPECT_EQ(ranks[2].name, "factor");

  const auto god = god_brick(g);
  ASSERT_TRUE(god.has_value());
  EXPECT_EQ(god->rank.brick, 3);
  EXPECT_FALSE(god->dominant);
  EXPECT_TRUE(god_brick(g, 0.4)->dominant);
  EXPECT_FALSE(god_brick(ExecutionGraph()).has_value());
}

TEST(GodBrick, EqualSharesAreBrokenByPageRank) {
  // x and y take 10 ns each; y is the target of x's sequence edge, so it has more rank.
  ExecutionGraph g;
  const NodeId x = g.add_node(work("x", 1, 0, 10));
  const NodeId y = g.add_node(work("y", 2, 10, 10));
  g.add_edge(x, y, EdgeKind::sequence);
  EXPECT_EQ(god_brick(g)->rank.name, "y");
}

TEST(PingPong, AlternatingTransfersWithComputeBetweenAreFlagged) {
  ExecutionGraph g;
  auto add_iteration = [&](std::uint32_t i, std::vector<Node> nodes) {
    const NodeId it = g.add_node(iteration(i));
    for (Node& n : nodes) {
      n.iteration = i;
      const NodeId v = g.add_node(n);
      g.add_edge(it, v, n.kind == NodeKind::transfer ? EdgeKind::transfer : EdgeKind::contains);
    }
  };
  const NodeKind T = NodeKind::transfer;
  // Iteration 0: up, compute, down, compute, up => 2 flips over 3 transfers.
  add_iteration(0, {work("copy", 5, 0, 1, T, Direction::h2d, 100), work("gemm", 3, 1, 1),
                    work("copy", 5, 2, 1, T, Direction::d2h, 10), work("factor", 4, 3, 1),
                    work("copy", 5, 4, 1, T, Direction::h2d, 1000)});
  // Iteration 1: the normal offload shape, one flip.
  add_iteration(1, {work("copy", 5, 0, 1, T, Direction::h2d, 100), work("gemm", 3, 1, 1),
                    work("copy", 5, 2, 1, T, Direction::d2h, 10)});
  // Iteration 2: back and forth with no compute between: not a flip.
  add_iteration(2, {work("copy", 5, 0, 1, T, Direction::h2d, 100),
                    work("copy", 5, 1, 1, T, Direction::d2h, 10),
                    work("copy", 5, 2, 1, T, Direction::h2d, 100)});

  const auto found = detect_ping_pong(g);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].iteration, 0u);
  EXPECT_EQ(found[0].flips, 2u);
  EXPECT_EQ(found[0].bytes, 1110u);
  EXPECT_EQ(detect_ping_pong(g, 1).size(), 2u);
}

TEST(PingPong, ABrickEnclosingTheTransfersIsNotComputeBetweenThem) {
  ExecutionGraph g;
  const NodeId it = g.add_node(iteration(0));
  const NodeId solve = g.add_node(work("solve", 4, 0, 10));
  const NodeId down = g.add_node(work("copy", 5, 1, 1, NodeKind::transfer, Direction::d2h, 8));
  const NodeId up = g.add_node(work("copy", 5, 3, 1, NodeKind::transfer, Direction::h2d, 8));
  g.add_edge(it, solve, EdgeKind::contains);
  g.add_edge(solve, down, EdgeKind::transfer);
  g.add_edge(solve, up, EdgeKind::transfer);
  EXPECT_TRUE(detect_ping_pong(g, 1).empty());
  const NodeId host = g.add_node(work("factor", 4, 2, 1));  // host compute between them
  g.add_edge(solve, host, EdgeKind::contains);
  EXPECT_EQ(detect_ping_pong(g, 1).size(), 1u);
}

}  // namespace
}  // namespace rh::bricks
