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
  // Blocked layers (the layout from 1e-3 up). A classic layer's bit array
  // is allocated in whole 64-byte lines and counted in bits/8: up to 56
  // bytes a layer short (bench/README.md, small filters).
  for (const double rate : {0.01, 0.002}) {
    SCOPED_TRACE(rate);
    ScalableBloomOptions options;
    options.error_rate = rate;
    options.capacity = 100;
    ASSERT_EQ(PreferredBloomLayout(rate, options.expansion), BloomLayout::kBlocked);
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
