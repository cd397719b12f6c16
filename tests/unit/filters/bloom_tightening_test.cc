// valkey-bloom's TIGHTENING and what it bounds: each layer's error rate is
// the one before's x the filter's ratio, growth stops before a rate reaches
// 0, and the growth projection (VALIDATESCALETO, BF.INFO MAXSCALEDCAPACITY)
// names the capacity a filter really reaches before its first refusal.

#include <gtest/gtest.h>

#include "filter_test_support.h"
#include "filters/limits.h"
#include "filters/scalable_bloom_filter.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;

std::unique_ptr<ScalableBloomFilter> Make(ScalableBloomOptions options,
                                          const FilterLimits& limits = FilterLimits{}) {
  std::unique_ptr<ScalableBloomFilter> filter;
  EXPECT_EQ(ScalableBloomFilter::Create(options, limits, nullptr, &filter), FilterStatus::kOk);
  return filter;
}

// Adds new items until an Add fails (or `max_items`); that status.
FilterStatus AddUntilRefused(ScalableBloomFilter& filter, uint64_t max_items) {
  bool added = false;
  for (uint64_t i = 0; i < max_items; ++i) {
    const FilterStatus status = filter.Add(ItemHash("item", i), &added);
    if (status != FilterStatus::kOk) return status;
  }
  return FilterStatus::kOk;
}

TEST(BloomTightening, EachLayersRateIsThePreviousTimesTheRatio) {
  auto filter = Make({.error_rate = 0.01, .capacity = 50, .expansion = 2, .tightening = 0.2});
  ASSERT_EQ(AddUntilRefused(*filter, 1000), FilterStatus::kOk);
  const auto layers = filter->Layers();
  ASSERT_GE(layers.size(), 4u);
  EXPECT_EQ(layers[0].error_rate, 0.01 * 0.2);  // RedisBloom's rule with the filter's ratio
  for (size_t i = 1; i < layers.size(); ++i) {
    EXPECT_EQ(layers[i].error_rate, layers[i - 1].error_rate * 0.2) << i;
  }
  EXPECT_EQ(filter->tightening(), 0.2);
}

TEST(BloomTightening, TheDefaultIsRedisBloomsHalf) {
  auto filter = Make({.error_rate = 0.01, .capacity = 50, .expansion = 2});
  EXPECT_EQ(filter->tightening(), kErrorTighteningRatio);
  EXPECT_EQ(filter->Layers()[0].error_rate, 0.005);
}

TEST(BloomTightening, AnImportedRedisBloomLayoutKeepsHalfWhateverItIsGiven) {
  auto filter = Make({.error_rate = 0.01, .capacity = 50, .expansion = 2,
                      .layout = BloomLayout::kRedisBloom, .tightening = 0.9});
  EXPECT_EQ(filter->tightening(), kErrorTighteningRatio);
}

TEST(BloomTightening, ARatioOutsideZeroToOneMakesNoFilter) {
  for (double bad : {0.0, 1.0, 1.5, -0.1}) {
    std::unique_ptr<ScalableBloomFilter> filter;
    EXPECT_NE(ScalableBloomFilter::Create({.error_rate = 0.01, .capacity = 50, .tightening = bad},
                                          FilterLimits{}, nullptr, &filter),
              FilterStatus::kOk)
        << bad;
    EXPECT_EQ(filter, nullptr);
  }
}

// Layer n is sized for 0.01 x (1e-100)^(n+1): 1e-102, 1e-202, 1e-302, and
// layer 3 would be sized for 1e-402, below DBL_MIN, so growth stops at 3
// layers (with no memory cap: a ratio as small as 1e-6 reaches the 4 GiB cap
// first, layer 8 needing more bits than the 64-probe limit can spend well).
TEST(BloomTightening, GrowthStopsBeforeALayersRateUnderflows) {
  // The classic layout, which the server picks at such rates (a 512-bit
  // block per item cannot reach 1e-102).
  ASSERT_EQ(PreferredBloomLayout(0.01, 1, 1e-100), BloomLayout::kClassic);
  auto filter = Make({.error_rate = 0.01, .capacity = 1, .expansion = 1,
                      .layout = BloomLayout::kClassic, .tightening = 1e-100},
                     FilterLimits{0});
  EXPECT_EQ(AddUntilRefused(*filter, 1000), FilterStatus::kErrorRateUnderflow);
  EXPECT_EQ(filter->num_layers(), 3u);
  EXPECT_GT(filter->Layers().back().error_rate, kMinLayerErrorRate);
  EXPECT_EQ(filter->MaxScaledCapacity(), filter->capacity());
}

// The projection is what growth does: under a 64 KiB cap, a filter grows
// until the cap refuses a layer, and its capacity then is exactly what the
// projection said before the first add (and says still).
TEST(BloomTightening, MaxScaledCapacityIsTheCapacityGrowthReachesUnderTheCap) {
  for (double tightening : {0.5, 0.9, 0.1}) {
    const FilterLimits limits{64 << 10};
    const ScalableBloomOptions options{.error_rate = 0.01, .capacity = 100, .expansion = 2,
                                       .tightening = tightening};
    auto filter = Make(options, limits);
    const uint64_t projected = filter->MaxScaledCapacity();
    EXPECT_EQ(ScalableBloomFilter::ProjectGrowth(options, limits, UINT64_MAX).capacity, projected);
    EXPECT_EQ(ScalableBloomFilter::ProjectGrowth(options, limits, UINT64_MAX).stop,
              FilterStatus::kFilterMemoryLimit);
    EXPECT_EQ(AddUntilRefused(*filter, 1'000'000), FilterStatus::kFilterMemoryLimit) << tightening;
    EXPECT_EQ(filter->capacity(), projected) << tightening;
    EXPECT_EQ(filter->MaxScaledCapacity(), projected) << tightening;
  }
}

TEST(BloomTightening, ProjectionStopsAtTheTargetOrNamesWhatStopsIt) {
  const FilterLimits limits{64 << 10};
  const ScalableBloomOptions options{.error_rate = 0.01, .capacity = 100, .expansion = 2};
  const GrowthProjection reach = ScalableBloomFilter::ProjectGrowth(options, limits, 1000);
  EXPECT_EQ(reach.stop, FilterStatus::kOk);
  EXPECT_EQ(reach.capacity, 100u + 200u + 400u + 800u);  // the first total >= 1000
  EXPECT_EQ(ScalableBloomFilter::ProjectGrowth(options, limits, 100'000'000).stop,
            FilterStatus::kFilterMemoryLimit);
  const ScalableBloomOptions tiny{.error_rate = 0.01, .capacity = 1, .expansion = 1,
                                  .layout = BloomLayout::kClassic, .tightening = 1e-100};
  EXPECT_EQ(ScalableBloomFilter::ProjectGrowth(tiny, FilterLimits{}, 1000).stop,
            FilterStatus::kErrorRateUnderflow);
  EXPECT_EQ(ScalableBloomFilter::ProjectGrowth(tiny, FilterLimits{}, 1000).capacity, 3u);
  const ScalableBloomOptions flat{.error_rate = 0.01, .capacity = 1, .expansion = 1};
  EXPECT_EQ(ScalableBloomFilter::ProjectGrowth(flat, FilterLimits{}, 1000).stop,
            FilterStatus::kTooManyLayers);
  const ScalableBloomOptions fixed{.error_rate = 0.01, .capacity = 100, .expansion = 0};
  EXPECT_EQ(ScalableBloomFilter::ProjectGrowth(fixed, FilterLimits{}, 1000).stop,
            FilterStatus::kFull);
}

}  // namespace
}  // namespace bloomgate
