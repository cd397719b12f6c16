// TDigest: accuracy against the exact quantiles of 1M-sample streams
// (uniform and lognormal, fixed seeds), merges, the edge cases RedisBloom
// answers with nan, its capacity and compress rule, and Restore's checks.
#include "filters/t_digest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace bloomgate {
namespace {

std::unique_ptr<TDigest> MakeDigest(int64_t compression) {
  std::unique_ptr<TDigest> d;
  EXPECT_EQ(TDigest::Create(compression, FilterLimits{}, nullptr, &d), FilterStatus::kOk);
  return d;
}

// Streams from mt19937_64 (its output is fixed by the standard) with the
// transforms written out, so every platform sees the same samples.
double Uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1p-53; }

std::vector<double> UniformStream(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> out(n);
  for (double& v : out) v = 1000 * Uniform01(rng);
  return out;
}

// exp(N(3, 1)) by Box-Muller: a heavy right tail, as latencies have.
std::vector<double> LognormalStream(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> out(n);
  for (double& v : out) {
    const double u1 = 1 - Uniform01(rng);  // (0, 1]
    const double u2 = Uniform01(rng);
    v = std::exp(3 + std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2));
  }
  return out;
}

// |rank(estimate) / n - q|: how far, in fractions of the stream, the
// estimate of the q quantile lies from it (the error t-digest bounds).
double RankError(const std::vector<double>& sorted, double estimate, double q) {
  const auto below = std::lower_bound(sorted.begin(), sorted.end(), estimate) - sorted.begin();
  const auto upto = std::upper_bound(sorted.begin(), sorted.end(), estimate) - sorted.begin();
  const double n = static_cast<double>(sorted.size());
  // Any rank the estimate's ties span counts as exact.
  if (below / n <= q && q <= upto / n) return 0;
  return std::min(std::fabs(below / n - q), std::fabs(upto / n - q));
}

struct AccuracyCase {
  const char* stream;
  int64_t compression;
};

// The k_1 scale keeps a centroid's weight under about
// 2 pi q (1 - q) n ln(n) / compression, so an interpolated quantile is off by
// at most about half a centroid: the bound checked is
// |error| <= pi q (1 - q) ln(n) / compression + 1 / n, which at n = 1M is
// 0.217 / compression at p50, 0.078 / compression at p90, 8.6e-3 /
// compression at p99 and 8.7e-4 / compression at p99.9 (plus 1e-6).
// Measured (filters_test prints them; uniform / lognormal): compression 100:
// p50 3.5e-3 / 1.1e-2, p90 1.8e-3 / 9.1e-4, p99 2.4e-4 / 8.7e-5, p99.9
// 2.6e-5 / 4e-6; compression 500: p50 4.3e-5 / 7.1e-4, p90 1.3e-4 / 1.2e-4,
// p99 5e-6 / 1e-5, p99.9 2e-6 / 3e-6. Every one is under a tenth of its bound.
class TDigestAccuracy : public ::testing::TestWithParam<AccuracyCase> {};

TEST_P(TDigestAccuracy, QuantilesStayWithinTheScaleFunctionsBoundOnAMillionSamples) {
  const AccuracyCase c = GetParam();
  constexpr size_t kN = 1'000'000;
  std::vector<double> stream = std::string(c.stream) == "uniform" ? UniformStream(kN, 1234)
                                                                  : LognormalStream(kN, 5678);
  auto digest = MakeDigest(c.compression);
  for (double v : stream) ASSERT_EQ(digest->Add(v), TDigest::AddStatus::kOk);
  EXPECT_LE(digest->nodes(), static_cast<uint32_t>(digest->capacity()));
  std::sort(stream.begin(), stream.end());
  EXPECT_EQ(digest->Quantile(0), stream.front());
  EXPECT_EQ(digest->Quantile(1), stream.back());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const double error = RankError(stream, digest->Quantile(q), q);
    const double bound = M_PI * q * (1 - q) * std::log(double{kN}) /
                             static_cast<double>(c.compression) +
                         1.0 / kN;
    std::printf("[ measured ] %s compression %lld p%g: rank error %.3g (bound %.3g), %u centroids\n",
                c.stream, static_cast<long long>(c.compression), q * 100, error, bound,
                digest->merged_nodes());
    EXPECT_LE(error, bound) << c.stream << " q " << q;
    // CDF is the inverse: the CDF of the true quantile is near q.
    const double exact = stream[static_cast<size_t>(q * kN)];
    EXPECT_NEAR(digest->Cdf(exact), q, bound) << c.stream << " q " << q;
  }
}

INSTANTIATE_TEST_SUITE_P(Streams, TDigestAccuracy,
                         ::testing::Values(AccuracyCase{"uniform", 100},
                                           AccuracyCase{"uniform", 500},
                                           AccuracyCase{"lognormal", 100},
                                           AccuracyCase{"lognormal", 500}),
                         [](const auto& info) {
                           return std::string(info.param.stream) + "_" +
                                  std::to_string(info.param.compression);
                         });

TEST(TDigest, CapacityIsRedisBloomsAndBoundsTheSlotsWhateverTheAdds) {
  auto d = MakeDigest(100);
  EXPECT_EQ(d->capacity(), 610);
  EXPECT_EQ(d->redisbloom_memory_usage(), 9768);  // RedisBloom's TDIGEST.INFO figure
  const uint64_t bytes = d->memory_bytes();
  for (int i = 0; i < 100'000; ++i) {
    d->Add(i % 977);
    ASSERT_LT(d->nodes(), 610u);
  }
  EXPECT_EQ(d->memory_bytes(), bytes);
  // 609 slots in use compress on the next add: 100,000 adds took ~165.
  EXPECT_GT(d->total_compressions(), 100);
}

TEST(TDigest, CompressionOutsideOneToTheLibrarysLimitIsRefused) {
  std::unique_ptr<TDigest> d;
  EXPECT_EQ(TDigest::Create(0, FilterLimits{}, nullptr, &d), FilterStatus::kInvalidOptions);
  EXPECT_EQ(TDigest::Create(TDigest::kMaxCompression + 1, FilterLimits{}, nullptr, &d),
            FilterStatus::kInvalidOptions);
  // The per-filter cap refuses what the library's limit allows.
  EXPECT_EQ(TDigest::Create(TDigest::kMaxCompression, FilterLimits{.max_filter_bytes = 1 << 20},
                            nullptr, &d),
            FilterStatus::kFilterMemoryLimit);
  EXPECT_EQ(d, nullptr);
}

TEST(TDigest, EmptyDigestAnswersNan) {
  auto d = MakeDigest(100);
  EXPECT_TRUE(std::isnan(d->Quantile(0.5)));
  EXPECT_TRUE(std::isnan(d->Cdf(1)));
  EXPECT_TRUE(std::isnan(d->TrimmedMean(0.1, 0.9)));
  double out[2];
  const double qs[2] = {0.1, 0.9};
  d->Quantiles(qs, out);
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]));
  EXPECT_EQ(d->total_compressions(), 0);  // nothing to compress
}

TEST(TDigest, OneValueIsEveryQuantile) {
  auto d = MakeDigest(100);
  ASSERT_EQ(d->Add(42.5), TDigest::AddStatus::kOk);
  for (double q : {0.0, 0.3, 1.0}) EXPECT_EQ(d->Quantile(q), 42.5);
  EXPECT_EQ(d->Cdf(42.5), 0.5);
  EXPECT_EQ(d->Cdf(42), 0);
  EXPECT_EQ(d->Cdf(43), 1);
  EXPECT_EQ(d->TrimmedMean(0.1, 0.9), 42.5);
  EXPECT_EQ(d->min(), 42.5);
  EXPECT_EQ(d->max(), 42.5);
}

TEST(TDigest, NanAndInfiniteValuesAreRefusedAndChangeNothing) {
  auto d = MakeDigest(100);
  ASSERT_EQ(d->Add(1), TDigest::AddStatus::kOk);
  EXPECT_EQ(d->Add(std::nan("")), TDigest::AddStatus::kNotFinite);
  EXPECT_EQ(d->Add(INFINITY), TDigest::AddStatus::kNotFinite);
  EXPECT_EQ(d->Add(-INFINITY), TDigest::AddStatus::kNotFinite);
  EXPECT_EQ(d->total_weight(), 1);
  EXPECT_EQ(d->max(), 1);
}

TEST(TDigest, ResetEmptiesButKeepsTheCompression) {
  auto d = MakeDigest(50);
  for (int i = 0; i < 1000; ++i) d->Add(i);
  d->Reset();
  EXPECT_EQ(d->total_weight(), 0);
  EXPECT_EQ(d->nodes(), 0u);
  EXPECT_EQ(d->total_compressions(), 0);
  EXPECT_EQ(d->compression(), 50);
  EXPECT_EQ(d->min(), DBL_MAX);
  EXPECT_EQ(d->max(), -DBL_MAX);
}

TEST(TDigest, MergedDigestsAnswerAsOneFedEverything) {
  const std::vector<double> stream = LognormalStream(200'000, 99);
  auto a = MakeDigest(100);
  auto b = MakeDigest(100);
  for (size_t i = 0; i < stream.size(); ++i) (i % 3 == 0 ? *a : *b).Add(stream[i]);
  auto merged = MakeDigest(100);
  ASSERT_EQ(merged->MergeFrom(*a), TDigest::AddStatus::kOk);
  ASSERT_EQ(merged->MergeFrom(*b), TDigest::AddStatus::kOk);
  EXPECT_EQ(merged->total_weight(), 200'000);
  std::vector<double> sorted = stream;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(merged->min(), sorted.front());
  EXPECT_EQ(merged->max(), sorted.back());
  for (double q : {0.5, 0.9, 0.99}) {
    EXPECT_LE(RankError(sorted, merged->Quantile(q), q), 2 * M_PI * q * (1 - q) * 12.3 / 100)
        << q;
  }
  // The sources were compressed by the merge, as RedisBloom's td_merge does.
  EXPECT_EQ(a->unmerged_nodes(), 0u);
  EXPECT_EQ(b->unmerged_nodes(), 0u);
}

TEST(TDigest, MergeRefusesAWeightPastTwoToTheSixtyThree) {
  auto big = MakeDigest(10);
  // Self-merges double the weight: 62 of them from 2 samples reach 2^63.
  big->Add(1);
  big->Add(2);
  int merges = 0;
  while (true) {
    auto next = MakeDigest(10);
    TDigest* both[] = {big.get(), big.get()};
    if (!next->CanAbsorb(both)) break;
    ASSERT_EQ(next->MergeFrom(*big), TDigest::AddStatus::kOk);
    ASSERT_EQ(next->MergeFrom(*big), TDigest::AddStatus::kOk);
    big = std::move(next);
    ++merges;
  }
  EXPECT_EQ(merges, 61);
  EXPECT_EQ(big->total_weight(), int64_t{1} << 62);
  auto target = MakeDigest(10);
  ASSERT_EQ(target->MergeFrom(*big), TDigest::AddStatus::kOk);
  EXPECT_EQ(target->MergeFrom(*big), TDigest::AddStatus::kOverflow);
  EXPECT_EQ(target->total_weight(), int64_t{1} << 62);  // unchanged by the refusal
}

TEST(TDigest, TheSameAddsGiveTheSameCentroidsEveryTime) {
  const std::vector<double> stream = UniformStream(50'000, 7);
  auto a = MakeDigest(100);
  auto b = MakeDigest(100);
  for (double v : stream) {
    a->Add(v);
    b->Add(v);
  }
  a->Compress();
  b->Compress();
  ASSERT_EQ(a->merged_nodes(), b->merged_nodes());
  for (uint32_t i = 0; i < a->merged_nodes(); ++i) {
    EXPECT_EQ(a->mean_at(i), b->mean_at(i));
    EXPECT_EQ(a->weight_at(i), b->weight_at(i));
  }
}

TEST(TDigest, RestoreRefusesEveryOutOfRangeField) {
  auto d = MakeDigest(10);  // capacity 70
  const std::vector<double> means = {1, 2, 3};
  const std::vector<int64_t> weights = {2, 1, 1};
  const TDigest::State good{.min = 0.5, .max = 3, .merged_nodes = 2, .unmerged_nodes = 1,
                            .merged_weight = 3, .unmerged_weight = 1, .total_compressions = 4,
                            .means = means, .weights = weights};
  ASSERT_TRUE(d->Restore(good));
  EXPECT_EQ(d->total_weight(), 4);
  auto refused = [&](auto change) {
    TDigest::State s = good;
    std::vector<double> m = means;
    std::vector<int64_t> w = weights;
    change(s, m, w);
    s.means = m;
    s.weights = w;
    auto fresh = MakeDigest(10);
    return !fresh->Restore(s) && fresh->total_weight() == 0;
  };
  using M = std::vector<double>;
  using W = std::vector<int64_t>;
  EXPECT_TRUE(refused([](TDigest::State& s, M&, W&) { s.merged_weight = 4; }));
  EXPECT_TRUE(refused([](TDigest::State& s, M&, W&) { s.unmerged_weight = 2; }));
  EXPECT_TRUE(refused([](TDigest::State&, M&, W& w) { w[2] = 0; }));
  EXPECT_TRUE(refused([](TDigest::State&, M&, W& w) { w[0] = -1; }));
  EXPECT_TRUE(refused([](TDigest::State&, M& m, W&) { m[1] = NAN; }));
  EXPECT_TRUE(refused([](TDigest::State&, M& m, W&) { m[1] = INFINITY; }));
  EXPECT_TRUE(refused([](TDigest::State& s, M&, W&) { s.min = 4; }));
  EXPECT_TRUE(refused([](TDigest::State& s, M&, W&) { s.max = NAN; }));
  EXPECT_TRUE(refused([](TDigest::State& s, M&, W&) { s.total_compressions = -1; }));
  EXPECT_TRUE(refused([](TDigest::State& s, M&, W&) { s.unmerged_nodes = 2; }));
  EXPECT_TRUE(refused([](TDigest::State& s, M& m, W& w) {
    s.unmerged_nodes = 69;  // 2 + 69 slots > capacity 70
    s.unmerged_weight = 69;
    m.resize(71, 1.0);
    w.resize(71, 1);
  }));
  // The empty digest holds the reset sentinels only.
  EXPECT_TRUE(refused([](TDigest::State& s, M& m, W& w) {
    s = TDigest::State{.min = 0, .max = 0};
    m.clear();
    w.clear();
  }));
  auto empty = MakeDigest(10);
  EXPECT_TRUE(empty->Restore(TDigest::State{.min = DBL_MAX, .max = -DBL_MAX}));
}

}  // namespace
}  // namespace bloomgate
