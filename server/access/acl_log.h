// ACL LOG: the latest refusals (a command, a key, a channel, a failed AUTH),
// as Redis 7.2 keeps them (acl.c addACLLogEntry): newest first, at most
// acllog-max-len, and a refusal equal to a recent one (same reason, context,
// object and user, within 60 s of that one's last time) counted on it
// instead of added. Thread-safe: refusals come from every loop.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace bloomgate {

struct AclLogEntry {
  uint64_t count = 1;
  std::string reason;     // "command", "key", "channel", "auth"
  std::string context;    // "toplevel", "multi"
  std::string object;     // the command's full name, the key, the channel, "AUTH"
  std::string username;
  std::string client_info;  // the client's CLIENT LIST line at the last refusal
  uint64_t entry_id = 0;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
};

class AclLog {
 public:
  // Redis's acllog-max-len default (SetMaxEntries changes the limit).
  static constexpr size_t kMaxEntries = 128;
  // Redis's ACL_LOG_GROUPING_MAX_TIME_DELTA.
  static constexpr int64_t kGroupingMs = 60'000;

  void Add(AclLogEntry entry, int64_t now_ms);
  // The newest `count` entries, newest first.
  std::vector<AclLogEntry> Latest(size_t count) const;
  void Reset();
  // acllog-max-len: keeps at most `max_entries`, dropping the oldest now.
  void SetMaxEntries(size_t max_entries);

 private:
  mutable std::mutex mutex_;
  std::deque<AclLogEntry> entries_;  // newest first; guarded by mutex_
  uint64_t next_id_ = 0;             // guarded by mutex_
  size_t max_entries_ = kMaxEntries;  // guarded by mutex_
};

}  // namespace bloomgate
