// A windowed filter's turnover hands its aged-out generations to the
// deferred freer (filters/deferred_free.h) instead of freeing them on the
// adding thread, and big word arrays come zeroed from fresh pages.
#include "filters/deferred_free.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "filters/block_words.h"
#include "filters/windowed_bloom_filter.h"
#include "filters/windowed_counting_bloom_filter.h"

namespace bloomgate {
namespace {

// Keeps what it is handed, so the test decides when it is freed.
class KeepingFreer final : public DeferredFreer {
 public:
  void Free(std::shared_ptr<void> doomed) override { kept.push_back(std::move(doomed)); }
  std::vector<std::shared_ptr<void>> kept;
};

class DeferredFree : public ::testing::Test {
 protected:
  DeferredFree() { SetDeferredFreer(&freer_); }
  ~DeferredFree() override { ClearDeferredFreer(&freer_); }
  KeepingFreer freer_;
};

TEST_F(DeferredFree, ATurnoverHandsBigDroppedGenerationsOver) {
  MemoryBudget budget(uint64_t{1} << 30);
  WindowedCountingBloomOptions o;
  o.capacity = 2'000'000;  // ~2 MB per generation: over kDeferredFreeBytes
  o.window_ms = 2000;
  o.generations = 2;
  o.hash_seed = 3;
  std::unique_ptr<WindowedCountingBloomFilter> f;
  ASSERT_EQ(WindowedCountingBloomFilter::Create(o, 0, FilterLimits{}, &budget, &f),
            FilterStatus::kOk);
  ASSERT_GE(f->memory_bytes() / 1, kDeferredFreeBytes);
  for (int64_t now = 1000; now <= 2000; now += 1000) ASSERT_EQ(f->AdvanceTo(now), FilterStatus::kOk);
  EXPECT_TRUE(freer_.kept.empty()) << "nothing dropped while slots were free";
  const uint64_t steady = budget.used();
  ASSERT_EQ(f->AdvanceTo(3000), FilterStatus::kOk);  // generation 0 drops
  ASSERT_EQ(freer_.kept.size(), 1u);
  // Still charged while it waits (as LazyFreer does), released once freed.
  EXPECT_GT(budget.used(), steady);
  freer_.kept.clear();
  EXPECT_EQ(budget.used(), steady);
}

TEST_F(DeferredFree, SmallGenerationsAreFreedAtOnce) {
  WindowedBloomOptions o;
  o.capacity = 1000;
  o.window_ms = 2000;
  o.generations = 2;
  o.hash_seed = 3;
  std::unique_ptr<WindowedBloomFilter> f;
  ASSERT_EQ(WindowedBloomFilter::Create(o, 0, FilterLimits{}, nullptr, &f), FilterStatus::kOk);
  ASSERT_EQ(f->AdvanceTo(10000), FilterStatus::kOk);
  EXPECT_TRUE(freer_.kept.empty());
}

TEST(BlockWords, BigArraysAreZeroedAlignedAndWritable) {
  for (uint64_t bytes : {uint64_t{64}, uint64_t{4096}, internal::kMappedBlockWordsBytes - 64,
                         internal::kMappedBlockWordsBytes, uint64_t{3} << 20}) {
    std::atomic<uint64_t>* words = internal::NewZeroedBlockWords(bytes);
    ASSERT_NE(words, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(words) % 64, 0u) << bytes;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < bytes / 8; ++i) sum |= words[i].load(std::memory_order_relaxed);
    EXPECT_EQ(sum, 0u) << bytes;
    words[bytes / 8 - 1].store(7, std::memory_order_relaxed);
    internal::DeleteBlockWords(words, bytes);
  }
}

}  // namespace
}  // namespace bloomgate
