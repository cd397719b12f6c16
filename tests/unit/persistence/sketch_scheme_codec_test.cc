// Count-min sketches and top-ks of both schemes (filters/sketch_scheme.h)
// round-trip through their codecs and DUMP payloads, keep their scheme, and
// go on answering as the original; the decoders refuse a scheme's fields out
// of range. Old (kNative) data keeps loading as kNative: the golden snapshot
// tests (snapshot_file_test.cc) pin that bytes written before still load.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "filters/count_min_sketch.h"
#include "filters/top_k.h"
#include "persistence/byte_io.h"
#include "persistence/codec/header_fields.h"
#include "persistence/dump_payload.h"
#include "persistence/filter_codec.h"
#include "tests/unit/persistence/whole_payload.h"

namespace bloomgate {
namespace {

using test_support::WholePayload;

Status LoadSketch(FilterKind kind, const std::string& header, const std::string& payload,
                  AnyFilter* out) {
  std::unique_ptr<FilterLoader> loader;
  Status s = FilterLoader::Begin(kind, header, payload.size(), FilterLimits{}, nullptr, &loader);
  if (!s.ok()) return s;
  s = loader->Write(0, reinterpret_cast<const uint8_t*>(payload.data()), payload.size());
  if (!s.ok()) return s;
  return loader->Finish(out);
}

AnyFilter SketchRoundTrip(const AnyFilter& filter) {
  const FilterHeader header = DescribeFilter(filter);
  AnyFilter loaded;
  const Status s = LoadSketch(header.kind, header.bytes, WholePayload(filter, header), &loaded);
  EXPECT_TRUE(s.ok()) << s.message();
  const FilterHeader again = DescribeFilter(loaded);
  EXPECT_EQ(again.bytes, header.bytes);
  EXPECT_EQ(WholePayload(loaded, again), WholePayload(filter, header));
  return loaded;
}

AnyFilter ThroughDump(const AnyFilter& filter) {
  AnyFilter restored;
  std::string why;
  EXPECT_EQ(DecodeDumpPayload(EncodeDumpPayload(filter), FilterLimits{}, nullptr, &restored, &why),
            DumpPayloadError::kNone)
      << why;
  return restored;
}

std::unique_ptr<CountMinSketch> Sketch(SketchScheme scheme) {
  std::unique_ptr<CountMinSketch> s;
  EXPECT_EQ(CountMinSketch::Create(7, 5, FilterLimits{}, nullptr, &s, nullptr, scheme),
            FilterStatus::kOk);
  for (uint64_t i = 0; i < 40; ++i) s->IncrBy("item" + std::to_string(i), i + 1);
  return s;
}

std::unique_ptr<TopK> HeavyKeeper(SketchScheme scheme) {
  TopKOptions o{.k = 5, .width = 4, .depth = 3, .decay = 0.8, .prng_state = 42};
  o.scheme = scheme;
  std::unique_ptr<TopK> t;
  EXPECT_EQ(TopK::Create(o, FilterLimits{}, nullptr, &t), FilterStatus::kOk);
  std::string expelled;
  for (uint64_t i = 0; i < 300; ++i) {
    const std::string item = "item" + std::to_string(i % 13);
    t->Add(HashKey(item), item, 1 + i % 3, &expelled);
  }
  // An empty item in the heap (an item RedisBloom keeps too).
  t->Add(HashKey(""), "", 50, &expelled);
  return t;
}

class BothSchemes : public ::testing::TestWithParam<SketchScheme> {};

TEST_P(BothSchemes, ACountMinSketchRoundTripsAndAnswersAsBefore) {
  for (auto copy : {&SketchRoundTrip, &ThroughDump}) {
    AnyFilter original(Sketch(GetParam()));
    AnyFilter loaded = copy(original);
    auto& a = *std::get<std::unique_ptr<CountMinSketch>>(original);
    auto& b = *std::get<std::unique_ptr<CountMinSketch>>(loaded);
    EXPECT_EQ(b.scheme(), GetParam());
    for (uint64_t i = 0; i < 60; ++i) {
      const std::string item = "item" + std::to_string(i);
      EXPECT_EQ(a.IncrBy(item, 3), b.IncrBy(item, 3)) << item;
      EXPECT_EQ(a.Query(item), b.Query(item)) << item;
    }
  }
}

TEST_P(BothSchemes, ATopKRoundTripsAndDecaysAsBeforeWithItsGeneratorState) {
  for (auto copy : {&SketchRoundTrip, &ThroughDump}) {
    AnyFilter original(HeavyKeeper(GetParam()));
    AnyFilter loaded = copy(original);
    auto& a = *std::get<std::unique_ptr<TopK>>(original);
    auto& b = *std::get<std::unique_ptr<TopK>>(loaded);
    EXPECT_EQ(b.scheme(), GetParam());
    EXPECT_EQ(b.random(), a.random());
    std::string ea, eb;
    for (uint64_t i = 0; i < 400; ++i) {
      const std::string item = "next" + std::to_string(i % 23);
      ea.clear();
      eb.clear();
      EXPECT_EQ(a.Add(HashKey(item), item, 2, &ea), b.Add(HashKey(item), item, 2, &eb)) << i;
      EXPECT_EQ(ea, eb) << i;
    }
    EXPECT_EQ(DescribeFilter(loaded).bytes, DescribeFilter(original).bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(Sketches, BothSchemes,
                         ::testing::Values(SketchScheme::kNative, SketchScheme::kRedisBloom),
                         [](const auto& info) {
                           return info.param == SketchScheme::kNative ? "Native" : "RedisBloom";
                         });

// The prefix of a RedisBloom-scheme sketch: hash 3 goes with block_layout 5
// and seed 0 only.
TEST(SketchSchemeCodec, HashThreeNeedsTheRedisBloomLayoutAndSeedZero) {
  AnyFilter sketch(Sketch(SketchScheme::kRedisBloom));
  const FilterHeader header = DescribeFilter(sketch);
  const std::string payload = WholePayload(sketch, header);
  ASSERT_EQ(static_cast<uint8_t>(header.bytes[2]), codec::kHashMurmur2);
  ASSERT_EQ(static_cast<uint8_t>(header.bytes[11]), codec::kRedisBloomLayout);
  AnyFilter out;
  std::string bad = header.bytes;
  bad[11] = static_cast<char>(codec::kCountMinLayout);
  Status s = LoadSketch(header.kind, bad, payload, &out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("block_layout 3 with hash_algorithm 3"), std::string::npos)
      << s.message();
  bad = header.bytes;
  bad[3] = 1;  // hash_seed's low byte
  s = LoadSketch(header.kind, bad, payload, &out);
  EXPECT_NE(s.message().find("hash_seed 1 with hash_algorithm 3"), std::string::npos)
      << s.message();
  bad = header.bytes;
  bad[2] = 4;  // no such hash
  s = LoadSketch(header.kind, bad, payload, &out);
  EXPECT_NE(s.message().find("hash_algorithm 4 not supported"), std::string::npos)
      << s.message();
}

// A RedisBloom-scheme top-k slot's third field is 0 (empty: no count, no
// fp) or length + 1; an empty slot that holds a count is refused.
TEST(SketchSchemeCodec, ARedisBloomTopKRefusesAnEmptySlotWithACount) {
  TopKOptions o{.k = 3, .width = 4, .depth = 2, .decay = 0.9};
  o.scheme = SketchScheme::kRedisBloom;
  std::unique_ptr<TopK> t;
  ASSERT_EQ(TopK::Create(o, FilterLimits{}, nullptr, &t), FilterStatus::kOk);
  std::string expelled;
  t->Add(HashKey("a"), "a", 1, &expelled);
  AnyFilter filter(std::move(t));
  const FilterHeader header = DescribeFilter(filter);
  std::string payload = WholePayload(filter, header);
  AnyFilter out;
  ASSERT_TRUE(LoadSketch(header.kind, header.bytes, payload, &out).ok());
  // One item in three slots: give an empty slot a count.
  size_t empty = 0;
  for (size_t slot = 0; slot < 3; ++slot) {
    const size_t at = 4 * 2 * 8 + slot * 12;
    if (payload[at + 8] == 0) empty = at;
  }
  ASSERT_NE(empty, 0u);
  payload[empty] = 7;
  const Status s = LoadSketch(header.kind, header.bytes, payload, &out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("empty heap slot"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace bloomgate
