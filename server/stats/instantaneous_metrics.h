// INFO's instantaneous_ops_per_sec and instantaneous_input/output_kbps,
// sampled as Redis samples them (server.c trackInstantaneousMetric): every
// 100 ms the housekeeping timer passes the running totals, each sample is
// the rate since the previous one, and the reported figure is the mean of
// the last 16 samples (Redis's STATS_METRIC_SAMPLES), i.e. about 1.6 s.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

namespace bloomgate {

class InstantaneousMetrics {
 public:
  static constexpr size_t kSamples = 16;
  enum Metric : size_t { kOps = 0, kNetInput, kNetOutput, kMetrics };
  using Totals = std::array<uint64_t, kMetrics>;

  void Sample(int64_t now_ms, const Totals& totals) {
    std::lock_guard lock(mutex_);
    if (have_last_ && now_ms > last_ms_) {
      const double elapsed_ms = static_cast<double>(now_ms - last_ms_);
      for (size_t m = 0; m < kMetrics; ++m) {
        // A total below the last one was reset (CONFIG RESETSTAT): no rate.
        const uint64_t delta = totals[m] >= last_[m] ? totals[m] - last_[m] : 0;
        samples_[m][next_] = static_cast<double>(delta) * 1000.0 / elapsed_ms;
      }
      next_ = (next_ + 1) % kSamples;
    }
    last_ = totals;
    last_ms_ = now_ms;
    have_last_ = true;
  }

  // The mean rate per second over the samples.
  double PerSecond(Metric metric) const {
    std::lock_guard lock(mutex_);
    double sum = 0;
    for (double sample : samples_[metric]) sum += sample;
    return sum / kSamples;
  }

 private:
  mutable std::mutex mutex_;
  bool have_last_ = false;
  int64_t last_ms_ = 0;
  Totals last_{};
  std::array<std::array<double, kSamples>, kMetrics> samples_{};
  size_t next_ = 0;
};

}  // namespace bloomgate
