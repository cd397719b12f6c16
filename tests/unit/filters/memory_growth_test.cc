// THE MEMORY PROPERTY, for every family: a filter's memory grows with what
// was added, not with how extreme its parameters are. Each case creates a
// filter as a client can (every growth setting: NONSCALING, EXPANSION 1, 2
// and a large one; the extremes of error rate and capacity the commands
// take), adds n items -- distinct ones, and n copies of one item -- until n
// or the first refusal, and checks
//
//   memory_bytes() <= PerItem x n + Constant
//
// with PerItem and Constant built from the named bounds below (the README's
// memory table states the same figures). A refusal is fine (it changes
// nothing); going past the bound is not.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "filters/count_min_sketch.h"
#include "filters/counting_bloom_filter.h"
#include "filters/cuckoo_filter.h"
#include "filters/key_hash.h"
#include "filters/limits.h"
#include "filters/scalable_bloom_filter.h"
#include "filters/top_k.h"
#include "filters/windowed_bloom_filter.h"
#include "filters/windowed_counting_bloom_filter.h"
#include "tests/unit/filters/filter_test_support.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;

// ---- The bounds --------------------------------------------------------------

// Bytes of cells per item of layer capacity, at the deepest layer any filter
// may reach. Bloom: a classic layer at the floor's depth (kMinBloomErrorRate
// x 2^-64 = 5.4e-50, 64 probes) needs 344 bits = 43 bytes; a blocked one
// only exists when layer 0 is >= 1e-3 (PreferredBloomLayout), so its deepest
// layer is 1e-3 x 2^-63 = 1.1e-22: 2,009 bits (bloom_math.h) = 252 bytes.
constexpr uint64_t kBloomCellBytesPerItem = 256;
// Counting, 8-bit counters (the wider): classic at 5.4e-50 needs 344 cells =
// 344 bytes; blocked layers are only made with EXPANSION >= 2 and layer 0
// >= 1e-4, whose layer i comes after capacity x (2^i - 1) adds: within the
// items a test adds, layer <= 15 at <= 3e-9 (64-cell blocks: ~2,000 cells).
// Both under 2,048 bytes.
constexpr uint64_t kCountingCellBytesPerItem = 2048;
// Bookkeeping per layer: the Layer line and its counter line (128), the
// cells object (<= 128), the new List (32) and its pointers (8 per layer,
// <= 512), a layer's rounding up to a whole block or granule line (64).
constexpr uint64_t kLayerBytes = 1024;
// The filter object and allocator rounding: a few hundred bytes.
constexpr uint64_t kFilterBytes = 4096;
// Cuckoo: one byte per slot. A sub-filter is added only when an item cannot
// be placed after its kicks; measured, that is never below 1/8 of the slots
// filled (bucket size 1, MAXITERATIONS 1), so each item placed pays for at
// most 8 slots of the sub-filter it forced, times the expansion for the next
// one (E^k slots per base slot); copies of one item force at most one
// (kCopiesFull after it). Plus 16 bytes per sub-filter entry.
constexpr uint64_t kCuckooSlotBytesPerItem = 8;
constexpr uint64_t kCuckooSubFilterBytes = 16;
// Top-k: the item strings it keeps (at most k of them), each its bytes plus
// the string's own 32 and a heap slot's 16.
constexpr uint64_t kTopKBytesPerKeptItem = 48;

// The per-layer-capacity bound of a scalable filter after n adds: its layers
// hold capacity, capacity x E, ..., the newest made when the one before was
// full, so their capacities sum to at most capacity + E x (2n) (the newest
// is at most E x the items so far, the older ones at most the items so far
// together with it), and there are at most min(64, n / capacity + 1) of them.
uint64_t ScalableBound(uint64_t cell_bytes, uint64_t capacity, uint32_t expansion, uint64_t n) {
  const uint64_t e = std::max<uint32_t>(expansion, 1);
  const uint64_t capacity_sum = capacity + (expansion == 0 ? 0 : 2 * e * n);
  const uint64_t layers = std::min<uint64_t>(kMaxBloomLayers, n / capacity + 1);
  return cell_bytes * capacity_sum + kLayerBytes * layers + kFilterBytes;
}

// ---- The cases ---------------------------------------------------------------

struct Growth {
  double error_rate;
  uint64_t capacity;
  uint32_t expansion;  // 0 = NONSCALING
};

// Every growth setting, at the error rates and capacities a client may pass
// (0.25 is the cap; kMinBloomErrorRate the floor; capacity 1 the least).
std::vector<Growth> GrowthSettings() {
  std::vector<Growth> settings;
  for (double rate : {0.25, 0.01, 1e-6, kMinBloomErrorRate}) {
    for (uint64_t capacity : {uint64_t{1}, uint64_t{100}}) {
      for (uint32_t expansion : {0u, 1u, 2u, 1024u}) {
        settings.push_back(Growth{rate, capacity, expansion});
      }
    }
  }
  return settings;
}

std::string Describe(const Growth& g, bool same) {
  return "error " + std::to_string(g.error_rate) + " capacity " + std::to_string(g.capacity) +
         " expansion " + std::to_string(g.expansion) + (same ? " one item" : " distinct");
}

// Items a case adds: enough for 64 layers of capacity 1 at EXPANSION 1.
constexpr uint64_t kGrowthItems = 3000;

TEST(MemoryGrowth, BloomStaysWithinItsBound) {
  for (const Growth& g : GrowthSettings()) {
    for (bool same : {false, true}) {
      ScalableBloomOptions options;
      options.error_rate = g.error_rate;
      options.capacity = g.capacity;
      options.expansion = g.expansion;
      options.layout = PreferredBloomLayout(g.error_rate, g.expansion);
      std::unique_ptr<ScalableBloomFilter> filter;
      ASSERT_EQ(ScalableBloomFilter::Create(options, FilterLimits{}, nullptr, &filter),
                FilterStatus::kOk)
          << Describe(g, same);
      uint64_t n = 0;
      for (; n < kGrowthItems; ++n) {
        bool added = false;
        if (filter->Add(filter->Hash("i:" + std::to_string(same ? 0 : n)), &added) !=
            FilterStatus::kOk) {
          break;
        }
      }
      EXPECT_LE(filter->memory_bytes(),
                ScalableBound(kBloomCellBytesPerItem, g.capacity, g.expansion, n))
          << Describe(g, same) << ", " << n << " adds, " << filter->num_layers() << " layers";
    }
  }
}

TEST(MemoryGrowth, CountingBloomStaysWithinItsBound) {
  for (uint32_t bits : {kCountingBloomNarrowCounterBits, kCountingBloomWideCounterBits}) {
    for (const Growth& g : GrowthSettings()) {
      for (bool same : {false, true}) {
        CountingBloomOptions options;
        options.error_rate = g.error_rate;
        options.capacity = g.capacity;
        options.expansion = g.expansion;
        options.counter_bits = bits;
        std::unique_ptr<CountingBloomFilter> filter;
        ASSERT_EQ(CountingBloomFilter::Create(options, FilterLimits{}, nullptr, &filter),
                  FilterStatus::kOk)
            << bits << "-bit " << Describe(g, same);
        uint64_t n = 0;
        for (; n < kGrowthItems; ++n) {
          bool was_new = false;
          if (filter->Add(filter->Hash("i:" + std::to_string(same ? 0 : n)), &was_new) !=
              FilterStatus::kOk) {
            break;
          }
        }
        EXPECT_LE(filter->memory_bytes(),
                  ScalableBound(kCountingCellBytesPerItem, g.capacity, g.expansion, n))
            << bits << "-bit " << Describe(g, same) << ", " << n << " adds, "
            << filter->num_layers() << " layers";
      }
    }
  }
}

// The figures: CBF.RESERVE c 0.01 100 EXPANSION 1 and 6,400 adds
// took 2,349,607,928 bytes (BF: 324,792); CBF.RESERVE c 1e-20 1 EXPANSION 1
// took 3,872,605,264 bytes after 18 adds and refused the 19th.
TEST(MemoryGrowth, DeepCountingLayersCostWhatBloomLayersCost) {
  struct Case {
    double error_rate;
    uint64_t capacity;
    uint64_t adds;
    uint64_t max_bytes;  // measured x ~1.3
  };
  for (const Case& c : {Case{0.01, 100, 6400, 4'000'000}, Case{1e-20, 1, 64, 200'000}}) {
    CountingBloomOptions options;
    options.error_rate = c.error_rate;
    options.capacity = c.capacity;
    options.expansion = 1;
    std::unique_ptr<CountingBloomFilter> filter;
    ASSERT_EQ(CountingBloomFilter::Create(options, FilterLimits{}, nullptr, &filter),
              FilterStatus::kOk);
    for (uint64_t i = 0; i < c.adds; ++i) {
      bool was_new = false;
      ASSERT_EQ(filter->Add(ItemHash("deep", i), &was_new), FilterStatus::kOk)
          << c.error_rate << ": add " << i << " of " << c.adds;
    }
    EXPECT_EQ(filter->num_layers(), 64u);
    EXPECT_LE(filter->memory_bytes(), c.max_bytes) << c.error_rate;
    std::cout << "[ measured ] CBF " << c.error_rate << " " << c.capacity << " EXPANSION 1, "
              << c.adds << " adds: " << filter->memory_bytes() << " bytes\n";
    for (uint64_t i = 0; i < c.adds; ++i) {
      ASSERT_TRUE(filter->MayContain(ItemHash("deep", i))) << "no false negative: " << i;
    }
  }
}

// The classic counting layout keeps what the blocked one promises: deletes
// exact (no added item lost), items() exact, the FP rate under the request,
// AddBatch the same filter as Add after Add.
TEST(MemoryGrowth, ClassicCountingLayersCountDeleteAndBoundTheirFalsePositives) {
  for (uint32_t bits : {kCountingBloomNarrowCounterBits, kCountingBloomWideCounterBits}) {
    CountingBloomOptions options;
    options.error_rate = 0.01;
    options.capacity = 200;
    options.expansion = 1;
    options.counter_bits = bits;
    options.hash_seed = 7;
    std::unique_ptr<CountingBloomFilter> one;
    std::unique_ptr<CountingBloomFilter> batch;
    ASSERT_EQ(CountingBloomFilter::Create(options, FilterLimits{}, nullptr, &one),
              FilterStatus::kOk);
    ASSERT_EQ(CountingBloomFilter::Create(options, FilterLimits{}, nullptr, &batch),
              FilterStatus::kOk);
    ASSERT_EQ(one->layout(), CountingLayout::kClassic);
    constexpr uint64_t kN = 4000;
    std::vector<KeyHash> hashes;
    for (uint64_t i = 0; i < kN; ++i) hashes.push_back(one->Hash("k:" + std::to_string(i)));
    std::vector<char> was_new_one(kN);
    for (uint64_t i = 0; i < kN; ++i) {
      bool was_new = false;
      ASSERT_EQ(one->Add(hashes[i], &was_new), FilterStatus::kOk);
      was_new_one[i] = was_new;
    }
    std::unique_ptr<bool[]> was_new_batch(new bool[kN]);
    size_t done = 0;
    ASSERT_EQ(batch->AddBatch(hashes, was_new_batch.get(), &done), FilterStatus::kOk);
    ASSERT_EQ(done, kN);
    for (uint64_t i = 0; i < kN; ++i) ASSERT_EQ(was_new_batch[i], was_new_one[i] != 0) << i;
    for (uint32_t l = 0; l < one->num_layers(); ++l) {
      for (uint64_t w = 0; w < one->layer(l).num_words(); ++w) {
        ASSERT_EQ(one->layer(l).words()[w].load(), batch->layer(l).words()[w].load()) << l;
      }
    }
    EXPECT_EQ(one->items(), kN);
    for (uint64_t i = 0; i < kN; i += 2) ASSERT_TRUE(one->Remove(hashes[i])) << i;
    EXPECT_EQ(one->items(), kN / 2);
    for (uint64_t i = 1; i < kN; i += 2) {
      ASSERT_TRUE(one->MayContain(hashes[i])) << bits << "-bit: item " << i << " lost";
    }
    const test_support::FpMeasurement fp = [&] {
      test_support::FpMeasurement m;
      for (uint64_t i = 0; i < 200'000; ++i) {
        ++m.queries;
        if (one->MayContain(one->Hash("absent:" + std::to_string(i)))) ++m.false_positives;
      }
      return m;
    }();
    // Full filter before the removes; the rate is the filter's bound.
    EXPECT_LE(fp.rate(), options.error_rate) << bits << "-bit: " << fp.false_positives;
  }
}

TEST(MemoryGrowth, CuckooStaysWithinItsBound) {
  for (uint32_t bucket_size : {1u, 2u, 4u}) {
    for (uint32_t expansion : {0u, 1u, 2u, 1024u}) {
      for (uint32_t max_iterations : {1u, 20u}) {
        for (bool same : {false, true}) {
          CuckooFilterOptions options;
          options.capacity = std::max<uint64_t>(2 * bucket_size, 8);
          options.bucket_size = bucket_size;
          options.expansion = expansion;
          options.max_iterations = max_iterations;
          std::unique_ptr<CuckooFilter> filter;
          ASSERT_EQ(CuckooFilter::Create(options, FilterLimits{}, nullptr, &filter),
                    FilterStatus::kOk);
          const uint64_t base = filter->memory_bytes();
          uint64_t n = 0;
          for (; n < kGrowthItems; ++n) {
            if (filter->Add(ItemHash("c", same ? 0 : n)) != FilterStatus::kOk) break;
          }
          const uint64_t e = std::max<uint32_t>(expansion, 1);
          const uint64_t bound = base + kCuckooSlotBytesPerItem * e * n +
                                 kCuckooSubFilterBytes * filter->max_expansions();
          EXPECT_LE(filter->memory_bytes(), bound)
              << "bucket " << bucket_size << " expansion " << expansion << " iterations "
              << max_iterations << (same ? " one item" : " distinct") << ", " << n
              << " adds, " << filter->num_filters() << " sub-filters";
          if (same && expansion != 0) {
            EXPECT_LE(filter->num_filters(), 2u) << "copies of one item add one sub-filter at most";
          }
        }
      }
    }
  }
}

// The figure: CF.RESERVE c 1024 EXPANSION 2 and ~85 CF.ADD c same
// made 22 sub-filters, 4.29 GB. And distinct items that share a fingerprint
// and buckets in a small sub-filter still get the larger one that separates
// them (CuckooConcurrency.EightThreads... adds 8 copies of 5,000 items into
// 8-slot bucket pairs, and some pairs of them collide).
TEST(MemoryGrowth, CopiesOfOneCuckooItemAreRefusedOnceTheyFillBothBuckets) {
  CuckooFilterOptions options;
  options.capacity = 1024;
  options.expansion = 2;
  std::unique_ptr<CuckooFilter> filter;
  ASSERT_EQ(CuckooFilter::Create(options, FilterLimits{}, nullptr, &filter), FilterStatus::kOk);
  const uint64_t before = filter->memory_bytes();
  const KeyHash same = filter->Hash("same");
  uint64_t added = 0;
  FilterStatus status = FilterStatus::kOk;
  for (int i = 0; i < 85 && status == FilterStatus::kOk; ++i) {
    status = filter->Add(same);
    if (status == FilterStatus::kOk) ++added;
  }
  EXPECT_EQ(status, FilterStatus::kCopiesFull);
  // Two buckets of two slots per sub-filter (one when both indexes
  // coincide), in two sub-filters: the first and the one they forced.
  EXPECT_GE(added, 4u);
  EXPECT_LE(added, 8u);
  EXPECT_EQ(filter->Count(same), added);
  EXPECT_EQ(filter->num_filters(), 2u);
  // The second sub-filter: 1,024 buckets of 2 slots, and its entry.
  EXPECT_LE(filter->memory_bytes(), before + 2048 + 64);
  std::cout << "[ measured ] CF 1024 EXPANSION 2, 85 adds of one item: " << added
            << " copies, " << filter->memory_bytes() << " bytes\n";
  // Other items still go in, and grow the filter when they must. One the
  // filter already reports before it is added may share the fingerprint and
  // both buckets of "same" (with the random per-filter seed, now and then
  // over these thousands): a cuckoo filter cannot tell the two apart, so it
  // is refused as one more copy. Any other item must go in.
  uint64_t other = 0;
  uint64_t aliases = 0;
  while (filter->num_filters() < 3 && other < 100'000) {
    const KeyHash h = ItemHash("other", other++);
    const bool reported = filter->MayContain(h);
    const FilterStatus added_other = filter->Add(h);
    if (reported && added_other == FilterStatus::kCopiesFull) {
      ++aliases;
      continue;
    }
    ASSERT_EQ(added_other, FilterStatus::kOk) << other;
  }
  EXPECT_LE(aliases, 2u);
  EXPECT_EQ(filter->num_filters(), 3u);
}

// A filter imported from RedisBloom grows for copies, as RedisBloom does.
TEST(MemoryGrowth, RedisBloomSchemeCuckooStillGrowsForCopies) {
  CuckooFilterOptions options;
  options.capacity = 8;
  options.bucket_size = 1;
  options.expansion = 1;
  options.scheme = CuckooScheme::kRedisBloom;
  std::unique_ptr<CuckooFilter> filter;
  ASSERT_EQ(CuckooFilter::Create(options, FilterLimits{}, nullptr, &filter), FilterStatus::kOk);
  const KeyHash same = filter->Hash("same");
  for (int i = 0; i < 5; ++i) ASSERT_EQ(filter->Add(same), FilterStatus::kOk) << i;
  EXPECT_GE(filter->num_filters(), 2u);
}

TEST(MemoryGrowth, CountMinSketchNeverGrows) {
  for (uint64_t width : {uint64_t{1}, uint64_t{2000}}) {
    for (uint64_t depth : {uint64_t{1}, uint64_t{10}}) {
      std::unique_ptr<CountMinSketch> sketch;
      ASSERT_EQ(CountMinSketch::Create(width, depth, FilterLimits{}, nullptr, &sketch),
                FilterStatus::kOk);
      const uint64_t before = sketch->memory_bytes();
      for (uint64_t i = 0; i < kGrowthItems; ++i)
        sketch->IncrBy(ItemHash("m", i % 7 == 0 ? 0 : i), 1);
      EXPECT_EQ(sketch->memory_bytes(), before) << width << " x " << depth;
    }
  }
}

TEST(MemoryGrowth, TopKKeepsAtMostKItems) {
  for (uint32_t k : {1u, 50u}) {
    TopKOptions options;
    options.k = k;
    std::unique_ptr<TopK> topk;
    ASSERT_EQ(TopK::Create(options, FilterLimits{}, nullptr, &topk), FilterStatus::kOk);
    const uint64_t before = topk->memory_bytes();
    const std::string pad(100, 'x');
    for (uint64_t i = 0; i < kGrowthItems; ++i) {
      const std::string item = pad + std::to_string(i % 3 == 0 ? 0 : i);
      std::string expelled;
      topk->Add(HashKey(item), item, 1, &expelled);
    }
    EXPECT_LE(topk->memory_bytes(), before + k * (pad.size() + 8 + kTopKBytesPerKeptItem)) << k;
  }
}

// Windowed filters at one instant: every add goes into the current
// generation, a scalable filter of the generation's rate and capacity; the
// ring holds at most generations + 1 of them and the next one built ahead.
TEST(MemoryGrowth, WindowedFiltersStayWithinTheirBound) {
  constexpr int64_t kNow = 1'000'000;
  for (uint32_t expansion : {1u, 2u, 1024u}) {
    for (uint32_t generations : {1u, 4u}) {
      for (bool same : {false, true}) {
        const uint64_t capacity = 100;
        WindowedBloomOptions bloom_options;
        bloom_options.capacity = capacity;
        bloom_options.expansion = expansion;
        bloom_options.window_ms = 60'000;
        bloom_options.generations = generations;
        std::unique_ptr<WindowedBloomFilter> bloom;
        ASSERT_EQ(WindowedBloomFilter::Create(bloom_options, kNow, FilterLimits{}, nullptr, &bloom),
                  FilterStatus::kOk);
        WindowedCountingBloomOptions counting_options;
        counting_options.capacity = capacity;
        counting_options.expansion = expansion;
        counting_options.window_ms = 60'000;
        counting_options.generations = generations;
        std::unique_ptr<WindowedCountingBloomFilter> counting;
        ASSERT_EQ(WindowedCountingBloomFilter::Create(counting_options, kNow, FilterLimits{},
                                                      nullptr, &counting),
                  FilterStatus::kOk);
        const uint64_t bloom_start = bloom->memory_bytes();
        const uint64_t counting_start = counting->memory_bytes();
        uint64_t n_bloom = 0;
        uint64_t n_counting = 0;
        for (uint64_t i = 0; i < kGrowthItems; ++i) {
          const KeyHash h = ItemHash("w", same ? 0 : i);
          bool seen = false, added = false, was_new = false;
          uint64_t generation = 0, count = 0;
          if (bloom->Add(h, kNow, &seen, &generation, &added) == FilterStatus::kOk) ++n_bloom;
          if (counting->Add(h, kNow, &was_new, &count, &generation) == FilterStatus::kOk) {
            ++n_counting;
          }
        }
        // Generations at one instant: the live ones (each as created) and
        // one built ahead, all within the start figure twice over; the
        // current one grows like a scalable filter of the generation's
        // capacity (<= the window's).
        EXPECT_LE(bloom->memory_bytes(),
                  2 * bloom_start + ScalableBound(kBloomCellBytesPerItem, capacity, expansion,
                                                  n_bloom))
            << "windowed bloom expansion " << expansion << " generations " << generations
            << (same ? " one item" : " distinct");
        EXPECT_LE(counting->memory_bytes(),
                  2 * counting_start + ScalableBound(kCountingCellBytesPerItem, capacity,
                                                     expansion, n_counting))
            << "windowed counting expansion " << expansion << " generations " << generations
            << (same ? " one item" : " distinct");
      }
    }
  }
}

}  // namespace
}  // namespace bloomgate
