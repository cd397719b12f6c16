// Per-filter hash seeds (filters/hash_seed.h): every new filter of every
// family draws its own, so the same items land on different bits (and
// different false positives) in two filters; a filter rebuilt with a known
// seed answers exactly as the original.
#include "filters/hash_seed.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "filters/counting_bloom_filter.h"
#include "filters/cuckoo_filter.h"
#include "filters/key_hash.h"
#include "filters/scalable_bloom_filter.h"

namespace bloomgate {
namespace {

constexpr int kItems = 500;
constexpr int kProbes = 20000;

// Adds item:0.. through the filter's own seed, checks they are all there, and
// returns which of absent:0..kProbes-1 the filter (falsely) reports.
template <typename Filter, typename AddFn>
std::vector<bool> FalsePositives(Filter& filter, AddFn add) {
  for (int i = 0; i < kItems; ++i) add(filter, filter.Hash("item:" + std::to_string(i)));
  for (int i = 0; i < kItems; ++i) {
    EXPECT_TRUE(filter.MayContain(filter.Hash("item:" + std::to_string(i)))) << i;
  }
  std::vector<bool> positives(kProbes);
  for (int i = 0; i < kProbes; ++i) {
    positives[i] = filter.MayContain(filter.Hash("absent:" + std::to_string(i)));
  }
  return positives;
}

std::unique_ptr<ScalableBloomFilter> SeededBloom(std::optional<uint64_t> seed) {
  std::unique_ptr<ScalableBloomFilter> f;
  EXPECT_EQ(ScalableBloomFilter::Create({.error_rate = 0.05, .capacity = kItems, .hash_seed = seed},
                                        FilterLimits{}, nullptr, &f),
            FilterStatus::kOk);
  return f;
}
std::unique_ptr<CountingBloomFilter> SeededCounting(std::optional<uint64_t> seed) {
  std::unique_ptr<CountingBloomFilter> f;
  EXPECT_EQ(CountingBloomFilter::Create({.error_rate = 0.05, .capacity = kItems, .hash_seed = seed},
                                        FilterLimits{}, nullptr, &f),
            FilterStatus::kOk);
  return f;
}
std::unique_ptr<CuckooFilter> SeededCuckoo(std::optional<uint64_t> seed) {
  std::unique_ptr<CuckooFilter> f;
  EXPECT_EQ(CuckooFilter::Create({.capacity = 1000, .hash_seed = seed}, FilterLimits{}, nullptr, &f),
            FilterStatus::kOk);
  return f;
}

// Two unseeded filters get different non-zero seeds and different false
// positives for the same items; a third built with the first one's seed has
// exactly the first one's.
template <typename Make, typename AddFn>
void ExpectSeedsSeparateFilters(Make make, AddFn add) {
  auto a = make(std::nullopt);
  auto b = make(std::nullopt);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a->hash_seed(), 0u);
  EXPECT_NE(b->hash_seed(), 0u);
  EXPECT_NE(a->hash_seed(), b->hash_seed());
  auto same = make(a->hash_seed());
  ASSERT_NE(same, nullptr);
  EXPECT_EQ(same->hash_seed(), a->hash_seed());
  const std::vector<bool> fa = FalsePositives(*a, add);
  const std::vector<bool> fb = FalsePositives(*b, add);
  const std::vector<bool> fsame = FalsePositives(*same, add);
  int in_a = 0, in_both = 0;
  for (int i = 0; i < kProbes; ++i) {
    in_a += fa[i];
    in_both += fa[i] && fb[i];
  }
  // ~1-5% of 20,000 probes are false positives in each; with independent
  // hashes only that share of them coincide (< 10 expected). One shared hash
  // would make every one coincide.
  EXPECT_GT(in_a, 50);
  EXPECT_LT(in_both, in_a / 2);
  EXPECT_EQ(fsame, fa);
}

TEST(HashSeed, FreshSeedsAreNonZeroAndDiffer) {
  const uint64_t first = NewHashSeed();
  const uint64_t second = NewHashSeed();
  EXPECT_NE(first, 0u);
  EXPECT_NE(first, second);
  EXPECT_EQ(SeedOrNew(uint64_t{7}), 7u);
}

TEST(HashSeed, SeedZeroIsPlainXxh3) {
  const KeyHash plain = HashKey("item");
  const KeyHash zero = HashKey("item", 0);
  const KeyHash seeded = HashKey("item", 1);
  EXPECT_EQ(plain.lo, zero.lo);
  EXPECT_EQ(plain.hi, zero.hi);
  EXPECT_NE(plain.lo, seeded.lo);
}

TEST(HashSeed, EachScalableBloomFilterHasItsOwnSeed) {
  ExpectSeedsSeparateFilters(SeededBloom, [](ScalableBloomFilter& f, const KeyHash& h) {
    bool added = false;
    ASSERT_EQ(f.Add(h, &added), FilterStatus::kOk);
  });
}

TEST(HashSeed, EachCountingBloomFilterHasItsOwnSeed) {
  ExpectSeedsSeparateFilters(SeededCounting, [](CountingBloomFilter& f, const KeyHash& h) {
    bool added = false;
    ASSERT_EQ(f.Add(h, &added), FilterStatus::kOk);
  });
}

TEST(HashSeed, EachCuckooFilterHasItsOwnSeed) {
  ExpectSeedsSeparateFilters(SeededCuckoo, [](CuckooFilter& f, const KeyHash& h) {
    ASSERT_EQ(f.Add(h), FilterStatus::kOk);
  });
}

}  // namespace
}  // namespace bloomgate
