// CuckooScheme::kRedisBloom: RedisBloom's hash, fingerprint, alternate index,
// kick order, CF.COUNT and CF.INFO Size, as facts pinned one by one. The
// end-to-end proof that they add up to RedisBloom's answers is
// tests/e2e/test_redisbloom_cuckoo_import.py against its real dumps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "filters/cuckoo_filter.h"
#include "filters/murmur_hash64a.h"

namespace bloomgate {
namespace {

std::unique_ptr<CuckooFilter> RedisBloomFilter(uint64_t capacity, uint32_t bucket_size,
                                               uint32_t expansion, uint32_t max_iterations = 20) {
  CuckooFilterOptions options;
  options.capacity = capacity;
  options.bucket_size = bucket_size;
  options.expansion = expansion;
  options.max_iterations = max_iterations;
  options.scheme = CuckooScheme::kRedisBloom;
  std::unique_ptr<CuckooFilter> filter;
  EXPECT_EQ(CuckooFilter::Create(options, FilterLimits{}, nullptr, &filter), FilterStatus::kOk);
  return filter;
}

std::vector<uint8_t> Slots(const CuckooFilter& f) {
  std::vector<uint8_t> out;
  for (uint32_t k = 0; k < f.num_filters(); ++k) {
    std::vector<uint8_t> sub(f.SubFilters()[k].bytes);
    f.CopySlots(k, 0, sub.data(), sub.size());
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

// Values of Appleby's MurmurHash64A with seed 0 from an independent Python
// transcription that reproduced all 22,200 answers of RedisBloom's dumps in
// ../shared/redisbloom-dumps (so they are RedisBloom's values too).
TEST(MurmurHash64A, MatchesRedisBloomsCuckooHashOnPinnedValues) {
  EXPECT_EQ(MurmurHash64A("", 0), 0x0ull);
  EXPECT_EQ(MurmurHash64A("a", 0), 0x071717d2d36b6b11ull);
  EXPECT_EQ(MurmurHash64A("hello", 0), 0x1e68d17c457bf117ull);
  EXPECT_EQ(MurmurHash64A("12345678", 0), 0x758f67d162b2d202ull);  // one block, no tail
  EXPECT_EQ(MurmurHash64A("123456789", 0), 0x4977490251674330ull);
  EXPECT_EQ(MurmurHash64A("item:0", 0), 0x4f7c9d6dfc5bd6a7ull);
}

TEST(CuckooRedisBloom, HashesUnseededWithOneHashForFingerprintAndIndex) {
  auto f = RedisBloomFilter(1000, 2, 1);
  EXPECT_EQ(f->hash_seed(), 0u);
  const KeyHash h = f->Hash("hello");
  EXPECT_EQ(h.lo, 0x1e68d17c457bf117ull);
  EXPECT_EQ(h.hi, h.lo);
  EXPECT_EQ(CuckooFilter::FingerprintOf(h), 0x1e68d17c457bf117ull % 255 + 1);
  // Two filters of this scheme hash alike; native ones draw their seeds.
  EXPECT_EQ(RedisBloomFilter(64, 4, 2)->Hash("x").lo, f->Hash("x").lo);
}

TEST(CuckooRedisBloom, ARedisBloomFilterCannotTakeASeed) {
  CuckooFilterOptions options;
  options.scheme = CuckooScheme::kRedisBloom;
  options.hash_seed = 7;
  std::unique_ptr<CuckooFilter> filter;
  EXPECT_EQ(CuckooFilter::Create(options, FilterLimits{}, nullptr, &filter),
            FilterStatus::kInvalidOptions);
  CuckooFilterShape shape = RedisBloomFilter(64, 2, 1)->Shape();
  shape.hash_seed = 7;
  EXPECT_EQ(CuckooFilter::Restore(shape, FilterLimits{}, nullptr, &filter),
            FilterStatus::kInvalidOptions);
}

TEST(CuckooRedisBloom, FindsTheItemInBucketH1OrH1XorFpTimes0x5bd1e995) {
  // 512 buckets of 2: the item's fingerprint lands in bucket h % 512 or
  // (h ^ fp * 0x5bd1e995) % 512 and nowhere else.
  auto f = RedisBloomFilter(1000, 2, 1);
  ASSERT_EQ(f->num_buckets(), 512u);
  const KeyHash h = f->Hash("hello");
  ASSERT_EQ(f->Add(h), FilterStatus::kOk);
  const uint8_t fp = CuckooFilter::FingerprintOf(h);
  const std::vector<uint8_t> slots = Slots(*f);
  const uint64_t b1 = h.hi % 512;
  const uint64_t b2 = (h.hi ^ (uint64_t{fp} * 0x5bd1e995ull)) % 512;
  const bool in_b1 = slots[b1 * 2] == fp || slots[b1 * 2 + 1] == fp;
  const bool in_b2 = slots[b2 * 2] == fp || slots[b2 * 2 + 1] == fp;
  EXPECT_TRUE(in_b1) << "a free first bucket takes the item (RedisBloom checks h1 first)";
  EXPECT_EQ(std::count(slots.begin(), slots.end(), fp), 1);
  (void)in_b2;
}

TEST(CuckooRedisBloom, CountAddsBothBucketsEvenWhenTheyAreTheSameBucket) {
  // fp x 0x5bd1e995 = 0 mod 64 for fp = 64, 128, 192: then h1 and h2 are one
  // bucket, and RedisBloom's subFilterCount counts it twice.
  auto f = RedisBloomFilter(128, 2, 1);
  ASSERT_EQ(f->num_buckets(), 64u);
  std::string same;
  for (int i = 0; same.empty(); ++i) {
    const std::string item = "same:" + std::to_string(i);
    if (CuckooFilter::FingerprintOf(f->Hash(item)) % 64 == 0) same = item;
  }
  ASSERT_EQ(f->Add(f->Hash(same)), FilterStatus::kOk);
  EXPECT_EQ(f->Count(f->Hash(same)), 2u);
}

TEST(CuckooRedisBloom, InfoSizeIsRedisBloomsFigure) {
  // RedisBloom's Size: 40 + 16 per sub-filter + slot bytes (its dumps: one
  // sub-filter of 512 buckets x 2 -> 1080).
  auto f = RedisBloomFilter(1000, 2, 1);
  EXPECT_EQ(f->Info().size, 1080u);
}

TEST(CuckooRedisBloom, KicksEvictRoundRobinAndAFailedWalkIsUndoneExactly) {
  // Non-scaling, 2 buckets of 2: the fifth item can only go in by kicks,
  // which fail (all four slots hold fingerprints whose buckets are these
  // two), so the filter must come back byte for byte.
  auto f = RedisBloomFilter(4, 2, /*expansion=*/0, /*max_iterations=*/7);
  int added = 0;
  for (int i = 0; added < 4 && i < 1000; ++i) {
    if (f->Add(f->Hash("fill:" + std::to_string(i))) == FilterStatus::kOk) ++added;
  }
  ASSERT_EQ(added, 4);
  const std::vector<uint8_t> before = Slots(*f);
  EXPECT_EQ(f->Add(f->Hash("one more")), FilterStatus::kFull);
  EXPECT_EQ(Slots(*f), before);
  EXPECT_EQ(f->items(), 4u);
}

TEST(CuckooRedisBloom, TheSameAddsGiveTheSameSlotsSoReplayIsExact) {
  // Kicks depend on nothing but the filter and the item (no rand()): two
  // filters fed the same items, through growth, end identical.
  auto a = RedisBloomFilter(64, 4, 2);
  auto b = RedisBloomFilter(64, 4, 2);
  for (int i = 0; i < 2000; ++i) {
    const std::string item = "r:" + std::to_string(i);
    ASSERT_EQ(a->Add(a->Hash(item)), FilterStatus::kOk);
    ASSERT_EQ(b->Add(b->Hash(item)), FilterStatus::kOk);
  }
  EXPECT_GT(a->num_filters(), 1u);
  EXPECT_EQ(a->Info().num_filters, b->Info().num_filters);
  EXPECT_EQ(Slots(*a), Slots(*b));
  EXPECT_EQ(a->Shape().scheme, CuckooScheme::kRedisBloom);
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(a->MayContain(a->Hash("r:" + std::to_string(i))));
}

}  // namespace
}  // namespace bloomgate
