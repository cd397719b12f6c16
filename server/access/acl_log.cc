#include "server/access/acl_log.h"

#include <algorithm>

namespace bloomgate {

void AclLog::Add(AclLogEntry entry, int64_t now_ms) {
  std::lock_guard lock(mutex_);
  auto same = std::find_if(entries_.begin(), entries_.end(), [&](const AclLogEntry& old) {
    return old.reason == entry.reason && old.context == entry.context &&
           old.object == entry.object && old.username == entry.username &&
           now_ms - old.updated_ms < kGroupingMs;
  });
  if (same != entries_.end()) {
    AclLogEntry merged = std::move(*same);
    entries_.erase(same);
    ++merged.count;
    merged.client_info = std::move(entry.client_info);
    merged.updated_ms = now_ms;
    entries_.push_front(std::move(merged));
    return;
  }
  entry.count = 1;
  entry.entry_id = next_id_++;
  entry.created_ms = now_ms;
  entry.updated_ms = now_ms;
  entries_.push_front(std::move(entry));
  while (entries_.size() > max_entries_) entries_.pop_back();
}

std::vector<AclLogEntry> AclLog::Latest(size_t count) const {
  std::lock_guard lock(mutex_);
  const size_t n = std::min(count, entries_.size());
  return {entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(n)};
}

void AclLog::SetMaxEntries(size_t max_entries) {
  std::lock_guard lock(mutex_);
  max_entries_ = max_entries;
  while (entries_.size() > max_entries_) entries_.pop_back();
}

void AclLog::Reset() {
  std::lock_guard lock(mutex_);
  entries_.clear();
}

}  // namespace bloomgate
