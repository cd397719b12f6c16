// CountingBloomFilter (CBF.*): adds, removes and counts; the layer rule;
// growth; no false negatives under interleaved adds and removes; measured FP
// rates with bits/item and saturation; limits.

#include "filters/counting_bloom_filter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "filter_test_support.h"
#include "filters/blocked_counting_bloom.h"
#include "filters/bloom_math.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;
using test_support::MeasureFalsePositives;
using test_support::Percent;
using test_support::Scaled;

std::unique_ptr<CountingBloomFilter> MakeFilter(const CountingBloomOptions& options,
                                                MemoryBudget* budget = nullptr,
                                                const FilterLimits& limits = FilterLimits{}) {
  std::unique_ptr<CountingBloomFilter> filter;
  const FilterStatus status = CountingBloomFilter::Create(options, limits, budget, &filter);
  EXPECT_EQ(status, FilterStatus::kOk) << ToString(status);
  return filter;
}

CountingBloomOptions CountingOptions(double error_rate, uint64_t capacity, uint32_t expansion,
                                     uint32_t counter_bits) {
  CountingBloomOptions options;
  options.error_rate = error_rate;
  options.capacity = capacity;
  options.expansion = expansion;
  options.counter_bits = counter_bits;
  return options;
}

// Every word of every layer, for "nothing changed" checks.
std::vector<uint64_t> Snapshot(const CountingBloomFilter& filter) {
  std::vector<uint64_t> words;
  for (uint32_t i = 0; i < filter.num_layers(); ++i) {
    const BlockedCountingBloom& layer = filter.layer(i);
    for (uint64_t w = 0; w < layer.num_words(); ++w) {
      words.push_back(layer.words()[w].load(std::memory_order_relaxed));
    }
  }
  return words;
}

class CountingBloomWidth : public ::testing::TestWithParam<uint32_t> {};

INSTANTIATE_TEST_SUITE_P(CounterBits, CountingBloomWidth, ::testing::Values(4u, 8u),
                         [](const auto& info) { return std::to_string(info.param) + "Bits"; });

TEST(CountingBloomFilter, DefaultsMatchTheBloomFamily) {
  const auto filter = MakeFilter(CountingBloomOptions{});
  ASSERT_NE(filter, nullptr);
  EXPECT_EQ(filter->capacity(), 100u);
  EXPECT_EQ(filter->items(), 0u);
  EXPECT_EQ(filter->num_layers(), 1u);
  EXPECT_EQ(filter->expansion(), 2u);
  EXPECT_TRUE(filter->scaling());
  EXPECT_DOUBLE_EQ(filter->error_rate(), 0.01);
  EXPECT_EQ(filter->counter_bits(), 4u);
  EXPECT_EQ(filter->max_count(), 15u);
  EXPECT_EQ(filter->saturated_counters(), 0u);
  const auto layers = filter->Layers();
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_DOUBLE_EQ(layers[0].error_rate, 0.005);  // half the rate when scaling
  const BlockedShape shape = ChooseBlockedShape(0.005, 100, 128);
  EXPECT_EQ(layers[0].cells, shape.cells);
  EXPECT_EQ(layers[0].probes, shape.probes);
  EXPECT_EQ(layers[0].bytes, shape.cells / 2);
  std::cout << "[ size ] default CBF: " << filter->memory_bytes() << " bytes, " << layers[0].cells
            << " 4-bit counters, " << layers[0].probes << " probes\n";
}

TEST_P(CountingBloomWidth, AddRemoveAndCountFollowOneItem) {
  const auto filter = MakeFilter(CountingOptions(0.01, 1000, 2, GetParam()));
  ASSERT_NE(filter, nullptr);
  const KeyHash item = ItemHash("item", 7);
  EXPECT_FALSE(filter->MayContain(item));
  EXPECT_EQ(filter->Count(item), 0u);
  bool was_new = false;
  ASSERT_EQ(filter->Add(item, &was_new), FilterStatus::kOk);
  EXPECT_TRUE(was_new);
  for (int n = 0; n < 2; ++n) {
    ASSERT_EQ(filter->Add(item, &was_new), FilterStatus::kOk);
    EXPECT_FALSE(was_new);
  }
  EXPECT_EQ(filter->Count(item), 3u);  // alone in the filter: exact
  EXPECT_EQ(filter->items(), 3u);      // occurrences: adds minus removes
  EXPECT_TRUE(filter->Remove(item));
  EXPECT_TRUE(filter->Remove(item));
  EXPECT_EQ(filter->Count(item), 1u);
  EXPECT_TRUE(filter->MayContain(item));
  EXPECT_EQ(filter->items(), 1u);
  EXPECT_TRUE(filter->Remove(item));  // the last copy
  EXPECT_EQ(filter->Count(item), 0u);
  EXPECT_FALSE(filter->MayContain(item));
  EXPECT_EQ(filter->items(), 0u);
  EXPECT_FALSE(filter->Remove(item));
}

TEST_P(CountingBloomWidth, RemovingAnItemNoLayerReportsChangesNothing) {
  const auto filter = MakeFilter(CountingOptions(0.01, 1000, 2, GetParam()));
  ASSERT_NE(filter, nullptr);
  bool was_new = false;
  for (uint64_t i = 0; i < 500; ++i) ASSERT_EQ(filter->Add(ItemHash("item", i), &was_new), FilterStatus::kOk);
  const std::vector<uint64_t> before = Snapshot(*filter);
  const uint64_t items = filter->items();
  uint64_t refused = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    const KeyHash absent = ItemHash("absent", i);
    if (filter->MayContain(absent)) continue;  // a false positive: THE RULE forbids it
    EXPECT_FALSE(filter->Remove(absent));
    ++refused;
  }
  EXPECT_GT(refused, 950u);
  EXPECT_EQ(Snapshot(*filter), before);
  EXPECT_EQ(filter->items(), items);
}

TEST_P(CountingBloomWidth, CountIsTheSumOfPerLayerMinimaAndBoundsAddsMinusRemoves) {
  const auto filter = MakeFilter(CountingOptions(0.01, 200, 2, GetParam()));
  ASSERT_NE(filter, nullptr);
  // Item i is added i % 5 + 1 times, then removed i % 3 times (<= adds).
  const uint64_t n = 2000;  // several layers
  bool was_new = false;
  for (uint64_t i = 0; i < n; ++i) {
    for (uint64_t a = 0; a < i % 5 + 1; ++a) {
      ASSERT_EQ(filter->Add(ItemHash("item", i), &was_new), FilterStatus::kOk);
    }
  }
  ASSERT_GE(filter->num_layers(), 4u);
  for (uint64_t i = 0; i < n; ++i) {
    for (uint64_t r = 0; r < std::min(i % 3, i % 5 + 1); ++r) {
      ASSERT_TRUE(filter->Remove(ItemHash("item", i))) << i;
    }
  }
  uint64_t exact = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const KeyHash h = ItemHash("item", i);
    const uint64_t expected = i % 5 + 1 - std::min(i % 3, i % 5 + 1);
    uint64_t sum = 0;
    for (uint32_t l = 0; l < filter->num_layers(); ++l) sum += filter->layer(l).MinCounter(h);
    ASSERT_EQ(filter->Count(h), sum) << i;
    ASSERT_GE(filter->Count(h), expected) << i;  // an upper bound (no counter saturates here)
    exact += filter->Count(h) == expected;
    if (expected > 0) {
      ASSERT_TRUE(filter->MayContain(h)) << i;
    }
  }
  // Most counts are exact: only collisions in every counter inflate one.
  EXPECT_GT(exact, n * 95 / 100) << exact << " of " << n;
}

TEST(CountingBloomFilter, LayersGrowByTheExpansionAndHalveTheirError) {
  const auto filter = MakeFilter(CountingOptions(0.01, 100, 2, 4));
  ASSERT_NE(filter, nullptr);
  uint64_t next = 0;
  while (filter->num_layers() < 4) {
    bool was_new = false;
    ASSERT_EQ(filter->Add(ItemHash("item", next++), &was_new), FilterStatus::kOk);
  }
  const auto layers = filter->Layers();
  const uint64_t capacities[] = {100, 200, 400, 800};
  const double errors[] = {0.005, 0.0025, 0.00125, 0.000625};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(layers[i].capacity, capacities[i]) << i;
    EXPECT_DOUBLE_EQ(layers[i].error_rate, errors[i]) << i;
    // Full layers hold their capacity (plus any later item that was a
    // false positive there: it is counted where it was added).
    if (i < 3) {
      EXPECT_GE(layers[i].items, capacities[i]) << i;
    }
    const BlockedShape shape = ChooseBlockedShape(errors[i], capacities[i], 128);
    EXPECT_EQ(layers[i].cells, shape.cells) << i;
    EXPECT_EQ(layers[i].probes, shape.probes) << i;
  }
  EXPECT_EQ(layers[3].items, 1u);  // the item that triggered the growth
  EXPECT_EQ(filter->capacity(), 1500u);
  EXPECT_EQ(filter->items(), next);
  EXPECT_EQ(layers[0].items + layers[1].items + layers[2].items + layers[3].items, next);
}

TEST(CountingBloomFilter, RemovesMakeRoomInTheNewestLayer) {
  // A layer is full on its NET item count: removing items lets new ones in
  // without growing.
  const auto filter = MakeFilter(CountingOptions(0.01, 100, 2, 4));
  ASSERT_NE(filter, nullptr);
  bool was_new = false;
  uint64_t next = 0;
  while (filter->items() < 100) ASSERT_EQ(filter->Add(ItemHash("item", next++), &was_new), FilterStatus::kOk);
  for (uint64_t i = 0; i < next; ++i) filter->Remove(ItemHash("item", i));
  EXPECT_EQ(filter->items(), 0u);
  for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(filter->Add(ItemHash("again", i), &was_new), FilterStatus::kOk);
  EXPECT_EQ(filter->num_layers(), 1u);
}

TEST(CountingBloomFilter, AFullNonScalingFilterRefusesNewItemsButCountsRepeats) {
  const auto filter = MakeFilter(CountingOptions(0.01, 50, /*expansion=*/0, 8));
  ASSERT_NE(filter, nullptr);
  EXPECT_FALSE(filter->scaling());
  EXPECT_DOUBLE_EQ(filter->Layers()[0].error_rate, 0.01);  // the full rate when non-scaling
  bool was_new = false;
  uint64_t next = 0;
  while (filter->items() < 50) ASSERT_EQ(filter->Add(ItemHash("item", next++), &was_new), FilterStatus::kOk);
  const std::vector<uint64_t> before = Snapshot(*filter);
  KeyHash fresh;
  do {
    fresh = ItemHash("item", next++);
  } while (filter->MayContain(fresh));
  EXPECT_EQ(filter->Add(fresh, &was_new), FilterStatus::kFull);
  EXPECT_FALSE(was_new);
  EXPECT_EQ(Snapshot(*filter), before);
  ASSERT_EQ(filter->Add(ItemHash("item", 0), &was_new), FilterStatus::kOk);  // a repeat
  EXPECT_FALSE(was_new);
  EXPECT_EQ(filter->Count(ItemHash("item", 0)), 2u);
  EXPECT_EQ(filter->items(), 51u);
  EXPECT_TRUE(filter->Remove(ItemHash("item", 0)));
  EXPECT_TRUE(filter->Remove(ItemHash("item", 1)));
  EXPECT_EQ(filter->items(), 49u);
  EXPECT_EQ(filter->Add(fresh, &was_new), FilterStatus::kOk);  // room again
  EXPECT_TRUE(was_new);
}

// The core promise: with adds and removes interleaved at random (removing only
// what was added), no present item is ever reported absent, in any layer of a
// growing filter, and counts never under-report (below saturation).
TEST_P(CountingBloomWidth, NoFalseNegativesAfterTwoHundredThousandInterleavedAddsAndRemoves) {
  const uint32_t bits = GetParam();
  const auto filter = MakeFilter(CountingOptions(0.01, /*capacity=*/2000, /*expansion=*/2, bits));
  ASSERT_NE(filter, nullptr);
  std::mt19937_64 rng(20240503 + bits);
  std::unordered_map<uint64_t, uint64_t> copies;  // item id -> adds minus removes
  std::vector<uint64_t> present;                  // ids with copies > 0 (may hold stale ids)
  uint64_t next_id = 0;
  const uint64_t ops = Scaled(200'000);
  uint64_t checks = 0;
  for (uint64_t op = 0; op < ops; ++op) {
    const uint64_t dice = rng() % 100;
    bool was_new = false;
    if (dice < 45 || present.empty()) {  // a new item
      const uint64_t id = next_id++;
      ASSERT_EQ(filter->Add(ItemHash("item", id), &was_new), FilterStatus::kOk);
      ++copies[id];
      present.push_back(id);
    } else if (dice < 60) {  // another copy of a present item
      const uint64_t id = present[rng() % present.size()];
      if (copies[id] == 0) continue;
      ASSERT_EQ(filter->Add(ItemHash("item", id), &was_new), FilterStatus::kOk);
      ++copies[id];
    } else {  // remove a present item
      const size_t at = rng() % present.size();
      const uint64_t id = present[at];
      if (copies[id] == 0) continue;
      ASSERT_TRUE(filter->Remove(ItemHash("item", id))) << "op " << op << " id " << id;
      if (--copies[id] == 0) {
        present[at] = present.back();
        present.pop_back();
      }
    }
    if (op % 20'000 == 19'999 || op + 1 == ops) {
      for (const auto& [id, n] : copies) {
        if (n == 0) continue;
        const KeyHash h = ItemHash("item", id);
        ASSERT_TRUE(filter->MayContain(h)) << "false negative: id " << id << " after op " << op;
        ASSERT_GE(filter->Count(h), std::min(n, filter->max_count())) << "id " << id;
        ++checks;
      }
    }
  }
  uint64_t live = 0;
  uint64_t occurrences = 0;
  uint64_t gone = 0;
  uint64_t gone_reported = 0;
  for (const auto& [id, n] : copies) {
    occurrences += n;
    if (n > 0) {
      ++live;
    } else {
      ++gone;
      gone_reported += filter->MayContain(ItemHash("item", id));
    }
  }
  const double gone_rate = static_cast<double>(gone_reported) / static_cast<double>(gone);
  std::cout << "[ cbf ] " << bits << "-bit, " << ops << " ops: " << filter->num_layers()
            << " layers, " << live << " live items, " << occurrences << " occurrences (items() = "
            << filter->items() << "), "
            << checks << " presence checks, removed items still reported: " << Percent(gone_rate)
            << ", saturated counters: " << filter->saturated_counters() << "\n";
  // Removed items come back as false positives at about the filter's rate.
  EXPECT_LT(gone_rate, 0.01) << Percent(gone_rate);
  // items() is adds minus removes, exactly.
  EXPECT_EQ(filter->items(), occurrences);
}

TEST(CountingBloomFilter, NarrowCountersSaturateUnderHeavyRepeatsWithoutFalseNegatives) {
  // Items added up to 40 times each overflow 4-bit counters; removing every
  // copy again leaves saturated cells set, but never loses a live item. The
  // filter is non-scaling and sized for the 5000 distinct items: they go in
  // first (a full non-scaling filter still takes repeats of present items).
  const auto filter = MakeFilter(CountingOptions(0.01, 5000, 0, 4));
  ASSERT_NE(filter, nullptr);
  const uint64_t n = 5000;
  bool was_new = false;
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(filter->Add(ItemHash("item", i), &was_new), FilterStatus::kOk);
  }
  for (uint64_t i = 0; i < n; ++i) {
    for (uint64_t a = 1; a < i % 40 + 1; ++a) {
      ASSERT_EQ(filter->Add(ItemHash("item", i), &was_new), FilterStatus::kOk);
    }
  }
  const uint64_t saturated_full = filter->saturated_counters();
  EXPECT_GT(saturated_full, 0u);
  for (uint64_t i = 0; i < n; ++i) {
    const KeyHash h = ItemHash("item", i);
    ASSERT_GE(filter->Count(h), std::min<uint64_t>(i % 40 + 1, 15)) << i;
  }
  // Remove every copy of the even items; the odd ones must all stay.
  for (uint64_t i = 0; i < n; i += 2) {
    for (uint64_t r = 0; r < i % 40 + 1; ++r) ASSERT_TRUE(filter->Remove(ItemHash("item", i))) << i;
  }
  uint64_t even_reported = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (i % 2 == 1) {
      ASSERT_TRUE(filter->MayContain(ItemHash("item", i))) << i;
    } else {
      even_reported += filter->MayContain(ItemHash("item", i));
    }
  }
  EXPECT_EQ(filter->saturated_counters(), saturated_full);  // never decremented
  const uint64_t cells = filter->Layers()[0].cells;
  // docs/design.md: 5,000 items each added 1 to 40 times saturate 29% of 4-bit
  // counters. The items are fixed, so is the figure; docs/design.md rounds it
  // to a whole percent.
  const double saturated_share = static_cast<double>(filter->saturated_counters()) / cells;
  EXPECT_NEAR(saturated_share, 0.29, 0.005)
      << "docs/design.md says 29% of counters saturate, measured " << Percent(saturated_share)
      << " (" << filter->saturated_counters() << " of " << cells << ", tolerance +-0.5 points)";
  std::cout << "[ cbf ] 4-bit, 5000 items added 1..40 times (mean 20.5): "
            << filter->saturated_counters() << " of " << cells << " counters saturated ("
            << Percent(static_cast<double>(filter->saturated_counters()) / cells)
            << "); after removing every copy of half the items "
            << Percent(static_cast<double>(even_reported) / (n / 2))
            << " of those are still reported\n";
}

// Under a sanitizer the FP tests run on a fifth of the items and queries
// (still >= 400 expected false positives each; the hashes are fixed, so the
// outcome is deterministic): the figures quoted are Release's.
constexpr uint64_t Fifth(uint64_t n) {
  return test_support::kSanitizerSlowdown > 1 ? n / 5 : n;
}

struct FpCase {
  double error_rate;
  uint32_t counter_bits;
  // Bits of memory per item of the full filter (memory_bytes() x 8 / items),
  // as docs/design.md's "Measured" table quotes it (Release, 100k items).
  double readme_bits_per_item;
};

// The figures of docs/design.md have one decimal: a measured value within half of
// that unit matches. Sizing is deterministic, so any change shows here.
constexpr double kReadmeBitsTolerance = 0.05;

// Measured FP rate of a full non-scaling filter at its requested rate, then
// after half its items are removed and replaced by new ones (the counters
// then describe the same number of present items). Prints bits/item and
// saturation for the closing note.
void MeasureNonScaling(const FpCase& fp_case, uint64_t capacity, uint64_t queries) {
  const auto filter = MakeFilter(
      CountingOptions(fp_case.error_rate, capacity, /*expansion=*/0, fp_case.counter_bits));
  ASSERT_NE(filter, nullptr);
  bool was_new = false;
  for (uint64_t i = 0; i < capacity; ++i) {
    ASSERT_EQ(filter->Add(ItemHash("item", i), &was_new), FilterStatus::kOk);
  }
  const auto full = MeasureFalsePositives(*filter, queries);
  const double bits_per_item =
      static_cast<double>(filter->memory_bytes()) * 8 / static_cast<double>(capacity);
  // docs/design.md: "Distinct items never saturate a counter".
  EXPECT_EQ(filter->saturated_counters(), 0u) << "after " << capacity << " distinct items";
  if (test_support::kSanitizerSlowdown == 1) {  // docs/design.md quotes Release's 100k items
    char figures[160];
    std::snprintf(figures, sizeof(figures),
                  "docs/design.md says %.1f bits/item, measured %.2f (tolerance +-%.2f)",
                  fp_case.readme_bits_per_item, bits_per_item, kReadmeBitsTolerance);
    EXPECT_NEAR(bits_per_item, fp_case.readme_bits_per_item, kReadmeBitsTolerance)
        << fp_case.counter_bits << "-bit counters at " << Percent(fp_case.error_rate) << ": "
        << figures;
  }
  for (uint64_t i = 0; i < capacity / 2; ++i) ASSERT_TRUE(filter->Remove(ItemHash("item", i)));
  for (uint64_t i = 0; i < capacity / 2; ++i) {
    const FilterStatus status = filter->Add(ItemHash("replacement", i), &was_new);
    ASSERT_TRUE(status == FilterStatus::kOk || status == FilterStatus::kFull) << ToString(status);
  }
  const auto churned = MeasureFalsePositives(*filter, queries);
  char line[256];
  std::snprintf(line, sizeof(line),
                "[ cbf fp ] %d-bit at %s, %llu items: measured %s (%llu of %llu), after "
                "replacing half: %s; %.2f bits/item, %llu saturated counters",
                static_cast<int>(fp_case.counter_bits), Percent(fp_case.error_rate).c_str(),
                static_cast<unsigned long long>(capacity), Percent(full.rate()).c_str(),
                static_cast<unsigned long long>(full.false_positives),
                static_cast<unsigned long long>(queries), Percent(churned.rate()).c_str(),
                bits_per_item, static_cast<unsigned long long>(filter->saturated_counters()));
  std::cout << line << "\n";
  EXPECT_LE(full.rate(), fp_case.error_rate) << Percent(full.rate());
  EXPECT_LE(churned.rate(), fp_case.error_rate) << Percent(churned.rate());
  EXPECT_EQ(filter->saturated_counters(), 0u) << "after replacing half with distinct items";
  for (uint64_t i = capacity / 2; i < capacity; ++i) {
    ASSERT_TRUE(filter->MayContain(ItemHash("item", i))) << i;
  }
}

TEST(CountingBloomFilterFp, MeasuredRateAtOnePercentIsAtMostOnePercent) {
  for (const FpCase& fp_case : {FpCase{0.01, 4, 45.1}, FpCase{0.01, 8, 103.4}}) {
    MeasureNonScaling(fp_case, Fifth(100'000), Fifth(1'000'000));
  }
}

TEST(CountingBloomFilterFp, MeasuredRateAtPointOnePercentIsAtMostPointOnePercent) {
  // 210.7 for 8 bits is not in docs/design.md's table; pinned here all the same.
  for (const FpCase& fp_case : {FpCase{0.001, 4, 79.9}, FpCase{0.001, 8, 210.7}}) {
    MeasureNonScaling(fp_case, Fifth(100'000), Fifth(2'000'000));
  }
}

TEST(CountingBloomFilterFp, AScalingFilterGrownToSixLayersStaysUnderItsRate) {
  for (uint32_t bits : {4u, 8u}) {
    const auto filter =
        MakeFilter(CountingOptions(0.01, /*capacity=*/Fifth(5000), /*expansion=*/2, bits));
    ASSERT_NE(filter, nullptr);
    bool was_new = false;
    const uint64_t n = Fifth(300'000);  // 5k + 10k + ... + 160k = 315k: six layers
    for (uint64_t i = 0; i < n; ++i) {
      ASSERT_EQ(filter->Add(ItemHash("item", i), &was_new), FilterStatus::kOk);
    }
    const auto m = MeasureFalsePositives(*filter, Fifth(1'000'000));
    const double bits_per_item =
        static_cast<double>(filter->memory_bytes()) * 8 / static_cast<double>(filter->items());
    char line[200];
    std::snprintf(line, sizeof(line),
                  "[ cbf fp ] %u-bit scaling at 1%%, %u layers, %llu items: measured %s, "
                  "%.2f bits/item, %llu saturated counters",
                  bits, filter->num_layers(), static_cast<unsigned long long>(filter->items()),
                  Percent(m.rate()).c_str(), bits_per_item,
                  static_cast<unsigned long long>(filter->saturated_counters()));
    std::cout << line << "\n";
    EXPECT_EQ(filter->saturated_counters(), 0u) << "after " << filter->items()
                                                << " distinct items";
    EXPECT_EQ(filter->num_layers(), 6u);
    EXPECT_LE(m.rate(), 0.01) << Percent(m.rate());
  }
}

}  // namespace
}  // namespace bloomgate
