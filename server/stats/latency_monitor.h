// LATENCY: per event, the last 160 samples of latency spikes (at least
// latency-monitor-threshold ms), one per second at most (the largest of
// that second), and the all-time maximum, as Redis's latency.c keeps them.
//
// The events recorded are "command" (a command without the fast flag that
// took at least the threshold) and "fast-command" (one with it). Redis's
// fork, AOF and expiry events have no counterpart here: a snapshot is a
// short cut under the global lock plus a background write, not a fork.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace bloomgate {

struct LatencySample {
  int64_t time_s = 0;
  uint64_t latency_ms = 0;
};

struct LatencyEventSummary {
  std::string name;
  int64_t time_s = 0;        // of the latest sample
  uint64_t latest_ms = 0;
  uint64_t max_ms = 0;
};

class LatencyMonitor {
 public:
  // Redis's LATENCY_TS_LEN.
  static constexpr size_t kSamples = 160;

  void Add(std::string_view event, int64_t time_s, uint64_t latency_ms);
  // Every event with samples, by name.
  std::vector<LatencyEventSummary> Latest() const;
  // The samples of one event, oldest first; empty for an unknown event.
  std::vector<LatencySample> History(std::string_view event) const;
  // Forgets the named events (every event when `events` is empty); returns
  // how many existed.
  size_t Reset(const std::vector<std::string>& events);

 private:
  struct Series {
    std::array<LatencySample, kSamples> samples{};
    size_t next = 0;   // where the next sample goes
    size_t count = 0;  // samples held, up to kSamples
    uint64_t max_ms = 0;
  };

  mutable std::mutex mutex_;
  std::map<std::string, Series, std::less<>> events_;
};

}  // namespace bloomgate
