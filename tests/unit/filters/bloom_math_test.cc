#include "filters/bloom_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>

#include "filters/limits.h"

namespace bloomgate {
namespace {

TEST(BloomMath, StandardRateAtTenBitsPerKeyAndSevenProbesIs0Point819Percent) {
  // (1 - e^{-0.7})^7 = 0.0081937...
  EXPECT_NEAR(StandardBloomFpRate(10, 7), 0.0081937, 1e-7);
}

TEST(BloomMath, StandardRateAtTheOptimalProbeCountIsHalfToTheK) {
  // At k = b ln 2 half the bits are set, so FP = 2^-k.
  for (int k : {1, 4, 7, 13}) {
    EXPECT_NEAR(StandardBloomFpRate(k / std::log(2.0), k), std::pow(0.5, k), 1e-12) << "k=" << k;
  }
}

TEST(BloomMath, BlockedRateAtTenBitsPerKeyIsJustAboveRocksDbsMeasuredFigure) {
  // RocksDB: theoretical best 0.9535% for 10 bits/key, 6 probes, 512-bit
  // blocks; FastLocalBloom measures 0.957%. Our model also counts repeated
  // query probes and must bound that from above, without overshooting much.
  const double fp = BlockedBloomFpRate(10, 6, 512);
  EXPECT_NEAR(fp, 0.009891, 2e-6);
  EXPECT_GT(fp, 0.00957);
  EXPECT_LT(fp, 0.0100);
}

TEST(BloomMath, BlockedLayoutIsWorseThanStandardForTheSameBits) {
  for (double bpk : {6.0, 10.0, 16.0, 24.0}) {
    for (int k : {3, 6, 10}) {
      EXPECT_GT(BlockedBloomFpRate(bpk, k, 512), StandardBloomFpRate(bpk, k))
          << bpk << " bits/key, " << k << " probes";
    }
  }
}

TEST(BloomMath, HugeBlocksApproachTheStandardFilter) {
  // With a 2^20-bit block the load barely varies between blocks and repeated
  // probes are rare, so the blocked filter is nearly a standard one.
  const double standard = StandardBloomFpRate(10, 7);
  EXPECT_NEAR(BlockedBloomFpRate(10, 7, 1 << 20) / standard, 1.0, 0.01);
}

TEST(BloomMath, DegenerateInputsMeanEverythingIsAFalsePositive) {
  EXPECT_EQ(StandardBloomFpRate(0, 7), 1.0);
  EXPECT_EQ(StandardBloomFpRate(10, 0), 1.0);
  EXPECT_EQ(BlockedBloomFpRate(0, 7, 512), 1.0);
  EXPECT_EQ(BlockedBloomFpRate(-3, 7, 512), 1.0);
  EXPECT_EQ(BlockedBloomFpRate(10, 0, 512), 1.0);
  EXPECT_EQ(BlockedBloomFpRate(std::nan(""), 6, 512), 1.0);
}

TEST(BloomMath, ShapeMeetsTheTargetInWholeBlocksWithTheFewestBitsPerKey) {
  for (double p : {0.01, 0.005, 0.001, 0.0001, 1e-6}) {
    const BloomShape shape = ChooseBlockedBloomShape(p, /*capacity=*/1'000'000);
    const double target = p * kBloomFpSafetyMargin;
    EXPECT_EQ(shape.bits % kBloomBlockBits, 0u) << p;
    EXPECT_LE(shape.predicted_fp, target) << p;
    EXPECT_NEAR(shape.predicted_fp, BlockedBloomFpRate(shape.bits_per_key, shape.probes, 512),
                1e-15);
    EXPECT_GE(shape.bits_per_key, -std::log2(p) / std::log(2.0)) << p;
    // Two 1/64-bit steps fewer, no probe count reaches the target.
    for (int k = 1; k <= static_cast<int>(kMaxBloomProbes); ++k) {
      EXPECT_GT(BlockedBloomFpRate(shape.bits_per_key - 2 * kBloomBitsPerKeyStep, k, 512), target)
          << "p=" << p << " k=" << k;
    }
  }
}

// The figures quoted in bloom_math.h; if sizing changes, update the table.
TEST(BloomMath, ShapesMatchTheTableInTheHeader) {
  struct Row {
    double p;
    double bits_per_key;
    uint32_t probes;
  };
  for (const Row& row : {Row{0.01, 10.11, 7}, Row{0.005, 11.75, 7}, Row{0.001, 15.83, 9},
                         Row{0.0001, 22.47, 12}, Row{1e-6, 39.84, 16}, Row{1e-9, 83.22, 22}}) {
    const BloomShape shape = ChooseBlockedBloomShape(row.p, /*capacity=*/1'000'000);
    char line[160];
    std::snprintf(line, sizeof(line),
                  "[ shape ] p=%-8g textbook %6.2f bits/key, blocked %6.2f bits/key, %2u probes, "
                  "predicted %.4g",
                  row.p, -std::log2(row.p) / std::log(2.0), shape.bits_per_key, shape.probes,
                  shape.predicted_fp);
    std::cout << line << "\n";
    EXPECT_NEAR(shape.bits_per_key, row.bits_per_key, 0.01) << "p=" << row.p;
    EXPECT_EQ(shape.probes, row.probes) << "p=" << row.p;
  }
}

TEST(BloomMath, TheSmallestFilterIsOneBlock) {
  const BloomShape shape = ChooseBlockedBloomShape(0.01, /*capacity=*/1);
  EXPECT_EQ(shape.bits, 512u);
  EXPECT_EQ(shape.bits_per_key, 512.0);
  EXPECT_LE(shape.predicted_fp, 0.01);
}

TEST(BloomMath, RoundingUpToBlocksBuysMoreProbesForSmallFilters) {
  // 100 keys at 0.5% need 1,175 bits, rounded to 3 blocks = 15.36 bits/key,
  // where more probes than the 7 of a large filter pay off.
  const BloomShape shape = ChooseBlockedBloomShape(0.005, /*capacity=*/100);
  EXPECT_EQ(shape.bits, 3u * 512);
  EXPECT_GT(shape.probes, 7u);
  EXPECT_LT(shape.predicted_fp, 0.005 * kBloomFpSafetyMargin / 2);
}

TEST(BloomMath, HugeCapacitiesSaturateInsteadOfOverflowing) {
  const BloomShape max = ChooseBlockedBloomShape(0.01, UINT64_MAX);
  EXPECT_EQ(max.bits, kMaxBloomBits);
  const BloomShape big = ChooseBlockedBloomShape(0.01, uint64_t{1} << 62);
  EXPECT_EQ(big.bits, kMaxBloomBits);
  // Still representable: 2^50 keys at ~10 bits/key.
  const BloomShape large = ChooseBlockedBloomShape(0.01, uint64_t{1} << 50);
  EXPECT_LT(large.bits, kMaxBloomBits);
  EXPECT_NEAR(large.bits_per_key, 10.11, 0.01);
}

TEST(BloomMath, InvalidOrUnreachableRatesSaturate) {
  for (double p :
       {0.0, -0.5, 1.0, 2.0, std::nan(""), std::numeric_limits<double>::infinity(), 1e-300}) {
    EXPECT_EQ(ChooseBlockedBloomShape(p, 100).bits, kMaxBloomBits) << p;
  }
}

// Issue 10, bug 1: 1e-62 (and 8.8e-36 for counting blocks) sent the
// bisection into a loop that never ended once the bracket was so large that
// its midpoint rounded to an end. Every decade down to 1e-300 must come back
// (saturated or not) with a shape that meets the rate or says it cannot.
TEST(BloomMath, EveryTinyRateComesBack) {
  for (uint32_t block_cells : {512u, 128u, 64u}) {
    for (int exponent = 20; exponent <= 300; ++exponent) {
      for (double mantissa : {1.0, 8.8}) {
        const double p = mantissa * std::pow(10.0, -exponent);
        const BlockedShape shape = ChooseBlockedShape(p, /*capacity=*/100, block_cells);
        EXPECT_TRUE(shape.cells == MaxBlockedCells(block_cells) || shape.predicted_fp <= p)
            << p << " with " << block_cells << "-cell blocks";
      }
    }
  }
}

TEST(BloomMath, TheDeepestLayerOfTheWorstFilterIsStillSizable) {
  // Layer 63 of a filter created at the 0.25 cap: 0.125 * 2^-63.
  const double p = 0.125 * std::ldexp(1.0, -(static_cast<int>(kMaxBloomLayers) - 1));
  const BloomShape shape = ChooseBlockedBloomShape(p, /*capacity=*/1000);
  EXPECT_LT(shape.bits, kMaxBloomBits);
  EXPECT_LE(shape.predicted_fp, p);
  EXPECT_LE(shape.probes, kMaxBloomProbes);
  std::cout << "[ shape ] p=" << p << ": " << shape.bits_per_key << " bits/key, " << shape.probes
            << " probes\n";
}

}  // namespace
}  // namespace bloomgate
