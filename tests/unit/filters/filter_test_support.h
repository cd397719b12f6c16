#pragma once

// Helpers shared by the filter unit tests: deterministic item names, FP
// measurement, and a scale factor that shrinks the big loops under
// sanitizers (TSan runs these loops ~10-20x slower).

#include <charconv>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>

#include "filters/key_hash.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define BLOOMGATE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define BLOOMGATE_SANITIZED 1
#endif
#endif

namespace bloomgate::test_support {

#ifdef BLOOMGATE_SANITIZED
constexpr uint64_t kSanitizerSlowdown = 10;
#else
constexpr uint64_t kSanitizerSlowdown = 1;
#endif

// `count` in a Release build, count / 10 under a sanitizer. For loops whose
// size is not what the test measures (items added, threads' work). FP-rate
// tests keep at least ~1,000 expected false positives in every build, since
// that sets their statistical power, so their query counts mostly stay fixed.
constexpr uint64_t Scaled(uint64_t count) { return count / kSanitizerSlowdown; }

// The hash of "<prefix>:<i>", built without allocating. Inserted items and
// queried absent items use different prefixes, so they never collide.
inline KeyHash ItemHash(std::string_view prefix, uint64_t i) {
  char buffer[96];
  std::memcpy(buffer, prefix.data(), prefix.size());
  char* end = buffer + prefix.size();
  *end++ = ':';
  end = std::to_chars(end, buffer + sizeof(buffer), i).ptr;
  return HashKey(std::string_view(buffer, static_cast<size_t>(end - buffer)));
}

struct FpMeasurement {
  uint64_t queries = 0;
  uint64_t false_positives = 0;
  double rate() const {
    return static_cast<double>(false_positives) / static_cast<double>(queries);
  }
};

// Queries "absent:0" .. "absent:<queries-1>", none of which was ever added.
template <typename Filter>
FpMeasurement MeasureFalsePositives(const Filter& filter, uint64_t queries) {
  FpMeasurement m;
  m.queries = queries;
  for (uint64_t i = 0; i < queries; ++i) {
    if (filter.MayContain(ItemHash("absent", i))) ++m.false_positives;
  }
  return m;
}

inline std::string Percent(double rate) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.4f%%", rate * 100);
  return buffer;
}

}  // namespace bloomgate::test_support
