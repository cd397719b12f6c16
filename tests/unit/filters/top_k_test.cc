// TopK (HeavyKeeper): finds the heavy hitters of a skewed stream, reports
// what it expels, and is a pure function of its state (PRNG included).
#include "filters/top_k.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace bloomgate {
namespace {

std::unique_ptr<TopK> Make(uint32_t k, uint32_t width, uint32_t depth, double decay,
                           uint64_t seed) {
  std::unique_ptr<TopK> t;
  EXPECT_EQ(TopK::Create(TopKOptions{k, width, depth, decay, seed}, FilterLimits{}, nullptr, &t),
            FilterStatus::kOk);
  return t;
}

std::string Item(uint64_t i) { return "item:" + std::to_string(i); }

// A fixed Zipf(s) stream over n items (inverse CDF on mt19937_64 draws).
std::vector<uint64_t> ZipfDraws(uint64_t n, double s, uint64_t draws, uint64_t seed) {
  std::vector<double> cdf;
  double sum = 0;
  for (uint64_t i = 1; i <= n; ++i) cdf.push_back(sum += 1 / std::pow(double(i), s));
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> out;
  for (uint64_t d = 0; d < draws; ++d) {
    const double u = double(rng() >> 11) * 0x1.0p-53 * sum;
    out.push_back(static_cast<uint64_t>(std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin()));
  }
  return out;
}

void AddAll(TopK& t, const std::vector<uint64_t>& stream) {
  std::string expelled;
  for (uint64_t i : stream) {
    const std::string item = Item(i);
    t.Add(HashKey(item), item, 1, &expelled);
  }
}

// Zipf(1.2) over 10,000 items, 200,000 adds, k = 10 in 1000 x 5 buckets
// (decay 0.9): the true top 10 are items 0..9. Measured: all 10 listed, and
// the counts of the top 3 exact (41,741, 18,021, 10,977); allowed: 9 of 10
// listed and counts within 2% below the truth.
TEST(TopK, ListsTheTrueTopTenOfAZipfStream) {
  const std::vector<uint64_t> stream = ZipfDraws(10000, 1.2, 200000, /*seed=*/11);
  std::vector<uint64_t> truth(10000, 0);
  for (uint64_t i : stream) ++truth[i];
  auto topk = Make(10, 1000, 5, 0.9, /*seed=*/1);
  AddAll(*topk, stream);
  const std::vector<TopKEntry> list = topk->List();
  ASSERT_EQ(list.size(), 10u);
  std::set<std::string> listed;
  for (const TopKEntry& e : list) listed.insert(e.item);
  int found = 0;
  for (uint64_t i = 0; i < 10; ++i) found += listed.count(Item(i));
  EXPECT_GE(found, 9) << "of the true top 10, listed " << found;
  for (uint64_t i = 0; i < 3; ++i) {
    const uint32_t count = topk->Count(HashKey(Item(i)), Item(i));
    EXPECT_LE(count, truth[i]) << "HeavyKeeper only underestimates (item " << i << ")";
    EXPECT_GE(count, truth[i] * 0.98) << "item " << i << " true " << truth[i];
    EXPECT_TRUE(topk->Query(HashKey(Item(i)), Item(i)));
  }
  for (size_t i = 1; i < list.size(); ++i) EXPECT_GE(list[i - 1].count, list[i].count);
}

// The replay guarantee: the same state and the same adds make the same
// decisions -- buckets, heap and PRNG state all equal -- so a log replay or a
// replica evicts exactly what the original did. A different seed diverges
// (the PRNG really drives the decay).
TEST(TopK, SameSeedAndSameAddsGiveTheSameStateEvenThroughDecay) {
  const std::vector<uint64_t> stream = ZipfDraws(5000, 0.9, 50000, /*seed=*/3);
  auto a = Make(20, 64, 4, 0.9, 99), b = Make(20, 64, 4, 0.9, 99), c = Make(20, 64, 4, 0.9, 100);
  AddAll(*a, stream);
  AddAll(*b, stream);
  AddAll(*c, stream);
  EXPECT_EQ(a->prng_state(), b->prng_state());
  EXPECT_NE(a->prng_state(), 99u) << "the decay never flipped a coin";
  auto same = [](const TopK& x, const TopK& y) {
    if (!std::equal(x.buckets().begin(), x.buckets().end(), y.buckets().begin(),
                    [](const TopKBucket& p, const TopKBucket& q) {
                      return p.fp == q.fp && p.count == q.count;
                    })) {
      return false;
    }
    const auto lx = x.List(), ly = y.List();
    return std::equal(lx.begin(), lx.end(), ly.begin(), ly.end(),
                      [](const TopKEntry& p, const TopKEntry& q) {
                        return p.item == q.item && p.count == q.count;
                      });
  };
  EXPECT_TRUE(same(*a, *b));
  EXPECT_FALSE(same(*a, *c)) << "a different seed made every decay decision the same";
}

TEST(TopK, AnAddThatTakesTheLastPlaceReportsTheItemItExpelled) {
  auto topk = Make(1, 8, 7, 0.9, 5);
  std::string expelled;
  EXPECT_FALSE(topk->Add(HashKey("a"), "a", 1, &expelled)) << "an empty slot expels nothing";
  EXPECT_FALSE(topk->Add(HashKey("b"), "b", 1, &expelled)) << "a tie does not replace";
  EXPECT_TRUE(topk->Add(HashKey("b"), "b", 5, &expelled));
  EXPECT_EQ(expelled, "a");
  EXPECT_TRUE(topk->Query(HashKey("b"), "b"));
  EXPECT_FALSE(topk->Query(HashKey("a"), "a"));
  EXPECT_EQ(topk->List().front().count, 6u);
  EXPECT_EQ(topk->memory_bytes(), TopK::FixedBytesFor(1, 8, 7) + 1);
}

TEST(TopK, DecayOfOneAlwaysDecaysAndCountsSaturate) {
  // decay 1: every foreign bucket loses one per increment, as RedisBloom's
  // pow(1, n) = 1 does; a 1 x 1 sketch makes "b" take a's bucket at once.
  auto topk = Make(2, 1, 1, 1.0, 5);
  std::string expelled;
  topk->Add(HashKey("a"), "a", 3, &expelled);
  topk->Add(HashKey("b"), "b", 5, &expelled);
  // The increment that empties the bucket is the new owner's first, as in
  // topk.c: increments 1-3 decay a's 3 to 0, so b holds 5 - 2 = 3.
  EXPECT_EQ(topk->Count(HashKey("b"), "b"), 3u);
  EXPECT_EQ(topk->Count(HashKey("a"), "a"), 0u);
  for (int i = 0; i < 3; ++i) topk->Add(HashKey("b"), "b", TopK::kMaxCount, &expelled);
  EXPECT_EQ(topk->Count(HashKey("b"), "b"), TopK::kMaxCount);
}

TEST(TopK, CreateRefusesBadOptionsAndHonoursTheCaps) {
  std::unique_ptr<TopK> t;
  EXPECT_EQ(TopK::Create(TopKOptions{0, 8, 7, 0.9, 0}, FilterLimits{}, nullptr, &t),
            FilterStatus::kInvalidOptions);
  EXPECT_EQ(TopK::Create(TopKOptions{1, 8, 7, 0.0, 0}, FilterLimits{}, nullptr, &t),
            FilterStatus::kInvalidOptions);
  EXPECT_EQ(TopK::Create(TopKOptions{1, 8, 7, NAN, 0}, FilterLimits{}, nullptr, &t),
            FilterStatus::kInvalidOptions);
  EXPECT_EQ(TopK::Create(TopKOptions{1, 1u << 20, 1000, 0.9, 0}, FilterLimits{1 << 20}, nullptr,
                         &t),
            FilterStatus::kFilterMemoryLimit);
  MemoryBudget budget(1 << 16);
  ASSERT_EQ(TopK::Create(TopKOptions{4, 64, 4, 0.9, 0}, FilterLimits{}, &budget, &t),
            FilterStatus::kOk);
  std::string expelled;
  t->Add(HashKey("abc"), "abc", 1, &expelled);
  EXPECT_EQ(budget.used(), t->memory_bytes()) << "item bytes are charged while there is room";
  t.reset();
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace bloomgate
