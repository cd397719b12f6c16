// Restore(): building a zeroed filter of exactly saved shapes for a loader,
// with the same limit and budget rules as Create(), and the raw access a
// loader needs (mutable words and slots, saturated-counter recount).

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "filter_test_support.h"
#include "filters/counting_bloom_filter.h"
#include "filters/cuckoo_filter.h"
#include "filters/scalable_bloom_filter.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;

std::vector<BloomLayerShape> ShapesOf(const ScalableBloomFilter& filter) {
  std::vector<BloomLayerShape> shapes;
  for (const BloomLayerInfo& l : filter.Layers()) {
    shapes.push_back(BloomLayerShape{l.capacity, l.items, l.error_rate, l.bits, l.probes});
  }
  return shapes;
}

std::vector<CountingBloomLayerShape> ShapesOf(const CountingBloomFilter& filter) {
  std::vector<CountingBloomLayerShape> shapes;
  for (const CountingBloomLayerInfo& l : filter.Layers()) {
    shapes.push_back(CountingBloomLayerShape{l.capacity, l.net_items, l.error_rate, l.cells,
                                             l.probes});
  }
  return shapes;
}

std::unique_ptr<ScalableBloomFilter> GrownBloom(uint32_t layers) {
  std::unique_ptr<ScalableBloomFilter> filter;
  EXPECT_EQ(ScalableBloomFilter::Create(ScalableBloomOptions{0.01, 50, 2}, FilterLimits{}, nullptr,
                                        &filter),
            FilterStatus::kOk);
  bool added = false;
  for (uint64_t i = 0; filter->num_layers() < layers; ++i) {
    EXPECT_EQ(filter->Add(ItemHash("item", i), &added), FilterStatus::kOk);
  }
  return filter;
}

TEST(ScalableBloomRestore, BuildsExactlyTheSavedLayersWithEveryBitZero) {
  const std::unique_ptr<ScalableBloomFilter> original = GrownBloom(3);
  std::unique_ptr<ScalableBloomFilter> restored;
  ASSERT_EQ(ScalableBloomFilter::Restore(original->error_rate(), original->expansion(),
                                         ShapesOf(*original), FilterLimits{}, nullptr, &restored),
            FilterStatus::kOk);
  ASSERT_EQ(restored->num_layers(), 3u);
  EXPECT_EQ(restored->items(), original->items());
  EXPECT_EQ(restored->capacity(), original->capacity());
  EXPECT_EQ(restored->memory_bytes(), original->memory_bytes());
  const auto want = original->Layers();
  const auto got = restored->Layers();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].capacity, want[i].capacity);
    EXPECT_EQ(got[i].items, want[i].items);
    EXPECT_EQ(got[i].bits, want[i].bits);
    EXPECT_EQ(got[i].probes, want[i].probes);
    EXPECT_EQ(got[i].error_rate, want[i].error_rate);
    const BloomLayer& layer = restored->layer(static_cast<uint32_t>(i));
    for (uint64_t w = 0; w < layer.num_words(); ++w) {
      ASSERT_EQ(layer.words()[w].load(std::memory_order_relaxed), 0u);
    }
  }
}

TEST(ScalableBloomRestore, BitsWrittenThroughMutableWordsAreFound) {
  const std::unique_ptr<ScalableBloomFilter> original = GrownBloom(2);
  std::unique_ptr<ScalableBloomFilter> restored;
  ASSERT_EQ(ScalableBloomFilter::Restore(original->error_rate(), original->expansion(),
                                         ShapesOf(*original), FilterLimits{}, nullptr, &restored),
            FilterStatus::kOk);
  for (uint32_t i = 0; i < 2; ++i) {
    const BloomLayer& from = original->layer(i);
    std::atomic<uint64_t>* to = restored->mutable_layer(i)->mutable_words();
    for (uint64_t w = 0; w < from.num_words(); ++w) {
      to[w].store(from.words()[w].load(std::memory_order_relaxed), std::memory_order_relaxed);
    }
  }
  for (uint64_t i = 0; i < original->items(); ++i) {
    ASSERT_TRUE(restored->MayContain(ItemHash("item", i))) << i;
  }
}

TEST(ScalableBloomRestore, RefusesShapesCreateCouldNeverMake) {
  const BloomLayerShape good{100, 0, 0.005, 1024, 7};
  auto refuses = [](double error_rate, uint32_t expansion, std::vector<BloomLayerShape> layers) {
    std::unique_ptr<ScalableBloomFilter> out;
    return ScalableBloomFilter::Restore(error_rate, expansion, layers, FilterLimits{}, nullptr,
                                        &out) == FilterStatus::kInvalidOptions &&
           out == nullptr;
  };
  EXPECT_TRUE(refuses(0, 2, {good}));
  EXPECT_TRUE(refuses(0.3, 2, {good}));
  EXPECT_TRUE(refuses(0.01, kMaxBloomExpansion + 1, {good}));
  EXPECT_TRUE(refuses(0.01, 2, {}));
  EXPECT_TRUE(refuses(0.01, 0, {good, good}));
  EXPECT_TRUE(refuses(0.01, 2, std::vector<BloomLayerShape>(kMaxBloomLayers + 1, good)));
  EXPECT_TRUE(refuses(0.01, 2, {{0, 0, 0.005, 1024, 7}}));
  EXPECT_TRUE(refuses(0.01, 2, {{100, 0, 0, 1024, 7}}));
  EXPECT_TRUE(refuses(0.01, 2, {{100, 0, 0.005, 1000, 7}}));
  EXPECT_TRUE(refuses(0.01, 2, {{100, 0, 0.005, 0, 7}}));
  EXPECT_TRUE(refuses(0.01, 2, {{100, 0, 0.005, kMaxBloomBits, 7}}));
  EXPECT_TRUE(refuses(0.01, 2, {{100, 0, 0.005, 1024, 0}}));
  EXPECT_TRUE(refuses(0.01, 2, {{100, 0, 0.005, 1024, kMaxBloomProbes + 1}}));
}

TEST(ScalableBloomRestore, AHugeLayerIsRefusedBeforeAnythingIsAllocated) {
  // 2^60 bits = 128 PiB: far over any cap, and never attempted.
  const std::vector<BloomLayerShape> huge{{100, 0, 0.005, 1024, 7},
                                          {200, 0, 0.0025, uint64_t{1} << 60, 7}};
  std::unique_ptr<ScalableBloomFilter> out;
  EXPECT_EQ(ScalableBloomFilter::Restore(0.01, 2, huge, FilterLimits{uint64_t{1} << 30}, nullptr,
                                         &out),
            FilterStatus::kFilterMemoryLimit);
  MemoryBudget budget(uint64_t{1} << 30);
  EXPECT_EQ(ScalableBloomFilter::Restore(0.01, 2, huge, FilterLimits{0}, &budget, &out),
            FilterStatus::kOutOfMemory);
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(out, nullptr);
}

TEST(ScalableBloomRestore, ReservesExactlyMemoryBytesAndReleasesThemOnDestruction) {
  MemoryBudget budget(0);
  std::unique_ptr<ScalableBloomFilter> out;
  ASSERT_EQ(ScalableBloomFilter::Restore(0.01, 2,
                                         std::vector<BloomLayerShape>{{100, 3, 0.005, 1024, 7},
                                                                      {200, 1, 0.0025, 4096, 8}},
                                         FilterLimits{}, &budget, &out),
            FilterStatus::kOk);
  EXPECT_EQ(budget.used(), out->memory_bytes());
  EXPECT_EQ(out->items(), 4u);
  out.reset();
  EXPECT_EQ(budget.used(), 0u);
}

TEST(ScalableBloomRestore, ARestoredFilterGrowsUnderItsOwnLimits) {
  std::unique_ptr<ScalableBloomFilter> out;
  ASSERT_EQ(ScalableBloomFilter::Restore(0.01, 2,
                                         std::vector<BloomLayerShape>{{10, 10, 0.005, 512, 7}},
                                         FilterLimits{}, nullptr, &out),
            FilterStatus::kOk);
  bool added = false;
  ASSERT_EQ(out->Add(ItemHash("new", 0), &added), FilterStatus::kOk);
  EXPECT_TRUE(added);
  EXPECT_EQ(out->num_layers(), 2u);
  EXPECT_EQ(out->Layers()[1].capacity, 20u);
  EXPECT_EQ(out->Layers()[1].error_rate, 0.0025);
}

TEST(CountingBloomRestore, BuildsExactlyTheSavedLayersAndKeepsNegativeNetCounts) {
  std::unique_ptr<CountingBloomFilter> original;
  ASSERT_EQ(CountingBloomFilter::Create(CountingBloomOptions{0.01, 20, 2, 8}, FilterLimits{},
                                        nullptr, &original),
            FilterStatus::kOk);
  bool was_new = false;
  for (uint64_t i = 0; original->num_layers() < 3; ++i) {
    ASSERT_EQ(original->Add(ItemHash("item", i), &was_new), FilterStatus::kOk);
  }
  std::vector<CountingBloomLayerShape> shapes = ShapesOf(*original);
  std::unique_ptr<CountingBloomFilter> restored;
  ASSERT_EQ(CountingBloomFilter::Restore(original->error_rate(), original->expansion(), 8, shapes,
                                         FilterLimits{}, nullptr, &restored),
            FilterStatus::kOk);
  EXPECT_EQ(restored->memory_bytes(), original->memory_bytes());
  EXPECT_EQ(restored->items(), original->items());
  EXPECT_EQ(restored->counter_bits(), 8u);
  EXPECT_EQ(restored->layer(2).cells(), original->layer(2).cells());

  // A layer whose count went below zero (items removed that were never
  // added) keeps it, so items() stays what it was.
  shapes[0].items = -3;
  ASSERT_EQ(CountingBloomFilter::Restore(original->error_rate(), original->expansion(), 8, shapes,
                                         FilterLimits{}, nullptr, &restored),
            FilterStatus::kOk);
  EXPECT_EQ(restored->Layers()[0].net_items, -3);
  EXPECT_EQ(restored->Layers()[0].items, 0u);
  EXPECT_EQ(restored->items(), original->items() - original->Layers()[0].items - 3);
}

TEST(CountingBloomRestore, RefusesShapesCreateCouldNeverMake) {
  const CountingBloomLayerShape good{100, 0, 0.005, 1024, 6};
  auto refuses = [](uint32_t counter_bits, uint32_t expansion,
                    std::vector<CountingBloomLayerShape> layers) {
    std::unique_ptr<CountingBloomFilter> out;
    return CountingBloomFilter::Restore(0.01, expansion, counter_bits, layers, FilterLimits{},
                                        nullptr, &out) == FilterStatus::kInvalidOptions;
  };
  EXPECT_FALSE(refuses(4, 2, {good}));
  EXPECT_TRUE(refuses(5, 2, {good}));
  EXPECT_TRUE(refuses(4, 0, {good, good}));
  EXPECT_TRUE(refuses(4, 2, {{100, 0, 0.005, 64, 6}}));  // not whole 128-cell blocks
  EXPECT_TRUE(refuses(4, 2, {{100, 0, 0.005, 0, 6}}));
  EXPECT_TRUE(refuses(8, 2, {{100, 0, 0.005, 1024, 65}}));
  EXPECT_TRUE(refuses(8, 2, {{100, 0, 0.5, 1024, 6}}));
}

TEST(CountingBloomRestore, RecountSaturatedCountsEveryCellAtTheMaximum) {
  std::unique_ptr<CountingBloomFilter> out;
  ASSERT_EQ(CountingBloomFilter::Restore(0.01, 2, 4,
                                         std::vector<CountingBloomLayerShape>{{100, 0, 0.005, 256, 6}},
                                         FilterLimits{}, nullptr, &out),
            FilterStatus::kOk);
  BlockedCountingBloom* layer = out->mutable_layer(0);
  // Word 0: cells 0 and 15 saturated (15), cell 1 at 14; word 9: all 16.
  layer->mutable_words()[0].store(0xF00000000000000Full | (uint64_t{14} << 4),
                                  std::memory_order_relaxed);
  layer->mutable_words()[9].store(~uint64_t{0}, std::memory_order_relaxed);
  EXPECT_EQ(layer->RecountSaturated(), 18u);
  EXPECT_EQ(out->saturated_counters(), 18u);
  EXPECT_EQ(layer->Counter(1), 14u);
}

TEST(CuckooRestore, BuildsTheSavedSubFiltersAndCounters) {
  std::unique_ptr<CuckooFilter> original;
  CuckooFilterOptions options;
  options.capacity = 64;
  options.expansion = 2;
  ASSERT_EQ(CuckooFilter::Create(options, FilterLimits{}, nullptr, &original), FilterStatus::kOk);
  for (uint64_t i = 0; original->num_filters() < 3; ++i) {
    ASSERT_EQ(original->Add(ItemHash("item", i)), FilterStatus::kOk);
  }
  const CuckooFilterShape shape = original->Shape();
  EXPECT_EQ(shape.num_filters, 3u);
  EXPECT_EQ(shape.base_buckets, 32u);
  EXPECT_EQ(CuckooFilter::SubFilterBuckets(shape.base_buckets, shape.expansion, 2), 128u);

  MemoryBudget budget(0);
  std::unique_ptr<CuckooFilter> restored;
  ASSERT_EQ(CuckooFilter::Restore(shape, FilterLimits{}, &budget, &restored), FilterStatus::kOk);
  EXPECT_EQ(budget.used(), restored->memory_bytes());
  const CuckooFilterInfo want = original->Info();
  const CuckooFilterInfo got = restored->Info();
  EXPECT_EQ(got.size, want.size);
  EXPECT_EQ(got.num_buckets, want.num_buckets);
  EXPECT_EQ(got.num_filters, want.num_filters);
  EXPECT_EQ(got.items, want.items);
  EXPECT_EQ(got.deletes, want.deletes);
  EXPECT_EQ(got.expansion, want.expansion);
  const auto subs = restored->SubFilters();
  ASSERT_EQ(subs.size(), 3u);
  EXPECT_EQ(subs[2].num_buckets, 128u);
  EXPECT_EQ(subs[2].occupied, 0u);
  restored->mutable_slots(2)[5] = 77;
  EXPECT_EQ(restored->SubFilters()[2].occupied, 1u);
  restored.reset();
  EXPECT_EQ(budget.used(), 0u);
}

TEST(CuckooRestore, RefusesShapesCreateCouldNeverMake) {
  CuckooFilterShape good;
  good.base_buckets = 8;
  good.bucket_size = 2;
  good.max_iterations = 20;
  good.expansion = 2;
  good.max_expansions = 4;
  good.num_filters = 2;
  auto refuses = [](const CuckooFilterShape& shape) {
    std::unique_ptr<CuckooFilter> out;
    return CuckooFilter::Restore(shape, FilterLimits{}, nullptr, &out) ==
           FilterStatus::kInvalidOptions;
  };
  EXPECT_FALSE(refuses(good));
  auto with = [&](auto change) {
    CuckooFilterShape s = good;
    change(&s);
    return s;
  };
  EXPECT_TRUE(refuses(with([](CuckooFilterShape* s) { s->bucket_size = 0; })));
  EXPECT_TRUE(refuses(with([](CuckooFilterShape* s) { s->bucket_size = 256; })));
  EXPECT_TRUE(refuses(with([](CuckooFilterShape* s) { s->max_iterations = 0; })));
  EXPECT_TRUE(refuses(with([](CuckooFilterShape* s) { s->expansion = 3; })));
  EXPECT_TRUE(refuses(with([](CuckooFilterShape* s) { s->expansion = 65536; })));
  EXPECT_TRUE(refuses(with([](CuckooFilterShape* s) { s->max_expansions = 0; })));
  EXPECT_TRUE(refuses(with([](CuckooFilterShape* s) { s->base_buckets = 12; })));
  EXPECT_TRUE(refuses(with([](CuckooFilterShape* s) { s->base_buckets = 1; })));
  EXPECT_TRUE(refuses(with([](CuckooFilterShape* s) { s->num_filters = 0; })));
  EXPECT_TRUE(refuses(with([](CuckooFilterShape* s) { s->num_filters = 5; })));
  EXPECT_TRUE(refuses(with([](CuckooFilterShape* s) { s->expansion = 0; })));  // 2 sub-filters
  EXPECT_TRUE(refuses(with([](CuckooFilterShape* s) {
    s->base_buckets = kMaxCuckooBuckets;  // sub-filter 1 would need 2^57 buckets
  })));
}

TEST(CuckooRestore, AHugeFilterIsRefusedBeforeAnythingIsAllocated) {
  CuckooFilterShape huge;
  huge.base_buckets = kMaxCuckooBuckets;  // x 255 slots: ~2^64 bytes
  huge.bucket_size = 255;
  huge.max_iterations = 20;
  huge.expansion = 1;
  huge.max_expansions = 4;
  huge.num_filters = 4;
  std::unique_ptr<CuckooFilter> out;
  EXPECT_EQ(CuckooFilter::Restore(huge, FilterLimits{uint64_t{1} << 30}, nullptr, &out),
            FilterStatus::kFilterMemoryLimit);
  MemoryBudget budget(uint64_t{1} << 30);
  EXPECT_EQ(CuckooFilter::Restore(huge, FilterLimits{0}, &budget, &out),
            FilterStatus::kOutOfMemory);
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(out, nullptr);
}

}  // namespace
}  // namespace bloomgate
