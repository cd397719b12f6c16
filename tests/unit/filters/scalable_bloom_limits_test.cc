// How ScalableBloomFilter behaves at its limits: absurd sizes, the per-filter
// byte cap, the shared MemoryBudget, failed allocations and the layer cap.
// The invariant everywhere: a failure changes nothing and reserves nothing,
// and budget.used() always equals the sum of the live filters' memory_bytes().

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>

#include "filter_test_support.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "filters/scalable_bloom_filter.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;

FilterStatus TryCreate(const ScalableBloomOptions& options, const FilterLimits& limits,
                       MemoryBudget* budget, std::unique_ptr<ScalableBloomFilter>* out) {
  return ScalableBloomFilter::Create(options, limits, budget, out);
}

// Adds new items until an Add fails; returns that status.
FilterStatus AddUntilFailure(ScalableBloomFilter* filter, uint64_t* next, uint64_t max_items) {
  for (uint64_t n = 0; n < max_items; ++n) {
    bool added = false;
    const FilterStatus status = filter->Add(ItemHash("item", (*next)++), &added);
    if (status != FilterStatus::kOk) return status;
  }
  return FilterStatus::kOk;
}

TEST(ScalableBloomLimits, MaximumCapacityFailsCleanlyWithNothingReserved) {
  MemoryBudget budget(/*limit_bytes=*/0);
  std::unique_ptr<ScalableBloomFilter> filter;
  for (const FilterLimits limits :
       {FilterLimits{}, FilterLimits{/*max_filter_bytes=*/0}, FilterLimits{UINT64_MAX}}) {
    for (uint32_t expansion : {0u, 2u}) {
      const FilterStatus status =
          TryCreate(ScalableBloomOptions{0.01, UINT64_MAX, expansion}, limits, &budget, &filter);
      EXPECT_EQ(status, FilterStatus::kFilterMemoryLimit) << ToString(status);
      EXPECT_EQ(filter, nullptr);
      EXPECT_EQ(budget.used(), 0u);
    }
  }
}

TEST(ScalableBloomLimits, AnUnallocatableFilterReportsOutOfMemoryWithNothingReserved) {
  // 2^57 items at ~11.8 bits/key: ~190 PB, representable but never allocatable.
  MemoryBudget budget(/*limit_bytes=*/0);
  std::unique_ptr<ScalableBloomFilter> filter;
  const FilterStatus status = TryCreate(ScalableBloomOptions{0.01, uint64_t{1} << 57, 2},
                                        FilterLimits{/*max_filter_bytes=*/0}, &budget, &filter);
  EXPECT_EQ(status, FilterStatus::kOutOfMemory) << ToString(status);
  EXPECT_EQ(filter, nullptr);
  EXPECT_EQ(budget.used(), 0u);
}

TEST(ScalableBloomLimits, OutOfRangeOptionsAreRefusedWithNothingReserved) {
  MemoryBudget budget(0);
  std::unique_ptr<ScalableBloomFilter> filter;
  const double nan = std::nan("");
  for (const ScalableBloomOptions& options :
       {ScalableBloomOptions{0.0, 100, 2}, ScalableBloomOptions{-0.1, 100, 2},
        ScalableBloomOptions{1.0, 100, 2}, ScalableBloomOptions{nan, 100, 2},
        ScalableBloomOptions{0.01, 0, 2}, ScalableBloomOptions{0.01, 100, kMaxBloomExpansion + 1},
        ScalableBloomOptions{1e-300, 100, 2}}) {
    const FilterStatus status = TryCreate(options, FilterLimits{}, &budget, &filter);
    EXPECT_EQ(status, FilterStatus::kFilterMemoryLimit)
        << options.error_rate << " " << options.capacity << " " << options.expansion;
    EXPECT_EQ(filter, nullptr);
    EXPECT_EQ(budget.used(), 0u);
  }
}

TEST(ScalableBloomLimits, BudgetUsedIsTheSumOfLiveFilters) {
  MemoryBudget budget(0);
  std::unique_ptr<ScalableBloomFilter> a;
  std::unique_ptr<ScalableBloomFilter> b;
  ASSERT_EQ(TryCreate(ScalableBloomOptions{}, FilterLimits{}, &budget, &a), FilterStatus::kOk);
  ASSERT_EQ(TryCreate(ScalableBloomOptions{0.001, 5000, 4}, FilterLimits{}, &budget, &b),
            FilterStatus::kOk);
  EXPECT_EQ(budget.used(), a->memory_bytes() + b->memory_bytes());
  uint64_t next = 0;
  while (a->num_layers() < 3) ASSERT_EQ(AddUntilFailure(a.get(), &next, 1), FilterStatus::kOk);
  EXPECT_EQ(budget.used(), a->memory_bytes() + b->memory_bytes());
  a.reset();
  EXPECT_EQ(budget.used(), b->memory_bytes());
  b.reset();
  EXPECT_EQ(budget.used(), 0u);
}

TEST(ScalableBloomLimits, AnExhaustedBudgetReportsOutOfMemoryUntilMemoryIsReleased) {
  std::unique_ptr<ScalableBloomFilter> probe;
  ASSERT_EQ(TryCreate(ScalableBloomOptions{}, FilterLimits{}, nullptr, &probe), FilterStatus::kOk);
  const uint64_t one_filter = probe->memory_bytes();

  MemoryBudget budget(/*limit_bytes=*/one_filter + one_filter / 2);
  std::unique_ptr<ScalableBloomFilter> first;
  std::unique_ptr<ScalableBloomFilter> second;
  ASSERT_EQ(TryCreate(ScalableBloomOptions{}, FilterLimits{}, &budget, &first), FilterStatus::kOk);
  EXPECT_EQ(budget.used(), one_filter);
  EXPECT_EQ(TryCreate(ScalableBloomOptions{}, FilterLimits{}, &budget, &second),
            FilterStatus::kOutOfMemory);
  EXPECT_EQ(second, nullptr);
  EXPECT_EQ(budget.used(), one_filter);
  first.reset();
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(TryCreate(ScalableBloomOptions{}, FilterLimits{}, &budget, &second), FilterStatus::kOk);
  second.reset();
  EXPECT_EQ(budget.used(), 0u);
}

TEST(ScalableBloomLimits, GrowthBeyondTheBudgetFailsAndChangesNothing) {
  MemoryBudget budget(/*limit_bytes=*/8 * 1024);
  std::unique_ptr<ScalableBloomFilter> filter;
  ASSERT_EQ(TryCreate(ScalableBloomOptions{0.01, 100, 2}, FilterLimits{}, &budget, &filter),
            FilterStatus::kOk);
  uint64_t next = 0;
  EXPECT_EQ(AddUntilFailure(filter.get(), &next, 100'000), FilterStatus::kOutOfMemory);
  const uint32_t layers = filter->num_layers();
  const uint64_t items = filter->items();
  const uint64_t bytes = filter->memory_bytes();
  EXPECT_GT(layers, 1u);
  EXPECT_LE(bytes, budget.limit());
  EXPECT_EQ(budget.used(), bytes);

  // Trying again fails the same way and changes nothing; lookups still work.
  bool added = true;
  EXPECT_EQ(filter->Add(ItemHash("item", next++), &added), FilterStatus::kOutOfMemory);
  EXPECT_FALSE(added);
  EXPECT_EQ(filter->num_layers(), layers);
  EXPECT_EQ(filter->items(), items);
  EXPECT_EQ(filter->memory_bytes(), bytes);
  EXPECT_EQ(budget.used(), bytes);
  for (uint64_t i = 0; i < 100; ++i) EXPECT_TRUE(filter->MayContain(ItemHash("item", i)));
  // Present items are still answered.
  EXPECT_EQ(filter->Add(ItemHash("item", 0), &added), FilterStatus::kOk);

  // Raising the limit lets it grow again.
  budget.set_limit(0);
  bool grew = false;
  for (int i = 0; i < 10 && !grew; ++i) {
    ASSERT_EQ(filter->Add(ItemHash("item", next++), &added), FilterStatus::kOk);
    grew = filter->num_layers() == layers + 1;
  }
  EXPECT_TRUE(grew);
  filter.reset();
  EXPECT_EQ(budget.used(), 0u);
}

TEST(ScalableBloomLimits, ThePerFilterCapStopsGrowth) {
  MemoryBudget budget(0);
  const FilterLimits limits{/*max_filter_bytes=*/16 * 1024};
  std::unique_ptr<ScalableBloomFilter> filter;
  ASSERT_EQ(TryCreate(ScalableBloomOptions{0.01, 100, 2}, limits, &budget, &filter),
            FilterStatus::kOk);
  uint64_t next = 0;
  EXPECT_EQ(AddUntilFailure(filter.get(), &next, 100'000), FilterStatus::kFilterMemoryLimit);
  EXPECT_GT(filter->num_layers(), 2u);
  EXPECT_LE(filter->memory_bytes(), limits.max_filter_bytes);
  EXPECT_EQ(budget.used(), filter->memory_bytes());
  filter.reset();
  EXPECT_EQ(budget.used(), 0u);
}

TEST(ScalableBloomLimits, ThePerFilterCapRefusesAnOversizedFirstLayer) {
  MemoryBudget budget(0);
  std::unique_ptr<ScalableBloomFilter> filter;
  EXPECT_EQ(TryCreate(ScalableBloomOptions{0.01, 1'000'000, 2}, FilterLimits{64 * 1024}, &budget,
                      &filter),
            FilterStatus::kFilterMemoryLimit);
  EXPECT_EQ(filter, nullptr);
  EXPECT_EQ(budget.used(), 0u);
}

TEST(ScalableBloomLimits, TheCapCountsTheWholeFilterNotJustItsBits) {
  std::unique_ptr<ScalableBloomFilter> filter;
  ASSERT_EQ(TryCreate(ScalableBloomOptions{}, FilterLimits{}, nullptr, &filter), FilterStatus::kOk);
  const uint64_t exact = filter->memory_bytes();
  EXPECT_EQ(TryCreate(ScalableBloomOptions{}, FilterLimits{exact}, nullptr, &filter),
            FilterStatus::kOk);
  EXPECT_EQ(TryCreate(ScalableBloomOptions{}, FilterLimits{exact - 1}, nullptr, &filter),
            FilterStatus::kFilterMemoryLimit);
}

TEST(ScalableBloomLimits, GrowthStopsAtTheLayerCap) {
  // EXPANSION 1 with capacity 1: a new layer for every new item.
  MemoryBudget budget(0);
  std::unique_ptr<ScalableBloomFilter> filter;
  ASSERT_EQ(TryCreate(ScalableBloomOptions{0.01, /*capacity=*/1, /*expansion=*/1}, FilterLimits{},
                      &budget, &filter),
            FilterStatus::kOk);
  uint64_t next = 0;
  EXPECT_EQ(AddUntilFailure(filter.get(), &next, 10'000), FilterStatus::kTooManyLayers);
  EXPECT_EQ(filter->num_layers(), kMaxBloomLayers);
  EXPECT_EQ(filter->capacity(), kMaxBloomLayers);
  const auto layers = filter->Layers();
  EXPECT_DOUBLE_EQ(layers.back().error_rate, 0.005 * std::ldexp(1.0, -63));
  EXPECT_EQ(budget.used(), filter->memory_bytes());
  std::cout << "[ size ] " << kMaxBloomLayers
            << " layers of one item each: " << filter->memory_bytes() << " bytes, deepest layer "
            << layers.back().bits << " bits, " << layers.back().probes << " probes\n";
  filter.reset();
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace bloomgate
