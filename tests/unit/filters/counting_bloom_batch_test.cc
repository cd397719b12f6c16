// CountingBloomFilter::AddBatch (CBF.MADD's path) against Add one item at a
// time: the same replies, statuses, counters, per-layer item counts and
// saturation, on random batches over a skewed pool (repeats, saturated 4-bit
// counters, several growths), in a batch that grows the filter mid-way, on a
// full NONSCALING filter, on a growth the memory cap refuses, and on
// restored layers whose probe counts fall; and kShared batches from several
// threads losing no increment.

#include <gtest/gtest.h>

#include <barrier>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <thread>
#include <tuple>
#include <vector>

#include "filter_test_support.h"
#include "filters/blocked_counting_bloom.h"
#include "filters/counting_bloom_filter.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;

constexpr uint64_t kSeed = 0x5eed5eed;

std::unique_ptr<CountingBloomFilter> MakeFilter(uint64_t capacity, uint32_t expansion,
                                                uint32_t counter_bits,
                                                const FilterLimits& limits = FilterLimits{},
                                                double error_rate = 0.01) {
  CountingBloomOptions options;
  options.error_rate = error_rate;
  options.capacity = capacity;
  options.expansion = expansion;
  options.counter_bits = counter_bits;
  options.hash_seed = kSeed;  // both filters of a comparison hash alike
  std::unique_ptr<CountingBloomFilter> filter;
  EXPECT_EQ(CountingBloomFilter::Create(options, limits, nullptr, &filter), FilterStatus::kOk);
  return filter;
}

// What a run of adds answered: one reply per item that went in, then the
// status that stopped it (kOk if none did).
struct Replies {
  std::vector<bool> was_new;
  FilterStatus status = FilterStatus::kOk;
  bool operator==(const Replies&) const = default;
};

Replies AddOneByOne(CountingBloomFilter& filter, std::span<const KeyHash> hashes) {
  Replies replies;
  for (const KeyHash& h : hashes) {
    bool was_new = false;
    replies.status = filter.Add(h, &was_new);
    if (replies.status != FilterStatus::kOk) break;
    replies.was_new.push_back(was_new);
  }
  return replies;
}

Replies AddAsBatch(CountingBloomFilter& filter, std::span<const KeyHash> hashes,
                   CounterWrites writes) {
  std::unique_ptr<bool[]> was_new(new bool[hashes.size()]);
  size_t done = 0;
  Replies replies;
  replies.status = filter.AddBatch(hashes, was_new.get(), &done, writes);
  replies.was_new.assign(was_new.get(), was_new.get() + done);
  return replies;
}

// Everything an add can change, layer by layer.
void ExpectSameState(const CountingBloomFilter& batch, const CountingBloomFilter& single) {
  ASSERT_EQ(batch.num_layers(), single.num_layers());
  EXPECT_EQ(batch.items(), single.items());
  EXPECT_EQ(batch.saturated_counters(), single.saturated_counters());
  const std::vector<CountingBloomLayerInfo> a = batch.Layers();
  const std::vector<CountingBloomLayerInfo> b = single.Layers();
  for (uint32_t i = 0; i < batch.num_layers(); ++i) {
    EXPECT_EQ(a[i].net_items, b[i].net_items) << "layer " << i;
    EXPECT_EQ(a[i].saturated_counters, b[i].saturated_counters) << "layer " << i;
    const BlockedCountingBloom& x = batch.layer(i);
    const BlockedCountingBloom& y = single.layer(i);
    ASSERT_EQ(x.num_words(), y.num_words()) << "layer " << i;
    uint64_t differing = 0;
    for (uint64_t w = 0; w < x.num_words(); ++w) {
      if (x.words()[w].load(std::memory_order_relaxed) !=
          y.words()[w].load(std::memory_order_relaxed)) {
        ++differing;
      }
    }
    EXPECT_EQ(differing, 0u) << "words differing in layer " << i << " of " << x.num_words();
  }
}

// (counter bits, write mode)
class CountingBatch
    : public ::testing::TestWithParam<std::tuple<uint32_t, CounterWrites>> {
 protected:
  uint32_t bits() const { return std::get<0>(GetParam()); }
  CounterWrites writes() const { return std::get<1>(GetParam()); }
};

INSTANTIATE_TEST_SUITE_P(
    WidthsAndWrites, CountingBatch,
    ::testing::Combine(::testing::Values(4u, 8u),
                       ::testing::Values(CounterWrites::kShared, CounterWrites::kExclusive)),
    [](const auto& info) {
      return "bits" + std::to_string(std::get<0>(info.param)) +
             (std::get<1>(info.param) == CounterWrites::kShared ? "_shared" : "_exclusive");
    });

TEST_P(CountingBatch, RandomBatchesGiveTheSameRepliesAndCountersAsItemByItemAdds) {
  // A loose 30% error rate: older layers' items are often false positives
  // in newer ones, where only "the oldest layer that reports it" is right.
  const auto batch = MakeFilter(/*capacity=*/64, /*expansion=*/2, bits(), FilterLimits{}, 0.3);
  const auto single = MakeFilter(/*capacity=*/64, /*expansion=*/2, bits(), FilterLimits{}, 0.3);
  std::mt19937_64 rng(7);
  // Half the draws from 12 hot items (their counters saturate at 15 with 4
  // bits), the rest from 3,000: repeats in every layer and several growths.
  std::uniform_int_distribution<uint64_t> hot(0, 11), cold(0, 2999), size(1, 300);
  std::vector<KeyHash> hashes;
  uint64_t items = 0;
  for (int round = 0; round < 60; ++round) {
    hashes.clear();
    for (uint64_t n = size(rng); n-- > 0;) {
      hashes.push_back((rng() & 1) != 0 ? ItemHash("hot", hot(rng)) : ItemHash("cold", cold(rng)));
    }
    items += hashes.size();
    const Replies expected = AddOneByOne(*single, hashes);
    ASSERT_EQ(AddAsBatch(*batch, hashes, writes()), expected) << "round " << round;
    ASSERT_EQ(expected.status, FilterStatus::kOk);
  }
  ExpectSameState(*batch, *single);
  EXPECT_EQ(batch->items(), items);
  // What the comparison covered, measured rather than assumed.
  EXPECT_GE(batch->num_layers(), 5u);
  if (bits() == 4) {
    EXPECT_GT(batch->saturated_counters(), 0u);
  }
}

TEST_P(CountingBatch, CountersThroughEveryValueUpToTheMaxMatchItemByItemAdds) {
  // 32 hot items added hundreds of times each among cold ones added
  // once: every counter of a hot item climbs through half the max (where a
  // batch's block read stops taking its short cut) to the max, with a
  // comparison after every batch. ~160 blocks in the first layer, so most
  // hot items have a block to themselves, and a 30% rate gives 2-4 probes,
  // so some hot item's cells all sit in one lane position of their bytes
  // (a 4-bit filter's low nibbles, say) beside lanes still at 0.
  const auto batch = MakeFilter(/*capacity=*/8000, /*expansion=*/2, bits(), FilterLimits{}, 0.3);
  const auto single = MakeFilter(/*capacity=*/8000, /*expansion=*/2, bits(), FilterLimits{}, 0.3);
  std::mt19937_64 rng(bits());
  std::uniform_int_distribution<uint64_t> hot(0, 31), size(1, 200);
  std::vector<KeyHash> hashes;
  uint64_t cold = 0;
  for (int round = 0; round < 200; ++round) {
    hashes.clear();
    for (uint64_t n = size(rng); n-- > 0;) {
      hashes.push_back(rng() % 8 != 0 ? ItemHash("hot", hot(rng)) : ItemHash("cold", cold++));
    }
    const Replies expected = AddOneByOne(*single, hashes);
    ASSERT_EQ(AddAsBatch(*batch, hashes, writes()), expected) << "round " << round;
    ExpectSameState(*batch, *single);
    ASSERT_FALSE(HasFailure()) << "round " << round;
  }
  // Measured rather than assumed: the hot items' counters reached the max.
  EXPECT_GT(batch->saturated_counters(), 0u);
  EXPECT_GE(batch->Count(ItemHash("hot", 0)), batch->max_count());
}

TEST_P(CountingBatch, ABatchThatGrowsTheFilterMidWayMatchesItemByItemAdds) {
  const auto batch = MakeFilter(/*capacity=*/100, /*expansion=*/2, bits());
  const auto single = MakeFilter(/*capacity=*/100, /*expansion=*/2, bits());
  // 1,000 distinct items and a repeat of each tenth: layers of 100, 200, 400
  // and 800 items, three growths inside one call.
  std::vector<KeyHash> hashes;
  for (uint64_t i = 0; i < 1000; ++i) {
    hashes.push_back(ItemHash("item", i));
    if (i % 10 == 0) hashes.push_back(ItemHash("item", i));
  }
  const Replies expected = AddOneByOne(*single, hashes);
  EXPECT_EQ(AddAsBatch(*batch, hashes, writes()), expected);
  ExpectSameState(*batch, *single);
  EXPECT_EQ(batch->num_layers(), 4u);
  // The pass's uncounted items are in the fill check: layer 0 takes exactly
  // its capacity of new items (plus the repeats of items it holds).
  EXPECT_GE(batch->Layers()[0].net_items, 100);
}

TEST_P(CountingBatch, AFullNonScalingFilterStopsAtTheSameItemAsItemByItemAdds) {
  const auto batch = MakeFilter(/*capacity=*/50, /*expansion=*/0, bits());
  const auto single = MakeFilter(/*capacity=*/50, /*expansion=*/0, bits());
  std::vector<KeyHash> hashes;
  for (uint64_t i = 0; i < 80; ++i) {
    hashes.push_back(ItemHash("item", i));
    hashes.push_back(ItemHash("item", i / 2));  // repeats still count when full
  }
  const Replies expected = AddOneByOne(*single, hashes);
  ASSERT_EQ(expected.status, FilterStatus::kFull);
  EXPECT_EQ(AddAsBatch(*batch, hashes, writes()), expected);
  ExpectSameState(*batch, *single);
  // The next batch, all repeats, goes in whole.
  const std::vector<KeyHash> repeats(hashes.begin(), hashes.begin() + 20);
  EXPECT_EQ(AddAsBatch(*batch, repeats, writes()), AddOneByOne(*single, repeats));
  ExpectSameState(*batch, *single);
}

TEST_P(CountingBatch, AGrowthTheMemoryCapRefusesStopsAtTheSameItemAsItemByItemAdds) {
  FilterLimits limits;
  const auto probe = MakeFilter(/*capacity=*/100, /*expansion=*/2, bits());
  limits.max_filter_bytes = probe->memory_bytes() + 64;  // no room for a second layer
  const auto batch = MakeFilter(/*capacity=*/100, /*expansion=*/2, bits(), limits);
  const auto single = MakeFilter(/*capacity=*/100, /*expansion=*/2, bits(), limits);
  std::vector<KeyHash> hashes;
  for (uint64_t i = 0; i < 300; ++i) hashes.push_back(ItemHash("item", i % 150));
  const Replies expected = AddOneByOne(*single, hashes);
  ASSERT_EQ(expected.status, FilterStatus::kFilterMemoryLimit);
  EXPECT_EQ(AddAsBatch(*batch, hashes, writes()), expected);
  ExpectSameState(*batch, *single);
  EXPECT_EQ(batch->num_layers(), 1u);
}

TEST_P(CountingBatch, RestoredLayersWhoseProbeCountsFallMatchItemByItemAdds) {
  // Layers as a loader may restore them, probes 9, 3, 6: the batch's
  // gathered cells must start over for a layer with fewer probes.
  const uint32_t cells = BlockedCountingBloom::BlockCellsFor(bits());
  const CountingBloomLayerShape layers[] = {
      {/*capacity=*/40, /*items=*/0, /*error_rate=*/0.002, /*cells=*/cells * 8, /*probes=*/9},
      {/*capacity=*/80, /*items=*/0, /*error_rate=*/0.001, /*cells=*/cells * 16, /*probes=*/3},
      {/*capacity=*/160, /*items=*/0, /*error_rate=*/0.0005, /*cells=*/cells * 32, /*probes=*/6},
  };
  std::unique_ptr<CountingBloomFilter> batch, single;
  ASSERT_EQ(CountingBloomFilter::Restore(0.01, 2, bits(), layers, FilterLimits{}, nullptr, &batch,
                                         kSeed),
            FilterStatus::kOk);
  ASSERT_EQ(CountingBloomFilter::Restore(0.01, 2, bits(), layers, FilterLimits{}, nullptr,
                                         &single, kSeed),
            FilterStatus::kOk);
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<uint64_t> pick(0, 299);
  std::vector<KeyHash> hashes;
  for (int i = 0; i < 900; ++i) hashes.push_back(ItemHash("item", pick(rng)));
  const Replies expected = AddOneByOne(*single, hashes);
  EXPECT_EQ(AddAsBatch(*batch, hashes, writes()), expected);
  ExpectSameState(*batch, *single);
  EXPECT_GE(batch->num_layers(), 3u);
}

// kShared batches racing on one layer (no growth, no saturation: 8-bit
// counters, 4 x 40 = 160 adds per item) lose no increment: every counter ends
// where 160 serial adds of each item put it. With plain stores (kExclusive)
// racing, updates are lost.
TEST(CountingBatchConcurrency, SharedBatchesFromFourThreadsLoseNoIncrement) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 40;
  const auto racing = MakeFilter(/*capacity=*/100000, /*expansion=*/2, 8);
  const auto serial = MakeFilter(/*capacity=*/100000, /*expansion=*/2, 8);
  std::vector<KeyHash> hashes;
  for (uint64_t i = 0; i < 100; ++i) hashes.push_back(ItemHash("item", i));
  for (int n = 0; n < kThreads * kRounds; ++n) AddOneByOne(*serial, hashes);
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (int r = 0; r < kRounds; ++r) AddAsBatch(*racing, hashes, CounterWrites::kShared);
    });
  }
  for (std::thread& thread : threads) thread.join();
  // Only the counters are compared: racing first adds may both say "new"
  // (see the header), which changes no counter.
  ASSERT_EQ(racing->num_layers(), 1u);
  EXPECT_EQ(racing->items(), serial->items());
  const BlockedCountingBloom& x = racing->layer(0);
  const BlockedCountingBloom& y = serial->layer(0);
  uint64_t differing = 0;
  for (uint64_t w = 0; w < x.num_words(); ++w) {
    if (x.words()[w].load(std::memory_order_relaxed) != y.words()[w].load(std::memory_order_relaxed)) {
      ++differing;
    }
  }
  EXPECT_EQ(differing, 0u);
}

}  // namespace
}  // namespace bloomgate
