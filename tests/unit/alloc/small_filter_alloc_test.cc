// MEMORY USAGE (and BF.INFO / CBF.INFO Size) counts what a filter really
// allocates: memory_bytes() equals the bytes the filter asked operator new
// for, its object, layers, lists and cells, through every growth step; and
// what a key adds beyond its filter is what the keyspace allocates for it.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "counting_new.h"
#include "filters/counting_bloom_filter.h"
#include "filters/scalable_bloom_filter.h"
#include "server/keyspace/keyspace.h"

namespace bloomgate {
namespace {

uint64_t BytesSoFar() { return testing::AllocationsOnThisThread().bytes; }

class FilterAllocations : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The first growth in the process allocates the grow stripes (shared by
    // every chain, filters/grow_stripes.h): done here, before any count.
    ScalableBloomOptions options;
    options.capacity = 1;
    std::unique_ptr<ScalableBloomFilter> filter;
    ASSERT_EQ(ScalableBloomFilter::Create(options, FilterLimits{}, nullptr, &filter),
              FilterStatus::kOk);
    for (int i = 0; filter->num_layers() < 2; ++i) {
      bool added = false;
      ASSERT_EQ(filter->Add(filter->Hash(std::to_string(i)), &added), FilterStatus::kOk);
    }
  }
  void SetUp() override {
    if (!BLOOMGATE_COUNTING_NEW) GTEST_SKIP() << "operator new is the sanitizer's";
  }
};

// Creates a filter of `options` and adds items until it has `layers`
// layers: creating it, and each growth step, allocates exactly what it adds
// to memory_bytes(); an add that does not grow allocates nothing.
template <typename Filter, typename Options>
void CreateGrowAndCheck(const Options& options, uint32_t layers) {
  std::unique_ptr<Filter> filter;
  const uint64_t created = BytesSoFar();
  ASSERT_EQ(Filter::Create(options, FilterLimits{}, nullptr, &filter), FilterStatus::kOk);
  EXPECT_EQ(BytesSoFar() - created, filter->memory_bytes());
  for (uint64_t i = 0; filter->num_layers() < layers; ++i) {
    const uint32_t layers_before = filter->num_layers();
    const uint64_t bytes_before = filter->memory_bytes();
    const std::string item = "item:" + std::to_string(i);  // short: no allocation
    const uint64_t start = BytesSoFar();
    bool added = false;
    ASSERT_EQ(filter->Add(filter->Hash(item), &added), FilterStatus::kOk);
    const uint64_t allocated = BytesSoFar() - start;
    if (filter->num_layers() != layers_before) {
      EXPECT_EQ(allocated, filter->memory_bytes() - bytes_before) << filter->num_layers() << " layers";
    } else {
      EXPECT_EQ(allocated, 0u);
    }
  }
}

TEST_F(FilterAllocations, ABloomFilterCountsExactlyWhatItAllocates) {
  // Blocked layers (the layout from 1e-3 up), then classic ones, whose bit
  // arrays are allocated (and counted) in whole 64-byte lines.
  for (const double rate : {0.01, 0.002, 0.0001}) {
    SCOPED_TRACE(rate);
    ScalableBloomOptions options;
    options.error_rate = rate;
    options.capacity = 100;
    options.layout = PreferredBloomLayout(rate, options.expansion);
    ASSERT_EQ(options.layout, rate < 0.001 ? BloomLayout::kClassic : BloomLayout::kBlocked);
    options.hash_seed = 7;
    // Layer 2's cells pass 4 KiB: its counter gets a line of its own.
    CreateGrowAndCheck<ScalableBloomFilter>(options, 7);
  }
}

TEST_F(FilterAllocations, ACountingFilterCountsExactlyWhatItAllocates) {
  CountingBloomOptions options;
  options.capacity = 100;
  options.hash_seed = 7;
  CreateGrowAndCheck<CountingBloomFilter>(options, 5);
}

TEST_F(FilterAllocations, ARestoredFilterCountsWhatItAllocates) {
  ScalableBloomOptions options;
  options.capacity = 100;
  options.hash_seed = 7;
  std::unique_ptr<ScalableBloomFilter> grown;
  ASSERT_EQ(ScalableBloomFilter::Create(options, FilterLimits{}, nullptr, &grown),
            FilterStatus::kOk);
  for (int i = 0; grown->num_layers() < 4; ++i) {
    bool added = false;
    ASSERT_EQ(grown->Add(grown->Hash("item:" + std::to_string(i)), &added), FilterStatus::kOk);
  }
  std::vector<BloomLayerShape> shapes;
  for (const BloomLayerInfo& layer : grown->Layers()) {
    shapes.push_back({layer.capacity, layer.items, layer.error_rate, layer.bits, layer.probes});
  }
  std::unique_ptr<ScalableBloomFilter> restored;
  const uint64_t start = BytesSoFar();
  ASSERT_EQ(ScalableBloomFilter::Restore(grown->error_rate(), grown->expansion(), shapes,
                                         FilterLimits{}, nullptr, &restored, 7),
            FilterStatus::kOk);
  EXPECT_EQ(BytesSoFar() - start, restored->memory_bytes());
  EXPECT_EQ(restored->memory_bytes(), grown->memory_bytes());
}

// What creating a Bloom filter of `options` allocated on this thread.
testing::Allocations CreateBloom(const ScalableBloomOptions& options,
                                 std::unique_ptr<ScalableBloomFilter>* filter) {
  const testing::Allocations before = testing::AllocationsOnThisThread();
  EXPECT_EQ(ScalableBloomFilter::Create(options, FilterLimits{}, nullptr, filter),
            FilterStatus::kOk);
  const testing::Allocations after = testing::AllocationsOnThisThread();
  return {after.count - before.count, after.bytes - before.bytes};
}

// A small Bloom filter is one allocation: the filter object, layer 0 and
// its bits in one line-aligned block, the bits right behind the header, so
// a lookup in a cold filter misses on adjacent lines, not on three chunks.
TEST_F(FilterAllocations, ASmallBloomFilterIsOneAllocation) {
  for (const double rate : {0.01, 0.0001}) {  // blocked, then classic layers
    SCOPED_TRACE(rate);
    ScalableBloomOptions options;
    options.error_rate = rate;
    options.capacity = 100;
    options.layout = PreferredBloomLayout(rate, options.expansion);
    options.hash_seed = 7;
    std::unique_ptr<ScalableBloomFilter> filter;
    const testing::Allocations made = CreateBloom(options, &filter);
    ASSERT_NE(filter, nullptr);
    EXPECT_EQ(made.count, 1u);
    EXPECT_EQ(made.bytes, filter->memory_bytes());
    const char* block = reinterpret_cast<const char*>(filter.get());
    const char* bits = reinterpret_cast<const char*>(filter->layer(0).words());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % 64, 0u);
    EXPECT_EQ(bits - block, 192) << "the header: filter and layer 0, three lines";
    EXPECT_LE(bits + filter->layer(0).bytes(), block + filter->memory_bytes());
  }
}

// Layer 0's bits stay out of the block from 1 MiB on: such an array comes
// from fresh pages, not a heap chunk written whole (block_words.h); the
// filter still counts every byte it allocated.
TEST_F(FilterAllocations, ALargeFirstLayerKeepsItsBitsApart) {
  ScalableBloomOptions options;
  options.capacity = 2'000'000;  // ~3 MB of bits at 0.5%
  options.hash_seed = 7;
  std::unique_ptr<ScalableBloomFilter> filter;
  const testing::Allocations made = CreateBloom(options, &filter);
  ASSERT_NE(filter, nullptr);
  ASSERT_GE(filter->layer(0).bytes(), uint64_t{1} << 20);
  // The block and its counter line on the heap; the bits are mapped.
  EXPECT_EQ(made.count, 2u);
  EXPECT_EQ(made.bytes + filter->layer(0).bytes(), filter->memory_bytes());
  const char* block = reinterpret_cast<const char*>(filter.get());
  const char* bits = reinterpret_cast<const char*>(filter->layer(0).words());
  EXPECT_TRUE(bits < block || bits >= block + 192);
}

// A key costs its filter plus what the keyspace holds for it: the entry
// (with its shared_ptr control block: one allocation) and the map node.
// MEMORY USAGE counts those; the keyspace's SCAN index node and its share of
// the bucket array it does not (as Redis counts the dict entry, not the
// table).
TEST_F(FilterAllocations, AKeyCostsItsFilterItsEntryAndItsMapNode) {
  Keyspace keyspace;
  ScalableBloomOptions options;
  options.capacity = 100;
  std::unique_ptr<ScalableBloomFilter> filter;
  ASSERT_EQ(ScalableBloomFilter::Create(options, FilterLimits{}, nullptr, &filter),
            FilterStatus::kOk);
  const uint64_t filter_bytes = filter->memory_bytes();
  const uint64_t start = BytesSoFar();
  EntryPtr entry = std::make_shared<KeyEntry>(std::move(filter));
  const uint64_t entry_bytes = BytesSoFar() - start;
  EXPECT_EQ(entry->MemoryUsage(), filter_bytes + entry_bytes + Keyspace::kMapNodeBytes);

  const uint64_t first = testing::AllocationsOnThisThread().count;
  bool inserted = false;
  keyspace.Insert("k", entry, /*now_ms=*/1, &inserted);
  ASSERT_TRUE(inserted);
  // The node, the SCAN index's node and (the shard's first key) its buckets.
  uint32_t nodes = 0;
  std::string sizes;
  for (uint64_t i = first; i < testing::AllocationsOnThisThread().count; ++i) {
    nodes += testing::AllocationSize(i) == Keyspace::kMapNodeBytes;
    sizes += std::to_string(testing::AllocationSize(i)) + " ";
  }
  EXPECT_EQ(nodes, 1u) << "allocations: " << sizes;
}

}  // namespace
}  // namespace bloomgate
