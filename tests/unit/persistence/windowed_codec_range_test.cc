// The windowed codecs take an origin and a current generation from the
// bytes (RESTORE, LOADCHUNK, a snapshot, a log record): both must lie where
// a live window can be (filters/window_generations.h), and a filter made at
// any clock reading must load back.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "filters/window_generations.h"
#include "filters/windowed_bloom_filter.h"
#include "filters/windowed_counting_bloom_filter.h"
#include "persistence/filter_codec.h"

namespace bloomgate {
namespace {

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

AnyFilter WindowedBloom(int64_t now_ms) {
  WindowedBloomOptions o;
  o.window_ms = 4000;
  o.generations = 4;
  o.hash_seed = 3;
  std::unique_ptr<WindowedBloomFilter> f;
  EXPECT_EQ(WindowedBloomFilter::Create(o, now_ms, FilterLimits{}, nullptr, &f),
            FilterStatus::kOk);
  return f;
}

AnyFilter WindowedCounting(int64_t now_ms) {
  WindowedCountingBloomOptions o;
  o.window_ms = 4000;
  o.generations = 4;
  o.hash_seed = 3;
  std::unique_ptr<WindowedCountingBloomFilter> f;
  EXPECT_EQ(WindowedCountingBloomFilter::Create(o, now_ms, FilterLimits{}, nullptr, &f),
            FilterStatus::kOk);
  return f;
}

void PutLe(std::string* s, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) (*s)[at + i] = static_cast<char>(v >> (8 * i));
}

Status Load(const FilterHeader& header, AnyFilter* out) {
  std::unique_ptr<FilterLoader> loader;
  if (Status s = FilterLoader::Begin(header.kind, header.bytes, header.payload_bytes,
                                     FilterLimits{}, nullptr, &loader);
      !s.ok()) {
    return s;
  }
  return loader->Finish(out);
}

// Offsets of origin_ms and current: after the common prefix (12), error
// rate, capacity, expansion (32), the family fields (counting: 1 byte of
// counter bits), window_ms and generations.
struct Case {
  const char* name;
  AnyFilter (*make)(int64_t);
  size_t origin_at;
};
const Case kCases[] = {{"windowed bloom", WindowedBloom, 44},
                       {"windowed counting bloom", WindowedCounting, 45}};

TEST(WindowedCodecRange, AnOriginOutsideTheWindowClocksRangeIsRefusedByName) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    FilterHeader header = DescribeFilter(c.make(1'000'000));
    for (int64_t origin : {kInt64Min, -kMaxWindowClockMs - 1, kMaxWindowClockMs + 1, kInt64Max}) {
      FilterHeader bad = header;
      PutLe(&bad.bytes, c.origin_at, static_cast<uint64_t>(origin));
      AnyFilter loaded;
      const Status s = Load(bad, &loaded);
      ASSERT_FALSE(s.ok()) << origin;
      EXPECT_EQ(s.message(), std::string(c.name) + " header: origin_ms " + std::to_string(origin) +
                                 " not in [-2305843009213693952, 2305843009213693952]");
    }
  }
}

TEST(WindowedCodecRange, ACurrentGenerationPastTheWindowsLastIsRefusedByName) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    // Origin 0, period 1000 ms: the last generation is 2^61 / 1000.
    FilterHeader header = DescribeFilter(c.make(0));
    const uint64_t last = LastWindowGeneration(0, 1000);
    ASSERT_EQ(last, 2305843009213693u);
    for (uint64_t current : {last + 1, std::numeric_limits<uint64_t>::max()}) {
      FilterHeader bad = header;
      PutLe(&bad.bytes, c.origin_at + 8, current);
      AnyFilter loaded;
      const Status s = Load(bad, &loaded);
      ASSERT_FALSE(s.ok()) << current;
      EXPECT_EQ(s.message(), std::string(c.name) + " header: current " + std::to_string(current) +
                                 " not in [0, " +
                                 std::to_string(last) + "]");
    }
  }
}

TEST(WindowedCodecRange, AFilterMadeAtAnyClockReadingLoadsBack) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    for (int64_t now : {kInt64Min, -kMaxWindowClockMs, int64_t{0}, kMaxWindowClockMs, kInt64Max}) {
      const FilterHeader header = DescribeFilter(c.make(now));
      AnyFilter loaded;
      const Status s = Load(header, &loaded);
      ASSERT_TRUE(s.ok()) << now << ": " << s.message();
      EXPECT_EQ(DescribeFilter(loaded).bytes, header.bytes) << now;
    }
  }
}

}  // namespace
}  // namespace bloomgate
