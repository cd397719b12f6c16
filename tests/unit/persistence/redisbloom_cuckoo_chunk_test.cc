// RedisBloom's CF.SCANDUMP chunks (persistence/redisbloom_cuckoo_chunk.h)
// and the cuckoo codec's record of a filter in RedisBloom's scheme.
#include "persistence/redisbloom_cuckoo_chunk.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "filters/cuckoo_filter.h"
#include "persistence/byte_io.h"
#include "persistence/dump_chunk.h"
#include "persistence/filter_codec.h"

namespace bloomgate {
namespace {

std::unique_ptr<CuckooFilter> RedisBloomFilter(uint64_t capacity, uint32_t bucket_size,
                                               uint32_t expansion, int items) {
  CuckooFilterOptions options;
  options.capacity = capacity;
  options.bucket_size = bucket_size;
  options.expansion = expansion;
  options.scheme = CuckooScheme::kRedisBloom;
  std::unique_ptr<CuckooFilter> f;
  EXPECT_EQ(CuckooFilter::Create(options, FilterLimits{}, nullptr, &f), FilterStatus::kOk);
  for (int i = 0; i < items; ++i) {
    EXPECT_EQ(f->Add(f->Hash("item:" + std::to_string(i))), FilterStatus::kOk);
  }
  return f;
}

// Every (iterator, chunk) of a SCANDUMP, as a client collects them.
std::vector<std::pair<uint64_t, std::string>> Dump(const CuckooFilter& f, uint64_t limit) {
  std::vector<std::pair<uint64_t, std::string>> out;
  uint64_t it = 0;
  for (int guard = 0; guard < 1000; ++guard) {
    uint64_t next = 0;
    std::string chunk;
    bool end = false;
    NextRedisBloomCuckooChunk(f, it, &next, &chunk, &end, limit);
    if (end) {
      EXPECT_EQ(next, 0u);
      return out;
    }
    out.emplace_back(next, chunk);
    it = next;
  }
  ADD_FAILURE() << "SCANDUMP did not end";
  return out;
}

Status LoadAll(const std::vector<std::pair<uint64_t, std::string>>& dump, AnyFilter* out) {
  std::unique_ptr<ChunkedFilterLoad> load;
  if (Status s = ChunkedFilterLoad::StartRedisBloomCuckoo(dump[0].second, 32, FilterLimits{},
                                                          nullptr, &load);
      !s.ok()) {
    return s;
  }
  for (size_t i = 1; i < dump.size(); ++i) {
    if (Status s = load->AddRedisBloom(dump[i].first, dump[i].second); !s.ok()) return s;
  }
  return load->Finish(out);
}

TEST(RedisBloomCuckooChunk, TheHeaderIsRedisBloomsPackedCfHeader) {
  auto f = RedisBloomFilter(256, 4, 2, 300);
  const std::string header = EncodeRedisBloomCuckooHeader(f->Shape());
  ASSERT_EQ(header.size(), 38u);
  ByteReader r(header);
  uint64_t items = 0, buckets = 0, deletes = 0, filters = 0;
  uint16_t bucket_size = 0, iterations = 0, expansion = 0;
  r.GetU64(&items);
  r.GetU64(&buckets);
  r.GetU64(&deletes);
  r.GetU64(&filters);
  r.GetU16(&bucket_size);
  r.GetU16(&iterations);
  r.GetU16(&expansion);
  EXPECT_EQ(items, 300u);
  EXPECT_EQ(buckets, 64u);
  EXPECT_EQ(deletes, 0u);
  EXPECT_EQ(filters, f->num_filters());
  EXPECT_EQ(bucket_size, 4u);
  EXPECT_EQ(iterations, 20u);
  EXPECT_EQ(expansion, 2u);
  CuckooFilterShape shape;
  ASSERT_TRUE(DecodeRedisBloomCuckooHeader(header, 32, &shape).ok());
  EXPECT_EQ(shape.scheme, CuckooScheme::kRedisBloom);
  EXPECT_EQ(EncodeRedisBloomCuckooHeader(shape), header);
}

TEST(RedisBloomCuckooChunk, ChunksNeverSpanSubFiltersAndReloadToTheSameFilter) {
  auto f = RedisBloomFilter(256, 4, 2, 1500);  // 3 sub-filters: 256, 512, 1024 bytes
  ASSERT_EQ(f->num_filters(), 3u);
  const auto dump = Dump(*f, /*limit=*/kRedisBloomScanDumpBytes);
  ASSERT_EQ(dump.size(), 4u);
  EXPECT_EQ(dump[1].first, 1u + 256);
  EXPECT_EQ(dump[2].first, 1u + 256 + 512);
  EXPECT_EQ(dump[3].first, 1u + 256 + 512 + 1024);
  AnyFilter out;
  const Status s = LoadAll(dump, &out);
  ASSERT_TRUE(s.ok()) << s.message();
  const CuckooFilter& loaded = *std::get<std::unique_ptr<CuckooFilter>>(out);
  EXPECT_EQ(loaded.scheme(), CuckooScheme::kRedisBloom);
  EXPECT_EQ(Dump(loaded, kRedisBloomScanDumpBytes), dump);
  // A smaller limit cuts a sub-filter into pieces, still within it.
  const auto pieces = Dump(*f, 100);
  EXPECT_EQ(pieces[1].second.size(), 100u);
  EXPECT_EQ(pieces[3].second.size(), 56u);  // the rest of sub-filter 0
  AnyFilter again;
  ASSERT_TRUE(LoadAll(pieces, &again).ok());
}

TEST(RedisBloomCuckooChunk, AnEmptyFilterDumpsNothing) {
  auto f = RedisBloomFilter(256, 4, 2, 0);
  EXPECT_TRUE(Dump(*f, kRedisBloomScanDumpBytes).empty());
}

TEST(RedisBloomCuckooChunk, DamagedHeadersAreRefused) {
  auto f = RedisBloomFilter(256, 4, 2, 10);
  const std::string good = EncodeRedisBloomCuckooHeader(f->Shape());
  auto with = [&](size_t at, uint64_t value, size_t width) {
    std::string bad = good;
    for (size_t i = 0; i < width; ++i) bad[at + i] = static_cast<char>(value >> (8 * i));
    return bad;
  };
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"numBuckets 0", with(8, 0, 8)},
      {"numBuckets 48, not a power of two", with(8, 48, 8)},
      {"numBuckets 2^60", with(8, uint64_t{1} << 60, 8)},
      {"numFilters 0", with(24, 0, 8)},
      {"numFilters 2^40", with(24, uint64_t{1} << 40, 8)},
      {"bucketSize 0", with(32, 0, 2)},
      {"bucketSize 256", with(32, 256, 2)},
      {"maxIterations 0", with(34, 0, 2)},
      {"expansion 3", with(36, 3, 2)},
      {"numItems over the slots", with(0, 100000, 8)},
      {"37 bytes", good.substr(0, 37)},
  };
  for (const auto& [what, header] : cases) {
    std::unique_ptr<ChunkedFilterLoad> load;
    EXPECT_FALSE(
        ChunkedFilterLoad::StartRedisBloomCuckoo(header, 32, FilterLimits{}, nullptr, &load).ok())
        << what;
    EXPECT_EQ(load, nullptr) << what;
  }
}

TEST(RedisBloomCuckooChunk, AChunkOutOfOrderOrPastTheEndIsRefusedAndChangesNothing) {
  auto f = RedisBloomFilter(256, 4, 2, 1500);
  const auto dump = Dump(*f, kRedisBloomScanDumpBytes);
  std::unique_ptr<ChunkedFilterLoad> load;
  ASSERT_TRUE(
      ChunkedFilterLoad::StartRedisBloomCuckoo(dump[0].second, 32, FilterLimits{}, nullptr, &load)
          .ok());
  EXPECT_FALSE(load->AddRedisBloom(dump[2].first, dump[2].second).ok());  // skips one
  EXPECT_FALSE(load->AddRedisBloom(3, "abc").ok());                       // offset -1
  EXPECT_FALSE(load->AddRedisBloom(1 + 1792 + 1, std::string(1792, 'x')).ok());
  EXPECT_FALSE(load->AddRedisBloom(1, "").ok());
  EXPECT_EQ(load->loaded_bytes(), 0u);
  // Our own chunk format is not taken for a RedisBloom load.
  uint64_t next = 0;
  std::string ours;
  NextDumpChunk(AnyFilter(RedisBloomFilter(256, 4, 2, 10)), 1, &next, &ours);
  EXPECT_FALSE(load->Add(ours).ok());
  for (size_t i = 1; i < dump.size(); ++i) {
    ASSERT_TRUE(load->AddRedisBloom(dump[i].first, dump[i].second).ok());
  }
  AnyFilter out;
  EXPECT_TRUE(load->Finish(&out).ok());
}

TEST(RedisBloomCuckooChunk, TheCodecKeepsTheSchemeThroughASnapshotRecord) {
  auto f = RedisBloomFilter(256, 4, 2, 1500);
  std::vector<uint8_t> before(1792);
  uint64_t at = 0;
  for (uint32_t k = 0; k < 3; ++k) at += f->CopySlots(k, 0, before.data() + at, 1792 - at);
  AnyFilter original(std::move(f));
  const FilterHeader header = DescribeFilter(original);
  ASSERT_GE(header.bytes.size(), 12u);
  EXPECT_EQ(static_cast<uint8_t>(header.bytes[2]), 2u) << "hash_algorithm 2 = MurmurHash64A";
  EXPECT_EQ(static_cast<uint8_t>(header.bytes[11]), 5u) << "block_layout 5 = RedisBloom cuckoo";
  std::string payload(header.payload_bytes, '\0');
  CopyPayload(original, header, 0, reinterpret_cast<uint8_t*>(payload.data()), payload.size());
  std::unique_ptr<FilterLoader> loader;
  ASSERT_TRUE(FilterLoader::Begin(header.kind, header.bytes, payload.size(), FilterLimits{},
                                  nullptr, &loader)
                  .ok());
  ASSERT_TRUE(
      loader->Write(0, reinterpret_cast<const uint8_t*>(payload.data()), payload.size()).ok());
  AnyFilter out;
  ASSERT_TRUE(loader->Finish(&out).ok());
  const CuckooFilter& loaded = *std::get<std::unique_ptr<CuckooFilter>>(out);
  EXPECT_EQ(loaded.scheme(), CuckooScheme::kRedisBloom);
  EXPECT_EQ(std::string(payload.begin(), payload.end()),
            std::string(before.begin(), before.end()));
  for (int i = 0; i < 1500; ++i) {
    ASSERT_TRUE(loaded.MayContain(loaded.Hash("item:" + std::to_string(i)))) << i;
  }
  // A RedisBloom-hashed header with a seed, or with the native layout, is refused.
  std::string seeded = header.bytes;
  seeded[3] = 1;
  EXPECT_FALSE(FilterLoader::Begin(header.kind, seeded, payload.size(), FilterLimits{}, nullptr,
                                   &loader)
                   .ok());
  std::string mixed = header.bytes;
  mixed[11] = 2;
  EXPECT_FALSE(FilterLoader::Begin(header.kind, mixed, payload.size(), FilterLimits{}, nullptr,
                                   &loader)
                   .ok());
}

}  // namespace
}  // namespace bloomgate
