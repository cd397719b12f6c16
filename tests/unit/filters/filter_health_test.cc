// Filter health: the fill a scan finds, the FP rate it implies (checked
// against the FP rate measured with absent items), the bounded sampling of
// big layers, saturated counters, cuckoo load, and a non-scaling filter
// pushed past its capacity by replayed adds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "filters/filter_health.h"
#include "filters/key_hash.h"

namespace bloomgate {
namespace {

std::unique_ptr<ScalableBloomFilter> Bloom(double error_rate, uint64_t capacity,
                                           uint32_t expansion = 2) {
  ScalableBloomOptions options;
  options.error_rate = error_rate;
  options.capacity = capacity;
  options.expansion = expansion;
  std::unique_ptr<ScalableBloomFilter> filter;
  EXPECT_EQ(ScalableBloomFilter::Create(options, FilterLimits{}, nullptr, &filter),
            FilterStatus::kOk);
  return filter;
}

void AddItems(ScalableBloomFilter& filter, uint64_t n, std::string_view prefix = "item:") {
  for (uint64_t i = 0; i < n; ++i) {
    bool added = false;
    ASSERT_EQ(filter.Add(HashKey(std::string(prefix) + std::to_string(i)), &added),
              FilterStatus::kOk);
  }
}

double MeasuredFp(const ScalableBloomFilter& filter, uint64_t probes) {
  uint64_t hits = 0;
  for (uint64_t i = 0; i < probes; ++i) {
    hits += filter.MayContain(HashKey("absent:" + std::to_string(i))) ? 1 : 0;
  }
  return static_cast<double>(hits) / static_cast<double>(probes);
}

TEST(FilterHealth, AnEmptyBloomFilterHasNoBitsSetAndNoFalsePositives) {
  auto filter = Bloom(0.01, 1000);
  FilterHealth health = BloomHealth(*filter);
  ASSERT_EQ(health.layers.size(), 1u);
  EXPECT_EQ(health.layers[0].cells_set, 0u);
  EXPECT_EQ(health.fp_rate_now, 0.0);
  EXPECT_EQ(health.fp_rate_design, 0.01);
  EXPECT_FALSE(health.layers[0].sampled);
}

TEST(FilterHealth, TheImpliedRateOfAFullFilterMatchesTheMeasuredOne) {
  auto filter = Bloom(0.01, 20000);
  AddItems(*filter, 20000);
  FilterHealth health = BloomHealth(*filter);
  ASSERT_EQ(health.layers.size(), 1u);
  const LayerHealth& layer = health.layers[0];
  // About half the bits of a Bloom filter at its design load are set.
  EXPECT_GT(layer.fill_ratio, 0.35) << layer.fill_ratio;
  EXPECT_LT(layer.fill_ratio, 0.65) << layer.fill_ratio;
  const double measured = MeasuredFp(*filter, 200000);
  // Generous: the two agree within 25% (measured here ~0.0097 vs ~0.0098).
  EXPECT_NEAR(health.fp_rate_now, measured, 0.25 * measured)
      << "implied " << health.fp_rate_now << " measured " << measured;
}

TEST(FilterHealth, AnOverfilledNonScalingFilterShowsTheRateItHasNow) {
  auto filter = Bloom(0.01, 1000, /*expansion=*/0);
  AddItems(*filter, 1000);
  // Replay never refuses (an acknowledged add): 3x the capacity goes in.
  for (int i = 0; i < 2000; ++i) filter->ReplayAdd(HashKey("late:" + std::to_string(i)), true);
  FilterHealth health = BloomHealth(*filter);
  EXPECT_TRUE(health.full);
  EXPECT_TRUE(health.over_capacity);
  const double measured = MeasuredFp(*filter, 100000);
  EXPECT_GT(health.fp_rate_now, 5 * health.fp_rate_design) << health.fp_rate_now;
  EXPECT_NEAR(health.fp_rate_now, measured, 0.25 * measured)
      << "implied " << health.fp_rate_now << " measured " << measured;
}

TEST(FilterHealth, AScalingFilterSumsItsLayersRates) {
  auto filter = Bloom(0.01, 1000, /*expansion=*/2);
  AddItems(*filter, 3000);  // two layers, the second half full
  FilterHealth health = BloomHealth(*filter);
  ASSERT_EQ(health.layers.size(), 2u);
  EXPECT_FALSE(health.over_capacity);
  EXPECT_FALSE(health.full);
  double none = (1 - health.layers[0].fp_rate_now) * (1 - health.layers[1].fp_rate_now);
  EXPECT_NEAR(health.fp_rate_now, 1 - none, 1e-15);
}

TEST(FilterHealth, ATinyLayerRateSurvivesTheSumOverLayers) {
  // 1e-6 wants k = 20 probes; one item sets 20 of 512 bits in one block, so
  // the layer's rate is (20/512)^20 / blocks ~ 1e-29, far below the 1.1e-16
  // at which 1 - (1 - x) rounds to 0.
  auto filter = Bloom(1e-6, 100);
  AddItems(*filter, 1);
  FilterHealth health = BloomHealth(*filter);
  ASSERT_EQ(health.layers.size(), 1u);
  const double layer = health.layers[0].fp_rate_now;
  ASSERT_GT(layer, 0.0);
  ASSERT_LT(layer, 1e-20);
  EXPECT_NEAR(health.fp_rate_now / layer, 1.0, 1e-12)
      << "filter " << health.fp_rate_now << " against its one layer's " << layer;
}

TEST(FilterHealth, AWindowThatLapsedWithoutAddsShowsNoGeneration) {
  // 1 s in 2 generations of 500 ms; one add at the origin, then a lookup 10
  // windows later: no generation is live (BF.CARD says 0), and no add has
  // turned the window over since.
  WindowedBloomOptions o;
  o.window_ms = 1000;
  o.generations = 2;
  std::unique_ptr<WindowedBloomFilter> f;
  ASSERT_EQ(WindowedBloomFilter::Create(o, /*now_ms=*/0, FilterLimits{}, nullptr, &f),
            FilterStatus::kOk);
  bool seen = false, added = false;
  uint64_t generation = 0;
  ASSERT_EQ(f->Add(HashKey("x"), /*now_ms=*/0, &seen, &generation, &added), FilterStatus::kOk);
  const FilterHealth fresh = WindowedBloomHealth(*f, /*now_ms=*/0);
  EXPECT_EQ(fresh.items, 1u);
  EXPECT_EQ(fresh.layers.size(), 1u);
  const int64_t later = 10 * 1000;
  ASSERT_EQ(f->ItemsAt(later), 0u);
  ASSERT_FALSE(f->MayContain(HashKey("x"), later));
  const FilterHealth lapsed = WindowedBloomHealth(*f, later);
  EXPECT_EQ(lapsed.items, 0u);
  EXPECT_EQ(lapsed.capacity, 0u);
  EXPECT_TRUE(lapsed.layers.empty());
  EXPECT_EQ(lapsed.fp_rate_now, 0.0);
}

TEST(FilterHealth, AWindowedCountingFilterLapsesLikeItsLookups) {
  WindowedCountingBloomOptions o;
  o.window_ms = 1000;
  o.generations = 2;
  std::unique_ptr<WindowedCountingBloomFilter> f;
  ASSERT_EQ(WindowedCountingBloomFilter::Create(o, /*now_ms=*/0, FilterLimits{}, nullptr, &f),
            FilterStatus::kOk);
  bool was_new = false;
  uint64_t count = 0, generation = 0;
  ASSERT_EQ(f->Add(HashKey("x"), /*now_ms=*/0, &was_new, &count, &generation),
            FilterStatus::kOk);
  EXPECT_EQ(WindowedCountingBloomHealth(*f, /*now_ms=*/0).items, 1u);
  const int64_t later = 10 * 1000;
  ASSERT_FALSE(f->MayContain(HashKey("x"), later));
  const FilterHealth lapsed = WindowedCountingBloomHealth(*f, later);
  EXPECT_EQ(lapsed.items, 0u);
  EXPECT_TRUE(lapsed.layers.empty());
}

TEST(FilterHealth, ALayerOverTheScanBudgetIsSampledAndEstimatedClosely) {
  auto filter = Bloom(0.01, 200000);  // ~240 KB of bits
  AddItems(*filter, 100000);
  FilterHealth exact = BloomHealth(*filter);
  FilterHealth sampled = BloomHealth(*filter, /*max_scan_bytes=*/16 << 10);
  ASSERT_FALSE(exact.layers[0].sampled);
  ASSERT_TRUE(sampled.layers[0].sampled);
  EXPECT_LE(sampled.bytes_scanned, 16u << 10);
  EXPECT_LT(sampled.bytes_scanned, exact.bytes_scanned / 8);
  EXPECT_NEAR(static_cast<double>(sampled.layers[0].cells_set),
              static_cast<double>(exact.layers[0].cells_set),
              0.05 * static_cast<double>(exact.layers[0].cells_set));
  EXPECT_NEAR(sampled.fp_rate_now, exact.fp_rate_now, 0.2 * exact.fp_rate_now);
}

TEST(FilterHealth, AZeroBudgetReadsNoBitsAndKeepsTheTotals) {
  auto filter = Bloom(0.01, 100, /*expansion=*/0);
  // Until full: an item that is a false positive is not counted.
  for (int i = 0; filter->items() < 100; ++i) {
    bool added = false;
    ASSERT_EQ(filter->Add(HashKey("item:" + std::to_string(i)), &added), FilterStatus::kOk);
  }
  FilterHealth health = BloomHealth(*filter, /*max_scan_bytes=*/0);
  EXPECT_TRUE(health.layers.empty());
  EXPECT_EQ(health.bytes_scanned, 0u);
  EXPECT_EQ(health.items, 100u);
  EXPECT_TRUE(health.full);
}

TEST(FilterHealth, CountingFiltersReportNonZeroAndSaturatedCounters) {
  CountingBloomOptions options;
  options.capacity = 1000;
  std::unique_ptr<CountingBloomFilter> filter;
  ASSERT_EQ(CountingBloomFilter::Create(options, FilterLimits{}, nullptr, &filter),
            FilterStatus::kOk);
  bool was_new = false;
  // 4-bit counters top out at 15: the 16th add of one item saturates them.
  for (int i = 0; i < 16; ++i) ASSERT_EQ(filter->Add(HashKey("hot"), &was_new), FilterStatus::kOk);
  FilterHealth health = CountingBloomHealth(*filter);
  ASSERT_EQ(health.layers.size(), 1u);
  const uint32_t probes = health.layers[0].cells > 0 ? 1 : 0;
  EXPECT_GE(health.layers[0].cells_set, probes);
  EXPECT_LE(health.layers[0].cells_set, 32u);  // at most the item's probes
  EXPECT_EQ(health.saturated, health.layers[0].cells_set);
  EXPECT_GT(health.saturated, 0u);
}

TEST(FilterHealth, CuckooLoadIsOccupiedSlotsOverSlots) {
  CuckooFilterOptions options;
  options.capacity = 1024;
  options.bucket_size = 2;
  std::unique_ptr<CuckooFilter> filter;
  ASSERT_EQ(CuckooFilter::Create(options, FilterLimits{}, nullptr, &filter), FilterStatus::kOk);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(filter->Add(HashKey(std::to_string(i))), FilterStatus::kOk);
  FilterHealth health = CuckooHealth(*filter);
  ASSERT_EQ(health.layers.size(), 1u);
  EXPECT_EQ(health.layers[0].cells, 1024u);
  EXPECT_DOUBLE_EQ(health.layers[0].fill_ratio, 0.25);
  EXPECT_DOUBLE_EQ(health.fp_rate_design, 4.0 / 255.0);
  EXPECT_NEAR(health.fp_rate_now, 0.25 * 4.0 / 255.0, 1e-12);
  FilterHealth totals = CuckooHealth(*filter, /*per_sub_filter=*/false);
  EXPECT_TRUE(totals.layers.empty());
  EXPECT_EQ(totals.capacity, 1024u);
  EXPECT_EQ(totals.items, 256u);
  EXPECT_NEAR(totals.fp_rate_now, health.fp_rate_now, 1e-12);  // one sub-filter: exact
}

}  // namespace
}  // namespace bloomgate

namespace bloomgate {
namespace {

// A t-digest's health: its slots, and a rank-error bound every quantile
// answer keeps (values 0..n-1 in a shuffled order: a value's rank is itself).
TEST(TDigestHealth, EveryQuantileAnswerIsWithinTheWidestCentroidsBound) {
  for (int64_t compression : {100, 500}) {
    std::unique_ptr<TDigest> digest;
    ASSERT_EQ(TDigest::Create(compression, FilterLimits{}, nullptr, &digest), FilterStatus::kOk);
    const int64_t n = 200'000;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(digest->Add(static_cast<double>((i * 7919) % n)), TDigest::AddStatus::kOk);
    }
    digest->Compress();
    const FilterHealth health = TDigestHealth(*digest, kDefaultHealthScanBytes);
    EXPECT_EQ(health.capacity, static_cast<uint64_t>(6 * compression + 10));
    EXPECT_EQ(health.items, digest->nodes());
    EXPECT_FALSE(health.full);
    ASSERT_EQ(health.layers.size(), 1u);
    EXPECT_EQ(health.layers[0].cells_set, digest->merged_nodes());
    EXPECT_GT(health.fp_rate_now, 0);
    EXPECT_LE(health.fp_rate_now, health.fp_rate_design) << compression;
    double worst = 0;
    for (int i = 1; i < 1000; ++i) {
      const double q = i / 1000.0;
      worst = std::max(worst, std::abs(digest->Quantile(q) / static_cast<double>(n) - q));
    }
    EXPECT_LE(worst, health.fp_rate_now)
        << "compression " << compression << ": worst rank error " << worst << ", bound "
        << health.fp_rate_now << ", design " << health.fp_rate_design;
  }
}

TEST(TDigestHealth, TheTotalsCallReadsNothing) {
  std::unique_ptr<TDigest> digest;
  ASSERT_EQ(TDigest::Create(100, FilterLimits{}, nullptr, &digest), FilterStatus::kOk);
  ASSERT_EQ(digest->Add(1.0), TDigest::AddStatus::kOk);
  const FilterHealth health = TDigestHealth(*digest, /*max_scan_bytes=*/0);
  EXPECT_EQ(health.capacity, 0u);
  EXPECT_EQ(health.items, 0u);
  EXPECT_TRUE(health.layers.empty());
}

}  // namespace
}  // namespace bloomgate
