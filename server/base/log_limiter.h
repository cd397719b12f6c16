// Rate limit for logs that clients can cause (protocol errors, refused
// connections): at most one line per interval, with a count of what was
// left out, so a misbehaving client cannot flood the log.
#pragma once

#include <atomic>
#include <cstdint>

namespace bloomgate {

class LogLimiter {
 public:
  explicit LogLimiter(int64_t interval_ms) : interval_ms_(interval_ms) {}

  // True if a line may be logged now; *suppressed gets how many were
  // dropped since the last one.
  bool Allow(int64_t now_ms, uint64_t* suppressed) {
    int64_t next = next_ms_.load(std::memory_order_relaxed);
    if (now_ms < next ||
        !next_ms_.compare_exchange_strong(next, now_ms + interval_ms_,
                                          std::memory_order_relaxed)) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    *suppressed = dropped_.exchange(0, std::memory_order_relaxed);
    return true;
  }

 private:
  const int64_t interval_ms_;
  std::atomic<int64_t> next_ms_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace bloomgate
