// Which layer layout a new Bloom filter gets, and the sizes that choice
// gives against RedisBloom's sizing formula (bloom_math.h's crossover table,
// redisbloom_layout.h's ChooseClassicBloomShape). Pure arithmetic: no filter
// is filled here except a small one; the measured FP rates at 1M items are
// the bench row accuracy/layout (bench/filter_bench.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "filters/bloom_math.h"
#include "filters/redisbloom_layout.h"
#include "filters/scalable_bloom_filter.h"

namespace bloomgate {
namespace {

constexpr uint64_t kMillion = 1'000'000;
// The rates the issue names, requested by BF.RESERVE (scaling, expansion 2).
constexpr double kRequested[] = {0.1, 0.01, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-9};

// Layer 0's shape for a requested rate, as a new filter gets it.
BlockedShape ChosenShape(double requested, uint64_t capacity) {
  const double layer0 = requested * kErrorTighteningRatio;
  return PreferredBloomLayout(requested, /*expansion=*/2) == BloomLayout::kClassic
             ? ChooseClassicBloomShape(layer0, capacity)
             : ChooseBlockedShape(layer0, capacity, kBloomBlockBits);
}

TEST(BloomLayoutChoice, CrossoverTable) {
  // Prints the table bloom_math.h quotes; asserts the crossover's rule: the
  // blocked layout is kept exactly where its premium over the classic one
  // (RedisBloom's bits) is at most 10%.
  std::printf("requested  layer p   blocked (k)   classic (k)   blocked/classic  chosen\n");
  for (double requested : kRequested) {
    const double p = requested * kErrorTighteningRatio;
    const BlockedShape blocked = ChooseBlockedShape(p, kMillion, kBloomBlockBits);
    const BlockedShape classic = ChooseClassicBloomShape(p, kMillion);
    const double premium = static_cast<double>(blocked.cells) / static_cast<double>(classic.cells);
    const bool is_classic =
        PreferredBloomLayout(requested, /*expansion=*/2) == BloomLayout::kClassic;
    std::printf("%-9g  %-8g  %6.2f (%2u)   %6.2f (%2u)   %.3f            %s\n", requested, p,
                blocked.cells_per_key, blocked.probes, classic.cells_per_key, classic.probes,
                premium, is_classic ? "classic" : "blocked");
    if (is_classic) {
      EXPECT_GT(premium, 1.10) << requested;
    } else {
      EXPECT_LE(premium, 1.10) << requested;
    }
  }
}

TEST(BloomLayoutChoice, LowRatesAreClassicHighRatesBlocked) {
  EXPECT_EQ(PreferredBloomLayout(0.1, 2), BloomLayout::kBlocked);
  EXPECT_EQ(PreferredBloomLayout(0.01, 2), BloomLayout::kBlocked);
  EXPECT_EQ(PreferredBloomLayout(1e-3, 2), BloomLayout::kClassic);  // layer 0 at 5e-4
  EXPECT_EQ(PreferredBloomLayout(1e-9, 2), BloomLayout::kClassic);
  // NONSCALING: layer 0 gets the whole rate.
  EXPECT_EQ(PreferredBloomLayout(1e-3, 0), BloomLayout::kBlocked);
  EXPECT_EQ(PreferredBloomLayout(9e-4, 0), BloomLayout::kClassic);
}

TEST(BloomLayoutChoice, ClassicBitsNeverExceedRedisBloomsAndFpNoWorse) {
  // Every rate from 0.25 down to 1e-12 in 1/8 decades, capacities from 1 to
  // 10^9: our classic layer has at most RedisBloom's bits for the same layer,
  // and a predicted FP no worse than RedisBloom's own shape's unless the
  // round-down removed bits. Removing d bits of n items' array raises the FP
  // by a factor of about e^{d ln(2)^2 / n}: d < 128, so < 0.01% at n = 1M
  // (checked below) but ~3% at n = 1000.
  for (double exponent = -0.6; exponent >= -12; exponent -= 0.125) {
    const double p = std::pow(10.0, exponent);
    for (uint64_t n : {uint64_t{1}, uint64_t{7}, uint64_t{100}, uint64_t{1000}, kMillion,
                       uint64_t{1'000'000'000}}) {
      const BlockedShape rb = ChooseRedisBloomShape(p, n);
      const BlockedShape ours = ChooseClassicBloomShape(p, n);
      const std::string where = "p=" + std::to_string(p) + " n=" + std::to_string(n);
      ASSERT_EQ(ours.block_cells, kClassicBloomGranuleBits) << where;
      ASSERT_EQ(ours.cells % kClassicBloomGranuleBits, 0u) << where;
      if (rb.cells >= kClassicBloomGranuleBits) {
        EXPECT_LE(ours.cells, rb.cells) << where;
      } else {
        EXPECT_EQ(ours.cells, kClassicBloomGranuleBits) << where;  // the one-granule minimum
      }
      const double keys = static_cast<double>(n);
      const double rb_fp =
          StandardBloomFpRate(static_cast<double>(rb.cells) / keys, static_cast<int>(rb.probes));
      if (ours.cells == rb.cells) {
        EXPECT_LE(ours.predicted_fp, rb_fp) << where;
      } else if (n >= kMillion) {
        EXPECT_LE(ours.predicted_fp, rb_fp * 1.001) << where;
      }
    }
  }
}

TEST(BloomLayoutChoice, IssueRatesAtAMillionAreAtMostRedisBloomsBits) {
  // Target 3 of issue 14: for each requested rate the chosen layer 0 against
  // RedisBloom's formula for the same BF.RESERVE. Blocked rates are allowed
  // their documented premium (<= 10%), classic ones none.
  for (double requested : kRequested) {
    const double p = requested * kErrorTighteningRatio;
    const uint64_t rb_bytes = ChooseRedisBloomShape(p, kMillion).cells / 8;
    const uint64_t ours = ChosenShape(requested, kMillion).cells / 8;
    const double bound =
        PreferredBloomLayout(requested, 2) == BloomLayout::kClassic ? 1.0 : 1.10;
    EXPECT_LE(static_cast<double>(ours), bound * static_cast<double>(rb_bytes)) << requested;
  }
}

TEST(BloomLayoutChoice, ClassicFilterFindsEveryItemAndHashesWithItsSeed) {
  ScalableBloomOptions options;
  options.error_rate = 1e-4;
  options.capacity = 2000;
  options.layout = BloomLayout::kClassic;
  options.hash_seed = 12345;
  FilterLimits limits;
  std::unique_ptr<ScalableBloomFilter> filter;
  ASSERT_EQ(ScalableBloomFilter::Create(options, limits, nullptr, &filter), FilterStatus::kOk);
  EXPECT_EQ(filter->layout(), BloomLayout::kClassic);
  EXPECT_EQ(filter->block_cells(), kClassicBloomGranuleBits);
  EXPECT_EQ(filter->hash_seed(), 12345u);
  EXPECT_FALSE(filter->layer(0).redisbloom_layout());
  EXPECT_TRUE(filter->layer(0).classic());
  // 3 layers' worth, so growth keeps the kind.
  for (int i = 0; i < 9000; ++i) {
    bool added = false;
    ASSERT_EQ(filter->Add(filter->Hash("item:" + std::to_string(i)), &added), FilterStatus::kOk);
  }
  ASSERT_GE(filter->num_layers(), 3u);
  for (uint32_t i = 0; i < filter->num_layers(); ++i) {
    EXPECT_EQ(filter->layer(i).bits() % kClassicBloomGranuleBits, 0u);
    EXPECT_TRUE(filter->layer(i).classic());
  }
  for (int i = 0; i < 9000; ++i) {
    ASSERT_TRUE(filter->MayContain(filter->Hash("item:" + std::to_string(i)))) << i;
  }
  // Fixed seed and items, so this count is deterministic; the bound is 10x
  // the requested rate so only a broken probe sequence (e.g. every probe on
  // one bit) fails it. 200,000 probes at 1e-4 expect ~20.
  int false_positives = 0;
  for (int i = 0; i < 200'000; ++i) {
    false_positives += filter->MayContain(filter->Hash("absent:" + std::to_string(i))) ? 1 : 0;
  }
  EXPECT_LT(false_positives, 200);
  // The same item under another seed lands elsewhere: the hash is seeded.
  EXPECT_NE(filter->Hash("x").lo, HashKey("x", 999).lo);
}

}  // namespace
}  // namespace bloomgate
