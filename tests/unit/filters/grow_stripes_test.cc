// The grow stripes' next-shape memo (filters/grow_stripes.h): a hit must be
// exactly what the rule computes for that input, whichever chain or sizing
// rule used the stripe before.

#include "filters/grow_stripes.h"

#include <gtest/gtest.h>

#include <mutex>

namespace bloomgate::internal {
namespace {

int rule_a_calls = 0;
BlockedShape RuleA(double error_rate, uint64_t capacity, uint32_t block_cells) {
  ++rule_a_calls;
  return BlockedShape{capacity * 10, block_cells, static_cast<uint32_t>(error_rate * 100), 0, 0};
}
BlockedShape RuleB(double /*error_rate*/, uint64_t capacity, uint32_t block_cells) {
  return BlockedShape{capacity * 20, block_cells, 7, 0, 0};
}

TEST(GrowStripe, RepeatsAShapeWithoutRecomputingItAndNeverMixesInputsOrRules) {
  GrowStripe& stripe = GrowStripeFor(&rule_a_calls);
  std::lock_guard<std::mutex> lock(stripe.mutex());
  rule_a_calls = 0;
  EXPECT_EQ(stripe.Shape(&RuleA, 0.05, 100, 512).cells, 1000u);
  EXPECT_EQ(stripe.Shape(&RuleA, 0.05, 100, 512).cells, 1000u);
  EXPECT_EQ(rule_a_calls, 1) << "a chain stuck at a limit must not recompute its next shape";
  // Any input or rule that differs is computed afresh.
  EXPECT_EQ(stripe.Shape(&RuleA, 0.05, 200, 512).cells, 2000u);
  EXPECT_EQ(stripe.Shape(&RuleA, 0.05, 200, 128).block_cells, 128u);
  EXPECT_EQ(stripe.Shape(&RuleA, 0.07, 200, 128).probes, 7u);
  EXPECT_EQ(stripe.Shape(&RuleB, 0.07, 200, 128).cells, 4000u);
  EXPECT_EQ(stripe.Shape(&RuleA, 0.07, 200, 128).cells, 2000u);
  EXPECT_EQ(rule_a_calls, 5);
}

}  // namespace
}  // namespace bloomgate::internal
