// The windowed Bloom filter with an injected clock: every time below is a
// number passed in, so the window's edges are tested to the millisecond.
#include "filters/windowed_bloom_filter.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace bloomgate {
namespace {

constexpr int64_t kBloomOrigin = 1'000'000;

std::unique_ptr<WindowedBloomFilter> MakeWindowedBloom(uint64_t window_ms, uint32_t generations,
                                                       uint64_t capacity = 1000,
                                                       double error = 0.01,
                                                       MemoryBudget* budget = nullptr) {
  WindowedBloomOptions o;
  o.error_rate = error;
  o.capacity = capacity;
  o.window_ms = window_ms;
  o.generations = generations;
  o.hash_seed = 42;
  std::unique_ptr<WindowedBloomFilter> f;
  EXPECT_EQ(WindowedBloomFilter::Create(o, kBloomOrigin, FilterLimits{}, budget, &f),
            FilterStatus::kOk);
  return f;
}

bool Add(WindowedBloomFilter& f, const std::string& item, int64_t now, uint64_t* gen = nullptr) {
  bool seen = false, added = false;
  uint64_t g = 0;
  EXPECT_EQ(f.Add(f.Hash(item), now, &seen, &g, &added), FilterStatus::kOk);
  if (gen != nullptr) *gen = g;
  return !seen;
}

bool Has(const WindowedBloomFilter& f, const std::string& item, int64_t now) {
  return f.MayContain(f.Hash(item), now);
}

TEST(WindowedBloom, RefusesBadOptions) {
  WindowedBloomOptions o;
  o.window_ms = 0;
  std::unique_ptr<WindowedBloomFilter> f;
  EXPECT_EQ(WindowedBloomFilter::Create(o, 0, FilterLimits{}, nullptr, &f),
            FilterStatus::kInvalidOptions);
  o.window_ms = 1000;
  o.generations = 0;
  EXPECT_EQ(WindowedBloomFilter::Create(o, 0, FilterLimits{}, nullptr, &f),
            FilterStatus::kInvalidOptions);
  o.generations = kMaxWindowGenerations + 1;
  EXPECT_EQ(WindowedBloomFilter::Create(o, 0, FilterLimits{}, nullptr, &f),
            FilterStatus::kInvalidOptions);
  o.generations = 4;
  o.expansion = 0;  // a window needs scaling generations
  EXPECT_EQ(WindowedBloomFilter::Create(o, 0, FilterLimits{}, nullptr, &f),
            FilterStatus::kInvalidOptions);
  EXPECT_EQ(f, nullptr);
}

// Added at t: present through t + W - 1 ms, absent from t + W + W/n on, for
// adds at the start, the middle and the last millisecond of a period.
TEST(WindowedBloom, WindowGuarantee) {
  constexpr uint64_t kW = 4000;
  constexpr uint32_t kN = 4;  // period 1000 ms
  for (int64_t offset : {0, 1, 500, 999, 1000, 2999}) {
    auto f = MakeWindowedBloom(kW, kN);
    const int64_t t = kBloomOrigin + offset;
    const std::string item = "item-" + std::to_string(offset);
    EXPECT_TRUE(Add(*f, item, t));
    // Probes at every 50 ms keep the clock moving forwards through turnovers
    // done by adds of other items, as traffic would.
    for (int64_t now = t; now < t + static_cast<int64_t>(kW); now += 50) {
      Add(*f, "other-" + std::to_string(now), now);
      ASSERT_TRUE(Has(*f, item, now)) << "offset " << offset << " lost at t+" << now - t;
    }
    ASSERT_TRUE(Has(*f, item, t + kW - 1)) << "offset " << offset;
    const int64_t gone = t + kW + kW / kN;
    EXPECT_FALSE(Has(*f, item, gone)) << "offset " << offset << " still there at t+W+W/n";
    Add(*f, "after", gone);  // and once the turnover has physically happened
    EXPECT_FALSE(Has(*f, item, gone)) << "offset " << offset;
  }
}

// A read after an idle spell never sees generations whose time has passed,
// even before an add replaced them.
TEST(WindowedBloom, IdleSpellAgesOutWithoutAnAdd) {
  auto f = MakeWindowedBloom(/*window_ms=*/1000, /*generations=*/2);
  Add(*f, "a", kBloomOrigin);
  EXPECT_TRUE(Has(*f, "a", kBloomOrigin + 999));
  EXPECT_FALSE(Has(*f, "a", kBloomOrigin + 1500));
  EXPECT_EQ(f->ItemsAt(kBloomOrigin + 1500), 0u);
  EXPECT_EQ(f->current_generation(), 0u);  // nothing was rebuilt by reading
}

TEST(WindowedBloom, AddRepliesWhetherSeenInTheWindow) {
  auto f = MakeWindowedBloom(/*window_ms=*/4000, /*generations=*/4);
  EXPECT_TRUE(Add(*f, "x", kBloomOrigin));
  EXPECT_FALSE(Add(*f, "x", kBloomOrigin + 10));    // same generation
  EXPECT_FALSE(Add(*f, "x", kBloomOrigin + 3500));  // three generations later
  // The second add refreshed it: present a window after the second add...
  EXPECT_TRUE(Has(*f, "x", kBloomOrigin + 3500 + 3999));
  // ...and the first one alone would have been gone by 5000.
  EXPECT_EQ(f->ItemsAt(kBloomOrigin + 3500), 1u);  // BF.CARD: new to the window once
}

// The union over all live generations stays at or under error_rate with
// every generation full: 100k probes of items never added.
TEST(WindowedBloom, FalsePositiveRateOverAllGenerations) {
  constexpr uint64_t kCapacity = 20000;
  constexpr uint32_t kN = 4;
  auto f = MakeWindowedBloom(/*window_ms=*/4000, kN, kCapacity, /*error=*/0.01);
  // capacity / n distinct items in each of the n + 1 live generations.
  int64_t now = kBloomOrigin;
  int id = 0;
  for (uint32_t g = 0; g <= kN; ++g) {
    for (uint64_t i = 0; i < kCapacity / kN; ++i) Add(*f, "in-" + std::to_string(id++), now);
    if (g < kN) now += 1000;
  }
  int fp = 0;
  constexpr int kProbes = 100000;
  for (int i = 0; i < kProbes; ++i) fp += Has(*f, "out-" + std::to_string(i), now) ? 1 : 0;
  const double rate = static_cast<double>(fp) / kProbes;
  EXPECT_LE(rate, 0.01) << "measured FP " << rate << " over " << kN + 1 << " generations";
}

// Steady traffic of the same volume per period keeps memory flat over many
// windows; a burst past capacity grows the current generation, and the growth
// is gone once that generation ages out.
TEST(WindowedBloom, MemoryFlatAndGrowthAgesOut) {
  MemoryBudget budget(uint64_t{1} << 30);
  auto f =
      MakeWindowedBloom(/*window_ms=*/1000, /*generations=*/4, /*capacity=*/4000, 0.01, &budget);
  int64_t now = kBloomOrigin;
  int id = 0;
  auto period = [&](int items) {
    for (int i = 0; i < items; ++i) Add(*f, "i" + std::to_string(id++), now);
    now += 250;
  };
  for (int p = 0; p < 5; ++p) period(1000);  // fill every slot once
  const uint64_t steady = f->memory_bytes();
  const uint64_t reserved = budget.used();
  for (int p = 0; p < 40; ++p) period(1000);  // ten windows
  EXPECT_EQ(f->memory_bytes(), steady);
  EXPECT_EQ(budget.used(), reserved);
  period(8000);  // eight times a period's share: the generation grows layers
  const uint64_t burst = f->memory_bytes();
  EXPECT_GT(burst, steady + steady / 4);
  for (int p = 0; p < 5; ++p) period(1000);  // the burst's generation ages out
  EXPECT_EQ(f->memory_bytes(), steady);
  EXPECT_EQ(budget.used(), reserved);  // and its layers went back to the budget
}

// What replay needs: adds put back into the generations they went to, in
// any order the log holds, rebuild the same answers and counts.
TEST(WindowedBloom, ReplayRebuildsTheSameGenerations) {
  auto live = MakeWindowedBloom(/*window_ms=*/2000, /*generations=*/2);
  auto replayed = MakeWindowedBloom(/*window_ms=*/2000, /*generations=*/2);
  struct Record { std::string item; uint64_t gen; bool seen; bool added; };
  std::vector<Record> log;
  for (int i = 0; i < 600; ++i) {
    const int64_t now = kBloomOrigin + i * 10;  // six seconds: three windows
    const std::string item = "k" + std::to_string(i % 150);
    bool seen = false, added = false;
    uint64_t gen = 0;
    ASSERT_EQ(live->Add(live->Hash(item), now, &seen, &gen, &added), FilterStatus::kOk);
    log.push_back({item, gen, seen, added});
  }
  // Replay ignores the clock: only the recorded generations move it.
  for (const Record& r : log) replayed->ReplayAdd(replayed->Hash(r.item), r.gen, r.seen, r.added);
  const int64_t end = kBloomOrigin + 6000;
  EXPECT_EQ(replayed->current_generation(), live->current_generation());
  EXPECT_EQ(replayed->ItemsAt(end), live->ItemsAt(end));
  EXPECT_EQ(replayed->memory_bytes(), live->memory_bytes());
  for (int i = 0; i < 150; ++i) {
    const std::string item = "k" + std::to_string(i);
    EXPECT_EQ(Has(*replayed, item, end), Has(*live, item, end)) << item;
  }
  // A record for a generation already dropped changes nothing.
  replayed->ReplayAdd(replayed->Hash("late"), /*generation=*/0, false, true);
  EXPECT_FALSE(Has(*replayed, "late", end));
}

// Time before the origin (a wall clock set back across a restart) never
// moves generations backwards and never drops anything.
TEST(WindowedBloom, ClockBeforeOriginChangesNothing) {
  auto f = MakeWindowedBloom(/*window_ms=*/1000, /*generations=*/4);
  Add(*f, "a", kBloomOrigin + 600);
  EXPECT_TRUE(Has(*f, "a", kBloomOrigin - 100000));
  EXPECT_EQ(f->GenerationAt(kBloomOrigin - 5), 0u);
  EXPECT_TRUE(Add(*f, "b", kBloomOrigin - 5));
  EXPECT_EQ(f->current_generation(), 2u);
}

}  // namespace
}  // namespace bloomgate
