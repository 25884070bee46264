#include <gtest/gtest.h>

#include "json_mini.hpp"
#include "rh/bricks/report.hpp"
#include "rh/bricks/scope.hpp"
#include "support.hpp"

namespace rh::bricks {
namespace {

using testing::B;
using testing::Json;
using testing::parse_json;

Json schema() { return parse_json(testing::read_file(RH_BRICKS_SCHEMA_PATH)); }

std::string joined(const std::vector<std::string>& errors) {
  std::string s;
  for (const auto& e : errors) s += e + "\n";
  return s;
}

TEST(ReportJson, EmittedReportsValidateAgainstTheSchema) {
  Options o;
  o.trace_capacity = 16;
  Profiler p(testing::test_table(), o);
  p.set_metadata("engine", "native_cpu");
  p.set_metadata("quote\"and\\slash", "line\nbreak");
  p.begin_batch(5);
  { RH_BRICK_SCOPE(p, B::gemm, 10, 800, 2000); }
  { RH_BRICK_SCOPE_NAMED(p, "extra", Category::factor, 1, 0, 1); }
  p.end_batch();
  const std::string text = p.to_json();
  const Json doc = parse_json(text);
  const auto errors = testing::validate(doc, schema());
  EXPECT_TRUE(errors.empty()) << joined(errors) << text;

  EXPECT_EQ(doc["schema_version"].num(), kReportSchemaVersion);
  EXPECT_EQ(doc["metadata"]["extra"]["engine"].str(), "native_cpu");
  EXPECT_EQ(doc["metadata"]["extra"]["quote\"and\\slash"].str(), "line\nbreak");
  const auto& bricks = doc["bricks"].arr();
  ASSERT_EQ(bricks.size(), 7u);
  EXPECT_EQ(bricks[3]["name"].str(), "gemm");
  EXPECT_EQ(bricks[3]["category"].str(), "blas3");
  EXPECT_EQ(bricks[3]["count"].num(), 1);
  EXPECT_EQ(bricks[3]["flops"].num(), 2000);
  EXPECT_EQ(bricks[6]["name"].str(), "extra");
  EXPECT_FALSE(std::get<bool>(bricks[6]["known"].v));
  const auto& cats = doc["categories"].arr();
  ASSERT_EQ(cats.size(), kCategoryCount);
  EXPECT_EQ(cats[static_cast<std::size_t>(Category::factor)]["count"].num(), 1);
}

TEST(ReportJson, TheValidatorRejectsWhatTheSchemaForbids) {
  Profiler p(testing::test_table());
  Json doc = parse_json(p.to_json());
  const Json s = schema();
  ASSERT_TRUE(testing::validate(doc, s).empty());
  // A wrong version, a missing counter and a bad category must each be caught.
  auto broken = [&](const std::string& from, const std::string& to) {
    std::string text = p.to_json();
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    return testing::validate(parse_json(text), s);
  };
  EXPECT_FALSE(broken("\"schema_version\":1", "\"schema_version\":2").empty());
  EXPECT_FALSE(broken(",\"cycles\":0", "").empty());
  EXPECT_FALSE(broken("\"category\":\"blas3\"", "\"category\":\"blas4\"").empty());
  EXPECT_FALSE(broken("\"count\":0", "\"count\":-1").empty());
  EXPECT_FALSE(broken("\"known\":true", "\"known\":true,\"surprise\":1").empty());
}

}  // namespace
}  // namespace rh::bricks
