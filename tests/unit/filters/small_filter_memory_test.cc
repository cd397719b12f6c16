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

TEST(SmallFilterMemory, AReserveOf100At1PercentKeepsTo200BytesOfBookkeeping) {
  std::unique_ptr<ScalableBloomFilter> filter;
  ScalableBloomOptions options;
  options.error_rate = 0.01;
  options.capacity = 100;
  ASSERT_EQ(ScalableBloomFilter::Create(options, FilterLimits{}, nullptr, &filter),
            FilterStatus::kOk);
  EXPECT_EQ(filter->Layers().at(0).bytes, 192u) << "3 blocks";
  // Filter 160: the chain's fields (48, without a mutex or shape cache), its
  // first list with its one pointer (32) and layer 0 (64, its counter on
  // the same line), the rate and hash seed (16); then BloomLayer 32 with
  // its BlockedBloom inside: three lines, in one block with the bits.
  EXPECT_EQ(Bookkeeping(*filter), 192u);
  EXPECT_EQ(filter->memory_bytes(), 384u);
}

// Layer 0 and the first list live inside the chain (so inside the filter
// object): a lookup in a filter that never grew reads the filter's own
// lines and then the cells; a grown chain's later layers and lists are
// separate blocks, layer 0 stays where it was.
TEST(SmallFilterMemory, LayerZeroAndTheFirstListLiveInsideTheChain) {
  Chain::Pending first;
  ASSERT_EQ(Chain::Start(/*capacity=*/2, 0.005, kBloomBlockBits, /*owner_bytes=*/0,
                         FilterLimits{}, nullptr, &first),
            FilterStatus::kOk);
  Chain chain(std::move(first), /*expansion=*/2, FilterLimits{});
  const char* begin = reinterpret_cast<const char*>(&chain);
  const char* end = begin + sizeof(chain);
  auto inside = [&](const void* p) {
    return static_cast<const char*>(p) >= begin && static_cast<const char*>(p) < end;
  };
  const Chain::List* list = &chain.Load();
  EXPECT_TRUE(inside(list));
  const Chain::Layer* layer0 = &chain.Load()[0];
  EXPECT_TRUE(inside(layer0));
  const Chain::List* grown = nullptr;
  ASSERT_EQ(chain.Grow(list, &grown), FilterStatus::kOk);
  ASSERT_EQ(grown->size(), 2u);
  EXPECT_FALSE(inside(grown));
  EXPECT_FALSE(inside(&(*grown)[1]));
  EXPECT_EQ(&(*grown)[0], layer0);
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
