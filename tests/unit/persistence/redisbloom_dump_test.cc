// RedisBloom-format chunks and the RedisBloom layout in our codec: a filter
// in that layout round-trips through the codec (snapshot, log, DUMP-like
// paths all use it) and through RedisBloom's chunks, and a damaged
// RedisBloom header is refused before anything is allocated.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "filters/scalable_bloom_filter.h"
#include "persistence/dump_chunk.h"
#include "persistence/filter_codec.h"
#include "persistence/redisbloom_dump.h"

namespace bloomgate {
namespace {

std::unique_ptr<ScalableBloomFilter> RedisBloomScalableFilter(int items) {
  ScalableBloomOptions options;
  options.capacity = 100;
  options.layout = BloomLayout::kRedisBloom;
  std::unique_ptr<ScalableBloomFilter> filter;
  EXPECT_EQ(ScalableBloomFilter::Create(options, FilterLimits{}, nullptr, &filter),
            FilterStatus::kOk);
  for (int i = 0; i < items; ++i) {
    bool added = false;
    (void)filter->Add(filter->Hash("item:" + std::to_string(i)), &added);
  }
  return filter;
}

std::vector<std::pair<uint64_t, std::string>> Dump(const ScalableBloomFilter& f, uint64_t max) {
  std::vector<std::pair<uint64_t, std::string>> chunks;
  uint64_t it = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string chunk;
    NextRedisBloomChunk(f, it, &it, &chunk, max);
    if (it == 0) break;
    chunks.emplace_back(it, chunk);
  }
  return chunks;
}

void ExpectSameAnswers(const ScalableBloomFilter& a, const ScalableBloomFilter& b) {
  EXPECT_EQ(b.layout(), BloomLayout::kRedisBloom);
  EXPECT_EQ(a.items(), b.items());
  EXPECT_EQ(a.capacity(), b.capacity());
  EXPECT_EQ(a.num_layers(), b.num_layers());
  for (int i = 0; i < 3000; ++i) {
    const std::string item = (i % 2 ? "item:" : "probe:") + std::to_string(i);
    ASSERT_EQ(a.MayContain(a.Hash(item)), b.MayContain(b.Hash(item))) << item;
  }
}

TEST(RedisBloomCodec, ARedisBloomLayoutFilterRoundTripsThroughTheCodec) {
  auto filter = RedisBloomScalableFilter(700);  // 4 layers
  AnyFilter any = std::move(filter);
  const FilterHeader header = DescribeFilter(any);
  std::string payload(header.payload_bytes, '\0');
  CopyPayload(any, header, 0, reinterpret_cast<uint8_t*>(payload.data()), payload.size());
  std::unique_ptr<FilterLoader> loader;
  ASSERT_TRUE(FilterLoader::Begin(header.kind, header.bytes, header.payload_bytes, FilterLimits{},
                                  nullptr, &loader)
                  .ok());
  ASSERT_TRUE(loader->Write(0, reinterpret_cast<const uint8_t*>(payload.data()), payload.size()).ok());
  AnyFilter out;
  ASSERT_TRUE(loader->Finish(&out).ok());
  ExpectSameAnswers(*std::get<std::unique_ptr<ScalableBloomFilter>>(any),
                    *std::get<std::unique_ptr<ScalableBloomFilter>>(out));
}

TEST(RedisBloomCodec, RedisBloomChunksLoadBackInSmallPieces) {
  auto filter = RedisBloomScalableFilter(700);
  // 100-byte pieces: links are cut, and no piece spans two links. [0] is
  // the header.
  auto chunks = Dump(*filter, 100);
  ASSERT_FALSE(chunks.empty());
  chunks.erase(chunks.begin());
  ASSERT_GT(chunks.size(), 4u);
  std::string header;
  uint64_t it = 0;
  NextRedisBloomChunk(*filter, 0, &it, &header);
  ASSERT_EQ(it, 1u);
  std::unique_ptr<ChunkedFilterLoad> load;
  ASSERT_TRUE(ChunkedFilterLoad::StartRedisBloom(header, FilterLimits{}, nullptr, &load).ok());
  for (size_t i = 0; i < chunks.size(); ++i) {
    ASSERT_FALSE(load->complete());
    if (i == 1) {  // out of order: refused, and the load goes on
      EXPECT_FALSE(load->AddRedisBloom(chunks[2].first, chunks[2].second).ok());
    }
    ASSERT_TRUE(load->AddRedisBloom(chunks[i].first, chunks[i].second).ok()) << i;
  }
  ASSERT_TRUE(load->complete());
  AnyFilter out;
  ASSERT_TRUE(load->Finish(&out).ok());
  ExpectSameAnswers(*filter, *std::get<std::unique_ptr<ScalableBloomFilter>>(out));
}

TEST(RedisBloomCodec, DamagedHeadersAreRefused) {
  auto filter = RedisBloomScalableFilter(10);
  std::string header;
  uint64_t it = 0;
  NextRedisBloomChunk(*filter, 0, &it, &header);
  std::string bytes;
  uint64_t payload = 0;
  ASSERT_TRUE(RedisBloomHeaderToFilterHeader(header, &bytes, &payload).ok());
  EXPECT_EQ(payload, 144u);  // 100 entries at 0.005: 1,152 bits
  auto patched = [&](size_t at, uint8_t v) {
    std::string h = header;
    h[at] = static_cast<char>(v);
    return h;
  };
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"truncated", header.substr(0, header.size() - 1)},
      {"empty", ""},
      {"zero hashes", patched(20 + 40, 0)},
      {"bits not bytes x 8", patched(20 + 8, 0x81)},
      {"zero filters", patched(8, 0)},
      {"size not the links' sum", patched(0, 11)},
      {"no FORCE64", patched(12, 1)},
      {"power-of-two layers", patched(20 + 52, 7)},
  };
  for (const auto& [what, h] : cases) {
    EXPECT_FALSE(RedisBloomHeaderToFilterHeader(h, &bytes, &payload).ok()) << what;
    std::unique_ptr<ChunkedFilterLoad> load;
    EXPECT_FALSE(ChunkedFilterLoad::StartRedisBloom(h, FilterLimits{}, nullptr, &load).ok()) << what;
    EXPECT_EQ(load, nullptr) << what;
  }
  // Consistent but too big for the per-filter cap: refused by the codec.
  FilterLimits small;
  small.max_filter_bytes = 100;
  std::unique_ptr<ChunkedFilterLoad> load;
  EXPECT_FALSE(ChunkedFilterLoad::StartRedisBloom(header, small, nullptr, &load).ok());
}

}  // namespace
}  // namespace bloomgate
