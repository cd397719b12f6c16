// BlockedCountingBloom, one layer: the lane layout of its packed counters,
// saturation, and ChooseBlockedShape's sizing for 128- and 64-cell blocks.

#include "filters/blocked_counting_bloom.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <random>
#include <vector>

#include "filter_test_support.h"
#include "filters/bloom_math.h"
#include "filters/limits.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;

// A one-probe layer of `blocks` blocks: the item {lo = cell << shift, hi = 0}
// touches exactly cell `cell` of block 0, so each counter can be driven alone.
std::unique_ptr<BlockedCountingBloom> OneProbeLayer(uint32_t counter_bits, uint64_t blocks = 1) {
  const uint32_t block_cells = BlockedCountingBloom::BlockCellsFor(counter_bits);
  return BlockedCountingBloom::Create(
      BlockedShape{/*cells=*/blocks * block_cells, block_cells, /*probes=*/1, 0, 0}, counter_bits);
}

KeyHash CellItem(uint32_t counter_bits, uint32_t cell) {
  const int shift = counter_bits == 4 ? 57 : 58;  // top 7 or 6 bits pick the cell
  return KeyHash{/*lo=*/uint64_t{cell} << shift, /*hi=*/0};
}

class CountingLayerWidth : public ::testing::TestWithParam<uint32_t> {};

INSTANTIATE_TEST_SUITE_P(CounterBits, CountingLayerWidth, ::testing::Values(4u, 8u),
                         [](const auto& info) { return std::to_string(info.param) + "Bits"; });

TEST_P(CountingLayerWidth, EachCellIsItsOwnLaneOfItsWord) {
  const uint32_t bits = GetParam();
  const auto layer = OneProbeLayer(bits);
  ASSERT_NE(layer, nullptr);
  const uint32_t cells = BlockedCountingBloom::BlockCellsFor(bits);
  EXPECT_EQ(layer->cells(), cells);
  EXPECT_EQ(layer->bytes(), 64u);
  EXPECT_EQ(layer->max_count(), bits == 4 ? 15u : 255u);
  // Cell c gets c % 13 + 1 increments (1..13: below both maxima).
  for (uint32_t c = 0; c < cells; ++c) {
    for (uint32_t n = 0; n < c % 13 + 1; ++n) layer->Increment(CellItem(bits, c));
  }
  const uint32_t per_word = 64 / bits;
  for (uint32_t c = 0; c < cells; ++c) {
    EXPECT_EQ(layer->Counter(c), c % 13 + 1) << "cell " << c;
    const uint64_t word = layer->words()[c / per_word].load(std::memory_order_relaxed);
    EXPECT_EQ((word >> ((c % per_word) * bits)) & layer->max_count(), c % 13 + 1) << "cell " << c;
    EXPECT_EQ(layer->MinCounter(CellItem(bits, c)), c % 13 + 1);
  }
  EXPECT_EQ(layer->saturated_counters(), 0u);
  // Decrementing each cell to zero leaves every other cell alone.
  for (uint32_t c = 0; c < cells; ++c) {
    for (uint32_t n = 0; n < c % 13 + 1; ++n) {
      EXPECT_EQ(layer->Decrement(CellItem(bits, c)), n == c % 13) << "cell " << c;
    }
    EXPECT_FALSE(layer->MayContain(CellItem(bits, c)));
    if (c + 1 < cells) {
      EXPECT_EQ(layer->Counter(c + 1), (c + 1) % 13 + 1);
    }
  }
  for (uint64_t w = 0; w < layer->num_words(); ++w) {
    EXPECT_EQ(layer->words()[w].load(std::memory_order_relaxed), 0u) << "word " << w;
  }
}

TEST_P(CountingLayerWidth, ACounterSaturatesAtItsMaxAndStaysThereAfterRemoves) {
  const uint32_t bits = GetParam();
  const auto layer = OneProbeLayer(bits);
  ASSERT_NE(layer, nullptr);
  const uint64_t max = layer->max_count();
  const KeyHash item = CellItem(bits, 5);
  for (uint64_t n = 1; n < max; ++n) layer->Increment(item);
  EXPECT_EQ(layer->Counter(5), max - 1);
  EXPECT_EQ(layer->saturated_counters(), 0u);
  layer->Increment(item);  // reaches the max: counted once
  EXPECT_EQ(layer->Counter(5), max);
  EXPECT_EQ(layer->saturated_counters(), 1u);
  for (int n = 0; n < 100; ++n) layer->Increment(item);  // never past it, never counted again
  EXPECT_EQ(layer->Counter(5), max);
  EXPECT_EQ(layer->saturated_counters(), 1u);
  EXPECT_EQ(layer->Counter(4), 0u);  // no carry into the neighbours
  EXPECT_EQ(layer->Counter(6), 0u);
  for (int n = 0; n < 1000; ++n) EXPECT_FALSE(layer->Decrement(item));  // never decremented
  EXPECT_EQ(layer->Counter(5), max);
  EXPECT_TRUE(layer->MayContain(item));
  EXPECT_EQ(layer->MinCounter(item), max);
  EXPECT_EQ(layer->saturated_counters(), 1u);
}

TEST_P(CountingLayerWidth, DecrementingAZeroCounterLeavesItAndItsNeighboursAlone) {
  const uint32_t bits = GetParam();
  const auto layer = OneProbeLayer(bits);
  ASSERT_NE(layer, nullptr);
  for (uint64_t n = 0; n < layer->max_count(); ++n) layer->Increment(CellItem(bits, 2));
  layer->Increment(CellItem(bits, 4));
  // Cell 3 is 0, between a saturated cell and a cell at 1: no borrow either way.
  EXPECT_FALSE(layer->Decrement(CellItem(bits, 3)));
  EXPECT_EQ(layer->Counter(2), layer->max_count());
  EXPECT_EQ(layer->Counter(3), 0u);
  EXPECT_EQ(layer->Counter(4), 1u);
}

TEST_P(CountingLayerWidth, AnItemsRepeatedProbesCountOncePerUpdate) {
  // With lo = 0 every probe lands on cell 0: an item of 6 probes that all
  // repeat one cell still adds exactly one per Increment.
  const uint32_t bits = GetParam();
  const uint32_t block_cells = BlockedCountingBloom::BlockCellsFor(bits);
  const auto layer = BlockedCountingBloom::Create(
      BlockedShape{block_cells * 4, block_cells, /*probes=*/6, 0, 0}, bits);
  ASSERT_NE(layer, nullptr);
  const KeyHash item{/*lo=*/0, /*hi=*/0};
  layer->Increment(item);
  layer->Increment(item);
  EXPECT_EQ(layer->Counter(0), 2u);
  EXPECT_EQ(layer->MinCounter(item), 2u);
  uint64_t total = 0;
  for (uint64_t c = 0; c < layer->cells(); ++c) total += layer->Counter(c);
  EXPECT_EQ(total, 2u);
}

TEST_P(CountingLayerWidth, EveryItemsCountersComeBackToZero) {
  const uint32_t bits = GetParam();
  const uint32_t block_cells = BlockedCountingBloom::BlockCellsFor(bits);
  const BlockedShape shape = ChooseBlockedShape(0.01, 10'000, block_cells);
  const auto layer = BlockedCountingBloom::Create(shape, bits);
  ASSERT_NE(layer, nullptr);
  for (uint64_t i = 0; i < 10'000; ++i) layer->Increment(ItemHash("item", i));
  for (uint64_t i = 0; i < 10'000; ++i) {
    ASSERT_TRUE(layer->MayContain(ItemHash("item", i))) << i;
    ASSERT_GE(layer->MinCounter(ItemHash("item", i)), 1u) << i;
  }
  for (uint64_t i = 0; i < 10'000; ++i) layer->Decrement(ItemHash("item", i));
  for (uint64_t w = 0; w < layer->num_words(); ++w) {
    ASSERT_EQ(layer->words()[w].load(std::memory_order_relaxed), 0u) << "word " << w;
  }
}

// One random block for ReadBlock: each lane 0 (most often, as in a real
// filter), small, one of the values around half and around the max, or any
// value; with `below_half`, every lane below half the max.
template <uint32_t kBits>
void FillRandomBlock(std::mt19937_64& rng, bool below_half, std::atomic<uint64_t>* block) {
  using L = internal::Lanes<kBits>;
  constexpr uint64_t kHalf = L::kMax / 2 + 1;  // 8 or 128
  const uint64_t edges[] = {kHalf - 2, kHalf - 1, kHalf, kHalf + 1, L::kMax - 1, L::kMax};
  std::uniform_int_distribution<int> kind(0, 9);
  for (uint64_t w = 0; w < BlockedCountingBloom::kWordsPerBlock; ++w) {
    uint64_t word = 0;
    for (uint32_t lane = 0; lane < L::kPerWord; ++lane) {
      uint64_t v = 0;
      const int k = kind(rng);
      if (k >= 5 && k < 8) v = 1 + rng() % 3;
      if (k == 8) v = edges[rng() % std::size(edges)];
      if (k == 9) v = rng() % (L::kMax + 1);
      if (below_half) v %= kHalf;
      word |= v << (lane * kBits);
    }
    block[w].store(word, std::memory_order_relaxed);
  }
}

// ReadBlock (and its word-at-a-time form) against BlockHas, and
// BlockIncrementBelowHalf against
// BlockIncrement, on random blocks and items: counters at 0, just below,
// at and just above half the max, and at and just below the max.
template <uint32_t kBits>
void ExpectReadBlockMatchesThePerCounterPath() {
  using L = internal::Lanes<kBits>;
  std::mt19937_64 rng(kBits);
  alignas(64) std::atomic<uint64_t> block[BlockedCountingBloom::kWordsPerBlock];
  alignas(64) std::atomic<uint64_t> reference[BlockedCountingBloom::kWordsPerBlock];
  uint64_t below = 0, present = 0, present_below = 0;
  for (int round = 0; round < 60'000; ++round) {
    FillRandomBlock<kBits>(rng, /*below_half=*/round % 2 == 0, block);
    const internal::CellMasks masks =
        internal::ProbeCells<kBits>(rng()).For(1 + static_cast<uint32_t>(rng() % 12));
    uint64_t highest = 0;
    for (uint64_t c = 0; c < L::kBlockCells; ++c) {
      const uint64_t word = block[c / L::kPerWord].load(std::memory_order_relaxed);
      highest = std::max(highest, L::Lane(word, c % L::kPerWord));
    }
    const BlockedCountingBloom::BlockReading read =
        BlockedCountingBloom::ReadBlock<kBits>(block, masks);
    const BlockedCountingBloom::BlockReading by_words =
        BlockedCountingBloom::ReadBlockByWords<kBits>(block, masks);
    const bool has = BlockedCountingBloom::BlockHas<kBits>(block, masks);
    ASSERT_EQ(read.has, has) << "round " << round;
    ASSERT_EQ(read.below_half, highest <= L::kMax / 2) << "round " << round;
    ASSERT_EQ(by_words.has, has) << "round " << round;
    ASSERT_EQ(by_words.below_half, read.below_half) << "round " << round;
    below += read.below_half;
    present += has;
    if (!read.below_half) continue;
    present_below += has;
    for (uint64_t w = 0; w < BlockedCountingBloom::kWordsPerBlock; ++w) {
      reference[w].store(block[w].load(std::memory_order_relaxed), std::memory_order_relaxed);
    }
    BlockedCountingBloom::BlockIncrementBelowHalf(block, masks);
    EXPECT_EQ((BlockedCountingBloom::BlockIncrement<kBits, CounterWrites::kExclusive>(reference,
                                                                                     masks)),
              0u);
    for (uint64_t w = 0; w < BlockedCountingBloom::kWordsPerBlock; ++w) {
      ASSERT_EQ(block[w].load(std::memory_order_relaxed),
                reference[w].load(std::memory_order_relaxed))
          << "round " << round << " word " << w;
    }
  }
  // What the comparison covered, measured rather than assumed: both paths,
  // and items present and absent in each.
  EXPECT_EQ(below, 30'000u + (below - 30'000u));  // every below-half block, and
  EXPECT_LT(below - 30'000u, 3'000u);            // few of the others by chance
  EXPECT_GT(present_below, 1'000u);
  EXPECT_GT(present - present_below, 1'000u);
}

TEST(BlockedCountingBloom, ReadBlockAnswersAsBlockHasAndItsIncrementAsBlockIncrement) {
  ExpectReadBlockMatchesThePerCounterPath<4>();
  ExpectReadBlockMatchesThePerCounterPath<8>();
}

TEST(BlockedCountingBloom, CreateRefusesWidthsAndShapesThatDoNotFit) {
  EXPECT_EQ(BlockedCountingBloom::Create(BlockedShape{128, 128, 6, 0, 0}, 2), nullptr);
  EXPECT_EQ(BlockedCountingBloom::Create(BlockedShape{128, 128, 6, 0, 0}, 16), nullptr);
  // 4-bit counters need 128-cell blocks, 8-bit ones 64-cell blocks.
  EXPECT_EQ(BlockedCountingBloom::Create(BlockedShape{128, 64, 6, 0, 0}, 4), nullptr);
  EXPECT_EQ(BlockedCountingBloom::Create(BlockedShape{128, 128, 6, 0, 0}, 8), nullptr);
  EXPECT_EQ(BlockedCountingBloom::Create(BlockedShape{0, 128, 6, 0, 0}, 4), nullptr);
  EXPECT_EQ(BlockedCountingBloom::Create(BlockedShape{100, 128, 6, 0, 0}, 4), nullptr);
  EXPECT_EQ(BlockedCountingBloom::Create(BlockedShape{128, 128, 0, 0, 0}, 4), nullptr);
  EXPECT_EQ(BlockedCountingBloom::Create(BlockedShape{128, 128, kMaxBloomProbes + 1, 0, 0}, 4),
            nullptr);
  // Representable but never allocatable: fails cleanly.
  EXPECT_EQ(BlockedCountingBloom::Create(
                BlockedShape{MaxBlockedCells(128) - 128, 128, 6, 0, 0}, 4),
            nullptr);
  EXPECT_NE(BlockedCountingBloom::Create(BlockedShape{128, 128, 6, 0, 0}, 4), nullptr);
  EXPECT_NE(BlockedCountingBloom::Create(BlockedShape{64, 64, 6, 0, 0}, 8), nullptr);
}

TEST(BlockedShape, FiveHundredTwelveCellsIsExactlyTheBloomShape) {
  for (double p : {0.01, 0.005, 0.001, 1e-6}) {
    for (uint64_t n : {uint64_t{1}, uint64_t{100}, uint64_t{12'345}, uint64_t{1'000'000},
                       uint64_t{1} << 50}) {
      const BloomShape bloom = ChooseBlockedBloomShape(p, n);
      const BlockedShape blocked = ChooseBlockedShape(p, n, kBloomBlockBits);
      EXPECT_EQ(blocked.cells, bloom.bits) << p << " " << n;
      EXPECT_EQ(blocked.probes, bloom.probes) << p << " " << n;
      EXPECT_EQ(blocked.cells_per_key, bloom.bits_per_key) << p << " " << n;
      EXPECT_EQ(blocked.predicted_fp, bloom.predicted_fp) << p << " " << n;
    }
  }
}

// The figures quoted in bloom_math.h; if sizing changes, update the table.
TEST(BlockedShape, CountingShapesMatchTheTableInTheHeader) {
  struct Row {
    double p;
    uint32_t block_cells;
    double cells_per_key;
    uint32_t probes;
  };
  for (const Row& row : {Row{0.01, 128, 11.27, 6}, Row{0.01, 64, 12.92, 6},
                         Row{0.005, 128, 13.55, 7}, Row{0.005, 64, 16.11, 6},
                         Row{0.001, 128, 19.97, 8}, Row{0.001, 64, 26.33, 8},
                         Row{0.0001, 128, 32.97, 10}, Row{0.0001, 64, 51.78, 9}}) {
    const BlockedShape shape = ChooseBlockedShape(row.p, /*capacity=*/1'000'000, row.block_cells);
    char line[160];
    std::snprintf(line, sizeof(line),
                  "[ shape ] p=%-7g %3u-cell blocks: %6.2f cells/key, %2u probes, predicted %.4g",
                  row.p, row.block_cells, shape.cells_per_key, shape.probes, shape.predicted_fp);
    std::cout << line << "\n";
    EXPECT_EQ(shape.cells % row.block_cells, 0u);
    EXPECT_LE(shape.predicted_fp, row.p * kBloomFpSafetyMargin);
    EXPECT_NEAR(shape.cells_per_key, row.cells_per_key, 0.01) << row.p << " " << row.block_cells;
    EXPECT_EQ(shape.probes, row.probes) << row.p << " " << row.block_cells;
  }
}

TEST(BlockedShape, BlockSizesOutsideSixteenToFiveTwelveAndHugeCapacitiesSaturate) {
  for (uint32_t cells : {0u, 8u, 1024u}) {
    const BlockedShape shape = ChooseBlockedShape(0.01, 100, cells);
    EXPECT_EQ(shape.predicted_fp, 1.0) << cells;
    EXPECT_EQ(shape.cells, MaxBlockedCells(shape.block_cells)) << cells;
  }
  for (uint32_t cells : {64u, 128u}) {
    EXPECT_EQ(ChooseBlockedShape(0.01, UINT64_MAX, cells).cells, MaxBlockedCells(cells));
    EXPECT_EQ(ChooseBlockedShape(0.0, 100, cells).cells, MaxBlockedCells(cells));
    EXPECT_EQ(ChooseBlockedShape(1.0, 100, cells).cells, MaxBlockedCells(cells));
  }
}

TEST(BlockedShape, TheDeepestLayerOfAWideCounterFilterIsStillSizable) {
  // Layer 63 of a filter created at the 0.25 cap: 0.125 * 2^-63.
  const double p = 0.125 * std::ldexp(1.0, -(static_cast<int>(kMaxBloomLayers) - 1));
  const BlockedShape shape = ChooseBlockedShape(p, /*capacity=*/1000, /*block_cells=*/64);
  EXPECT_LT(shape.cells, MaxBlockedCells(64));
  EXPECT_LE(shape.predicted_fp, p);
  EXPECT_LE(shape.probes, kMaxBloomProbes);
  std::cout << "[ shape ] 64-cell blocks at p=" << p << ": " << shape.cells_per_key
            << " cells/key, " << shape.probes << " probes\n";
}

}  // namespace
}  // namespace bloomgate
