// Filters under concurrent use: adds never lock, growth takes a small mutex,
// readers never block. Run under ThreadSanitizer as well as Release.

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <iostream>
#include <thread>
#include <vector>

#include "filter_test_support.h"
#include "filters/blocked_bloom.h"
#include "filters/bloom_math.h"
#include "filters/scalable_bloom_filter.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;
using test_support::Scaled;

constexpr int kThreads = 8;

// Thread t adds "t<t>:<i>" for i < per_thread.
KeyHash ThreadItem(int thread, uint64_t i) {
  static const char* const kPrefixes[] = {"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"};
  return ItemHash(kPrefixes[thread], i);
}

TEST(BlockedBloomConcurrency, DisjointAddsToSharedWordsAllStick) {
  // 16 blocks for 80k items: every word is hammered by all threads at once.
  const auto filter = BlockedBloom::Create(BloomShape{16 * 512, 6, 0, 0});
  ASSERT_NE(filter, nullptr);
  const uint64_t per_thread = Scaled(10'000);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < per_thread; ++i) filter->Add(ThreadItem(t, i));
    });
  }
  for (std::thread& thread : threads) thread.join();
  uint64_t missing = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (uint64_t i = 0; i < per_thread; ++i) missing += !filter->MayContain(ThreadItem(t, i));
  }
  EXPECT_EQ(missing, 0u);
}

TEST(ScalableBloomConcurrency, EightWritersWhileTheFilterGrowsLoseNothing) {
  MemoryBudget budget(0);
  std::unique_ptr<ScalableBloomFilter> filter;
  ASSERT_EQ(ScalableBloomFilter::Create(ScalableBloomOptions{0.01, /*capacity=*/100, 2},
                                        FilterLimits{}, &budget, &filter),
            FilterStatus::kOk);
  const uint64_t per_thread = Scaled(50'000);
  std::atomic<uint64_t> added_total{0};
  std::atomic<uint64_t> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      uint64_t added_here = 0;
      for (uint64_t i = 0; i < per_thread; ++i) {
        bool added = false;
        if (filter->Add(ThreadItem(t, i), &added) != FilterStatus::kOk) {
          // Relaxed: read after join.
          failures.fetch_add(1, std::memory_order_relaxed);
        }
        added_here += added;
      }
      // Relaxed: read after join.
      added_total.fetch_add(added_here, std::memory_order_relaxed);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(std::memory_order_relaxed), 0u);

  uint64_t missing = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (uint64_t i = 0; i < per_thread; ++i) missing += !filter->MayContain(ThreadItem(t, i));
  }
  EXPECT_EQ(missing, 0u);

  // Disjoint items are never counted twice; only false positives go uncounted.
  const uint64_t total = kThreads * per_thread;
  EXPECT_EQ(filter->items(), added_total.load(std::memory_order_relaxed));
  EXPECT_LE(filter->items(), total);
  EXPECT_GE(filter->items(), total - total / 100);

  // Racing growers appended each layer once: the capacities still double.
  const auto layers = filter->Layers();
  for (size_t i = 0; i < layers.size(); ++i) {
    EXPECT_EQ(layers[i].capacity, uint64_t{100} << i) << "layer " << i;
    if (i + 1 < layers.size()) {
      // A full layer can overshoot by at most one item per racing thread.
      EXPECT_LE(layers[i].items, layers[i].capacity + kThreads) << "layer " << i;
    }
  }
  EXPECT_EQ(budget.used(), filter->memory_bytes());
}

TEST(ScalableBloomConcurrency, ReadersSeeEveryItemWhoseAddHasReturned) {
  std::unique_ptr<ScalableBloomFilter> filter;
  ASSERT_EQ(ScalableBloomFilter::Create(ScalableBloomOptions{0.01, /*capacity=*/64, 2},
                                        FilterLimits{}, nullptr, &filter),
            FilterStatus::kOk);
  constexpr int kWriters = 4;
  constexpr int kReaders = 4;
  const uint64_t per_writer = Scaled(40'000);
  // progress[w] = how many of writer w's items are fully added.
  std::atomic<uint64_t> progress[kWriters] = {};
  std::atomic<int> writers_left{kWriters};
  std::atomic<uint64_t> false_negatives{0};
  std::atomic<uint64_t> lookups{0};
  // Lookups of completed adds by the layer count seen when they began:
  // those made with fewer layers than the filter ends with ran while it grew.
  std::atomic<uint64_t> lookups_by_layers[kMaxBloomLayers + 1] = {};
  std::barrier start(kWriters + kReaders);

  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      start.arrive_and_wait();
      for (uint64_t i = 0; i < per_writer; ++i) {
        bool added = false;
        filter->Add(ThreadItem(w, i), &added);
        // Release: whoever acquires progress >= i+1 must see item i's bits.
        progress[w].store(i + 1, std::memory_order_release);
      }
      // Release: pairs with the readers' acquire, so they see all the adds.
      writers_left.fetch_sub(1, std::memory_order_release);
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      uint64_t checked = 0;
      uint64_t checked_by_layers[kMaxBloomLayers + 1] = {};
      uint64_t x = 0x9e3779b97f4a7c15ull * (r + 1);
      start.arrive_and_wait();
      // Acquire: once no writer is left, every add is visible.
      while (writers_left.load(std::memory_order_acquire) > 0) {
        const uint32_t layers = filter->num_layers();
        for (int w = 0; w < kWriters; ++w) {
          // Acquire: pairs with the writer's release store above.
          const uint64_t done = progress[w].load(std::memory_order_acquire);
          if (done == 0) continue;
          x = x * 6364136223846793005ull + 1442695040888963407ull;  // LCG: which item
          const uint64_t newest = done - 1;
          const uint64_t any = (x >> 16) % done;
          if (!filter->MayContain(ThreadItem(w, newest))) {
            // Relaxed: read after join.
            false_negatives.fetch_add(1, std::memory_order_relaxed);
          }
          if (!filter->MayContain(ThreadItem(w, any))) {
            false_negatives.fetch_add(1, std::memory_order_relaxed);
          }
          // Absent items too: their lookups walk every layer during growth.
          filter->MayContain(ItemHash("absent", x));
          checked += 2;
          checked_by_layers[layers] += 2;
        }
        // Stats while growing must be safe to read.
        (void)filter->items();
        (void)filter->capacity();
        (void)filter->memory_bytes();
        (void)filter->Layers();
      }
      // Relaxed: read after join.
      lookups.fetch_add(checked, std::memory_order_relaxed);
      for (uint32_t l = 0; l <= kMaxBloomLayers; ++l) {
        lookups_by_layers[l].fetch_add(checked_by_layers[l], std::memory_order_relaxed);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(false_negatives.load(std::memory_order_relaxed), 0u)
      << "of " << lookups.load(std::memory_order_relaxed) << " lookups of completed adds";
  EXPECT_GT(filter->num_layers(), 5u);
  for (int w = 0; w < kWriters; ++w) {
    for (uint64_t i = 0; i < per_writer; ++i) ASSERT_TRUE(filter->MayContain(ThreadItem(w, i)));
  }
  // The readers really ran while the writers added and the filter grew.
  uint64_t during_growth = 0;
  for (uint32_t l = 0; l < filter->num_layers(); ++l) {
    during_growth += lookups_by_layers[l].load(std::memory_order_relaxed);
  }
  const uint64_t total = lookups.load(std::memory_order_relaxed);
  EXPECT_GT(total, 0u) << "no reader looked up a completed add while the writers ran";
  EXPECT_GT(during_growth, 0u) << "of " << total << " lookups, none while the filter had fewer "
                               << "than its final " << filter->num_layers() << " layers";
  std::cout << "[ readers ] " << total << " lookups of completed adds, " << during_growth
            << " of them while the filter grew to its " << filter->num_layers() << " layers\n";
}

TEST(ScalableBloomConcurrency, RacingGrowthAtTheBudgetLimitChargesEachLayerOnce) {
  MemoryBudget budget(/*limit_bytes=*/64 * 1024);
  std::unique_ptr<ScalableBloomFilter> filter;
  ASSERT_EQ(ScalableBloomFilter::Create(ScalableBloomOptions{0.01, /*capacity=*/50, 2},
                                        FilterLimits{}, &budget, &filter),
            FilterStatus::kOk);
  std::atomic<uint64_t> out_of_memory{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < Scaled(20'000); ++i) {
        bool added = false;
        const FilterStatus status = filter->Add(ThreadItem(t, i), &added);
        if (status == FilterStatus::kOutOfMemory) {
          // Relaxed: read after join.
          out_of_memory.fetch_add(1, std::memory_order_relaxed);
        } else {
          EXPECT_EQ(status, FilterStatus::kOk);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_GT(out_of_memory.load(std::memory_order_relaxed), 0u);
  EXPECT_EQ(budget.used(), filter->memory_bytes());
  EXPECT_LE(budget.used(), budget.limit());
  filter.reset();
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace bloomgate
