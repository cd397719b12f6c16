// INFO latencystats: each command's call durations in nanoseconds, kept in
// a log-linear histogram (HdrHistogram's layout, as Redis 7 keeps them):
//
//   value v < 32          bucket v, exact
//   value v >= 32         shift = bit_width(v) - 5, bucket shift * 16 + (v >> shift)
//
// so every power of two from 32 ns up is split into 16 equal buckets and a
// bucket's width is at most 1/16 of its values (6.25%; Redis's hdr keeps 2
// significant digits, 1%, at ~3x the memory). Durations from 2^36 ns
// (68.7 s) are counted in the last bucket: such a command is in SLOWLOG.
// 528 buckets of 8 bytes, 4.2 KiB a histogram; one exists per command per
// worker only once that worker has run the command (most servers run a
// handful of the ~200 commands), so the memory follows what is used.
//
// A percentile is HdrHistogram's hdr_value_at_percentile: the highest value
// of the first bucket at which the cumulative count reaches
// round(p / 100 x total) (at least 1), so it never understates.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace bloomgate {

class LatencyHistogram {
 public:
  static constexpr uint32_t kSubBits = 4;                  // 16 buckets per power of two
  static constexpr uint64_t kSub = uint64_t{1} << kSubBits;
  static constexpr uint32_t kMaxBits = 36;                 // 2^36 ns = 68.7 s
  static constexpr size_t kBuckets = (kMaxBits - kSubBits + 1) * kSub;  // 528

  static size_t IndexOf(uint64_t nsec) {
    nsec = std::min(nsec, (uint64_t{1} << kMaxBits) - 1);
    if (nsec < 2 * kSub) return static_cast<size_t>(nsec);
    const uint32_t shift = static_cast<uint32_t>(std::bit_width(nsec)) - kSubBits - 1;
    return static_cast<size_t>(shift * kSub + (nsec >> shift));
  }
  // The largest value bucket `index` holds.
  static uint64_t HighestOf(size_t index) {
    if (index < 2 * kSub) return index;
    const uint64_t shift = index / kSub - 1;
    const uint64_t top = index % kSub + kSub;
    return ((top + 1) << shift) - 1;
  }

  // Relaxed: one writer per histogram (its worker); INFO reads recent
  // values, not a consistent cut, as for every other counter.
  std::array<std::atomic<uint64_t>, kBuckets> counts{};
};

// Summed counts of one command (over workers, less the RESETSTAT baseline).
struct LatencyCounts {
  std::array<uint64_t, LatencyHistogram::kBuckets> counts{};
  uint64_t total = 0;

  // hdr_value_at_percentile over these counts, in nanoseconds; 0 if empty.
  uint64_t ValueAtPercentile(double percentile) const {
    if (total == 0) return 0;
    const double wanted = std::clamp(percentile, 0.0, 100.0) / 100.0 * static_cast<double>(total);
    const uint64_t at = std::max<uint64_t>(1, static_cast<uint64_t>(wanted + 0.5));
    uint64_t seen = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      seen += counts[i];
      if (seen >= at) return LatencyHistogram::HighestOf(i);
    }
    return LatencyHistogram::HighestOf(counts.size() - 1);
  }
};

}  // namespace bloomgate
