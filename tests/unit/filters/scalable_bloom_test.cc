#include "filters/scalable_bloom_filter.h"

#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "filter_test_support.h"
#include "filters/blocked_bloom.h"
#include "filters/bloom_math.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;
using test_support::Percent;
using test_support::Scaled;

std::unique_ptr<ScalableBloomFilter> MakeFilter(const ScalableBloomOptions& options,
                                                MemoryBudget* budget = nullptr,
                                                const FilterLimits& limits = FilterLimits{}) {
  std::unique_ptr<ScalableBloomFilter> filter;
  const FilterStatus status = ScalableBloomFilter::Create(options, limits, budget, &filter);
  EXPECT_EQ(status, FilterStatus::kOk) << ToString(status);
  return filter;
}

// Adds "item:<next>", "item:<next+1>", ... until `done` says stop; returns
// how many of them reported added.
template <typename Done>
uint64_t AddNewItemsUntil(ScalableBloomFilter* filter, uint64_t* next, Done done) {
  uint64_t added_count = 0;
  while (!done()) {
    bool added = false;
    const FilterStatus status = filter->Add(ItemHash("item", (*next)++), &added);
    EXPECT_EQ(status, FilterStatus::kOk) << ToString(status);
    if (status != FilterStatus::kOk) break;
    added_count += added;
  }
  return added_count;
}

TEST(ScalableBloomFilter, DefaultsMatchRedisBloom) {
  const auto filter = MakeFilter(ScalableBloomOptions{});
  ASSERT_NE(filter, nullptr);
  EXPECT_EQ(filter->capacity(), 100u);
  EXPECT_EQ(filter->items(), 0u);
  EXPECT_EQ(filter->num_layers(), 1u);
  EXPECT_EQ(filter->expansion(), 2u);
  EXPECT_TRUE(filter->scaling());
  EXPECT_DOUBLE_EQ(filter->error_rate(), 0.01);
  const auto layers = filter->Layers();
  ASSERT_EQ(layers.size(), 1u);
  // The first layer of a scaling filter gets half the error (BF.DEBUG ratio:0.005).
  EXPECT_DOUBLE_EQ(layers[0].error_rate, 0.005);
  EXPECT_EQ(layers[0].capacity, 100u);
  EXPECT_EQ(layers[0].items, 0u);
  std::cout << "[ size ] default filter: " << filter->memory_bytes() << " bytes, " << layers[0].bits
            << " bits, " << layers[0].probes << " probes\n";
}

TEST(ScalableBloomFilter, LayersGrowByTheExpansionAndHalveTheirError) {
  const auto filter = MakeFilter(ScalableBloomOptions{/*error_rate=*/0.01, /*capacity=*/100,
                                                      /*expansion=*/2});
  ASSERT_NE(filter, nullptr);
  uint64_t next = 0;
  const uint64_t added =
      AddNewItemsUntil(filter.get(), &next, [&] { return filter->num_layers() == 4; });
  const auto layers = filter->Layers();
  ASSERT_EQ(layers.size(), 4u);
  const uint64_t capacities[] = {100, 200, 400, 800};
  const double errors[] = {0.005, 0.0025, 0.00125, 0.000625};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(layers[i].capacity, capacities[i]) << "layer " << i;
    EXPECT_DOUBLE_EQ(layers[i].error_rate, errors[i]) << "layer " << i;
    // Full layers hold exactly their capacity: the next new item grew the filter.
    if (i < 3) {
      EXPECT_EQ(layers[i].items, capacities[i]) << "layer " << i;
    }
    const BloomShape shape = ChooseBlockedBloomShape(errors[i], capacities[i]);
    EXPECT_EQ(layers[i].bits, shape.bits);
    EXPECT_EQ(layers[i].bytes, shape.bits / 8);
    EXPECT_EQ(layers[i].probes, shape.probes);
  }
  EXPECT_EQ(layers[3].items, 1u);  // the item that triggered the growth
  EXPECT_EQ(filter->capacity(), 1500u);
  EXPECT_EQ(filter->items(), 701u);
  EXPECT_EQ(filter->items(), added);
}

TEST(ScalableBloomFilter, AnExpansionOfFourQuadruplesEachLayer) {
  const auto filter = MakeFilter(ScalableBloomOptions{0.01, /*capacity=*/10, /*expansion=*/4});
  ASSERT_NE(filter, nullptr);
  uint64_t next = 0;
  AddNewItemsUntil(filter.get(), &next, [&] { return filter->num_layers() == 3; });
  const auto layers = filter->Layers();
  EXPECT_EQ(layers[0].capacity, 10u);
  EXPECT_EQ(layers[1].capacity, 40u);
  EXPECT_EQ(layers[2].capacity, 160u);
  EXPECT_EQ(filter->capacity(), 210u);
}

TEST(ScalableBloomFilter, AFullLayerGrowsOnlyForTheNextNewItem) {
  const auto filter = MakeFilter(ScalableBloomOptions{0.01, /*capacity=*/100, 2});
  ASSERT_NE(filter, nullptr);
  uint64_t next = 0;
  AddNewItemsUntil(filter.get(), &next, [&] { return filter->items() == 100; });
  EXPECT_EQ(filter->num_layers(), 1u);
  bool added = true;
  // Re-adding a present item neither inserts nor grows.
  ASSERT_EQ(filter->Add(ItemHash("item", 0), &added), FilterStatus::kOk);
  EXPECT_FALSE(added);
  EXPECT_EQ(filter->num_layers(), 1u);
  // The next new item does both.
  bool found_new = false;
  while (!found_new) {
    const KeyHash h = ItemHash("item", next++);
    if (filter->MayContain(h)) continue;  // skip the rare false positive
    found_new = true;
    ASSERT_EQ(filter->Add(h, &added), FilterStatus::kOk);
    EXPECT_TRUE(added);
  }
  EXPECT_EQ(filter->num_layers(), 2u);
  EXPECT_EQ(filter->items(), 101u);
}

TEST(ScalableBloomFilter, PresentItemsAreNotAddedOrCountedAgain) {
  const auto filter = MakeFilter(ScalableBloomOptions{});
  ASSERT_NE(filter, nullptr);
  bool added = false;
  ASSERT_EQ(filter->Add(HashKey("apple"), &added), FilterStatus::kOk);
  EXPECT_TRUE(added);
  ASSERT_EQ(filter->Add(HashKey("apple"), &added), FilterStatus::kOk);
  EXPECT_FALSE(added);
  EXPECT_EQ(filter->items(), 1u);
  EXPECT_TRUE(filter->MayContain(HashKey("apple")));
}

TEST(ScalableBloomFilter, NonScalingFilterReportsFullAtCapacity) {
  const auto filter = MakeFilter(ScalableBloomOptions{0.01, /*capacity=*/100, /*expansion=*/0});
  ASSERT_NE(filter, nullptr);
  EXPECT_FALSE(filter->scaling());
  EXPECT_EQ(filter->expansion(), 0u);
  // NONSCALING keeps the full error rate in its single layer.
  EXPECT_DOUBLE_EQ(filter->Layers()[0].error_rate, 0.01);
  uint64_t next = 0;
  AddNewItemsUntil(filter.get(), &next, [&] { return filter->items() == 100; });

  bool added = true;
  FilterStatus status = FilterStatus::kOk;
  do {
    status = filter->Add(ItemHash("item", next++), &added);
  } while (status == FilterStatus::kOk && !added);  // skip false positives ("exists")
  EXPECT_EQ(status, FilterStatus::kFull);
  EXPECT_FALSE(added);
  EXPECT_EQ(filter->num_layers(), 1u);
  EXPECT_EQ(filter->items(), 100u);
  // An item that is already present is still answered, not refused.
  EXPECT_EQ(filter->Add(ItemHash("item", 0), &added), FilterStatus::kOk);
  EXPECT_FALSE(added);
}

TEST(ScalableBloomFilter, ErrorRatesAboveAQuarterAreCapped) {
  const auto filter = MakeFilter(ScalableBloomOptions{/*error_rate=*/0.9, 100, 2});
  ASSERT_NE(filter, nullptr);
  EXPECT_DOUBLE_EQ(filter->error_rate(), kMaxBloomErrorRate);
  EXPECT_DOUBLE_EQ(filter->Layers()[0].error_rate, kMaxBloomErrorRate / 2);
}

TEST(ScalableBloomFilter, TwoMillionItemsIntoCapacityThousandKeepEveryItemAndTheRate) {
  const uint64_t n = Scaled(2'000'000);
  const auto filter = MakeFilter(ScalableBloomOptions{/*error_rate=*/0.01, /*capacity=*/1000, 2});
  ASSERT_NE(filter, nullptr);
  for (uint64_t i = 0; i < n; ++i) {
    bool added = false;
    ASSERT_EQ(filter->Add(ItemHash("item", i), &added), FilterStatus::kOk) << i;
  }
  uint64_t missing = 0;
  for (uint64_t i = 0; i < n; ++i) missing += !filter->MayContain(ItemHash("item", i));
  EXPECT_EQ(missing, 0u) << "false negatives among " << n << " added items";

  // 1000 * (2^11 - 1) = 2,047,000 >= 2M: eleven layers (seven at 200k).
  EXPECT_EQ(filter->num_layers(), n == 2'000'000 ? 11u : 8u);
  EXPECT_LE(filter->items(), n);
  EXPECT_GE(filter->items(), n - n / 100);  // only false positives go uncounted

  // ~0.86% of n: 17,000 false positives expected in Release, 1,700 scaled.
  const test_support::FpMeasurement m = test_support::MeasureFalsePositives(*filter, n);
  ::testing::Test::RecordProperty("scalable_2m_measured_fp", Percent(m.rate()));
  std::cout << "[ FP ] scalable 1% cap 1000, " << n << " items, " << filter->num_layers()
            << " layers, " << filter->memory_bytes() << " bytes ("
            << 8.0 * static_cast<double>(filter->memory_bytes()) / static_cast<double>(n)
            << " bits/item): measured " << Percent(m.rate()) << " (" << m.false_positives << "/"
            << m.queries << ")\n";
  EXPECT_LE(m.rate(), 0.01) << "bound 1%, measured " << Percent(m.rate()) << " ("
                            << m.false_positives << " of " << m.queries << ")";
}

TEST(ScalableBloomFilter, AFullNonScalingFilterMeetsItsErrorRate) {
  const uint64_t n = Scaled(1'000'000);
  const auto filter = MakeFilter(ScalableBloomOptions{/*error_rate=*/0.01, n, /*expansion=*/0});
  ASSERT_NE(filter, nullptr);
  uint64_t next = 0;
  AddNewItemsUntil(filter.get(), &next, [&] { return filter->items() == n; });
  const test_support::FpMeasurement m =
      test_support::MeasureFalsePositives(*filter, /*queries=*/1'000'000);
  std::cout << "[ FP ] non-scaling 1%, " << n << " items: measured " << Percent(m.rate()) << " ("
            << m.false_positives << "/" << m.queries << ")\n";
  EXPECT_LE(m.rate(), 0.01) << "bound 1%, measured " << Percent(m.rate()) << " ("
                            << m.false_positives << " of " << m.queries << ")";
}

TEST(ScalableBloomFilter, MemoryBytesCoverEveryLayer) {
  const auto filter = MakeFilter(ScalableBloomOptions{0.01, 100, 2});
  ASSERT_NE(filter, nullptr);
  uint64_t next = 0;
  AddNewItemsUntil(filter.get(), &next, [&] { return filter->num_layers() == 3; });
  uint64_t layer_bytes = 0;
  for (const BloomLayerInfo& layer : filter->Layers()) layer_bytes += layer.bytes;
  EXPECT_GT(filter->memory_bytes(), layer_bytes);
  // Bookkeeping is small: well under a kilobyte per layer.
  EXPECT_LT(filter->memory_bytes(), layer_bytes + 3 * 1024);
}

TEST(ScalableBloomFilter, AMaximalExpansionIsAccepted) {
  const auto filter = MakeFilter(ScalableBloomOptions{0.01, /*capacity=*/1, kMaxBloomExpansion});
  ASSERT_NE(filter, nullptr);
  uint64_t next = 0;
  AddNewItemsUntil(filter.get(), &next, [&] { return filter->num_layers() == 2; });
  EXPECT_EQ(filter->Layers()[1].capacity, uint64_t{kMaxBloomExpansion});
}

}  // namespace
}  // namespace bloomgate
