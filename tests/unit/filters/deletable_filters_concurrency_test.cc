// Counting Bloom and cuckoo filters under concurrent adds and removes: eight
// threads each add and then remove their own items while all of them add one
// shared set. Run under ThreadSanitizer as well as Release.

#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <thread>
#include <vector>

#include "filter_test_support.h"
#include "filters/blocked_counting_bloom.h"
#include "filters/counting_bloom_filter.h"
#include "filters/cuckoo_filter.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;
using test_support::Percent;
using test_support::Scaled;

constexpr int kAddRemoveThreads = 8;

KeyHash OwnItem(int thread, uint64_t i) {
  static const char* const kPrefixes[] = {"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"};
  return ItemHash(kPrefixes[thread], i);
}

KeyHash SharedItem(uint64_t i) { return ItemHash("shared", i); }

// Thread t adds own items 0..per_thread-1, adding shared item i after own
// item i (for i < shared), then removes all its own items. `add` and
// `remove` return false on a failure, which is counted.
template <typename Add, typename Remove>
uint64_t RunEightThreads(uint64_t per_thread, uint64_t shared, Add add, Remove remove) {
  std::atomic<uint64_t> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kAddRemoveThreads; ++t) {
    threads.emplace_back([&, t] {
      uint64_t failed = 0;
      for (uint64_t i = 0; i < per_thread; ++i) {
        failed += !add(OwnItem(t, i));
        // Each thread walks the shared set from a different start, so the
        // threads collide on the same items at different moments.
        if (i < shared) failed += !add(SharedItem((i + t * shared / kAddRemoveThreads) % shared));
      }
      for (uint64_t i = 0; i < per_thread; ++i) failed += !remove(OwnItem(t, i));
      // Relaxed: read after join.
      failures.fetch_add(failed, std::memory_order_relaxed);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return failures.load(std::memory_order_relaxed);
}

std::vector<uint64_t> Words(const CountingBloomFilter& filter) {
  std::vector<uint64_t> words;
  for (uint32_t l = 0; l < filter.num_layers(); ++l) {
    const BlockedCountingBloom& layer = filter.layer(l);
    for (uint64_t w = 0; w < layer.num_words(); ++w) {
      words.push_back(layer.words()[w].load(std::memory_order_relaxed));
    }
  }
  return words;
}

TEST(CountingBloomConcurrency, EightThreadsAddingAndRemovingLoseAndDoubleNoUpdate) {
  // One non-scaling layer of 8-bit counters (nothing saturates here): every
  // counter must end exactly where a single thread adding each shared item
  // eight times would leave it -- every own item's increments and decrements
  // cancelled, none lost, none applied twice.
  const uint64_t per_thread = Scaled(40'000);
  const uint64_t shared = Scaled(20'000);
  CountingBloomOptions options;
  options.error_rate = 0.01;
  // items() counts every add, shared copies included: at most this many.
  options.capacity = kAddRemoveThreads * (per_thread + shared);
  options.expansion = 0;
  options.counter_bits = 8;
  std::unique_ptr<CountingBloomFilter> filter;
  std::unique_ptr<CountingBloomFilter> reference;
  ASSERT_EQ(CountingBloomFilter::Create(options, FilterLimits{}, nullptr, &filter),
            FilterStatus::kOk);
  ASSERT_EQ(CountingBloomFilter::Create(options, FilterLimits{}, nullptr, &reference),
            FilterStatus::kOk);

  const uint64_t failures = RunEightThreads(
      per_thread, shared,
      [&](const KeyHash& h) {
        bool was_new = false;
        return filter->Add(h, &was_new) == FilterStatus::kOk;
      },
      [&](const KeyHash& h) { return filter->Remove(h); });
  EXPECT_EQ(failures, 0u);

  bool was_new = false;
  for (uint64_t i = 0; i < shared; ++i) {
    for (int t = 0; t < kAddRemoveThreads; ++t)
      ASSERT_EQ(reference->Add(SharedItem(i), &was_new), FilterStatus::kOk);
  }
  EXPECT_EQ(filter->saturated_counters(), 0u);
  EXPECT_EQ(filter->items(), kAddRemoveThreads * shared);  // adds minus removes, exactly
  const std::vector<uint64_t> got = Words(*filter);
  const std::vector<uint64_t> want = Words(*reference);
  ASSERT_EQ(got.size(), want.size());
  uint64_t differing = 0;
  for (size_t w = 0; w < got.size(); ++w) differing += got[w] != want[w];
  EXPECT_EQ(differing, 0u) << "words differing from the serial reference";
  for (uint64_t i = 0; i < shared; ++i) {
    ASSERT_TRUE(filter->MayContain(SharedItem(i))) << i;
    ASSERT_GE(filter->Count(SharedItem(i)), uint64_t{kAddRemoveThreads}) << i;
  }
}

TEST(CountingBloomConcurrency, EightThreadsWhileTheFilterGrowsKeepEverySharedItem) {
  // A scaling 4-bit filter that starts small, so layers are appended while
  // the threads add and remove.
  const uint64_t per_thread = Scaled(20'000);
  const uint64_t shared = Scaled(10'000);
  CountingBloomOptions options;
  options.capacity = 1000;
  std::unique_ptr<CountingBloomFilter> filter;
  ASSERT_EQ(CountingBloomFilter::Create(options, FilterLimits{}, nullptr, &filter),
            FilterStatus::kOk);
  const uint64_t failures = RunEightThreads(
      per_thread, shared,
      [&](const KeyHash& h) {
        bool was_new = false;
        return filter->Add(h, &was_new) == FilterStatus::kOk;
      },
      [&](const KeyHash& h) { return filter->Remove(h); });
  EXPECT_EQ(failures, 0u) << "a failed add, or a remove that found nothing";
  // The point is that adds raced a growth; sanitizer builds run a tenth of
  // the items (Scaled), which gave 3 layers under ASan, so ask for one growth.
  EXPECT_GE(filter->num_layers(), 2u) << "the filter never grew during the test";
  EXPECT_EQ(filter->items(), kAddRemoveThreads * shared);  // adds minus removes, exactly
  for (uint64_t i = 0; i < shared; ++i) {
    ASSERT_TRUE(filter->MayContain(SharedItem(i))) << i;
    ASSERT_GE(filter->Count(SharedItem(i)), uint64_t{kAddRemoveThreads}) << i;
  }
  uint64_t still_reported = 0;
  for (int t = 0; t < kAddRemoveThreads; ++t) {
    for (uint64_t i = 0; i < per_thread; ++i) still_reported += filter->MayContain(OwnItem(t, i));
  }
  const double rate =
      static_cast<double>(still_reported) / static_cast<double>(kAddRemoveThreads * per_thread);
  std::cout << "[ cbf mt ] " << filter->num_layers() << " layers; removed items still reported: "
            << Percent(rate) << "\n";
  EXPECT_LT(rate, 0.01) << Percent(rate);
}

TEST(CuckooConcurrency, EightThreadsAddingAndRemovingKeepTheSharedSetExactly) {
  const uint64_t per_thread = Scaled(20'000);
  const uint64_t shared = Scaled(5'000);
  CuckooFilterOptions options;
  options.capacity = 1 << 16;
  options.bucket_size = 4;
  options.expansion = 2;
  std::unique_ptr<CuckooFilter> filter;
  ASSERT_EQ(CuckooFilter::Create(options, FilterLimits{}, nullptr, &filter), FilterStatus::kOk);
  // A reader checks shared items while the writers run: it only must not race.
  std::atomic<bool> done{false};
  std::thread reader([&] {
    uint64_t seen = 0;
    // Relaxed: a stop flag; the join orders everything after it.
    while (!done.load(std::memory_order_relaxed)) {
      for (uint64_t i = 0; i < shared; i += 97) seen += filter->Count(SharedItem(i));
      seen += filter->Info().items;
    }
    (void)seen;
  });
  const uint64_t failures = RunEightThreads(
      per_thread, shared, [&](const KeyHash& h) { return filter->Add(h) == FilterStatus::kOk; },
      [&](const KeyHash& h) { return filter->Remove(h); });
  // Relaxed: see the reader.
  done.store(true, std::memory_order_relaxed);
  reader.join();
  EXPECT_EQ(failures, 0u);
  // Every add stored one fingerprint and every remove took one away.
  EXPECT_EQ(filter->items(), kAddRemoveThreads * shared);
  uint64_t total_count = 0;
  for (uint64_t i = 0; i < shared; ++i) {
    const uint64_t count = filter->Count(SharedItem(i));
    ASSERT_GE(count, uint64_t{kAddRemoveThreads}) << i;
    total_count += count;
  }
  uint64_t still_reported = 0;
  for (int t = 0; t < kAddRemoveThreads; ++t) {
    for (uint64_t i = 0; i < per_thread; ++i) still_reported += filter->MayContain(OwnItem(t, i));
  }
  std::cout << "[ cf mt ] " << filter->num_filters() << " sub-filters; shared counts sum "
            << total_count << " for " << kAddRemoveThreads * shared
            << " copies; removed items still reported: "
            << Percent(static_cast<double>(still_reported) / (kAddRemoveThreads * per_thread))
            << "\n";
}

}  // namespace
}  // namespace bloomgate
