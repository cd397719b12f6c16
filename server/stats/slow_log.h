// SLOWLOG: the newest commands that took at least slowlog-log-slower-than
// microseconds, as Redis keeps them (slowlog.c): an id that only grows, the
// Unix time the command started, its duration, its arguments (at most 32,
// each at most 128 bytes, the rest summarised), the client's address and
// name.
//
// Every worker may add and any client may read, so one mutex guards the
// list; it is taken only for commands already slower than the threshold
// (10 ms by default), never on the fast path.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bloomgate {

struct SlowLogEntry {
  uint64_t id = 0;
  int64_t time_s = 0;
  int64_t duration_us = 0;
  std::vector<std::string> args;
  std::string client_addr;
  std::string client_name;
};

class SlowLog {
 public:
  // Redis's SLOWLOG_ENTRY_MAX_ARGC and SLOWLOG_ENTRY_MAX_STRING.
  static constexpr size_t kMaxArgs = 32;
  static constexpr size_t kMaxArgBytes = 128;

  // Adds an entry and drops the oldest beyond `max_len` (0 keeps none).
  // `redact_from`: arguments from this index on are shown as "(redacted)"
  // (AUTH's password); args.size() redacts nothing.
  void Add(std::span<const std::string_view> args, size_t redact_from, int64_t time_s,
           int64_t duration_us, std::string client_addr, std::string client_name,
           uint64_t max_len);
  // The newest `count` entries, newest first.
  std::vector<SlowLogEntry> Newest(size_t count) const;
  size_t size() const;
  void Reset();
  // Applies a lowered slowlog-max-len at once, as Redis's CONFIG SET does.
  void Trim(uint64_t max_len);

 private:
  mutable std::mutex mutex_;
  std::deque<SlowLogEntry> entries_;  // front = newest
  uint64_t next_id_ = 0;
};

}  // namespace bloomgate
