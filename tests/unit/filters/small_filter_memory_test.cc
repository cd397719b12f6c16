// What a small filter costs beyond its bits (issue 14 target 3b: MEMORY
// USAGE of `BF.RESERVE k 0.01 100`, 729 bytes at first against RedisBloom's
// 272), and where a layer's item counter lives.

#include <gtest/gtest.h>

#include <memory>

#include "filters/layer_chain.h"
#include "filters/scalable_bloom_filter.h"

namespace bloomgate {
namespace {

using Chain = LayerChain<BloomLayerTraits>;

// memory_bytes() less the bit array: the filter's bookkeeping.
uint64_t Bookkeeping(const ScalableBloomFilter& filter) {
  uint64_t bits = 0;
  for (const BloomLayerInfo& layer : filter.Layers()) bits += layer.bytes;
  return filter.memory_bytes() - bits;
}

TEST(SmallFilterMemory, AReserveOf100At1PercentKeepsTo216BytesOfBookkeeping) {
  std::unique_ptr<ScalableBloomFilter> filter;
  ScalableBloomOptions options;
  options.error_rate = 0.01;
  options.capacity = 100;
  ASSERT_EQ(ScalableBloomFilter::Create(options, FilterLimits{}, nullptr, &filter),
            FilterStatus::kOk);
  EXPECT_EQ(filter->Layers().at(0).bytes, 192u) << "3 blocks";
  // Filter 72 (the chain without a mutex or shape cache; 16 of it the
  // tightening ratio, valkey-bloom's TIGHTENING, and the padding its place
  // between two u32s costs: declared after block_cells_ it would cost 8),
  // Layer 64 (its counter on the same line), List 32 + one pointer,
  // BloomLayer 16 and BlockedBloom 24. Was 352 (filter 144, Layer 128).
  EXPECT_LE(Bookkeeping(*filter), 216u);
}

// A chain of one layer of `capacity` items at 1%, no owner bytes.
uint64_t LayerOverhead(uint64_t capacity) {
  Chain::Pending first;
  EXPECT_EQ(Chain::Start(capacity, 0.005, kBloomBlockBits, /*owner_bytes=*/0, FilterLimits{},
                         nullptr, &first),
            FilterStatus::kOk);
  Chain chain(std::move(first), /*expansion=*/2, FilterLimits{});
  return chain.memory_bytes() - chain.Load()[0].cells->bytes();
}

TEST(SmallFilterMemory, OnlyALayerOf4KiBOrMoreGivesItsCounterALineOfItsOwn) {
  const uint64_t small = LayerOverhead(/*capacity=*/100);     // 192 bytes of bits
  const uint64_t big = LayerOverhead(/*capacity=*/100'000);   // ~147 KB of bits
  EXPECT_EQ(big, small + Chain::kCounterLineBytes)
      << "small " << small << ", big " << big;
}

}  // namespace
}  // namespace bloomgate
