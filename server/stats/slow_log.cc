#include "server/stats/slow_log.h"

#include <algorithm>

namespace bloomgate {

void SlowLog::Add(std::span<const std::string_view> args, size_t redact_from, int64_t time_s,
                  int64_t duration_us, std::string client_addr, std::string client_name,
                  uint64_t max_len) {
  SlowLogEntry entry;
  entry.time_s = time_s;
  entry.duration_us = duration_us;
  entry.client_addr = std::move(client_addr);
  entry.client_name = std::move(client_name);
  // As Redis: past 32 arguments the 32nd says how many more there were.
  const size_t shown = args.size() > kMaxArgs ? kMaxArgs - 1 : args.size();
  for (size_t i = 0; i < shown; ++i) {
    if (i >= redact_from) {
      entry.args.emplace_back("(redacted)");
    } else if (args[i].size() > kMaxArgBytes) {
      entry.args.push_back(std::string(args[i].substr(0, kMaxArgBytes)) + "... (" +
                           std::to_string(args[i].size() - kMaxArgBytes) + " more bytes)");
    } else {
      entry.args.emplace_back(args[i]);
    }
  }
  if (shown < args.size()) {
    entry.args.push_back("... (" + std::to_string(args.size() - shown) + " more arguments)");
  }
  std::lock_guard lock(mutex_);
  entry.id = next_id_++;
  entries_.push_front(std::move(entry));
  while (entries_.size() > max_len) entries_.pop_back();
}

std::vector<SlowLogEntry> SlowLog::Newest(size_t count) const {
  std::lock_guard lock(mutex_);
  count = std::min(count, entries_.size());
  return std::vector<SlowLogEntry>(entries_.begin(), entries_.begin() + count);
}

size_t SlowLog::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

void SlowLog::Reset() {
  std::lock_guard lock(mutex_);
  entries_.clear();
}

void SlowLog::Trim(uint64_t max_len) {
  std::lock_guard lock(mutex_);
  while (entries_.size() > max_len) entries_.pop_back();
}

}  // namespace bloomgate
