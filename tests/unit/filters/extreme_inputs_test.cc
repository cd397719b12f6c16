// Parameters and clock readings at the edges of what the filters take: each
// must be refused or handled without undefined behaviour (these run under
// UBSan in the clang tree, where an overflow or an out-of-range float to
// integer conversion aborts), and a window never accepts a position that no
// live filter could reach.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "filters/count_min_sketch.h"
#include "filters/scalable_bloom_filter.h"
#include "filters/top_k.h"
#include "filters/window_generations.h"
#include "filters/windowed_bloom_filter.h"

namespace bloomgate {
namespace {

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kNow = 1'800'000'000'000;  // 2027 in Unix ms, as the window clock reads

TEST(CountMinSketchDimensions, AProbabilityThatIsZeroInSinglePrecisionIsRefused) {
  uint64_t width = 0, depth = 0;
  // 1e-50 is 0 as a float: log10f gives -inf and the depth +inf, which no
  // integer holds (CMS.INITBYPROB k 0.01 1e-50 converted it to a uint64_t).
  EXPECT_FALSE(CountMinSketch::DimensionsFor(0.01, 1e-50, &width, &depth));
  EXPECT_FALSE(CountMinSketch::DimensionsFor(0.01, 1e-46, &width, &depth));
  // The smallest positive float still sizes: 149 rows.
  ASSERT_TRUE(CountMinSketch::DimensionsFor(0.01, 1.5e-45, &width, &depth));
  EXPECT_EQ(width, 200u);
  EXPECT_EQ(depth, 149u);
}

// TOPK.RESERVE takes width and depth up to 2^32 - 1 each: their product
// times the 8-byte bucket wrapped (2^31 x 2^30 x 8 = 2^64 -> 0), the shape
// passed the byte cap, and sizing the buckets threw std::length_error out of
// Create (the server aborted).
TEST(TopKShape, BucketsPastTwoToTheSixtyAreRefusedWithoutWrapping) {
  std::unique_ptr<TopK> topk;
  const TopKOptions wraps_to_zero{.k = 1, .width = 1u << 31, .depth = 1u << 30, .decay = 0.9};
  EXPECT_EQ(TopK::Create(wraps_to_zero, FilterLimits{}, nullptr, &topk),
            FilterStatus::kFilterMemoryLimit);
  const TopKOptions widest{.k = 1, .width = UINT32_MAX, .depth = UINT32_MAX, .decay = 0.9};
  EXPECT_EQ(TopK::Create(widest, FilterLimits{}, nullptr, &topk),
            FilterStatus::kFilterMemoryLimit);
  EXPECT_EQ(topk, nullptr);
  // The largest shape the bound lets through is still refused by the byte
  // cap, not by the bound.
  const TopKOptions at_bound{.k = 1, .width = 1u << 30, .depth = 1u << 30, .decay = 0.9};
  EXPECT_GT(TopK::FixedBytesFor(1, 1u << 30, 1u << 30), uint64_t{1} << 63);
  EXPECT_EQ(TopK::Create(at_bound, FilterLimits{}, nullptr, &topk),
            FilterStatus::kFilterMemoryLimit);
}

WindowedBloomOptions WindowOptions() {
  WindowedBloomOptions o;
  o.capacity = 100;
  o.window_ms = 4000;
  o.generations = 4;
  o.hash_seed = 7;
  return o;
}

// A windowed filter as a loader would rebuild it: generation `current` in
// its slot, the other slots unused.
FilterStatus RestoreWindow(int64_t origin_ms, uint64_t current,
                           std::unique_ptr<WindowedBloomFilter>* out) {
  const WindowedBloomOptions o = WindowOptions();
  ScalableBloomOptions g;
  g.capacity = WindowedBloomFilter::GenerationCapacity(o.capacity, o.generations);
  g.error_rate = WindowedBloomFilter::GenerationErrorRate(o.error_rate, o.generations);
  g.expansion = o.expansion;
  g.hash_seed = o.hash_seed;
  std::vector<WindowedBloomFilter::RestoredSlot> slots(o.generations + 1);
  WindowedBloomFilter::RestoredSlot& slot = slots[current % slots.size()];
  slot.generation = current;
  EXPECT_EQ(ScalableBloomFilter::Create(g, FilterLimits{}, nullptr, &slot.filter),
            FilterStatus::kOk);
  return WindowedBloomFilter::Restore(o, origin_ms, current, std::move(slots), FilterLimits{},
                                      nullptr, out);
}

TEST(WindowClockRange, AnOriginOutsideTheClocksRangeIsRefusedOnRestore) {
  std::unique_ptr<WindowedBloomFilter> f;
  // 2^63 ms before kNow: kNow - origin overflowed an int64_t at the first lookup.
  EXPECT_EQ(RestoreWindow(kInt64Min, 0, &f), FilterStatus::kInvalidOptions);
  EXPECT_EQ(RestoreWindow(-kMaxWindowClockMs - 1, 0, &f), FilterStatus::kInvalidOptions);
  EXPECT_EQ(RestoreWindow(kMaxWindowClockMs + 1, 0, &f), FilterStatus::kInvalidOptions);
  EXPECT_EQ(f, nullptr);
  ASSERT_EQ(RestoreWindow(-kMaxWindowClockMs, 0, &f), FilterStatus::kOk);
  // The earliest origin, read at kNow and at the ends of int64_t: no
  // overflow, and generations never past the last one.
  EXPECT_FALSE(f->MayContain(f->Hash("a"), kNow));
  EXPECT_FALSE(f->MayContain(f->Hash("a"), kInt64Max));
  EXPECT_EQ(f->GenerationAt(kInt64Min), 0u);
  EXPECT_EQ(f->GenerationAt(kInt64Max), f->ring().last_generation());
  EXPECT_EQ(f->ring().last_generation(), (uint64_t{1} << 62) / 1000);
}

TEST(WindowClockRange, ACurrentGenerationPastTheClocksEndIsRefusedOnRestore) {
  std::unique_ptr<WindowedBloomFilter> f;
  const uint64_t last = LastWindowGeneration(0, /*period_ms=*/1000);
  EXPECT_EQ(RestoreWindow(0, last + 1, &f), FilterStatus::kInvalidOptions);
  // current + n wrapped past 2^64 in the liveness test.
  EXPECT_EQ(RestoreWindow(0, std::numeric_limits<uint64_t>::max(), &f),
            FilterStatus::kInvalidOptions);
  ASSERT_EQ(RestoreWindow(0, last, &f), FilterStatus::kOk);
  bool seen = false, added = false;
  uint64_t generation = 0;
  ASSERT_EQ(f->Add(f->Hash("a"), kInt64Max, &seen, &generation, &added), FilterStatus::kOk);
  EXPECT_EQ(generation, last);
  EXPECT_TRUE(f->MayContain(f->Hash("a"), kInt64Max));
}

TEST(WindowClockRange, ACreationClockOutsideTheRangeMakesAnOriginInsideIt) {
  for (int64_t now : {kInt64Min, kInt64Max, -kMaxWindowClockMs - 5, kMaxWindowClockMs + 5}) {
    std::unique_ptr<WindowedBloomFilter> f;
    ASSERT_EQ(WindowedBloomFilter::Create(WindowOptions(), now, FilterLimits{}, nullptr, &f),
              FilterStatus::kOk);
    EXPECT_TRUE(IsWindowOrigin(f->origin_ms())) << now << " -> " << f->origin_ms();
    bool seen = false, added = false;
    uint64_t generation = 0;
    ASSERT_EQ(f->Add(f->Hash("a"), now, &seen, &generation, &added), FilterStatus::kOk);
    EXPECT_TRUE(f->MayContain(f->Hash("a"), now)) << now;
  }
}

// A log record names the generation to replay into; one no live filter
// could reach must neither hang the turnover (its loop ran to g <= 2^64 - 1,
// which never ends) nor add anything.
TEST(WindowClockRange, AReplayIntoAGenerationPastTheLastOneAddsNothing) {
  std::unique_ptr<WindowedBloomFilter> f;
  ASSERT_EQ(WindowedBloomFilter::Create(WindowOptions(), kNow, FilterLimits{}, nullptr, &f),
            FilterStatus::kOk);
  const uint64_t last = f->ring().last_generation();
  f->ReplayAdd(f->Hash("a"), std::numeric_limits<uint64_t>::max(), /*seen=*/false,
               /*added_to_generation=*/true);
  EXPECT_EQ(f->current_generation(), last);
  EXPECT_FALSE(f->MayContain(f->Hash("a"), kInt64Max));
  f->ReplayAdd(f->Hash("b"), last, /*seen=*/false, /*added_to_generation=*/true);
  EXPECT_TRUE(f->MayContain(f->Hash("b"), kInt64Max));
}

}  // namespace
}  // namespace bloomgate
