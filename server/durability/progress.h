// Progress of a long byte-bound job (loading the data at start-up, writing a
// snapshot, `bloomgate build` reading its input): bytes done of a total, the
// rate so far, an ETA, and when the next "still going" log line is due.
//
// Done bytes are counted by the job's thread and read by INFO from any
// thread, so they are atomics; relaxed order is enough: each figure is a
// gauge read on its own, and nothing else is published through it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace bloomgate {

class ByteProgress {
 public:
  // A line every 3 s: a 1 GB snapshot read at ~300 MB/s (check-snapshot on
  // this machine) then says something about once, a slow disk every 3 s.
  static constexpr int64_t kLogIntervalMs = 3000;

  struct Figures {
    uint64_t done_bytes = 0;
    uint64_t total_bytes = 0;  // 0 = unknown
    double percent = 0;        // 0..100; 0 when the total is unknown
    double bytes_per_second = 0;
    int64_t eta_seconds = -1;  // -1 = unknown (no total, or nothing done yet)
    int64_t elapsed_ms = 0;
    int64_t start_ms = 0;      // wall clock, ms since the epoch
  };

  // Starts (or restarts) the count at 0 of `total_bytes` (0 = unknown).
  void Begin(uint64_t total_bytes, int64_t now_ms);
  void AddTotal(int64_t delta_bytes);
  void Add(uint64_t bytes) { done_.fetch_add(bytes, std::memory_order_relaxed); }
  Figures Read(int64_t now_ms) const;
  // True at most once per kLogIntervalMs from Begin on: the caller logs a
  // line then (one caller thread: the job's).
  bool LogDue(int64_t now_ms);
  // "412.0 MB of 1000.0 MB (41.2%), 85.3 MB/s, about 7 s left".
  static std::string Describe(const Figures& figures);

 private:
  std::atomic<uint64_t> done_{0};
  std::atomic<uint64_t> total_{0};
  std::atomic<int64_t> start_ms_{0};
  int64_t next_log_ms_ = 0;  // the job's thread only
};

}  // namespace bloomgate
