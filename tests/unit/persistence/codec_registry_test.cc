// The codec registry walked whole: every registered kind is distinct and
// round-trips a filter through its own codec, every AnyFilter alternative
// has exactly one codec, and no kind byte is known that no codec claims.
// A family added without its codec, or registered under a kind already
// taken, fails here before any snapshot is written with it.

#include "persistence/codec/codec_registry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <variant>

#include "persistence/dump_payload.h"
#include "persistence/filter_codec.h"
#include "persistence/snapshot_file.h"
#include "tests/unit/filters/filter_test_support.h"
#include "tests/unit/persistence/whole_payload.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;

// A small filter of each registered kind with a few items in it. A new
// family adds its sample here; RegisteredKindsAllHaveASample says so.
const std::map<FilterKind, std::function<AnyFilter()>>& Samples() {
  static const std::map<FilterKind, std::function<AnyFilter()>> samples = {
      {FilterKind::kScalableBloom,
       [] {
         std::unique_ptr<ScalableBloomFilter> f;
         EXPECT_EQ(ScalableBloomFilter::Create(ScalableBloomOptions{0.01, 100, 2},
                                               FilterLimits{}, nullptr, &f),
                   FilterStatus::kOk);
         bool added = false;
         for (uint64_t i = 0; i < 150; ++i) (void)f->Add(ItemHash("item", i), &added);
         return AnyFilter(std::move(f));
       }},
      {FilterKind::kCountingBloom,
       [] {
         std::unique_ptr<CountingBloomFilter> f;
         EXPECT_EQ(CountingBloomFilter::Create(CountingBloomOptions{0.01, 100, 2, 4},
                                               FilterLimits{}, nullptr, &f),
                   FilterStatus::kOk);
         bool was_new = false;
         for (uint64_t i = 0; i < 50; ++i) (void)f->Add(ItemHash("item", i), &was_new);
         return AnyFilter(std::move(f));
       }},
      {FilterKind::kCuckoo,
       [] {
         CuckooFilterOptions options;
         options.capacity = 64;
         std::unique_ptr<CuckooFilter> f;
         EXPECT_EQ(CuckooFilter::Create(options, FilterLimits{}, nullptr, &f), FilterStatus::kOk);
         for (uint64_t i = 0; i < 40; ++i) (void)f->Add(ItemHash("item", i));
         return AnyFilter(std::move(f));
       }},
      {FilterKind::kCountMinSketch,
       [] {
         // 7 x 5 = 35 cells: an odd count, so the padding lane is covered.
         std::unique_ptr<CountMinSketch> f;
         EXPECT_EQ(CountMinSketch::Create(7, 5, FilterLimits{}, nullptr, &f), FilterStatus::kOk);
         for (uint64_t i = 0; i < 40; ++i) (void)f->IncrBy(ItemHash("item", i), i + 1);
         return AnyFilter(std::move(f));
       }},
      {FilterKind::kTopK,
       [] {
         std::unique_ptr<TopK> f;
         EXPECT_EQ(TopK::Create(TopKOptions{.k = 5, .width = 8, .depth = 3, .decay = 0.9,
                                            .prng_state = 42},
                                FilterLimits{}, nullptr, &f),
                   FilterStatus::kOk);
         std::string expelled;
         for (uint64_t i = 0; i < 200; ++i) {
           const std::string item = "item" + std::to_string(i % 13);
           (void)f->Add(HashKey(item), item, 1 + i % 3, &expelled);
         }
         return AnyFilter(std::move(f));
       }},
      {FilterKind::kWindowedBloom,
       [] {
         // Three generations used of five, the newest grown past one layer,
         // and one slot never used.
         WindowedBloomOptions options;
         options.capacity = 40;
         options.window_ms = 4000;
         options.generations = 4;
         std::unique_ptr<WindowedBloomFilter> f;
         EXPECT_EQ(WindowedBloomFilter::Create(options, /*now_ms=*/1000, FilterLimits{},
                                               nullptr, &f),
                   FilterStatus::kOk);
         bool seen = false, flipped = false;
         uint64_t generation = 0;
         for (uint64_t i = 0; i < 90; ++i) {
           (void)f->Add(ItemHash("item", i), /*now_ms=*/1000 + static_cast<int64_t>(i / 30) * 1500,
                        &seen, &generation, &flipped);
         }
         return AnyFilter(std::move(f));
       }},
      {FilterKind::kWindowedCountingBloom,
       [] {
         // Three generations used of three slots' worth, the newest grown
         // past one layer, 8-bit counters, one occurrence deleted.
         WindowedCountingBloomOptions options;
         options.capacity = 40;
         options.counter_bits = 8;
         options.window_ms = 3000;
         options.generations = 3;
         std::unique_ptr<WindowedCountingBloomFilter> f;
         EXPECT_EQ(WindowedCountingBloomFilter::Create(options, /*now_ms=*/1000, FilterLimits{},
                                                       nullptr, &f),
                   FilterStatus::kOk);
         bool was_new = false;
         uint64_t count = 0, generation = 0;
         for (uint64_t i = 0; i < 90; ++i) {
           (void)f->Add(ItemHash("item", i % 60), /*now_ms=*/1000 + static_cast<int64_t>(i / 30) * 1000,
                        &was_new, &count, &generation);
         }
         (void)f->Remove(ItemHash("item", 3), /*now_ms=*/3500, &generation);
         return AnyFilter(std::move(f));
       }},
      {FilterKind::kTDigest,
       [] {
         // 70 samples in a 70-slot digest: merged centroids and unmerged values both.
         std::unique_ptr<TDigest> f;
         EXPECT_EQ(TDigest::Create(10, FilterLimits{}, nullptr, &f), FilterStatus::kOk);
         for (int i = 0; i < 100; ++i) (void)f->Add(std::sqrt(i * 7.0));
         return AnyFilter(std::move(f));
       }},
  };
  return samples;
}

using test_support::WholePayload;

std::string KindName(FilterKind kind) {
  return std::to_string(static_cast<int>(kind)) + " (" + std::string(ToString(kind)) + ")";
}

TEST(CodecRegistry, KindsAreDistinctAndEachFindsItsOwnCodec) {
  std::set<uint8_t> kinds;
  for (const FamilyCodec* codec : RegisteredCodecs()) {
    const uint8_t kind = static_cast<uint8_t>(codec->kind());
    EXPECT_NE(kind, 0) << codec->name() << ": kind 0 is never a family";
    EXPECT_TRUE(kinds.insert(kind).second)
        << codec->name() << " registers kind " << int{kind} << ", already taken";
    EXPECT_EQ(FindCodec(codec->kind()), codec) << codec->name();
    EXPECT_FALSE(codec->name().empty()) << "kind " << int{kind};
    EXPECT_EQ(ToString(codec->kind()), codec->name());
  }
  EXPECT_FALSE(kinds.empty());
}

TEST(CodecRegistry, OnlyRegisteredKindBytesAreKnown) {
  size_t known = 0;
  for (int byte = 0; byte < 256; ++byte) {
    const bool registered = FindCodec(static_cast<FilterKind>(byte)) != nullptr;
    EXPECT_EQ(IsKnownFilterKind(static_cast<uint8_t>(byte)), registered) << "kind " << byte;
    known += registered ? 1 : 0;
  }
  EXPECT_EQ(known, RegisteredCodecs().size());
}

TEST(CodecRegistry, EveryAnyFilterAlternativeHasExactlyOneCodec) {
  std::map<size_t, std::string> owner;
  for (const FamilyCodec* codec : RegisteredCodecs()) {
    ASSERT_LT(codec->alternative(), std::variant_size_v<AnyFilter>) << codec->name();
    const auto [it, fresh] = owner.emplace(codec->alternative(), std::string(codec->name()));
    EXPECT_TRUE(fresh) << codec->name() << " and " << it->second
                       << " both claim AnyFilter alternative " << codec->alternative();
  }
  EXPECT_EQ(owner.size(), std::variant_size_v<AnyFilter>)
      << "an AnyFilter alternative has no codec: its keys could never be saved";
}

TEST(CodecRegistry, EveryFamilysLongestHeaderFitsASnapshot) {
  for (const FamilyCodec* codec : RegisteredCodecs()) {
    EXPECT_LE(codec->max_header_bytes(), kMaxSnapshotFilterHeaderBytes)
        << codec->name() << ": its largest valid filter could be saved but never loaded";
  }
}

TEST(CodecRegistry, RegisteredKindsAllHaveASample) {
  for (const FamilyCodec* codec : RegisteredCodecs()) {
    EXPECT_TRUE(Samples().count(codec->kind()))
        << "add a sample of " << KindName(codec->kind()) << " to Samples()";
  }
}

TEST(CodecRegistry, EveryKindRoundTripsThroughItsCodec) {
  for (const FamilyCodec* codec : RegisteredCodecs()) {
    auto sample = Samples().find(codec->kind());
    if (sample == Samples().end()) continue;  // RegisteredKindsAllHaveASample fails
    SCOPED_TRACE(KindName(codec->kind()));
    const AnyFilter filter = sample->second();
    EXPECT_EQ(&CodecOf(filter), codec);
    EXPECT_EQ(KindOf(filter), codec->kind());

    const FilterHeader header = DescribeFilter(filter);
    EXPECT_EQ(header.kind, codec->kind()) << "the codec describes a filter as another kind";
    EXPECT_LE(header.bytes.size(), codec->max_header_bytes());
    const std::string payload = WholePayload(filter, header);
    std::unique_ptr<FilterLoader> loader;
    Status s = FilterLoader::Begin(header.kind, header.bytes, header.payload_bytes,
                                   FilterLimits{}, nullptr, &loader);
    ASSERT_TRUE(s.ok()) << s.message();
    s = loader->Write(0, reinterpret_cast<const uint8_t*>(payload.data()), payload.size());
    ASSERT_TRUE(s.ok()) << s.message();
    AnyFilter loaded;
    s = loader->Finish(&loaded);
    ASSERT_TRUE(s.ok()) << s.message();

    EXPECT_EQ(loaded.index(), filter.index());
    const FilterHeader again = DescribeFilter(loaded);
    EXPECT_EQ(again.bytes, header.bytes);
    EXPECT_EQ(WholePayload(loaded, again), payload);

    const AnyFilter clone = CloneFilter(filter);
    EXPECT_EQ(DescribeFilter(clone).bytes, header.bytes);
  }
}

// DUMP's payload (persistence/dump_payload.h) carries every family: what
// RESTORE decodes is byte for byte the filter DUMP encoded, charged to the
// budget like any filter and released with it.
TEST(CodecRegistry, EveryKindRoundTripsThroughADumpPayload) {
  for (const FamilyCodec* codec : RegisteredCodecs()) {
    auto sample = Samples().find(codec->kind());
    if (sample == Samples().end()) continue;  // RegisteredKindsAllHaveASample fails
    SCOPED_TRACE(KindName(codec->kind()));
    const AnyFilter filter = sample->second();
    const std::string dumped = EncodeDumpPayload(filter);
    MemoryBudget budget(/*limit_bytes=*/0);
    {
      AnyFilter restored;
      std::string why;
      ASSERT_EQ(DecodeDumpPayload(dumped, FilterLimits{}, &budget, &restored, &why),
                DumpPayloadError::kNone)
          << why;
      const FilterHeader header = DescribeFilter(filter);
      const FilterHeader again = DescribeFilter(restored);
      EXPECT_EQ(again.kind, header.kind);
      EXPECT_EQ(again.bytes, header.bytes);
      EXPECT_EQ(WholePayload(restored, again), WholePayload(filter, header));
      EXPECT_GT(budget.used(), 0u) << "the restored filter is not charged to the budget";
      EXPECT_EQ(EncodeDumpPayload(restored), dumped);
    }
    EXPECT_EQ(budget.used(), 0u) << "the restored filter's memory outlived it";
  }
}

}  // namespace
}  // namespace bloomgate
