#include "server/durability/progress.h"

#include <algorithm>
#include <cstdio>

namespace bloomgate {

void ByteProgress::Begin(uint64_t total_bytes, int64_t now_ms) {
  done_.store(0, std::memory_order_relaxed);
  total_.store(total_bytes, std::memory_order_relaxed);
  start_ms_.store(now_ms, std::memory_order_relaxed);
  next_log_ms_ = now_ms + kLogIntervalMs;
}

void ByteProgress::AddTotal(int64_t delta_bytes) {
  uint64_t total = total_.load(std::memory_order_relaxed);
  if (delta_bytes < 0 && static_cast<uint64_t>(-delta_bytes) > total) {
    total_.store(0, std::memory_order_relaxed);
  } else {
    total_.store(total + static_cast<uint64_t>(delta_bytes), std::memory_order_relaxed);
  }
}

ByteProgress::Figures ByteProgress::Read(int64_t now_ms) const {
  Figures f;
  f.done_bytes = done_.load(std::memory_order_relaxed);
  f.total_bytes = total_.load(std::memory_order_relaxed);
  f.start_ms = start_ms_.load(std::memory_order_relaxed);
  f.elapsed_ms = std::max<int64_t>(0, now_ms - f.start_ms);
  if (f.total_bytes > 0) {
    // A total that was an estimate (a save's) can be passed: say 100, not more.
    f.percent = std::min(100.0, 100.0 * static_cast<double>(f.done_bytes) /
                                    static_cast<double>(f.total_bytes));
  }
  if (f.elapsed_ms > 0) {
    f.bytes_per_second = static_cast<double>(f.done_bytes) * 1000.0 /
                         static_cast<double>(f.elapsed_ms);
  }
  if (f.total_bytes > 0 && f.bytes_per_second > 0) {
    uint64_t left = f.total_bytes > f.done_bytes ? f.total_bytes - f.done_bytes : 0;
    f.eta_seconds = static_cast<int64_t>(static_cast<double>(left) / f.bytes_per_second + 0.5);
  }
  return f;
}

bool ByteProgress::LogDue(int64_t now_ms) {
  if (now_ms < next_log_ms_) return false;
  next_log_ms_ = now_ms + kLogIntervalMs;
  return true;
}

std::string ByteProgress::Describe(const Figures& f) {
  char text[160];
  const double mb = 1e6;
  if (f.total_bytes > 0) {
    std::snprintf(text, sizeof(text), "%.1f MB of %.1f MB (%.1f%%), %.1f MB/s", f.done_bytes / mb,
                  f.total_bytes / mb, f.percent, f.bytes_per_second / mb);
  } else {
    std::snprintf(text, sizeof(text), "%.1f MB, %.1f MB/s", f.done_bytes / mb,
                  f.bytes_per_second / mb);
  }
  std::string out = text;
  if (f.eta_seconds >= 0) out += ", about " + std::to_string(f.eta_seconds) + " s left";
  return out;
}

}  // namespace bloomgate
