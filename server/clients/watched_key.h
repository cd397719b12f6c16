// One key a client WATCHes, and the one rule for whether it changed since.
//
// WATCH remembers which entry a key named (its unique id, 0 if the key was
// missing) and that entry's version; EXEC aborts if either changed. Ids are
// never reused, so a deleted and re-created key is always seen as changed,
// and a watcher holds no reference that would keep a deleted filter's
// memory alive. EXEC judges it under the keys' locks; CLIENT LIST's flag `d`
// judges the same records from outside them (ClientInfo keeps a copy).
#pragma once

#include <cstdint>
#include <string>

#include "server/keyspace/keyspace.h"

namespace bloomgate {

struct WatchedKey {
  std::string key;
  uint64_t hash = 0;  // of `key` (keyspace/key_ref.h), so EXEC need not hash it again
  uint64_t entry_id = 0;
  uint64_t version = 0;
};

// `now` is the entry the key names now (null: missing or expired).
inline bool WatchedKeyChanged(const WatchedKey& watched, const KeyEntry* now) {
  if ((now == nullptr ? 0 : now->id()) != watched.entry_id) return true;
  return now != nullptr && now->watch_version() != watched.version;
}

}  // namespace bloomgate
