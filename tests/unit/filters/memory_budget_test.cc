#include "filters/memory_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "filter_test_support.h"

namespace bloomgate {
namespace {

TEST(MemoryBudget, ReservesUpToTheLimitAndNoMore) {
  MemoryBudget budget(/*limit_bytes=*/1000);
  EXPECT_TRUE(budget.TryReserve(600));
  EXPECT_TRUE(budget.TryReserve(400));
  EXPECT_FALSE(budget.TryReserve(1));
  EXPECT_EQ(budget.used(), 1000u);
  EXPECT_EQ(budget.limit(), 1000u);
}

TEST(MemoryBudget, AFailedReservationReservesNothing) {
  MemoryBudget budget(1000);
  ASSERT_TRUE(budget.TryReserve(900));
  EXPECT_FALSE(budget.TryReserve(101));
  EXPECT_EQ(budget.used(), 900u);
  EXPECT_TRUE(budget.TryReserve(100));
}

TEST(MemoryBudget, ReleaseGivesBytesBack) {
  MemoryBudget budget(1000);
  ASSERT_TRUE(budget.TryReserve(1000));
  budget.Release(300);
  EXPECT_EQ(budget.used(), 700u);
  EXPECT_TRUE(budget.TryReserve(300));
}

TEST(MemoryBudget, ZeroLimitIsUnlimitedButNeverWraps) {
  MemoryBudget budget(/*limit_bytes=*/0);
  EXPECT_TRUE(budget.TryReserve(uint64_t{1} << 62));
  EXPECT_TRUE(budget.TryReserve(uint64_t{1} << 62));
  EXPECT_FALSE(budget.TryReserve(UINT64_MAX));
  EXPECT_EQ(budget.used(), uint64_t{1} << 63);
}

TEST(MemoryBudget, LoweringTheLimitOnlyBlocksNewReservations) {
  MemoryBudget budget(1000);
  ASSERT_TRUE(budget.TryReserve(800));
  budget.set_limit(500);
  EXPECT_EQ(budget.used(), 800u);
  EXPECT_FALSE(budget.TryReserve(1));
  budget.Release(400);
  EXPECT_TRUE(budget.TryReserve(100));
  EXPECT_FALSE(budget.TryReserve(1));
}

TEST(MemoryBudget, ConcurrentReservationsNeverOvershootTheLimit) {
  constexpr uint64_t kLimit = 10'000;
  constexpr int kThreads = 8;
  const uint64_t attempts = test_support::Scaled(50'000);
  MemoryBudget budget(kLimit);
  std::atomic<uint64_t> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      uint64_t mine = 0;
      for (uint64_t i = 0; i < attempts; ++i) {
        if (budget.TryReserve(1)) ++mine;
        // Give some back now and then so the counter keeps moving both ways.
        if (i % 7 == 0 && mine > 0) {
          budget.Release(1);
          --mine;
        }
      }
      // Relaxed: joined below, which orders it.
      granted.fetch_add(mine, std::memory_order_relaxed);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(budget.used(), granted.load(std::memory_order_relaxed));
  EXPECT_LE(budget.used(), kLimit);
}

}  // namespace
}  // namespace bloomgate
