#include "server/stats/latency_monitor.h"

#include <algorithm>

namespace bloomgate {

void LatencyMonitor::Add(std::string_view event, int64_t time_s, uint64_t latency_ms) {
  std::lock_guard lock(mutex_);
  auto it = events_.find(event);
  if (it == events_.end()) it = events_.emplace(std::string(event), Series{}).first;
  Series& series = it->second;
  series.max_ms = std::max(series.max_ms, latency_ms);
  if (series.count > 0) {
    LatencySample& last = series.samples[(series.next + kSamples - 1) % kSamples];
    if (last.time_s == time_s) {
      // One sample per second: the worst of that second, as Redis.
      last.latency_ms = std::max(last.latency_ms, latency_ms);
      return;
    }
  }
  series.samples[series.next] = {time_s, latency_ms};
  series.next = (series.next + 1) % kSamples;
  series.count = std::min(series.count + 1, kSamples);
}

std::vector<LatencyEventSummary> LatencyMonitor::Latest() const {
  std::lock_guard lock(mutex_);
  std::vector<LatencyEventSummary> out;
  for (const auto& [name, series] : events_) {
    if (series.count == 0) continue;
    const LatencySample& last = series.samples[(series.next + kSamples - 1) % kSamples];
    out.push_back({name, last.time_s, last.latency_ms, series.max_ms});
  }
  return out;
}

std::vector<LatencySample> LatencyMonitor::History(std::string_view event) const {
  std::lock_guard lock(mutex_);
  std::vector<LatencySample> out;
  auto it = events_.find(event);
  if (it == events_.end()) return out;
  const Series& series = it->second;
  for (size_t i = 0; i < series.count; ++i) {
    out.push_back(series.samples[(series.next + kSamples - series.count + i) % kSamples]);
  }
  return out;
}

size_t LatencyMonitor::Reset(const std::vector<std::string>& events) {
  std::lock_guard lock(mutex_);
  if (events.empty()) {
    size_t count = events_.size();
    events_.clear();
    return count;
  }
  size_t count = 0;
  for (const std::string& event : events) count += events_.erase(event);
  return count;
}

}  // namespace bloomgate
