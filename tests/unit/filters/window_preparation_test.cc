// A windowed filter's next generation built ahead (window_generations.h,
// generation_preparer.h), with an injected clock and preparers that run
// their jobs when the test says: a turnover takes the prepared generation,
// answers are those of a filter without preparation, the spare is counted
// in memory but never seen by a snapshot, and a filter deleted while its
// job is queued leaves nothing charged.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "filters/generation_preparer.h"
#include "filters/memory_budget.h"
#include "filters/windowed_bloom_filter.h"
#include "filters/windowed_counting_bloom_filter.h"
#include "vm_flags.h"

namespace bloomgate {
namespace {

// Aligned to a 1000 ms period, so generation g starts at kPreparationOrigin + g * 1000.
constexpr int64_t kPreparationOrigin = 1'000'000;
constexpr uint64_t kWindowMs = 4000;
constexpr uint32_t kGenerations = 4;

// Queues jobs; RunAll runs them on the test's thread. Installed while it lives.
class QueuedPreparer final : public GenerationPreparer {
 public:
  QueuedPreparer() : GenerationPreparer(NoThread{}) { SetGenerationPreparer(this); }
  ~QueuedPreparer() override { ClearGenerationPreparer(this); }
  bool Submit(std::function<void()> job) override {
    jobs.push_back(std::move(job));
    return true;
  }
  void RunAll() {
    std::vector<std::function<void()>> now = std::move(jobs);
    jobs.clear();
    for (auto& job : now) job();
  }
  std::vector<std::function<void()>> jobs;
};

std::unique_ptr<WindowedBloomFilter> MakeBloom(MemoryBudget* budget = nullptr,
                                               uint64_t capacity = 1000) {
  WindowedBloomOptions o;
  o.error_rate = 0.01;
  o.capacity = capacity;
  o.window_ms = kWindowMs;
  o.generations = kGenerations;
  o.hash_seed = 42;
  std::unique_ptr<WindowedBloomFilter> f;
  EXPECT_EQ(WindowedBloomFilter::Create(o, kPreparationOrigin, FilterLimits{}, budget, &f),
            FilterStatus::kOk);
  return f;
}

const ScalableBloomFilter* CurrentGeneration(const WindowedBloomFilter& f) {
  return f.WithSlots([&](const std::vector<WindowSlotView<ScalableBloomFilter>>& views) {
    const auto& v = views[f.ring().current() % views.size()];
    return v.present && v.generation == f.ring().current() ? v.filter : nullptr;
  });
}

TEST(WindowPreparation, TurnoverTakesThePreparedGeneration) {
  QueuedPreparer preparer;
  auto f = MakeBloom();
  ASSERT_EQ(preparer.jobs.size(), 1u) << "creation queues the first spare";
  EXPECT_EQ(f->ring().prepared(), nullptr);
  preparer.RunAll();
  const ScalableBloomFilter* spare = f->ring().prepared();
  ASSERT_NE(spare, nullptr);
  ASSERT_EQ(f->AdvanceTo(kPreparationOrigin + 1000), FilterStatus::kOk);
  EXPECT_EQ(CurrentGeneration(*f), spare) << "generation 1 is the prepared array";
  EXPECT_EQ(f->ring().prepared(), nullptr);
  ASSERT_EQ(preparer.jobs.size(), 1u) << "the turnover queues the next spare";
  preparer.RunAll();
  EXPECT_NE(f->ring().prepared(), nullptr);
  EXPECT_NE(f->ring().prepared(), spare);
}

TEST(WindowPreparation, TurnoverBeforeTheJobRanBuildsInline) {
  QueuedPreparer preparer;
  auto f = MakeBloom();
  ASSERT_EQ(f->AdvanceTo(kPreparationOrigin + 1000), FilterStatus::kOk);
  EXPECT_NE(CurrentGeneration(*f), nullptr);
  EXPECT_EQ(preparer.jobs.size(), 1u) << "one job at a time, however many turnovers";
  preparer.RunAll();
  EXPECT_NE(f->ring().prepared(), nullptr);
}

// A spare that is late (its job has not run) makes the turnover build the
// generation on the adding thread: on 4 KiB pages, so no add there waits for
// a huge page's compaction; a prepared spare keeps the huge-page advice.
TEST(WindowPreparation, ALateSpareIsBuiltOnSmallPagesAndAPreparedOneOnHugePages) {
  QueuedPreparer preparer;
  // 24M per window: each generation's layer is ~10 MB, over the 8 MiB at
  // which arrays get their own huge-page mapping. Mapped, never touched.
  auto f = MakeBloom(nullptr, 24'000'000);
  ASSERT_EQ(f->AdvanceTo(kPreparationOrigin + 1000), FilterStatus::kOk);
  const ScalableBloomFilter* late = CurrentGeneration(*f);
  ASSERT_NE(late, nullptr);
  ASSERT_GE(late->layer(0).bytes(), internal::kHugePageArrayBytes);
  const std::string late_flags = testing::VmFlagsOf(late->layer(0).words());
  preparer.RunAll();
  ASSERT_EQ(f->AdvanceTo(kPreparationOrigin + 2000), FilterStatus::kOk);
  const ScalableBloomFilter* prepared = CurrentGeneration(*f);
  ASSERT_NE(prepared, nullptr);
  const std::string prepared_flags = testing::VmFlagsOf(prepared->layer(0).words());
  if (late_flags.empty()) GTEST_SKIP() << "/proc/self/smaps not readable";
  EXPECT_FALSE(testing::HasVmFlag(late_flags, "hg")) << late_flags;
  EXPECT_TRUE(testing::HasVmFlag(prepared_flags, "hg")) << prepared_flags;
}

TEST(WindowPreparation, AnswersAreThoseOfAFilterWithoutPreparation) {
  auto plain = MakeBloom();  // no preparer installed yet: never prepares
  QueuedPreparer preparer;
  auto prepared = MakeBloom();
  // 14 periods, 300 adds and 600 lookups each: items of every age, so a
  // spare that carried old bits (or lacked new ones) would answer apart.
  for (int period = 0; period < 14; ++period) {
    preparer.RunAll();
    const int64_t now = kPreparationOrigin + period * 1000 + 500;
    for (int i = 0; i < 300; ++i) {
      const std::string item = std::to_string(period * 300 + i);
      bool seen_a = false, seen_b = false, added_a = false, added_b = false;
      uint64_t gen_a = 0, gen_b = 0;
      ASSERT_EQ(plain->Add(plain->Hash(item), now, &seen_a, &gen_a, &added_a), FilterStatus::kOk);
      ASSERT_EQ(prepared->Add(prepared->Hash(item), now, &seen_b, &gen_b, &added_b),
                FilterStatus::kOk);
      ASSERT_EQ(seen_a, seen_b) << item << " in period " << period;
      ASSERT_EQ(gen_a, gen_b);
    }
    for (int i = 0; i < 600 * (period + 1); i += period + 1) {
      const std::string item = std::to_string(i);
      ASSERT_EQ(plain->MayContain(plain->Hash(item), now),
                prepared->MayContain(prepared->Hash(item), now))
          << item << " in period " << period;
    }
    ASSERT_EQ(plain->ItemsAt(now), prepared->ItemsAt(now));
  }
  EXPECT_EQ(prepared->ring().current(), 13u);
}

TEST(WindowPreparation, SpareIsInMemoryButNotInTheSlots) {
  MemoryBudget budget(0);
  QueuedPreparer preparer;
  auto f = MakeBloom(&budget);
  const uint64_t before = f->memory_bytes();
  const uint64_t charged_before = budget.used();
  preparer.RunAll();
  ASSERT_NE(f->ring().prepared(), nullptr);
  const uint64_t spare = f->ring().prepared()->memory_bytes();
  EXPECT_EQ(f->memory_bytes(), before + spare);
  EXPECT_EQ(budget.used(), charged_before + spare) << "charged from its allocation";
  const int present = f->WithSlots([](const std::vector<WindowSlotView<ScalableBloomFilter>>& v) {
    int n = 0;
    for (const auto& s : v) n += s.present;
    return n;
  });
  EXPECT_EQ(present, 1) << "a snapshot sees generation 0 only";
}

TEST(WindowPreparation, FilterDeletedWhileItsJobWaitsLeavesNothingCharged) {
  MemoryBudget budget(0);
  QueuedPreparer preparer;
  auto f = MakeBloom(&budget);
  ASSERT_EQ(preparer.jobs.size(), 1u);
  f.reset();
  EXPECT_EQ(budget.used(), 0u);
  // Run the orphaned job but keep it (and the state it holds) alive: what it
  // builds must be dropped at once, not parked in the state.
  std::function<void()> job = preparer.jobs.front();
  job();
  EXPECT_EQ(budget.used(), 0u);
}

TEST(WindowPreparation, SpareRefusedByTheBudgetLeavesTheTurnoverInline) {
  QueuedPreparer preparer;
  auto probe = MakeBloom();
  preparer.RunAll();
  MemoryBudget budget(probe->memory_bytes() - probe->ring().prepared()->memory_bytes() + 1);
  auto f = MakeBloom(&budget);  // room for generation 0 only
  preparer.RunAll();
  EXPECT_EQ(f->ring().prepared(), nullptr);
  // Generation 1 does not fit beside 0 either: refused as without a preparer.
  EXPECT_EQ(f->AdvanceTo(kPreparationOrigin + 1000), FilterStatus::kOutOfMemory);
  EXPECT_EQ(f->ring().current(), 0u);
}

TEST(WindowPreparation, CountingTurnoverTakesThePreparedGeneration) {
  QueuedPreparer preparer;
  WindowedCountingBloomOptions o;
  o.capacity = 1000;
  o.window_ms = kWindowMs;
  o.generations = kGenerations;
  o.hash_seed = 7;
  std::unique_ptr<WindowedCountingBloomFilter> f;
  ASSERT_EQ(WindowedCountingBloomFilter::Create(o, kPreparationOrigin, FilterLimits{}, nullptr, &f),
            FilterStatus::kOk);
  preparer.RunAll();
  const CountingBloomFilter* spare = f->ring().prepared();
  ASSERT_NE(spare, nullptr);
  ASSERT_EQ(f->AdvanceTo(kPreparationOrigin + 1000), FilterStatus::kOk);
  const CountingBloomFilter* current =
      f->WithSlots([&](const std::vector<WindowCountingSlotInfo>& views) {
        return views[1].filter;
      });
  EXPECT_EQ(current, spare);
}

TEST(GenerationPreparer, RunsSubmittedJobsOnItsThread) {
  GenerationPreparer preparer;
  std::mutex mutex;
  std::condition_variable done;
  bool ran = false;
  ASSERT_TRUE(preparer.Submit([&] {
    std::lock_guard lock(mutex);
    ran = true;
    done.notify_one();
  }));
  std::unique_lock lock(mutex);
  EXPECT_TRUE(done.wait_for(lock, std::chrono::seconds(10), [&] { return ran; }));
  lock.unlock();
  preparer.Stop();
  EXPECT_FALSE(preparer.Submit([] {})) << "a stopped preparer takes no job";
}

}  // namespace
}  // namespace bloomgate
