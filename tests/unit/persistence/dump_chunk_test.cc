// SCANDUMP / LOADCHUNK chunks: the iterator protocol, full dump-and-load
// loops for every family, and refusal of every damaged, truncated, foreign,
// out-of-order, repeated or missing chunk.

#include "persistence/dump_chunk.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/filters/filter_test_support.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;

struct Chunk {
  uint64_t iterator;  // what SCANDUMP returned with it, as LOADCHUNK gets it
  std::string bytes;
};

// The whole SCANDUMP loop: the header chunk, the payload chunks, not the
// final [0, ""].
std::vector<Chunk> Dump(const AnyFilter& filter, uint64_t max_payload = kDumpChunkPayloadBytes) {
  std::vector<Chunk> chunks;
  uint64_t iterator = 0;
  for (;;) {
    uint64_t next = 0;
    std::string chunk;
    NextDumpChunk(filter, iterator, &next, &chunk, max_payload);
    if (next == 0) {
      EXPECT_TRUE(chunk.empty());
      return chunks;
    }
    EXPECT_LE(chunk.size(), kMaxDumpChunkBytes);
    chunks.push_back(Chunk{next, std::move(chunk)});
    iterator = next;
  }
}

// The LOADCHUNK loop; the first refusal is returned.
Status Replay(const std::vector<Chunk>& chunks, FilterKind kind, AnyFilter* out,
              const FilterLimits& limits = FilterLimits{}, MemoryBudget* budget = nullptr) {
  std::unique_ptr<ChunkedFilterLoad> load;
  for (const Chunk& chunk : chunks) {
    if (IsHeaderChunk(chunk.bytes)) {
      if (Status s = ChunkedFilterLoad::Start(chunk.bytes, kind, limits, budget, &load); !s.ok()) {
        return s;
      }
    } else if (load == nullptr) {
      return Status::Error("payload chunk before any header chunk");
    } else if (Status s = load->Add(chunk.bytes); !s.ok()) {
      return s;
    }
  }
  if (load == nullptr) return Status::Error("no header chunk");
  return load->Finish(out);
}

AnyFilter SmallBloom(uint64_t capacity = 30, uint64_t items = 100) {
  std::unique_ptr<ScalableBloomFilter> f;
  EXPECT_EQ(ScalableBloomFilter::Create(ScalableBloomOptions{0.01, capacity, 2}, FilterLimits{},
                                        nullptr, &f),
            FilterStatus::kOk);
  bool added = false;
  for (uint64_t i = 0; i < items; ++i) {
    EXPECT_EQ(f->Add(ItemHash("item", i), &added), FilterStatus::kOk);
  }
  return f;
}

AnyFilter SmallCounting(uint64_t items = 40) {
  std::unique_ptr<CountingBloomFilter> f;
  EXPECT_EQ(CountingBloomFilter::Create(CountingBloomOptions{0.05, 20, 2, 4}, FilterLimits{},
                                        nullptr, &f),
            FilterStatus::kOk);
  bool was_new = false;
  for (uint64_t i = 0; i < items; ++i) {
    EXPECT_EQ(f->Add(ItemHash("item", i), &was_new), FilterStatus::kOk);
  }
  return f;
}

AnyFilter SmallCuckoo(uint64_t items = 12) {
  CuckooFilterOptions options;
  options.capacity = 8;
  options.expansion = 2;
  std::unique_ptr<CuckooFilter> f;
  EXPECT_EQ(CuckooFilter::Create(options, FilterLimits{}, nullptr, &f), FilterStatus::kOk);
  for (uint64_t i = 0; i < items; ++i) EXPECT_EQ(f->Add(ItemHash("item", i)), FilterStatus::kOk);
  return f;
}

std::vector<AnyFilter> Filters(AnyFilter bloom, AnyFilter counting, AnyFilter cuckoo) {
  std::vector<AnyFilter> filters;
  filters.push_back(std::move(bloom));
  filters.push_back(std::move(counting));
  filters.push_back(std::move(cuckoo));
  return filters;
}

FilterKind KindOfFilter(const AnyFilter& filter) { return DescribeFilter(filter).kind; }

std::string Payload(const AnyFilter& filter) {
  const FilterHeader header = DescribeFilter(filter);
  std::string payload(header.payload_bytes, '\0');
  CopyPayload(filter, header, 0, reinterpret_cast<uint8_t*>(payload.data()), payload.size());
  return payload;
}

void ExpectSame(const AnyFilter& want, const AnyFilter& got) {
  ASSERT_TRUE(std::visit([](const auto& f) { return f != nullptr; }, got));
  EXPECT_EQ(DescribeFilter(want).bytes, DescribeFilter(got).bytes);
  EXPECT_TRUE(Payload(want) == Payload(got));
}

TEST(DumpChunk, IteratorsFollowRedisBloomsProtocol) {
  const AnyFilter filter = SmallBloom(/*capacity=*/1000, /*items=*/10);
  const uint64_t payload = DescribeFilter(filter).payload_bytes;
  ASSERT_GT(payload, 1000u);
  uint64_t next = 0;
  std::string chunk;
  NextDumpChunk(filter, 0, &next, &chunk, /*max_payload_bytes=*/1000);
  EXPECT_EQ(next, 1u);
  EXPECT_TRUE(IsHeaderChunk(chunk));
  NextDumpChunk(filter, 1, &next, &chunk, 1000);
  EXPECT_EQ(next, 1001u);  // it + n: n payload bytes from offset it - 1
  EXPECT_FALSE(IsHeaderChunk(chunk));
  EXPECT_EQ(chunk.size(), 1000 + kPayloadChunkFramingBytes);
  NextDumpChunk(filter, 1001, &next, &chunk, 1000);
  EXPECT_EQ(next, 1001u + std::min<uint64_t>(1000, payload - 1000));
  NextDumpChunk(filter, payload + 1, &next, &chunk, 1000);  // offset == payload size
  EXPECT_EQ(next, 0u);
  EXPECT_TRUE(chunk.empty());
  NextDumpChunk(filter, UINT64_MAX, &next, &chunk, 1000);
  EXPECT_EQ(next, 0u);
  EXPECT_TRUE(chunk.empty());
}

TEST(DumpChunk, ScanDumpThenLoadChunkReproducesEveryFamily) {
  for (const AnyFilter& filter : Filters(SmallBloom(50, 400), SmallCounting(200), SmallCuckoo(60))) {
    for (uint64_t max_payload : {uint64_t{1}, uint64_t{100}, kDumpChunkPayloadBytes}) {
      const std::vector<Chunk> chunks = Dump(filter, max_payload);
      AnyFilter loaded;
      const Status s = Replay(chunks, KindOfFilter(filter), &loaded);
      ASSERT_TRUE(s.ok()) << s.message();
      ExpectSame(filter, loaded);
    }
  }
}

TEST(DumpChunk, AnEmptyCuckooFilterRoundTrips) {
  const AnyFilter empty = SmallCuckoo(/*items=*/0);
  const std::vector<Chunk> chunks = Dump(empty);
  ASSERT_EQ(chunks.size(), 2u);  // header + all-zero slots, never [0, nil]
  AnyFilter loaded;
  ASSERT_TRUE(Replay(chunks, FilterKind::kCuckoo, &loaded).ok());
  ExpectSame(empty, loaded);
}

TEST(DumpChunk, ChunksStayUnderTheCapForALargeFilter) {
  // ~20 MiB of bits: two payload chunks, the first one full.
  const AnyFilter filter = SmallBloom(/*capacity=*/14'000'000, /*items=*/1000);
  const uint64_t payload = DescribeFilter(filter).payload_bytes;
  ASSERT_GT(payload, kDumpChunkPayloadBytes);
  const std::vector<Chunk> chunks = Dump(filter);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[1].bytes.size(), kDumpChunkPayloadBytes + kPayloadChunkFramingBytes);
  EXPECT_LE(chunks[1].bytes.size(), kMaxDumpChunkBytes);
  EXPECT_EQ(chunks[2].iterator, payload + 1);
  AnyFilter loaded;
  ASSERT_TRUE(Replay(chunks, FilterKind::kScalableBloom, &loaded).ok());
  for (uint64_t i = 0; i < 1000; ++i) {
    ASSERT_TRUE(std::get<std::unique_ptr<ScalableBloomFilter>>(loaded)->MayContain(
        ItemHash("item", i)));
  }
  ExpectSame(filter, loaded);
}

TEST(DumpChunk, FlippingAnyByteOfAnyChunkIsRefused) {
  for (const AnyFilter& filter : Filters(SmallBloom(10, 8), SmallCounting(5), SmallCuckoo(3))) {
    const std::vector<Chunk> chunks = Dump(filter, /*max_payload_bytes=*/24);
    ASSERT_GE(chunks.size(), 2u);
    const FilterKind kind = KindOfFilter(filter);
    uint64_t flips = 0;
    for (size_t c = 0; c < chunks.size(); ++c) {
      for (size_t i = 0; i < chunks[c].bytes.size(); ++i) {
        for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
          std::vector<Chunk> damaged = chunks;
          damaged[c].bytes[i] = static_cast<char>(damaged[c].bytes[i] ^ mask);
          AnyFilter loaded;
          const Status s = Replay(damaged, kind, &loaded);
          ASSERT_FALSE(s.ok()) << "chunk " << c << " byte " << i << " ^ " << int{mask};
          ASSERT_FALSE(std::visit([](const auto& f) { return f != nullptr; }, loaded));
          ++flips;
        }
      }
    }
    EXPECT_GT(flips, 300u);
  }
}

TEST(DumpChunk, TruncatingAnyChunkAtAnyLengthIsRefused) {
  for (const AnyFilter& filter : Filters(SmallBloom(10, 8), SmallCounting(5), SmallCuckoo(3))) {
    const std::vector<Chunk> chunks = Dump(filter, /*max_payload_bytes=*/24);
    for (size_t c = 0; c < chunks.size(); ++c) {
      for (size_t length = 0; length < chunks[c].bytes.size(); ++length) {
        std::vector<Chunk> damaged = chunks;
        damaged[c].bytes.resize(length);
        AnyFilter loaded;
        ASSERT_FALSE(Replay(damaged, KindOfFilter(filter), &loaded).ok())
            << "chunk " << c << " cut to " << length;
      }
    }
  }
}

TEST(DumpChunk, OutOfOrderRepeatedOrMissingChunksAreRefused) {
  const AnyFilter filter = SmallBloom(30, 100);
  const std::vector<Chunk> chunks = Dump(filter, /*max_payload_bytes=*/40);
  ASSERT_GE(chunks.size(), 4u);
  std::unique_ptr<ChunkedFilterLoad> load;
  ASSERT_TRUE(ChunkedFilterLoad::Start(chunks[0].bytes, FilterKind::kScalableBloom, FilterLimits{},
                                       nullptr, &load)
                  .ok());
  // Chunk 2 before chunk 1: a gap.
  Status s = load->Add(chunks[2].bytes);
  EXPECT_EQ(s.message(),
            "payload chunk at offset 40, expected 0 (chunks must arrive in order, each once)");
  ASSERT_TRUE(load->Add(chunks[1].bytes).ok());
  // Chunk 1 again: a repeat.
  EXPECT_FALSE(load->Add(chunks[1].bytes).ok());
  // A header chunk where a payload chunk belongs.
  EXPECT_FALSE(load->Add(chunks[0].bytes).ok());
  // Refusals changed nothing: the rest still loads.
  AnyFilter loaded;
  EXPECT_FALSE(load->complete());
  s = load->Finish(&loaded);
  EXPECT_NE(s.message().find("dump incomplete: 40 of "), std::string::npos) << s.message();
  ASSERT_TRUE(ChunkedFilterLoad::Start(chunks[0].bytes, FilterKind::kScalableBloom, FilterLimits{},
                                       nullptr, &load)
                  .ok());
  for (size_t c = 1; c < chunks.size(); ++c) {
    EXPECT_FALSE(load->complete());
    ASSERT_TRUE(load->Add(chunks[c].bytes).ok()) << c;
  }
  EXPECT_TRUE(load->complete());
  EXPECT_FALSE(load->Add(chunks.back().bytes).ok());  // nothing may follow the last
  ASSERT_TRUE(load->Finish(&loaded).ok());
  ExpectSame(filter, loaded);
  EXPECT_FALSE(load->Finish(&loaded).ok());

  // Missing the last chunk: never complete.
  std::vector<Chunk> short_dump(chunks.begin(), chunks.end() - 1);
  EXPECT_FALSE(Replay(short_dump, FilterKind::kScalableBloom, &loaded).ok());
  // A payload chunk given as the header.
  EXPECT_FALSE(ChunkedFilterLoad::Start(chunks[1].bytes, FilterKind::kScalableBloom,
                                        FilterLimits{}, nullptr, &load)
                   .ok());
  EXPECT_EQ(load, nullptr);
}

TEST(DumpChunk, AChunkOfAnotherFamilyOrAnotherDumpIsRefused) {
  const AnyFilter bloom = SmallBloom(30, 100);
  const AnyFilter other = SmallBloom(30, 101);  // same shape, other items
  const AnyFilter cuckoo = SmallCuckoo(12);
  const std::vector<Chunk> bloom_chunks = Dump(bloom, 40);
  const std::vector<Chunk> other_chunks = Dump(other, 40);
  std::unique_ptr<ChunkedFilterLoad> load;
  Status s = ChunkedFilterLoad::Start(bloom_chunks[0].bytes, FilterKind::kCuckoo, FilterLimits{},
                                      nullptr, &load);
  EXPECT_EQ(s.message(), "dump chunk holds a scalable bloom filter, expected cuckoo");
  EXPECT_EQ(load, nullptr);
  ASSERT_TRUE(ChunkedFilterLoad::Start(bloom_chunks[0].bytes, FilterKind::kScalableBloom,
                                       FilterLimits{}, nullptr, &load)
                  .ok());
  s = load->Add(other_chunks[1].bytes);
  EXPECT_NE(s.message().find("payload chunk belongs to another dump"), std::string::npos)
      << s.message();
  s = load->Add(Dump(cuckoo, 40)[1].bytes);
  EXPECT_EQ(s.message(), "dump chunk holds a cuckoo filter, expected scalable bloom");
  EXPECT_EQ(load->loaded_bytes(), 0u);
}

TEST(DumpChunk, ARedisBloomHeaderOrArbitraryBytesAreRefused) {
  // The start of a RedisBloom SB header chunk: native-endian capacity,
  // error rate, ... and no magic of ours.
  const std::string foreign("\x64\x00\x00\x00\x00\x00\x00\x00\x7b\x14\xae\x47\xe1\x7a\x84\x3f"
                            "\x01\x00\x00\x00\x02\x00\x00\x00",
                            24);
  EXPECT_FALSE(IsHeaderChunk(foreign));
  std::unique_ptr<ChunkedFilterLoad> load;
  const Status s =
      ChunkedFilterLoad::Start(foreign, FilterKind::kScalableBloom, FilterLimits{}, nullptr, &load);
  EXPECT_EQ(s.message(), "not a Bloomgate dump chunk (bad magic)");
  EXPECT_FALSE(ChunkedFilterLoad::Start("", FilterKind::kCuckoo, FilterLimits{}, nullptr, &load)
                   .ok());
  EXPECT_EQ(load, nullptr);
}

TEST(DumpChunk, StartHonoursTheFilterLimitAndTheBudget) {
  const AnyFilter filter = SmallBloom(/*capacity=*/100'000, /*items=*/10);
  const std::vector<Chunk> chunks = Dump(filter);
  std::unique_ptr<ChunkedFilterLoad> load;
  Status s = ChunkedFilterLoad::Start(chunks[0].bytes, FilterKind::kScalableBloom,
                                      FilterLimits{/*max_filter_bytes=*/4096}, nullptr, &load);
  EXPECT_NE(s.message().find("exceeds the per-filter limit of 4096 bytes"), std::string::npos)
      << s.message();
  MemoryBudget budget(4096);
  s = ChunkedFilterLoad::Start(chunks[0].bytes, FilterKind::kScalableBloom, FilterLimits{},
                               &budget, &load);
  EXPECT_NE(s.message().find("out of memory"), std::string::npos) << s.message();
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(load, nullptr);

  // Accepted: the whole filter is reserved from Start until the load is dropped.
  MemoryBudget roomy(0);
  ASSERT_TRUE(ChunkedFilterLoad::Start(chunks[0].bytes, FilterKind::kScalableBloom, FilterLimits{},
                                       &roomy, &load)
                  .ok());
  EXPECT_EQ(roomy.used(),
            std::get<std::unique_ptr<ScalableBloomFilter>>(filter)->memory_bytes());
  load.reset();
  EXPECT_EQ(roomy.used(), 0u);
}

TEST(DumpChunk, ChangesToTheFilterBetweenScanDumpCallsAreNotMixedIn) {
  std::unique_ptr<ScalableBloomFilter> f;
  ASSERT_EQ(ScalableBloomFilter::Create(ScalableBloomOptions{}, FilterLimits{}, nullptr, &f),
            FilterStatus::kOk);
  AnyFilter filter(std::move(f));
  uint64_t next = 0;
  std::string header;
  NextDumpChunk(filter, 0, &next, &header);
  bool added = false;
  ASSERT_EQ(std::get<std::unique_ptr<ScalableBloomFilter>>(filter)->Add(ItemHash("late", 0), &added),
            FilterStatus::kOk);
  std::string payload;
  NextDumpChunk(filter, 1, &next, &payload);
  std::unique_ptr<ChunkedFilterLoad> load;
  ASSERT_TRUE(ChunkedFilterLoad::Start(header, FilterKind::kScalableBloom, FilterLimits{}, nullptr,
                                       &load)
                  .ok());
  EXPECT_FALSE(load->Add(payload).ok());
}

// The state tag (the server: its entry's id and write version) binds every
// chunk to the state its header described, even when the header bytes are
// the same: a payload chunk of another tag is refused and said to be of
// another dump; chunks of one tag load, tag 0 included (older dumps).
TEST(DumpChunk, APayloadChunkOfAnotherStateTagIsRefusedAsAnotherDump) {
  const AnyFilter filter = SmallCounting(40);
  for (uint64_t tag : {uint64_t{0}, uint64_t{7}}) {
    uint64_t next = 0;
    std::string header, same, other;
    NextDumpChunk(filter, 0, &next, &header, kDumpChunkPayloadBytes, tag);
    NextDumpChunk(filter, 1, &next, &other, kDumpChunkPayloadBytes, tag + 1);
    NextDumpChunk(filter, 1, &next, &same, kDumpChunkPayloadBytes, tag);
    std::unique_ptr<ChunkedFilterLoad> load;
    ASSERT_TRUE(ChunkedFilterLoad::Start(header, FilterKind::kCountingBloom, FilterLimits{},
                                         nullptr, &load)
                    .ok());
    bool other_dump = false;
    Status s = load->Add(other, &other_dump);
    EXPECT_NE(s.message().find("payload chunk belongs to another dump"), std::string::npos)
        << s.message();
    EXPECT_TRUE(other_dump) << "tag " << tag;
    EXPECT_EQ(load->loaded_bytes(), 0u);
    ASSERT_TRUE(load->Add(same, &other_dump).ok()) << "tag " << tag;
    EXPECT_FALSE(other_dump);
    AnyFilter copy;
    ASSERT_TRUE(load->Finish(&copy).ok());
    ExpectSame(filter, copy);
  }
  // A damaged chunk is not "another dump": its refusal is of another kind.
  uint64_t next = 0;
  std::string header, payload;
  NextDumpChunk(filter, 0, &next, &header);
  NextDumpChunk(filter, 1, &next, &payload);
  payload[payload.size() / 2] ^= 0x10;
  std::unique_ptr<ChunkedFilterLoad> load;
  ASSERT_TRUE(ChunkedFilterLoad::Start(header, FilterKind::kCountingBloom, FilterLimits{},
                                       nullptr, &load)
                  .ok());
  bool other_dump = true;
  EXPECT_FALSE(load->Add(payload, &other_dump).ok());
  EXPECT_FALSE(other_dump);
}

}  // namespace
}  // namespace bloomgate
