#include <gtest/gtest.h>

#include <algorithm>

#include "rh/bricks/graph.hpp"
#include "rh/bricks/scope.hpp"
#include "support.hpp"

namespace rh::bricks {
namespace {

using testing::B;

constexpr CallSite kKernelSite{std::source_location::current(), "gemm_kernel"};

Event ev(B brick, std::int64_t start, std::int64_t dur, std::uint32_t batch, std::uint32_t iter,
         std::uint8_t depth, EventKind kind = EventKind::brick, Direction dir = Direction::none,
         std::uint32_t thread = 0) {
  return Event{start, dur, 1, 2, 3, kind == EventKind::kernel ? &kKernelSite : nullptr, batch, iter,
               thread, kind == EventKind::kernel ? kNoBrick : static_cast<BrickId>(brick), depth, kind, dir};
}

std::size_t count_edges(const ExecutionGraph& g, EdgeKind k) {
  return static_cast<std::size_t>(std::count_if(g.edges().begin(), g.edges().end(),
                                                [k](const Edge& e) { return e.kind == k; }));
}

// batch 0: iteration 0 = gemm[0,100) { factor[10,40), kernel[50,60) }, load[100,107)
//          iteration 1 = copy h2d [200,210)
std::vector<Event> sample_events() {
  return {ev(B::gemm, 0, 100, 0, 0, 0),
          ev(B::factor, 10, 30, 0, 0, 1),
          ev(B::gemm, 50, 10, 0, 0, 1, EventKind::kernel),
          ev(B::load, 100, 7, 0, 0, 0),
          ev(B::copy, 200, 10, 0, 1, 0, EventKind::transfer, Direction::h2d)};
}

TEST(GraphBuild, NodesAndEdgesFollowTheEvents) {
  const ExecutionGraph g = build_graph(sample_events(), testing::test_table());
  // 1 batch + 2 iterations + 5 work nodes
  ASSERT_EQ(g.size(), 8u);
  EXPECT_EQ(g.nodes()[0].kind, NodeKind::batch);
  EXPECT_EQ(g.nodes()[0].duration_ns, 210);
  EXPECT_EQ(g.nodes()[1].kind, NodeKind::iteration);
  EXPECT_EQ(g.nodes()[1].duration_ns, 107);
  // contains: batch->it0, batch->it1, it0->gemm, gemm->factor, it0->load; launches: gemm->kernel;
  // transfer: it1->copy; sequence: it0->it1, gemm->load, load->copy.
  EXPECT_EQ(count_edges(g, EdgeKind::contains), 5u);
  EXPECT_EQ(count_edges(g, EdgeKind::launches), 1u);
  EXPECT_EQ(count_edges(g, EdgeKind::transfer), 1u);
  EXPECT_EQ(count_edges(g, EdgeKind::sequence), 3u);
  EXPECT_EQ(count_edges(g, EdgeKind::depends_on), 0u);
}

TEST(GraphBuild, ProfilerEventsBuildTheSameShape) {
  Options o;
  o.trace_capacity = 64;
  Profiler p(testing::test_table(), o);
  p.begin_batch(1);
  for (std::uint32_t it = 0; it < 2; ++it) {
    p.set_iteration(it);
    RH_BRICK_SCOPE(p, B::gemm, 1, 1, 1);
    { RH_BRICK_KERNEL(p, "k"); }
  }
  p.end_batch();
  const ExecutionGraph g = p.graph();
  EXPECT_EQ(g.size(), 1u + 2u + 4u);
  EXPECT_EQ(count_edges(g, EdgeKind::launches), 2u);
}

TEST(Graph, CsrMatchesTheEdgeList) {
  const ExecutionGraph g = build_graph(sample_events(), testing::test_table());
  const CsrGraph csr = g.to_csr();
  ASSERT_EQ(csr.offsets.size(), g.size() + 1);
  EXPECT_EQ(csr.offsets.back(), g.edges().size());
  EXPECT_EQ(csr.targets.size(), g.edges().size());
  for (const Edge& e : g.edges()) {
    bool found = false;
    for (std::uint32_t i = csr.offsets[e.src]; i < csr.offsets[e.src + 1]; ++i) {
      found = found || (csr.targets[i] == e.dst && csr.kinds[i] == e.kind);
    }
    EXPECT_TRUE(found) << e.src << " -> " << e.dst;
  }
}

TEST(Graph, DotListsEveryNodeAndEdge) {
  const ExecutionGraph g = build_graph(sample_events(), testing::test_table());
  const std::string dot = g.to_dot();
  EXPECT_EQ(dot.rfind("digraph execution {", 0), 0u);
  std::size_t arrows = 0;
  for (std::size_t at = dot.find("->"); at != std::string::npos; at = dot.find("->", at + 2)) ++arrows;
  EXPECT_EQ(arrows, g.edges().size());
  EXPECT_NE(dot.find("label=\"launches\", style=bold"), std::string::npos);
}

TEST(Graph, AsciiTreeSnapshot) {
  const ExecutionGraph g = build_graph(sample_events(), testing::test_table());
  const std::string expected =
      "batch 0  210 ns\n"
      "├── iteration 0  107 ns\n"
      "│   ├── gemm  100 ns  (1 elem, 2 B, 3 flop)\n"
      "│   │   ├── factor  30 ns  (1 elem, 2 B, 3 flop)\n"
      "│   │   └── gemm_kernel  10 ns  [kernel]\n"
      "│   └── load  7 ns  (1 elem, 2 B, 3 flop)\n"
      "└── iteration 1  10 ns\n"
      "    └── copy  10 ns  [h2d 2 B]\n";
  EXPECT_EQ(g.to_ascii_tree(), expected);
  EXPECT_EQ(g.to_ascii_tree(), build_graph(sample_events(), testing::test_table()).to_ascii_tree());
}

TEST(Graph, AsciiTreeOfSeveralRootsAndOfNothing) {
  EXPECT_EQ(ExecutionGraph().to_ascii_tree(), "(empty graph)\n");
  ExecutionGraph g;
  Node a;
  a.label = "a";
  Node b = a;
  b.label = "b";
  b.start_ns = 5;
  g.add_node(b);
  g.add_node(a);
  EXPECT_EQ(g.to_ascii_tree(), "run\n├── a  0 ns  (0 elem, 0 B, 0 flop)\n└── b  0 ns  (0 elem, 0 B, 0 flop)\n");
}

TEST(Graph, AddEdgeRejectsUnknownNodesAndSelfLoops) {
  ExecutionGraph g;
  const NodeId a = g.add_node(Node{});
  EXPECT_THROW(g.add_edge(a, 7, EdgeKind::sequence), std::out_of_range);
  EXPECT_THROW(g.add_edge(a, a, EdgeKind::sequence), std::invalid_argument);
}

}  // namespace
}  // namespace rh::bricks
