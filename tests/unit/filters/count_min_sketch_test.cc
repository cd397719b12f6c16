// CountMinSketch: RedisBloom's dimensions and saturation, the textbook error
// bounds on a skewed stream, merge with weights, and increments from many
// threads that all land.
#include "filters/count_min_sketch.h"

#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "tests/unit/filters/filter_test_support.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;

std::unique_ptr<CountMinSketch> MakeSketch(uint64_t width, uint64_t depth) {
  std::unique_ptr<CountMinSketch> s;
  EXPECT_EQ(CountMinSketch::Create(width, depth, FilterLimits{}, nullptr, &s), FilterStatus::kOk);
  return s;
}

// Item i of a Zipf(1.1) stream over n items: the inverse CDF by binary search
// on uniform draws from a fixed-seed mt19937_64 (whose output the standard
// fixes), so every run sees the same stream.
class ZipfStream {
 public:
  ZipfStream(uint64_t n, double s, uint64_t seed) : rng_(seed) {
    cdf_.reserve(n);
    double sum = 0;
    for (uint64_t i = 1; i <= n; ++i) cdf_.push_back(sum += 1 / std::pow(double(i), s));
    for (double& c : cdf_) c /= sum;
  }
  uint64_t Next() {
    const double u = double(rng_() >> 11) * 0x1.0p-53;
    return static_cast<uint64_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
  }

 private:
  std::mt19937_64 rng_;
  std::vector<double> cdf_;
};

TEST(CountMinSketch, InitByProbDimensionsAreRedisBloomsCeilTwoOverErrorAndLogHalfDelta) {
  uint64_t width = 0, depth = 0;
  ASSERT_TRUE(CountMinSketch::DimensionsFor(0.001, 0.01, &width, &depth));
  EXPECT_EQ(width, 2000u);  // RedisBloom's own test: cms.initbyprob 0.001 0.01 -> 2000 x 7
  EXPECT_EQ(depth, 7u);
  ASSERT_TRUE(CountMinSketch::DimensionsFor(0.1, 0.1, &width, &depth));
  EXPECT_EQ(width, 20u);
  EXPECT_EQ(depth, 4u);  // log(0.1) / log(0.5) = 3.32
  // RedisBloom's test_validation refuses both of these.
  EXPECT_FALSE(CountMinSketch::DimensionsFor(1e-19, 0.9, &width, &depth));
  EXPECT_FALSE(CountMinSketch::DimensionsFor(0.9, 0.9999999999999999, &width, &depth));
}

// With width w and depth d, Cormode-Muthukrishnan: an estimate exceeds the
// true count by more than (e / w) N with probability <= e^-d; and the Markov
// bound INITBYPROB sizes for: by more than (2 / w) N with probability <= 2^-d.
// Measured over 20,000 distinct items of a 400,000-increment Zipf(1.1) stream
// in a 272 x 4 sketch: 1 item in 20,000 (0.005%) exceeds the e/w bound
// (<= 1.83% allowed), 2 (0.01%) exceed 2/w (<= 6.25% allowed).
TEST(CountMinSketch, OverestimatesStayWithinTheErrorBoundsOnAZipfStream) {
  constexpr uint64_t kWidth = 272, kDepth = 4, kDistinct = 20000, kDraws = 400000;
  auto sketch = MakeSketch(kWidth, kDepth);
  ZipfStream stream(kDistinct, 1.1, /*seed=*/7);
  std::vector<uint64_t> truth(kDistinct, 0);
  for (uint64_t i = 0; i < kDraws; ++i) {
    const uint64_t item = stream.Next();
    ++truth[item];
    sketch->IncrBy(ItemHash("zipf", item), 1);
  }
  EXPECT_EQ(sketch->total(), kDraws);
  uint64_t over_e = 0, over_2 = 0;
  const double n = double(kDraws);
  for (uint64_t item = 0; item < kDistinct; ++item) {
    const uint64_t estimate = sketch->Query(ItemHash("zipf", item));
    ASSERT_GE(estimate, truth[item]) << "a count-min sketch never underestimates";
    const double over = double(estimate - truth[item]);
    over_e += over > std::exp(1.0) / kWidth * n;
    over_2 += over > 2.0 / kWidth * n;
  }
  const double rate_e = double(over_e) / kDistinct, rate_2 = double(over_2) / kDistinct;
  EXPECT_LE(rate_e, std::exp(-double(kDepth))) << "measured " << rate_e;
  EXPECT_LE(rate_2, std::pow(0.5, double(kDepth))) << "measured " << rate_2;
}

// RedisBloom's test_overflow, on 5 x 2: 2^31 - 1 three times saturates the
// cells at 2^32 - 1 (no wrap), the other items keep their counts.
TEST(CountMinSketch, CellsSaturateAtUint32MaxInsteadOfWrapping) {
  auto sketch = MakeSketch(5, 2);
  const uint64_t large = (uint64_t{1} << 31) - 1;
  EXPECT_EQ(sketch->IncrBy(HashKey("a"), large), large);
  EXPECT_EQ(sketch->IncrBy(HashKey("a"), large), 2 * large);
  EXPECT_EQ(sketch->IncrBy(HashKey("a"), large), CountMinSketch::kMaxCell);
  EXPECT_EQ(sketch->Query(HashKey("a")), CountMinSketch::kMaxCell);
  EXPECT_EQ(sketch->IncrBy(HashKey("a"), 0), CountMinSketch::kMaxCell);
  // The total saturates at 2^63 - 1 the same way.
  sketch->IncrBy(HashKey("b"), CountMinSketch::kMaxTotal);
  EXPECT_EQ(sketch->total(), CountMinSketch::kMaxTotal);
}

TEST(CountMinSketch, MergeAddsWeightedSketchesAndRefusesOverflowWithoutChangingAnything) {
  auto a = MakeSketch(100, 5), b = MakeSketch(100, 5), dest = MakeSketch(100, 5),
       other = MakeSketch(50, 5);
  for (int i = 0; i < 100; ++i) {
    a->IncrBy(ItemHash("a", i), 1);
    b->IncrBy(ItemHash("b", i), 2);
  }
  const CountMinSketch* both[] = {a.get(), b.get()};
  const int64_t weights[] = {3, 1};
  ASSERT_EQ(dest->Merge(both, weights), CountMinSketch::MergeStatus::kOk);
  EXPECT_EQ(dest->total(), 3 * 100 + 200u);
  EXPECT_GE(dest->Query(ItemHash("a", 5)), 3u);
  // Taking b back out: RedisBloom's "delete a sketch with weight -1".
  const CountMinSketch* minus_b[] = {dest.get(), b.get()};
  const int64_t subtract[] = {1, -1};
  ASSERT_EQ(dest->Merge(minus_b, subtract), CountMinSketch::MergeStatus::kOk);
  EXPECT_EQ(dest->total(), 300u);
  EXPECT_EQ(dest->Query(ItemHash("b", 5)), 0u);
  // Again would go negative: refused, dest untouched.
  EXPECT_EQ(dest->Merge(minus_b, subtract), CountMinSketch::MergeStatus::kOverflow);
  EXPECT_EQ(dest->total(), 300u);
  for (uint64_t c = 0; c < dest->cells(); ++c) ASSERT_EQ(dest->cell(c), 3 * a->cell(c));
  const CountMinSketch* mismatched[] = {other.get()};
  const int64_t one[] = {1};
  EXPECT_EQ(dest->Merge(mismatched, one), CountMinSketch::MergeStatus::kShapeMismatch);
}

// Eight threads released together add the same items (both lanes of shared
// words), each its own increments; every cell ends where a serial run puts it.
TEST(CountMinSketch, ConcurrentIncrementsAllLandAsInASerialRun) {
  constexpr int kThreads = 8;
  const uint64_t kItems = test_support::Scaled(200000);
  // 4 x 2 = 8 cells in 4 words: every thread hammers the same few words, so
  // a lost update shows (a plain load-then-store kept 980,313 of 1,800,036 in one cell).
  auto shared = MakeSketch(4, 2), serial = MakeSketch(4, 2);
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (uint64_t i = 0; i < kItems; ++i) shared->IncrBy(ItemHash("c", i), t + 1);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    for (uint64_t i = 0; i < kItems; ++i) serial->IncrBy(ItemHash("c", i), t + 1);
  }
  EXPECT_EQ(shared->total(), serial->total());
  for (uint64_t c = 0; c < shared->cells(); ++c) ASSERT_EQ(shared->cell(c), serial->cell(c)) << c;
}

TEST(CountMinSketch, CreateChecksShapeCapAndBudgetBeforeAllocating) {
  std::unique_ptr<CountMinSketch> s;
  EXPECT_EQ(CountMinSketch::Create(0, 5, FilterLimits{}, nullptr, &s),
            FilterStatus::kInvalidOptions);
  EXPECT_EQ(CountMinSketch::Create(uint64_t{1} << 40, uint64_t{1} << 40, FilterLimits{}, nullptr, &s),
            FilterStatus::kInvalidOptions);
  EXPECT_EQ(CountMinSketch::Create(1 << 20, 1000, FilterLimits{1 << 20}, nullptr, &s),
            FilterStatus::kFilterMemoryLimit);
  MemoryBudget budget(4096);
  EXPECT_EQ(CountMinSketch::Create(1000, 10, FilterLimits{}, &budget, &s),
            FilterStatus::kOutOfMemory);
  EXPECT_EQ(budget.used(), 0u);
  ASSERT_EQ(CountMinSketch::Create(100, 5, FilterLimits{}, &budget, &s), FilterStatus::kOk);
  EXPECT_EQ(budget.used(), s->memory_bytes());
  s.reset();
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace bloomgate
