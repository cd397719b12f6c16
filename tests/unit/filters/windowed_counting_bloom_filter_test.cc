// The windowed counting Bloom filter with an injected clock: every time is
// a number passed in, so the window's edges and counts are exact.
#include "filters/windowed_counting_bloom_filter.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace bloomgate {
namespace {

constexpr int64_t kOrigin = 1'000'000;

std::unique_ptr<WindowedCountingBloomFilter> MakeWindowedCounting(uint64_t window_ms,
                                                                  uint32_t generations,
                                                                  uint64_t capacity = 1000,
                                                                  MemoryBudget* budget = nullptr) {
  WindowedCountingBloomOptions o;
  o.capacity = capacity;
  o.window_ms = window_ms;
  o.generations = generations;
  o.hash_seed = 7;
  std::unique_ptr<WindowedCountingBloomFilter> f;
  EXPECT_EQ(WindowedCountingBloomFilter::Create(o, kOrigin, FilterLimits{}, budget, &f),
            FilterStatus::kOk);
  return f;
}

// CBF.INCR of one item: its window count after this add.
uint64_t Incr(WindowedCountingBloomFilter& f, const std::string& item, int64_t now,
              uint64_t* generation = nullptr) {
  bool was_new = false;
  uint64_t count = 0, g = 0;
  EXPECT_EQ(f.Add(f.Hash(item), now, &was_new, &count, &g), FilterStatus::kOk);
  if (generation != nullptr) *generation = g;
  return count;
}

uint64_t Count(const WindowedCountingBloomFilter& f, const std::string& item, int64_t now) {
  return f.Count(f.Hash(item), now);
}

TEST(WindowedCountingBloom, RefusesBadOptions) {
  WindowedCountingBloomOptions o;
  std::unique_ptr<WindowedCountingBloomFilter> f;
  o.window_ms = 0;
  EXPECT_EQ(WindowedCountingBloomFilter::Create(o, 0, FilterLimits{}, nullptr, &f),
            FilterStatus::kInvalidOptions);
  o.window_ms = 1000;
  o.counter_bits = 5;
  EXPECT_EQ(WindowedCountingBloomFilter::Create(o, 0, FilterLimits{}, nullptr, &f),
            FilterStatus::kInvalidOptions);
  o.counter_bits = 8;
  o.expansion = 0;  // a window needs scaling generations
  EXPECT_EQ(WindowedCountingBloomFilter::Create(o, 0, FilterLimits{}, nullptr, &f),
            FilterStatus::kInvalidOptions);
  EXPECT_EQ(f, nullptr);
}

// The n-th hit: each INCR replies the count within the window, this add
// included, summed over the generations it was seen in.
TEST(WindowedCountingBloom, IncrCountsAcrossLiveGenerations) {
  auto f = MakeWindowedCounting(/*window_ms=*/4000, /*generations=*/4);  // period 1000 ms
  EXPECT_EQ(Incr(*f, "obj", kOrigin), 1u);
  EXPECT_EQ(Incr(*f, "obj", kOrigin + 10), 2u);       // same generation
  EXPECT_EQ(Incr(*f, "obj", kOrigin + 2500), 3u);     // two generations later
  EXPECT_EQ(Count(*f, "obj", kOrigin + 2500), 3u);
  EXPECT_EQ(f->ItemsAt(kOrigin + 2500), 3u);
  // Generation 0's two occurrences are dropped from 5000 (0 + n + 1 periods):
  // only the one of generation 2 is left.
  EXPECT_EQ(Count(*f, "obj", kOrigin + 4999), 3u);
  EXPECT_EQ(Count(*f, "obj", kOrigin + 5000), 1u);
  EXPECT_EQ(Incr(*f, "obj", kOrigin + 5000), 2u);
  EXPECT_EQ(Count(*f, "obj", kOrigin + 7000), 1u);    // generation 2 dropped too
  EXPECT_EQ(Count(*f, "never", kOrigin + 7000), 0u);
}

// Added at t: counted through t + W - 1 ms, gone from t + W + W/n on, for
// adds at several offsets inside a period.
TEST(WindowedCountingBloom, WindowGuarantee) {
  constexpr uint64_t kW = 4000;
  constexpr uint32_t kN = 4;
  for (int64_t offset : {0, 1, 999, 1000, 2999}) {
    auto f = MakeWindowedCounting(kW, kN);
    const int64_t t = kOrigin + offset;
    EXPECT_EQ(Incr(*f, "x", t), 1u);
    for (int64_t now = t; now < t + static_cast<int64_t>(kW); now += 50) {
      Incr(*f, "other-" + std::to_string(now), now);
      ASSERT_EQ(Count(*f, "x", now), 1u) << "offset " << offset << " at t+" << now - t;
    }
    ASSERT_TRUE(f->MayContain(f->Hash("x"), t + kW - 1));
    const int64_t gone = t + kW + kW / kN;
    EXPECT_FALSE(f->MayContain(f->Hash("x"), gone)) << "offset " << offset;
    Incr(*f, "after", gone);
    EXPECT_EQ(Count(*f, "x", gone), 0u) << "offset " << offset;
  }
}

// DEL takes the newest live occurrence; an item no generation reports is
// refused and changes nothing.
TEST(WindowedCountingBloom, RemoveTakesTheNewestGenerationAndRefusesTheAbsent) {
  auto f = MakeWindowedCounting(/*window_ms=*/2000, /*generations=*/2);  // period 1000 ms
  Incr(*f, "a", kOrigin);         // generation 0
  Incr(*f, "a", kOrigin + 1200);  // generation 1
  uint64_t generation = 99;
  ASSERT_TRUE(f->Remove(f->Hash("a"), kOrigin + 1300, &generation));
  EXPECT_EQ(generation, 1u);
  EXPECT_EQ(Count(*f, "a", kOrigin + 1300), 1u);
  // The remaining occurrence is generation 0's: gone once it ages out.
  EXPECT_EQ(Count(*f, "a", kOrigin + 3000), 0u);
  EXPECT_FALSE(f->Remove(f->Hash("zzz"), kOrigin + 1300, &generation));
  EXPECT_FALSE(f->Remove(f->Hash("a"), kOrigin + 3000, &generation));  // aged out
  EXPECT_EQ(f->ItemsAt(kOrigin + 1300), 1u);
}

// Adds and removes put back into the generations they went to, with the
// clock ignored, rebuild the same counts.
TEST(WindowedCountingBloom, ReplayRebuildsTheSameGenerations) {
  auto live = MakeWindowedCounting(/*window_ms=*/2000, /*generations=*/2);
  auto replayed = MakeWindowedCounting(/*window_ms=*/2000, /*generations=*/2);
  struct Record { bool add; std::string item; uint64_t gen; };
  std::vector<Record> log;
  for (int i = 0; i < 600; ++i) {
    const int64_t now = kOrigin + i * 10;  // three windows
    const std::string item = "k" + std::to_string(i % 40);
    uint64_t gen = 0;
    if (i % 7 == 3 && live->Remove(live->Hash(item), now, &gen)) {
      log.push_back({false, item, gen});
      continue;
    }
    Incr(*live, item, now, &gen);
    log.push_back({true, item, gen});
  }
  for (const Record& r : log) {
    if (r.add) {
      EXPECT_EQ(replayed->ReplayAdd(replayed->Hash(r.item), r.gen), FilterStatus::kOk);
    } else {
      replayed->ReplayRemove(replayed->Hash(r.item), r.gen);
    }
  }
  const int64_t end = kOrigin + 6000;
  EXPECT_EQ(replayed->current_generation(), live->current_generation());
  EXPECT_EQ(replayed->ItemsAt(end), live->ItemsAt(end));
  EXPECT_EQ(replayed->memory_bytes(), live->memory_bytes());
  for (int i = 0; i < 40; ++i) {
    const std::string item = "k" + std::to_string(i);
    EXPECT_EQ(Count(*replayed, item, end), Count(*live, item, end)) << item;
  }
}

// Steady traffic keeps memory (and the budget) flat over many windows.
TEST(WindowedCountingBloom, MemoryFlatOverManyWindows) {
  MemoryBudget budget(uint64_t{1} << 30);
  auto f = MakeWindowedCounting(/*window_ms=*/1000, /*generations=*/4, /*capacity=*/4000, &budget);
  int64_t now = kOrigin;
  int id = 0;
  auto period = [&](int items) {
    for (int i = 0; i < items; ++i) Incr(*f, "i" + std::to_string(id++), now);
    now += 250;
  };
  for (int p = 0; p < 5; ++p) period(1000);
  const uint64_t steady = f->memory_bytes();
  const uint64_t reserved = budget.used();
  for (int p = 0; p < 40; ++p) period(1000);
  EXPECT_EQ(f->memory_bytes(), steady);
  EXPECT_EQ(budget.used(), reserved);
}

// Created at any moment, generation 0 starts on a whole period of the
// window clock, so filters of one window share their boundaries (merges need
// them aligned); the window guarantee rests on the boundaries alone.
TEST(WindowedCountingBloom, OriginIsAlignedToAWholePeriod) {
  WindowedCountingBloomOptions o;
  o.window_ms = 4000;
  o.generations = 4;  // period 1000 ms
  o.hash_seed = 7;
  std::unique_ptr<WindowedCountingBloomFilter> f;
  ASSERT_EQ(WindowedCountingBloomFilter::Create(o, kOrigin + 737, FilterLimits{}, nullptr, &f),
            FilterStatus::kOk);
  EXPECT_EQ(f->origin_ms(), kOrigin);
  EXPECT_EQ(f->GenerationAgeMs(kOrigin + 737), 737);
  bool was_new = false;
  uint64_t count = 0, g = 0;
  ASSERT_EQ(f->Add(f->Hash("x"), kOrigin + 737, &was_new, &count, &g), FilterStatus::kOk);
  EXPECT_EQ(f->Count(f->Hash("x"), kOrigin + 737 + 3999), 1u);  // through t + W
}

}  // namespace
}  // namespace bloomgate
