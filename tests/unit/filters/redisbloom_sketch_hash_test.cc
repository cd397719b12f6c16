// The pieces that make new sketches answer as RedisBloom's: its 32-bit
// MurmurHash2 (values from the reference definition, computed independently
// of this code), glibc's rand() reproduced from its definition (checked
// against this process's own C library), and how a count-min sketch and a
// top-k of SketchScheme::kRedisBloom place items.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "filters/count_min_sketch.h"
#include "filters/glibc_random.h"
#include "filters/murmur_hash2.h"
#include "filters/top_k.h"

namespace bloomgate {
namespace {

TEST(MurmurHash2, KnownValuesOfTheReferenceDefinition) {
  EXPECT_EQ(MurmurHash2("", 0), 0u);
  EXPECT_EQ(MurmurHash2("foo", 0), 2414502773u);     // tail of 3 bytes
  EXPECT_EQ(MurmurHash2("foo", 1919), 1080345600u);  // top-k's fingerprint seed
  EXPECT_EQ(MurmurHash2("hello world", 1), 2213174766u);
  EXPECT_EQ(MurmurHash2("w0", 2), 2066358910u);
  // Bytes above 0x7f are unsigned, as the reference's unsigned char reads.
  EXPECT_EQ(MurmurHash2(std::string("\xff\xfe\xfd\xfc\xfb", 5), 7), 3044734978u);
}

TEST(GlibcRandom, AFreshProcessDrawsWhatGlibcRandDrawsFromSeedOne) {
  GlibcRandom fresh = GlibcRandom::FreshProcess();
  // glibc's first values for srand(1), documented in many places.
  EXPECT_EQ(fresh.Next(), 1804289383);
  EXPECT_EQ(fresh.Next(), 846930886);
  EXPECT_EQ(fresh.Next(), 1681692777);
}

TEST(GlibcRandom, EqualsThisProcesssRandForSeveralSeedsOverTenThousandDraws) {
  for (uint32_t seed : {1u, 2u, 42u, 2147483647u, 4000000000u}) {
    ::srand(seed);
    GlibcRandom g = GlibcRandom::Seeded(seed);
    for (int i = 0; i < 10000; ++i) {
      const int expected = ::rand();
      ASSERT_EQ(g.Next(), expected) << "seed " << seed << " draw " << i;
    }
  }
}

TEST(GlibcRandom, ASavedStateContinuesTheSameSequence) {
  GlibcRandom g = GlibcRandom::FreshProcess();
  for (int i = 0; i < 100; ++i) g.Next();
  const auto words = g.Words();
  GlibcRandom copy = GlibcRandom::FromWords(words);
  EXPECT_EQ(copy, g);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(copy.Next(), g.Next()) << i;
}

// cms.c: row r's cell is MurmurHash2(item, r) % width. An item added to a
// RedisBloom-scheme sketch raises exactly those cells.
TEST(CountMinSketchRedisBloom, AnItemRaisesTheCellsRedisBloomsHashNames) {
  std::unique_ptr<CountMinSketch> s;
  ASSERT_EQ(CountMinSketch::Create(7, 3, FilterLimits{}, nullptr, &s, nullptr,
                                   SketchScheme::kRedisBloom),
            FilterStatus::kOk);
  EXPECT_EQ(s->IncrBy(std::string_view("foo"), 5), 5u);
  for (uint64_t row = 0; row < 3; ++row) {
    const uint64_t expected = row * 7 + MurmurHash2("foo", static_cast<uint32_t>(row)) % 7;
    for (uint64_t c = row * 7; c < row * 7 + 7; ++c) {
      EXPECT_EQ(s->cell(c), c == expected ? 5u : 0u) << "row " << row << " cell " << c;
    }
  }
  EXPECT_EQ(s->Query(std::string_view("foo")), 5u);
}

// The same item lands elsewhere in a native sketch: the schemes differ, so
// a sketch loaded from old data must keep its own.
TEST(CountMinSketchRedisBloom, TheNativeSchemeKeepsItsOwnCells) {
  std::unique_ptr<CountMinSketch> rb, native;
  ASSERT_EQ(CountMinSketch::Create(1000, 1, FilterLimits{}, nullptr, &rb, nullptr,
                                   SketchScheme::kRedisBloom),
            FilterStatus::kOk);
  ASSERT_EQ(CountMinSketch::Create(1000, 1, FilterLimits{}, nullptr, &native), FilterStatus::kOk);
  EXPECT_EQ(native->scheme(), SketchScheme::kNative);
  rb->IncrBy(std::string_view("foo"), 1);
  native->IncrBy(std::string_view("foo"), 1);
  uint64_t rb_cell = 0, native_cell = 0;
  for (uint64_t c = 0; c < 1000; ++c) {
    if (rb->cell(c) != 0) rb_cell = c;
    if (native->cell(c) != 0) native_cell = c;
  }
  EXPECT_EQ(rb_cell, MurmurHash2("foo", 0) % 1000);
  EXPECT_EQ(native->Query(HashKey("foo")), 1u);
  EXPECT_NE(rb_cell, native_cell);
}

std::unique_ptr<TopK> RedisBloomTopK(uint32_t k, uint32_t width, uint32_t depth, double decay) {
  TopKOptions o{.k = k, .width = width, .depth = depth, .decay = decay};
  o.scheme = SketchScheme::kRedisBloom;
  std::unique_ptr<TopK> t;
  EXPECT_EQ(TopK::Create(o, FilterLimits{}, nullptr, &t), FilterStatus::kOk);
  return t;
}

// topk.c: fingerprint MurmurHash2(item, 1919), row r's bucket
// MurmurHash2(item, r) % width.
TEST(TopKRedisBloom, AnItemTakesTheBucketsAndFingerprintOfRedisBloomsHash) {
  auto t = RedisBloomTopK(2, 11, 3, 0.9);
  std::string expelled;
  EXPECT_FALSE(t->Add(HashKey("foo"), "foo", 4, &expelled));
  const auto buckets = t->buckets();
  for (uint32_t row = 0; row < 3; ++row) {
    const size_t at = row * 11 + MurmurHash2("foo", row) % 11;
    EXPECT_EQ(buckets[at].fp, MurmurHash2("foo", 1919)) << row;
    EXPECT_EQ(buckets[at].count, 4u) << row;
  }
  EXPECT_EQ(t->Count(HashKey("foo"), "foo"), 4u);
  EXPECT_TRUE(t->Query(HashKey("foo"), "foo"));
}

// An item that ties the heap minimum replaces it (>=, topk.c), and LIST
// keeps equal counts in heap order (a stable sort).
TEST(TopKRedisBloom, ATieWithTheMinimumExpelsItAndListKeepsHeapOrderForTies) {
  auto t = RedisBloomTopK(2, 50, 4, 0.9);
  std::string expelled;
  EXPECT_FALSE(t->Add(HashKey("a"), "a", 1, &expelled)) << "an empty slot expels nothing";
  EXPECT_FALSE(t->Add(HashKey("b"), "b", 1, &expelled));
  EXPECT_TRUE(t->Add(HashKey("c"), "c", 1, &expelled)) << "1 >= the minimum 1";
  const auto heap = t->heap();
  const auto list = t->List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].item, heap[0].item);
  EXPECT_EQ(list[1].item, heap[1].item);
}

// Decays draw from the filter's own rand() state: two filters given the same
// adds from a fresh state decide alike, and the state moved.
TEST(TopKRedisBloom, DecayDrawsFromTheFiltersOwnGlibcState) {
  auto a = RedisBloomTopK(3, 2, 1, 0.9);
  auto b = RedisBloomTopK(3, 2, 1, 0.9);
  std::string expelled;
  for (int i = 0; i < 500; ++i) {
    const std::string item = "i" + std::to_string(i % 17);
    a->Add(HashKey(item), item, 1, &expelled);
    b->Add(HashKey(item), item, 1, &expelled);
  }
  EXPECT_EQ(a->random(), b->random());
  EXPECT_FALSE(a->random() == GlibcRandom::FreshProcess());
  const auto la = a->List(), lb = b->List();
  ASSERT_EQ(la.size(), lb.size());
  for (size_t i = 0; i < la.size(); ++i) EXPECT_EQ(la[i].item, lb[i].item);
}

}  // namespace
}  // namespace bloomgate
