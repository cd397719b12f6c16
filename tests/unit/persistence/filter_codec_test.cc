// The filter codec: DescribeFilter / CopyPayload / FilterLoader round trips
// for every family, header validation field by field, size claims that must
// fail before allocating, payload writes in any order, and CloneFilter.

#include "persistence/filter_codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "persistence/byte_io.h"
#include "persistence/codec/header_fields.h"
#include "tests/unit/filters/filter_test_support.h"
#include "tests/unit/persistence/whole_payload.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;

// ---- Building filters -------------------------------------------------------

struct Built {
  AnyFilter filter;
  uint64_t added = 0;  // "item:0" .. "item:<added-1>" went in
};

Built Bloom(uint64_t capacity, uint32_t expansion, uint64_t items, MemoryBudget* budget = nullptr) {
  std::unique_ptr<ScalableBloomFilter> f;
  EXPECT_EQ(ScalableBloomFilter::Create(ScalableBloomOptions{0.01, capacity, expansion},
                                        FilterLimits{}, budget, &f),
            FilterStatus::kOk);
  Built built;
  bool added = false;
  for (; built.added < items; ++built.added) {
    if (f->Add(ItemHash("item", built.added), &added) != FilterStatus::kOk) break;
  }
  built.filter = std::move(f);
  return built;
}

Built Counting(uint64_t capacity, uint32_t counter_bits, uint64_t items) {
  std::unique_ptr<CountingBloomFilter> f;
  EXPECT_EQ(CountingBloomFilter::Create(CountingBloomOptions{0.01, capacity, 2, counter_bits},
                                        FilterLimits{}, nullptr, &f),
            FilterStatus::kOk);
  Built built;
  bool was_new = false;
  for (; built.added < items; ++built.added) {
    EXPECT_EQ(f->Add(ItemHash("item", built.added), &was_new), FilterStatus::kOk);
  }
  built.filter = std::move(f);
  return built;
}

Built Cuckoo(uint64_t capacity, uint32_t expansion, uint64_t items) {
  CuckooFilterOptions options;
  options.capacity = capacity;
  options.expansion = expansion;
  std::unique_ptr<CuckooFilter> f;
  EXPECT_EQ(CuckooFilter::Create(options, FilterLimits{}, nullptr, &f), FilterStatus::kOk);
  Built built;
  for (; built.added < items; ++built.added) {
    EXPECT_EQ(f->Add(ItemHash("item", built.added)), FilterStatus::kOk);
  }
  built.filter = std::move(f);
  return built;
}

using test_support::WholePayload;

Status Load(FilterKind kind, std::string_view header, std::string_view payload,
            const FilterLimits& limits, MemoryBudget* budget, AnyFilter* out) {
  std::unique_ptr<FilterLoader> loader;
  if (Status s = FilterLoader::Begin(kind, header, payload.size(), limits, budget, &loader);
      !s.ok()) {
    return s;
  }
  if (Status s = loader->Write(0, reinterpret_cast<const uint8_t*>(payload.data()), payload.size());
      !s.ok()) {
    return s;
  }
  return loader->Finish(out);
}

AnyFilter RoundTrip(const AnyFilter& filter) {
  const FilterHeader header = DescribeFilter(filter);
  AnyFilter out;
  const Status s = Load(header.kind, header.bytes, WholePayload(filter, header), FilterLimits{},
                        nullptr, &out);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

// ---- Comparing filters --------------------------------------------------

bool Holds(const AnyFilter& filter) {
  return std::visit([](const auto& f) { return f != nullptr; }, filter);
}

bool MayContain(const AnyFilter& filter, const KeyHash& h) {
  // Sketches (count-min, top-k) answer no membership question: false.
  return std::visit(
      [&](const auto& f) {
        if constexpr (requires { f->MayContain(h); }) {
          return f->MayContain(h);
        } else {
          return false;
        }
      },
      filter);
}

uint64_t CountOf(const AnyFilter& filter, const KeyHash& h) {
  if (const auto* c = std::get_if<std::unique_ptr<CountingBloomFilter>>(&filter)) {
    return (*c)->Count(h);
  }
  if (const auto* c = std::get_if<std::unique_ptr<CuckooFilter>>(&filter)) return (*c)->Count(h);
  return MayContain(filter, h) ? 1 : 0;
}

// Same header bytes, same payload, every added item still found, and the
// same answer (and count) for 10,000 probe items.
void ExpectSameFilter(const AnyFilter& want, const AnyFilter& got, uint64_t added) {
  ASSERT_TRUE(Holds(got));
  ASSERT_EQ(want.index(), got.index());
  const FilterHeader want_header = DescribeFilter(want);
  const FilterHeader got_header = DescribeFilter(got);
  EXPECT_EQ(want_header.bytes, got_header.bytes);
  EXPECT_EQ(want_header.payload_bytes, got_header.payload_bytes);
  EXPECT_TRUE(WholePayload(want, want_header) == WholePayload(got, got_header));
  for (uint64_t i = 0; i < added; ++i) {
    ASSERT_TRUE(MayContain(got, ItemHash("item", i))) << "item " << i;
  }
  uint64_t differences = 0;
  uint64_t positives = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    const KeyHash h = ItemHash("probe", i);
    differences += MayContain(want, h) != MayContain(got, h) || CountOf(want, h) != CountOf(got, h);
    positives += MayContain(got, h);
  }
  EXPECT_EQ(differences, 0u) << "of 10000 probes (" << positives << " false positives)";
}

void ExpectSameInfo(const ScalableBloomFilter& want, const ScalableBloomFilter& got) {
  EXPECT_EQ(got.items(), want.items());
  EXPECT_EQ(got.capacity(), want.capacity());
  EXPECT_EQ(got.expansion(), want.expansion());
  EXPECT_EQ(got.error_rate(), want.error_rate());
  EXPECT_EQ(got.memory_bytes(), want.memory_bytes());
  const auto a = want.Layers();
  const auto b = got.Layers();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i].capacity, a[i].capacity) << i;
    EXPECT_EQ(b[i].items, a[i].items) << i;
    EXPECT_EQ(b[i].bits, a[i].bits) << i;
    EXPECT_EQ(b[i].bytes, a[i].bytes) << i;
    EXPECT_EQ(b[i].probes, a[i].probes) << i;
    EXPECT_EQ(b[i].error_rate, a[i].error_rate) << i;
  }
}

void ExpectSameInfo(const CountingBloomFilter& want, const CountingBloomFilter& got) {
  EXPECT_EQ(got.items(), want.items());
  EXPECT_EQ(got.capacity(), want.capacity());
  EXPECT_EQ(got.expansion(), want.expansion());
  EXPECT_EQ(got.error_rate(), want.error_rate());
  EXPECT_EQ(got.counter_bits(), want.counter_bits());
  EXPECT_EQ(got.saturated_counters(), want.saturated_counters());
  EXPECT_EQ(got.memory_bytes(), want.memory_bytes());
  const auto a = want.Layers();
  const auto b = got.Layers();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i].capacity, a[i].capacity) << i;
    EXPECT_EQ(b[i].items, a[i].items) << i;
    EXPECT_EQ(b[i].net_items, a[i].net_items) << i;
    EXPECT_EQ(b[i].cells, a[i].cells) << i;
    EXPECT_EQ(b[i].bytes, a[i].bytes) << i;
    EXPECT_EQ(b[i].probes, a[i].probes) << i;
    EXPECT_EQ(b[i].error_rate, a[i].error_rate) << i;
    EXPECT_EQ(b[i].saturated_counters, a[i].saturated_counters) << i;
  }
}

// Size aside (see CuckooFilter::Restore: compaction leaves spare array
// entries in the original), CF.INFO and the sub-filters must match.
void ExpectSameInfo(const CuckooFilter& want, const CuckooFilter& got, bool same_size = true) {
  const CuckooFilterInfo a = want.Info();
  const CuckooFilterInfo b = got.Info();
  if (same_size) {
    EXPECT_EQ(b.size, a.size);
  }
  EXPECT_EQ(b.num_buckets, a.num_buckets);
  EXPECT_EQ(b.num_filters, a.num_filters);
  EXPECT_EQ(b.items, a.items);
  EXPECT_EQ(b.deletes, a.deletes);
  EXPECT_EQ(b.bucket_size, a.bucket_size);
  EXPECT_EQ(b.expansion, a.expansion);
  EXPECT_EQ(b.max_iterations, a.max_iterations);
  EXPECT_EQ(got.max_expansions(), want.max_expansions());
  const auto x = want.SubFilters();
  const auto y = got.SubFilters();
  ASSERT_EQ(x.size(), y.size());
  for (size_t k = 0; k < x.size(); ++k) {
    EXPECT_EQ(y[k].num_buckets, x[k].num_buckets) << k;
    EXPECT_EQ(y[k].occupied, x[k].occupied) << k;
  }
}

template <typename T>
const T& As(const AnyFilter& filter) {
  return *std::get<std::unique_ptr<T>>(filter);
}

// ---- Round trips --------------------------------------------------------

TEST(FilterCodec, ScalableBloomWithSeveralLayersRoundTrips) {
  const Built b = Bloom(/*capacity=*/100, /*expansion=*/2, /*items=*/3000);
  ASSERT_GE(As<ScalableBloomFilter>(b.filter).num_layers(), 5u);
  const AnyFilter restored = RoundTrip(b.filter);
  ExpectSameFilter(b.filter, restored, b.added);
  ExpectSameInfo(As<ScalableBloomFilter>(b.filter), As<ScalableBloomFilter>(restored));
}

TEST(FilterCodec, ClassicLayoutBloomRoundTripsAsClassicWithItsSeed) {
  // Our classic layout (block_layout 6): what BF.RESERVE makes at 0.001 and
  // below. The header must say so, or the loader would rebuild blocked
  // layers and every lookup would probe the wrong bits.
  ScalableBloomOptions options{1e-4, 100, 2};
  options.layout = BloomLayout::kClassic;
  options.hash_seed = 77;
  std::unique_ptr<ScalableBloomFilter> f;
  ASSERT_EQ(ScalableBloomFilter::Create(options, FilterLimits{}, nullptr, &f), FilterStatus::kOk);
  Built b;
  bool added = false;
  for (; b.added < 1000; ++b.added) {
    ASSERT_EQ(f->Add(ItemHash("item", b.added), &added), FilterStatus::kOk);
  }
  b.filter = std::move(f);
  const FilterHeader header = DescribeFilter(b.filter);
  ASSERT_GT(header.bytes.size(), 11u);
  EXPECT_EQ(static_cast<uint8_t>(header.bytes[11]), codec::kClassicBloomLayout);
  const AnyFilter restored = RoundTrip(b.filter);
  const auto& got = As<ScalableBloomFilter>(restored);
  EXPECT_EQ(got.layout(), BloomLayout::kClassic);
  EXPECT_EQ(got.hash_seed(), 77u);
  ExpectSameFilter(b.filter, restored, b.added);
  ExpectSameInfo(As<ScalableBloomFilter>(b.filter), got);
}

TEST(FilterCodec, NonScalingBloomRoundTripsAndStaysFull) {
  const Built b = Bloom(/*capacity=*/200, /*expansion=*/0, /*items=*/1000);
  ASSERT_LT(b.added, 1000u);  // it filled up
  AnyFilter restored = RoundTrip(b.filter);
  ExpectSameFilter(b.filter, restored, b.added);
  ExpectSameInfo(As<ScalableBloomFilter>(b.filter), As<ScalableBloomFilter>(restored));
  bool added = false;
  auto& f = *std::get<std::unique_ptr<ScalableBloomFilter>>(restored);
  EXPECT_EQ(f.Add(ItemHash("item", b.added), &added), FilterStatus::kFull);
}

TEST(FilterCodec, ARestoredBloomFilterGrowsExactlyLikeTheOriginal) {
  Built b = Bloom(/*capacity=*/100, /*expansion=*/2, /*items=*/500);
  AnyFilter restored = RoundTrip(b.filter);
  auto& original = *std::get<std::unique_ptr<ScalableBloomFilter>>(b.filter);
  auto& copy = *std::get<std::unique_ptr<ScalableBloomFilter>>(restored);
  bool a = false;
  bool c = false;
  for (uint64_t i = 500; i < 2000; ++i) {
    ASSERT_EQ(original.Add(ItemHash("item", i), &a), copy.Add(ItemHash("item", i), &c));
    ASSERT_EQ(a, c) << i;
  }
  ExpectSameFilter(b.filter, restored, 2000);
}

// valkey-bloom's TIGHTENING: a ratio other than 0.5 is flagged on
// block_layout and saved at the header's end, so the restored filter grows
// its next layers at the same rates (and a default filter's header is the
// one it always was: the golden files pin that).
TEST(FilterCodec, ATighteningRatioIsSavedAndTheRestoredFilterGrowsAtItsRates) {
  ScalableBloomOptions options{0.01, 100, 2};
  options.tightening = 0.3;
  std::unique_ptr<ScalableBloomFilter> f;
  ASSERT_EQ(ScalableBloomFilter::Create(options, FilterLimits{}, nullptr, &f), FilterStatus::kOk);
  bool added = false;
  for (uint64_t i = 0; i < 500; ++i) ASSERT_EQ(f->Add(ItemHash("item", i), &added), FilterStatus::kOk);
  ASSERT_GE(f->num_layers(), 3u);
  AnyFilter original = std::move(f);
  const FilterHeader header = DescribeFilter(original);
  EXPECT_EQ(static_cast<uint8_t>(header.bytes[11]),
            codec::kBlockedBloomLayout | codec::kBloomTighteningFlag);
  AnyFilter restored = RoundTrip(original);
  auto& a = *std::get<std::unique_ptr<ScalableBloomFilter>>(original);
  auto& b = *std::get<std::unique_ptr<ScalableBloomFilter>>(restored);
  EXPECT_EQ(b.tightening(), 0.3);
  ExpectSameInfo(a, b);
  bool x = false;
  bool y = false;
  for (uint64_t i = 500; i < 3000; ++i) {
    ASSERT_EQ(a.Add(ItemHash("item", i), &x), b.Add(ItemHash("item", i), &y));
    ASSERT_EQ(x, y) << i;
  }
  ExpectSameInfo(a, b);
  ExpectSameFilter(original, restored, 3000);
  const auto layers = b.Layers();
  for (size_t i = 1; i < layers.size(); ++i) {
    EXPECT_EQ(layers[i].error_rate, layers[i - 1].error_rate * 0.3) << i;
  }
}

TEST(FilterCodec, ADefaultTighteningAddsNothingToTheHeader) {
  const Built b = Bloom(/*capacity=*/100, /*expansion=*/2, /*items=*/10);
  const FilterHeader header = DescribeFilter(b.filter);
  EXPECT_EQ(static_cast<uint8_t>(header.bytes[11]), codec::kBlockedBloomLayout);
  EXPECT_EQ(header.bytes.size(), 28u + 40u);  // one layer, no tightening field
}

TEST(FilterCodec, ATighteningFieldOutOfRangeOrMissingIsRefusedByName) {
  ScalableBloomOptions options{0.01, 100, 2};
  options.tightening = 0.3;
  std::unique_ptr<ScalableBloomFilter> f;
  ASSERT_EQ(ScalableBloomFilter::Create(options, FilterLimits{}, nullptr, &f), FilterStatus::kOk);
  const AnyFilter filter = std::move(f);
  const FilterHeader header = DescribeFilter(filter);
  const std::string payload = WholePayload(filter, header);
  AnyFilter out;
  for (double bad : {0.0, 1.0, -0.5, std::numeric_limits<double>::quiet_NaN()}) {
    std::string bytes = header.bytes;
    std::string field;
    ByteWriter w(&field);
    w.PutF64(bad);
    bytes.replace(bytes.size() - 8, 8, field);
    const Status s = Load(header.kind, bytes, payload, FilterLimits{}, nullptr, &out);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("tightening"), std::string::npos) << s.message();
  }
  const Status cut = Load(header.kind, header.bytes.substr(0, header.bytes.size() - 8), payload,
                          FilterLimits{}, nullptr, &out);
  EXPECT_FALSE(cut.ok());
  EXPECT_NE(cut.message().find("tightening"), std::string::npos) << cut.message();
}

TEST(FilterCodec, ACountingHeaderWithTheTighteningFlagIsRefused) {
  const Built b = Counting(/*capacity=*/100, /*counter_bits=*/4, /*items=*/10);
  FilterHeader header = DescribeFilter(b.filter);
  header.bytes[11] = static_cast<char>(header.bytes[11] | codec::kBloomTighteningFlag);
  AnyFilter out;
  const Status s =
      Load(header.kind, header.bytes, WholePayload(b.filter, header), FilterLimits{}, nullptr, &out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("block_layout 129"), std::string::npos) << s.message();
}

TEST(FilterCodec, CountingBloomWithSaturatedCountersRoundTrips) {
  Built b = Counting(/*capacity=*/100, /*counter_bits=*/4, /*items=*/700);
  auto& f = *std::get<std::unique_ptr<CountingBloomFilter>>(b.filter);
  bool was_new = false;
  for (int i = 0; i < 20; ++i) ASSERT_EQ(f.Add(ItemHash("item", 3), &was_new), FilterStatus::kOk);
  for (uint64_t i = 600; i < 700; ++i) ASSERT_TRUE(f.Remove(ItemHash("item", i)));
  ASSERT_GT(f.saturated_counters(), 0u);
  ASSERT_GE(f.num_layers(), 3u);
  AnyFilter restored = RoundTrip(b.filter);
  ExpectSameFilter(b.filter, restored, /*added=*/600);
  ExpectSameInfo(f, As<CountingBloomFilter>(restored));
  // Removes behave the same afterwards.
  auto& copy = *std::get<std::unique_ptr<CountingBloomFilter>>(restored);
  for (uint64_t i = 0; i < 300; ++i) {
    ASSERT_EQ(f.Remove(ItemHash("item", i)), copy.Remove(ItemHash("item", i)));
  }
  ExpectSameFilter(b.filter, restored, 0);
}

TEST(FilterCodec, CountingBloomWithEightBitCountersRoundTrips) {
  const Built b = Counting(/*capacity=*/50, /*counter_bits=*/8, /*items=*/400);
  const AnyFilter restored = RoundTrip(b.filter);
  ExpectSameFilter(b.filter, restored, b.added);
  ExpectSameInfo(As<CountingBloomFilter>(b.filter), As<CountingBloomFilter>(restored));
}

TEST(FilterCodec, CuckooWithSeveralSubFiltersRoundTrips) {
  const Built b = Cuckoo(/*capacity=*/64, /*expansion=*/2, /*items=*/600);
  ASSERT_GE(As<CuckooFilter>(b.filter).num_filters(), 3u);
  const AnyFilter restored = RoundTrip(b.filter);
  ExpectSameFilter(b.filter, restored, b.added);
  ExpectSameInfo(As<CuckooFilter>(b.filter), As<CuckooFilter>(restored));
}

TEST(FilterCodec, CuckooAfterDeletesAndCompactionRoundTrips) {
  Built b = Cuckoo(/*capacity=*/64, /*expansion=*/1, /*items=*/400);
  auto& f = *std::get<std::unique_ptr<CuckooFilter>>(b.filter);
  const uint32_t grown = f.num_filters();
  ASSERT_GE(grown, 4u);
  // Remove the newest two thirds: auto-compaction runs along the way.
  for (uint64_t i = 130; i < 400; ++i) ASSERT_TRUE(f.Remove(ItemHash("item", i)));
  f.Compact();
  for (uint64_t i = 120; i < 130; ++i) ASSERT_TRUE(f.Remove(ItemHash("item", i)));
  ASSERT_LT(f.num_filters(), grown);
  ASSERT_EQ(f.deletes(), 10u);
  const AnyFilter restored = RoundTrip(b.filter);
  ExpectSameFilter(b.filter, restored, /*added=*/120);
  ExpectSameInfo(f, As<CuckooFilter>(restored), /*same_size=*/false);
  // The original keeps the freed sub-filters' array entries (24 bytes each:
  // the slots' pointer and size, the bucket count); nothing else differs.
  EXPECT_EQ(f.memory_bytes() - As<CuckooFilter>(restored).memory_bytes(),
            uint64_t{grown - f.num_filters()} * 24);
}

TEST(FilterCodec, EmptyFiltersOfEveryFamilyRoundTrip) {
  for (const Built& b : {Bloom(100, 2, 0), Counting(100, 4, 0), Cuckoo(64, 1, 0)}) {
    const AnyFilter restored = RoundTrip(b.filter);
    ExpectSameFilter(b.filter, restored, 0);
  }
}

TEST(FilterCodec, AHeaderWithoutPayloadBuildsTheEmptyFilter) {
  // A creation record: the header of a fresh filter, no payload writes.
  for (const Built& b : {Bloom(1000, 2, 0), Counting(1000, 8, 0), Cuckoo(1000, 2, 0)}) {
    const FilterHeader header = DescribeFilter(b.filter);
    std::unique_ptr<FilterLoader> loader;
    ASSERT_TRUE(FilterLoader::Begin(header.kind, header.bytes, header.payload_bytes,
                                    FilterLimits{}, nullptr, &loader)
                    .ok());
    AnyFilter out;
    ASSERT_TRUE(loader->Finish(&out).ok());
    ExpectSameFilter(b.filter, out, 0);
  }
}

TEST(FilterCodec, PayloadBytesAreLittleEndianWordsAndCuckooSlotsInOrder) {
  const Built b = Bloom(10, 2, 0);
  const FilterHeader header = DescribeFilter(b.filter);
  std::string payload(header.payload_bytes, '\0');
  payload[0] = 0x01;                       // bit 0 of word 0
  payload[15] = static_cast<char>(0x80);   // bit 63 of word 1
  AnyFilter out;
  ASSERT_TRUE(Load(header.kind, header.bytes, payload, FilterLimits{}, nullptr, &out).ok());
  const BloomLayer& layer = As<ScalableBloomFilter>(out).layer(0);
  EXPECT_EQ(layer.words()[0].load(std::memory_order_relaxed), 1u);
  EXPECT_EQ(layer.words()[1].load(std::memory_order_relaxed), uint64_t{1} << 63);

  Built c = Cuckoo(4, 2, 0);  // 2 buckets of 2 slots
  ASSERT_EQ(std::get<std::unique_ptr<CuckooFilter>>(c.filter)->Add(ItemHash("item", 0)),
            FilterStatus::kOk);
  const FilterHeader ch = DescribeFilter(c.filter);
  ASSERT_EQ(ch.payload_bytes, 4u);
  std::string slots(4, '\0');
  ASSERT_EQ(As<CuckooFilter>(c.filter).CopySlots(0, 0, reinterpret_cast<uint8_t*>(slots.data()), 4),
            4u);
  EXPECT_EQ(WholePayload(c.filter, ch), slots);
}

TEST(FilterCodec, HeaderBytesOfAKnownFilterArePinned) {
  // Golden bytes: a change here is a format change and needs a new
  // layout_version (and a FORMAT.md update).
  std::unique_ptr<ScalableBloomFilter> bloom;
  ASSERT_EQ(ScalableBloomFilter::Restore(0.01, 2,
                                         std::vector<BloomLayerShape>{{100, 7, 0.005, 1024, 7}},
                                         FilterLimits{}, nullptr, &bloom),
            FilterStatus::kOk);
  const FilterHeader header = DescribeFilter(AnyFilter(std::move(bloom)));
  const std::string expected =
      std::string("\x02\x00" "\x01" "\x00\x00\x00\x00\x00\x00\x00\x00" "\x01", 12) +
      std::string("\x7b\x14\xae\x47\xe1\x7a\x84\x3f" "\x02\x00\x00\x00" "\x01\x00\x00\x00", 16) +
      std::string("\x64\x00\x00\x00\x00\x00\x00\x00" "\x07\x00\x00\x00\x00\x00\x00\x00"
                  "\x7b\x14\xae\x47\xe1\x7a\x74\x3f" "\x00\x04\x00\x00\x00\x00\x00\x00"
                  "\x00\x02\x00\x00" "\x07\x00\x00\x00", 40);
  EXPECT_EQ(header.kind, FilterKind::kScalableBloom);
  EXPECT_EQ(header.bytes, expected);
  EXPECT_EQ(header.payload_bytes, 128u);

  // The filter's seed is the u64 at +3, little-endian; it loads back.
  std::unique_ptr<ScalableBloomFilter> seeded;
  ASSERT_EQ(ScalableBloomFilter::Restore(0.01, 2,
                                         std::vector<BloomLayerShape>{{100, 7, 0.005, 1024, 7}},
                                         FilterLimits{}, nullptr, &seeded, 0x0123456789abcdefull),
            FilterStatus::kOk);
  const FilterHeader seeded_header = DescribeFilter(AnyFilter(std::move(seeded)));
  EXPECT_EQ(seeded_header.bytes.substr(0, 12),
            std::string("\x02\x00" "\x01" "\xef\xcd\xab\x89\x67\x45\x23\x01" "\x01", 12));
  EXPECT_EQ(seeded_header.bytes.substr(12), expected.substr(12));
  std::unique_ptr<FilterLoader> loader;
  ASSERT_TRUE(FilterLoader::Begin(FilterKind::kScalableBloom, seeded_header.bytes, 128,
                                  FilterLimits{}, nullptr, &loader)
                  .ok());
  ASSERT_TRUE(loader->Write(0, reinterpret_cast<const uint8_t*>(std::string(128, '\0').data()), 128)
                  .ok());
  AnyFilter loaded;
  ASSERT_TRUE(loader->Finish(&loaded).ok());
  EXPECT_EQ(As<ScalableBloomFilter>(loaded).hash_seed(), 0x0123456789abcdefull);

  // A version 1 header (seed 0, written before per-filter seeds) still loads.
  std::string v1 = expected;
  v1[0] = '\x01';
  ASSERT_TRUE(FilterLoader::Begin(FilterKind::kScalableBloom, v1, 128, FilterLimits{}, nullptr,
                                  &loader)
                  .ok());
}

// ---- Header validation ------------------------------------------------------

// Overwrites the little-endian bytes of `value` at `at`.
template <typename T>
std::string Patched(std::string bytes, size_t at, T value) {
  uint64_t bits;
  if constexpr (std::is_same_v<T, double>) {
    bits = std::bit_cast<uint64_t>(value);
  } else {
    bits = static_cast<uint64_t>(value);
  }
  if (at > bytes.size() || bytes.size() - at < sizeof(T)) {
    ADD_FAILURE() << "patch at " << at << " outside a " << bytes.size() << "-byte header";
    return bytes;
  }
  char le[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i) le[i] = static_cast<char>(bits >> (8 * i));
  std::memcpy(bytes.data() + at, le, sizeof(T));
  return bytes;
}

struct BadHeader {
  const char* what;
  FilterKind kind;
  std::function<std::string(const std::string&)> change;
  int64_t payload_delta;  // added to the true payload_bytes
  const char* message;    // a substring of the error
};

TEST(FilterCodec, BeginRejectsEveryBadHeaderFieldWithAPreciseMessage) {
  // Valid headers to spoil: a 2-layer Bloom, a 2-layer 4-bit counting filter
  // and a 2-sub-filter cuckoo filter (bucket 2, base 8 buckets, expansion 2).
  const Built bloom = Bloom(100, 2, 150);
  const Built counting = Counting(20, 4, 30);
  Built cuckoo = Cuckoo(16, 2, 0);
  {
    auto& f = *std::get<std::unique_ptr<CuckooFilter>>(cuckoo.filter);
    for (uint64_t i = 0; f.num_filters() < 2; ++i) ASSERT_TRUE(f.Add(ItemHash("item", i)) == FilterStatus::kOk);
  }
  ASSERT_EQ(As<ScalableBloomFilter>(bloom.filter).num_layers(), 2u);
  ASSERT_EQ(As<CountingBloomFilter>(counting.filter).num_layers(), 2u);
  const FilterHeader headers[] = {DescribeFilter(bloom.filter), DescribeFilter(counting.filter),
                                  DescribeFilter(cuckoo.filter)};
  using K = FilterKind;
  // Offsets from the diagram in filter_codec.cc. Bloom layers start at 28,
  // counting layers at 29, cuckoo sub-filters at 56; layers are 40 bytes.
  const BadHeader cases[] = {
      {"layout version", K::kScalableBloom, [](auto h) { return Patched<uint16_t>(h, 0, 3); }, 0,
       "layout_version 3 not supported (expected 1 or 2)"},
      {"hash algorithm", K::kScalableBloom, [](auto h) { return Patched<uint8_t>(h, 2, 3); }, 0,
       "hash_algorithm 3 not supported"},
      {"seed in a version 1 header", K::kCountingBloom,
       [](auto h) { return Patched<uint64_t>(Patched<uint16_t>(h, 0, 1), 3, 42); }, 0,
       "hash_seed 42 in a layout_version 1 header (version 1 filters have seed 0)"},
      {"block layout", K::kScalableBloom, [](auto h) { return Patched<uint8_t>(h, 11, 2); }, 0,
       "block_layout 2 not supported for this family (expected 1 or 6, or 5 with hash_algorithm 2)"},
      {"cuckoo layout", K::kCuckoo, [](auto h) { return Patched<uint8_t>(h, 11, 1); }, 0,
       "block_layout 1 not supported for this family (expected 2, or 5 with hash_algorithm 2)"},
      {"error rate 0", K::kScalableBloom, [](auto h) { return Patched<double>(h, 12, 0.0); }, 0,
       "error_rate 0 not in (0, 0.25]"},
      {"error rate 0.3", K::kScalableBloom, [](auto h) { return Patched<double>(h, 12, 0.3); }, 0,
       "error_rate 0.29999999999999999 not in (0, 0.25]"},
      {"error rate NaN", K::kCountingBloom,
       [](auto h) { return Patched<double>(h, 12, std::numeric_limits<double>::quiet_NaN()); }, 0,
       "error_rate nan not in (0, 0.25]"},
      {"expansion", K::kScalableBloom, [](auto h) { return Patched<uint32_t>(h, 20, 40000); }, 0,
       "expansion 40000 not in [0, 32768]"},
      {"no layers", K::kScalableBloom, [](auto h) { return Patched<uint32_t>(h, 24, 0); }, 0,
       "num_layers 0 not in [1, 64]"},
      {"65 layers", K::kScalableBloom, [](auto h) { return Patched<uint32_t>(h, 24, 65); }, 0,
       "num_layers 65 not in [1, 64]"},
      {"more layers than bytes", K::kScalableBloom,
       [](auto h) { return Patched<uint32_t>(h, 24, 3); }, 0,
       "header ends inside layer 2 capacity at byte 108"},
      {"non-scaling with 2 layers", K::kScalableBloom,
       [](auto h) { return Patched<uint32_t>(h, 20, 0); }, 0,
       "num_layers 2 but expansion 0 (NONSCALING) filters have exactly 1 layer"},
      {"layer capacity", K::kScalableBloom, [](auto h) { return Patched<uint64_t>(h, 68, 0); }, 0,
       "layer 1 capacity 0"},
      {"layer error rate", K::kScalableBloom,
       [](auto h) { return Patched<double>(h, 28 + 16, 0.5); }, 0,
       "layer 0 error_rate 0.5 not in (0, 0.25]"},
      {"bits not whole blocks", K::kScalableBloom,
       [](auto h) { return Patched<uint64_t>(h, 28 + 24, 1000); }, 0,
       "layer 0 bits 1000 not a multiple of 512"},
      {"zero bits", K::kScalableBloom, [](auto h) { return Patched<uint64_t>(h, 68 + 24, 0); }, 0,
       "layer 1 bits 0 not a multiple of 512"},
      {"block bits", K::kScalableBloom,
       [](auto h) { return Patched<uint32_t>(h, 28 + 32, 256); }, 0,
       "layer 0 block_bits 256 (expected 512)"},
      {"zero probes", K::kScalableBloom, [](auto h) { return Patched<uint32_t>(h, 28 + 36, 0); },
       0, "layer 0 probes 0 not in [1, 64]"},
      {"65 probes", K::kCountingBloom, [](auto h) { return Patched<uint32_t>(h, 69 + 36, 65); },
       0, "layer 1 probes 65 not in [1, 64]"},
      {"item count overflow", K::kScalableBloom,
       [](auto h) {
         return Patched<uint64_t>(Patched<uint64_t>(h, 28 + 8, uint64_t{1} << 63), 68 + 8,
                                  uint64_t{1} << 63);
       },
       0, "layer 0 items 9223372036854775808 makes the item count exceed 2^62"},
      // Issue 10, bug 2: one layer claiming 2^64 - 10 items was accepted
      // (BF.INFO showed -10) and the first growth made the count overflow,
      // so the next snapshot was one start-up refused.
      {"item count near 2^64", K::kScalableBloom,
       [](auto h) { return Patched<uint64_t>(h, 28 + 8, UINT64_MAX - 9); }, 0,
       "layer 0 items 18446744073709551606 makes the item count exceed 2^62"},
      {"item sum over 2^62", K::kScalableBloom,
       [](auto h) {
         return Patched<uint64_t>(Patched<uint64_t>(h, 28 + 8, uint64_t{1} << 62), 68 + 8, 1);
       },
       0, "layer 1 items 1 makes the item count exceed 2^62"},
      {"trailing byte", K::kScalableBloom, [](auto h) { return h + '\0'; }, 0,
       "header has 1 bytes after its last field"},
      {"missing byte", K::kScalableBloom, [](auto h) { return h.substr(0, h.size() - 1); }, 0,
       "header ends inside layer 1 probes"},
      {"empty header", K::kCuckoo, [](auto) { return std::string(); }, 0,
       "header ends inside layout_version at byte 0 (header is 0 bytes)"},
      {"payload too short", K::kScalableBloom, [](auto h) { return h; }, -1,
       "but the layers need"},
      {"payload too long", K::kCuckoo, [](auto h) { return h; }, +1, "but the sub-filters need"},
      {"counter bits", K::kCountingBloom, [](auto h) { return Patched<uint8_t>(h, 24, 5); }, 0,
       "counter_bits 5 not in {4, 8}"},
      {"block cells", K::kCountingBloom,
       [](auto h) { return Patched<uint32_t>(h, 29 + 32, 64); }, 0,
       "layer 0 block_cells 64 (expected 128)"},
      {"cells not whole blocks", K::kCountingBloom,
       [](auto h) { return Patched<uint64_t>(h, 29 + 24, 200); }, 0,
       "layer 0 cells 200 not a multiple of 128"},
      {"net item overflow", K::kCountingBloom,
       [](auto h) {
         return Patched<int64_t>(Patched<int64_t>(h, 29 + 8, INT64_MAX), 69 + 8, 1);
       },
       0, "layer 0 items 9223372036854775807 makes the item count exceed +-2^62"},
      {"net items below -2^62", K::kCountingBloom,
       [](auto h) { return Patched<int64_t>(h, 29 + 8, -(int64_t{1} << 62) - 1); }, 0,
       "layer 0 items -4611686018427387905 makes the item count exceed +-2^62"},
      {"net item sum over 2^62", K::kCountingBloom,
       [](auto h) {
         return Patched<int64_t>(Patched<int64_t>(h, 29 + 8, int64_t{1} << 62), 69 + 8, 1);
       },
       0, "layer 1 items 1 makes the item count exceed +-2^62"},
      {"deletes over 2^62", K::kCuckoo,
       [](auto h) { return Patched<uint64_t>(h, 48, UINT64_MAX); }, 0,
       "deletes 18446744073709551615 not in [0, 2^62]"},
      {"bucket size 0", K::kCuckoo, [](auto h) { return Patched<uint32_t>(h, 12, 0); }, 0,
       "bucket_size 0 not in [1, 255]"},
      {"bucket size 256", K::kCuckoo, [](auto h) { return Patched<uint32_t>(h, 12, 256); }, 0,
       "bucket_size 256 not in [1, 255]"},
      {"max iterations", K::kCuckoo, [](auto h) { return Patched<uint32_t>(h, 16, 65536); }, 0,
       "max_iterations 65536 not in [1, 65535]"},
      {"expansion not a power of two", K::kCuckoo,
       [](auto h) { return Patched<uint32_t>(h, 20, 3); }, 0,
       "expansion 3 not 0 or a power of two in [1, 32768]"},
      {"max expansions", K::kCuckoo, [](auto h) { return Patched<uint32_t>(h, 24, 65537); }, 0,
       "max_expansions 65537 not in [1, 65536]"},
      {"base buckets", K::kCuckoo, [](auto h) { return Patched<uint64_t>(h, 28, 12); }, 0,
       "base_buckets 12 not a power of two in [2, 2^56]"},
      {"no sub-filters", K::kCuckoo, [](auto h) { return Patched<uint32_t>(h, 36, 0); }, 0,
       "num_filters 0 not in [1, 32] (max_expansions)"},
      {"more sub-filters than max expansions", K::kCuckoo,
       [](auto h) { return Patched<uint32_t>(Patched<uint32_t>(h, 24, 1), 36, 2); }, 0,
       "num_filters 2 not in [1, 1] (max_expansions)"},
      {"more sub-filters than bytes", K::kCuckoo,
       [](auto h) { return Patched<uint32_t>(h, 36, 30); }, 0,
       "header ends inside sub-filter 2 num_buckets (num_filters 30)"},
      {"non-scaling cuckoo with 2 sub-filters", K::kCuckoo,
       [](auto h) { return Patched<uint32_t>(h, 20, 0); }, 0,
       "num_filters 2 but expansion 0 (non-scaling) filters have exactly 1"},
      {"sub-filter size", K::kCuckoo, [](auto h) { return Patched<uint64_t>(h, 64, 32); }, 0,
       "sub-filter 1 num_buckets 32 (expected base_buckets x expansion^1 = 16)"},
      {"items beyond the slots", K::kCuckoo, [](auto h) { return Patched<uint64_t>(h, 40, 49); },
       0, "items 49 but the sub-filters have only 48 slots"},
  };
  for (const BadHeader& c : cases) {
    const FilterHeader& good = headers[static_cast<int>(c.kind) - 1];
    const std::string bytes = c.change(good.bytes);
    std::unique_ptr<FilterLoader> loader;
    const Status s = FilterLoader::Begin(c.kind, bytes, good.payload_bytes + c.payload_delta,
                                         FilterLimits{}, nullptr, &loader);
    EXPECT_FALSE(s.ok()) << c.what;
    EXPECT_NE(s.message().find(c.message), std::string::npos)
        << c.what << ": got \"" << s.message() << "\"";
    EXPECT_EQ(loader, nullptr) << c.what;
  }
  // And the unspoilt headers load.
  for (const FilterHeader& h : headers) {
    std::unique_ptr<FilterLoader> loader;
    EXPECT_TRUE(FilterLoader::Begin(h.kind, h.bytes, h.payload_bytes, FilterLimits{}, nullptr,
                                    &loader)
                    .ok());
  }
}

TEST(FilterCodec, BeginRejectsAnUnknownKindOrAHeaderOfAnotherFamily) {
  const FilterHeader bloom = DescribeFilter(Bloom(100, 2, 0).filter);
  std::unique_ptr<FilterLoader> loader;
  Status s = FilterLoader::Begin(static_cast<FilterKind>(9), bloom.bytes, bloom.payload_bytes,
                                 FilterLimits{}, nullptr, &loader);
  EXPECT_EQ(s.message(), "unknown filter kind 9 (expected 1 = scalable bloom, 2 = counting bloom, "
                         "3 = cuckoo, 4 = count-min sketch, 5 = top-k, 6 = windowed bloom, "
                         "7 = windowed counting bloom, 8 = t-digest)");
  s = FilterLoader::Begin(FilterKind::kCuckoo, bloom.bytes, bloom.payload_bytes, FilterLimits{},
                          nullptr, &loader);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cuckoo header: "), std::string::npos) << s.message();
  EXPECT_EQ(loader, nullptr);
}

TEST(FilterCodec, HugeSizeClaimsFailWithoutAllocating) {
  // Layer 1 claims 2^60 bits (128 PiB); a cuckoo sub-filter 2^56 x 255 slots.
  const FilterHeader bloom = DescribeFilter(Bloom(100, 2, 150).filter);
  const std::string huge_bloom = Patched<uint64_t>(bloom.bytes, 68 + 24, uint64_t{1} << 60);
  const uint64_t huge_bloom_payload = As<ScalableBloomFilter>(Bloom(100, 2, 150).filter).Layers()[0].bytes +
                                      (uint64_t{1} << 57);
  const FilterHeader cuckoo = DescribeFilter(Cuckoo(16, 1, 0).filter);
  std::string huge_cuckoo = Patched<uint32_t>(cuckoo.bytes, 12, 255);
  huge_cuckoo = Patched<uint64_t>(huge_cuckoo, 28, kMaxCuckooBuckets);
  huge_cuckoo = Patched<uint64_t>(huge_cuckoo, 56, kMaxCuckooBuckets);
  const uint64_t huge_cuckoo_payload = kMaxCuckooBuckets * 255;

  struct Claim {
    FilterKind kind;
    const std::string& bytes;
    uint64_t payload;
  };
  for (const Claim& c : {Claim{FilterKind::kScalableBloom, huge_bloom, huge_bloom_payload},
                         Claim{FilterKind::kCuckoo, huge_cuckoo, huge_cuckoo_payload}}) {
    std::unique_ptr<FilterLoader> loader;
    Status s = FilterLoader::Begin(c.kind, c.bytes, c.payload, FilterLimits{uint64_t{1} << 30},
                                   nullptr, &loader);
    EXPECT_NE(s.message().find("exceeds the per-filter limit of 1073741824 bytes"),
              std::string::npos)
        << s.message();
    MemoryBudget budget(uint64_t{1} << 30);
    s = FilterLoader::Begin(c.kind, c.bytes, c.payload, FilterLimits{0}, &budget, &loader);
    EXPECT_NE(s.message().find("out of memory for a filter of"), std::string::npos) << s.message();
    EXPECT_EQ(budget.used(), 0u);
    EXPECT_EQ(loader, nullptr);
  }

  // 64 of the largest layers (2^61 - 64 bytes each) need more than 2^64.
  std::string many = Patched<uint32_t>(bloom.bytes.substr(0, 28), 24, 64);
  for (int i = 0; i < 64; ++i) {
    many += Patched<uint64_t>(bloom.bytes.substr(28, 40), 24, kMaxBloomBits - 512);
  }
  std::unique_ptr<FilterLoader> loader;
  const Status s = FilterLoader::Begin(FilterKind::kScalableBloom, many, 0, FilterLimits{0},
                                       nullptr, &loader);
  EXPECT_NE(s.message().find("need more than 2^64 payload bytes"), std::string::npos)
      << s.message();
}

TEST(FilterCodec, BeginReservesTheFilterInTheBudgetAndDestroyingTheLoaderFreesIt) {
  const Built b = Counting(1000, 4, 0);
  const FilterHeader header = DescribeFilter(b.filter);
  MemoryBudget budget(0);
  std::unique_ptr<FilterLoader> loader;
  ASSERT_TRUE(FilterLoader::Begin(header.kind, header.bytes, header.payload_bytes, FilterLimits{},
                                  &budget, &loader)
                  .ok());
  EXPECT_EQ(budget.used(), As<CountingBloomFilter>(b.filter).memory_bytes());
  loader.reset();
  EXPECT_EQ(budget.used(), 0u);
}

// ---- Payload writes -----------------------------------------------------

TEST(FilterCodec, WritesOutsideThePayloadFail) {
  const FilterHeader header = DescribeFilter(Bloom(100, 2, 0).filter);
  std::unique_ptr<FilterLoader> loader;
  ASSERT_TRUE(FilterLoader::Begin(header.kind, header.bytes, header.payload_bytes, FilterLimits{},
                                  nullptr, &loader)
                  .ok());
  const uint8_t bytes[16] = {};
  const uint64_t end = header.payload_bytes;
  EXPECT_FALSE(loader->Write(end, bytes, 1).ok());
  EXPECT_FALSE(loader->Write(end - 1, bytes, 2).ok());
  EXPECT_FALSE(loader->Write(UINT64_MAX, bytes, 2).ok());
  EXPECT_FALSE(loader->Write(1, bytes, UINT64_MAX).ok());
  EXPECT_TRUE(loader->Write(end - 1, bytes, 1).ok());
  EXPECT_TRUE(loader->Write(end, bytes, 0).ok());
  AnyFilter out;
  ASSERT_TRUE(loader->Finish(&out).ok());
  EXPECT_FALSE(loader->Write(0, bytes, 1).ok());
  EXPECT_FALSE(loader->Finish(&out).ok());
}

TEST(FilterCodec, PayloadWrittenInRandomPiecesInRandomOrderRoundTrips) {
  std::mt19937_64 random(20240611);
  for (const Built& b : {Bloom(100, 2, 1500), Counting(60, 4, 300), Cuckoo(32, 2, 300)}) {
    const FilterHeader header = DescribeFilter(b.filter);
    const std::string payload = WholePayload(b.filter, header);
    // Cut into pieces of 1..67 bytes, at any (unaligned) offsets.
    std::vector<std::pair<uint64_t, uint64_t>> pieces;
    for (uint64_t at = 0; at < payload.size();) {
      const uint64_t n = std::min<uint64_t>(1 + random() % 67, payload.size() - at);
      pieces.emplace_back(at, n);
      at += n;
    }
    std::shuffle(pieces.begin(), pieces.end(), random);
    std::unique_ptr<FilterLoader> loader;
    ASSERT_TRUE(FilterLoader::Begin(header.kind, header.bytes, header.payload_bytes,
                                    FilterLimits{}, nullptr, &loader)
                    .ok());
    for (const auto& [at, n] : pieces) {
      ASSERT_TRUE(loader->Write(at, reinterpret_cast<const uint8_t*>(payload.data()) + at, n).ok());
    }
    AnyFilter out;
    ASSERT_TRUE(loader->Finish(&out).ok());
    ExpectSameFilter(b.filter, out, b.added);
  }
}

TEST(FilterCodec, CuckooItemCountMustMatchTheOccupiedSlots) {
  const Built b = Cuckoo(64, 1, 20);
  const FilterHeader header = DescribeFilter(b.filter);
  const std::string payload = WholePayload(b.filter, header);
  AnyFilter out;
  const Status s = Load(header.kind, Patched<uint64_t>(header.bytes, 40, 21), payload,
                        FilterLimits{}, nullptr, &out);
  EXPECT_EQ(s.message(), "cuckoo payload: items 21 but 20 occupied slots");
  EXPECT_FALSE(Holds(out));
}

// ---- CopyPayload --------------------------------------------------------

TEST(FilterCodec, CopyPayloadZeroFillsPastTheEndAndIgnoresLayersAddedLater) {
  Built b = Bloom(100, 2, 150);
  const FilterHeader header = DescribeFilter(b.filter);  // 2 layers
  auto& f = *std::get<std::unique_ptr<ScalableBloomFilter>>(b.filter);
  bool added = false;
  for (uint64_t i = 150; f.num_layers() < 4; ++i) {
    ASSERT_EQ(f.Add(ItemHash("item", i), &added), FilterStatus::kOk);
  }
  // The old header still copies exactly its 2 layers (which later adds left
  // as they were: both were full), then zeros.
  std::string copy(header.payload_bytes + 100, '\x55');
  CopyPayload(b.filter, header, 0, reinterpret_cast<uint8_t*>(copy.data()), copy.size());
  EXPECT_EQ(copy.substr(0, header.payload_bytes),
            WholePayload(b.filter, DescribeFilter(b.filter)).substr(0, header.payload_bytes));
  EXPECT_EQ(copy.substr(header.payload_bytes), std::string(100, '\0'));
  std::string tail(10, '\x55');
  CopyPayload(b.filter, header, header.payload_bytes + 5, reinterpret_cast<uint8_t*>(tail.data()),
              tail.size());
  EXPECT_EQ(tail, std::string(10, '\0'));
}

TEST(FilterCodec, CopyPayloadReadsACuckooSubFilterFreedSinceTheHeaderAsZeros) {
  Built b = Cuckoo(64, 1, 0);
  auto& f = *std::get<std::unique_ptr<CuckooFilter>>(b.filter);
  uint64_t added = 0;
  for (; f.num_filters() < 2; ++added) ASSERT_EQ(f.Add(ItemHash("item", added)), FilterStatus::kOk);
  const FilterHeader header = DescribeFilter(b.filter);
  for (uint64_t i = 0; i < added; ++i) ASSERT_TRUE(f.Remove(ItemHash("item", i)));
  f.Compact();
  ASSERT_EQ(f.num_filters(), 1u);
  const std::string payload = WholePayload(b.filter, header);
  EXPECT_EQ(payload, std::string(header.payload_bytes, '\0'));
}

TEST(FilterCodec, CopyPayloadAtUnalignedOffsetsMatchesTheWholeCopy) {
  for (const Built& b : {Bloom(100, 2, 400), Counting(100, 8, 150), Cuckoo(64, 2, 200)}) {
    const FilterHeader header = DescribeFilter(b.filter);
    const std::string whole = WholePayload(b.filter, header);
    for (uint64_t at : {uint64_t{1}, uint64_t{7}, uint64_t{9}, whole.size() / 2 + 3}) {
      for (uint64_t n : {uint64_t{1}, uint64_t{5}, uint64_t{8}, uint64_t{23}}) {
        std::string piece(n, '\0');
        CopyPayload(b.filter, header, at, reinterpret_cast<uint8_t*>(piece.data()), n);
        EXPECT_EQ(piece, whole.substr(at, n)) << at << "+" << n;
      }
    }
  }
}

// ---- CloneFilter --------------------------------------------------------

TEST(FilterCodec, CloneFilterIsAnExactCopyOutsideTheBudget) {
  MemoryBudget budget(0);
  const Built bloom = Bloom(100, 2, 1000, &budget);
  const uint64_t used = budget.used();
  for (const Built* b : {&bloom}) {
    const AnyFilter clone = CloneFilter(b->filter);
    ExpectSameFilter(b->filter, clone, b->added);
    ExpectSameInfo(As<ScalableBloomFilter>(b->filter), As<ScalableBloomFilter>(clone));
    EXPECT_EQ(budget.used(), used);
    EXPECT_EQ(As<ScalableBloomFilter>(clone).limits().max_filter_bytes, 0u);
  }
  const Built counting = Counting(50, 4, 300);
  const AnyFilter counting_clone = CloneFilter(counting.filter);
  ExpectSameFilter(counting.filter, counting_clone, counting.added);
  ExpectSameInfo(As<CountingBloomFilter>(counting.filter), As<CountingBloomFilter>(counting_clone));
  const Built cuckoo = Cuckoo(64, 2, 500);
  const AnyFilter cuckoo_clone = CloneFilter(cuckoo.filter);
  ExpectSameFilter(cuckoo.filter, cuckoo_clone, cuckoo.added);
  ExpectSameInfo(As<CuckooFilter>(cuckoo.filter), As<CuckooFilter>(cuckoo_clone));
}

TEST(FilterCodec, CloneFilterCopiesAPayloadLargerThanOnePiece) {
  // ~9.6 MiB: three 4 MiB pieces, the last one partial.
  const Built b = Bloom(/*capacity=*/8'000'000, /*expansion=*/2, /*items=*/2000);
  ASSERT_GT(DescribeFilter(b.filter).payload_bytes, uint64_t{8} << 20);
  const AnyFilter clone = CloneFilter(b.filter);
  ExpectSameFilter(b.filter, clone, b.added);
}

}  // namespace
}  // namespace bloomgate
