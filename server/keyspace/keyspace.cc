#include "server/keyspace/keyspace.h"

#include <algorithm>
#include <mutex>
#include <xxhash.h>

#include "persistence/filter_codec.h"
#include "server/keyspace/glob.h"

namespace bloomgate {

uint64_t KeyEntry::MemoryUsage() const {
  // The entry itself plus the map node that holds it (about 64 bytes).
  constexpr uint64_t kEntryOverhead = sizeof(KeyEntry) + 64;
  return std::visit([](const auto& value) { return value->memory_bytes(); }, value_) +
         kEntryOverhead;
}

void KeyEntry::ArmSnapshotCopy(std::shared_ptr<SnapshotCopy> copy) {
  std::lock_guard lock(snapshot_mutex_);
  snapshot_copy_ = std::move(copy);
  snapshot_armed_.store(true, std::memory_order_release);
}

void KeyEntry::TakeSnapshotCopy() {
  if (!snapshot_armed_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(snapshot_mutex_);
  if (snapshot_copy_ == nullptr) return;  // another thread made it meanwhile
  snapshot_copy_->filter = CloneFilter(value_);
  snapshot_copy_->taken = true;
  snapshot_copy_.reset();
  snapshot_armed_.store(false, std::memory_order_release);
}

uint64_t Keyspace::HashName(std::string_view name) {
  return XXH3_64bits(name.data(), name.size());
}

size_t Keyspace::NameHash::operator()(std::string_view name) const {
  return static_cast<size_t>(HashName(name));
}

EntryPtr Keyspace::Find(std::string_view key, int64_t now_ms) {
  Shard& shard = ShardFor(key);
  {
    std::shared_lock lock(shard.mutex);
    auto it = shard.entries.find(key);
    if (it == shard.entries.end()) return nullptr;
    if (!it->second->ExpiredAt(now_ms)) return it->second;
  }
  // Expired: remove it, unless someone replaced it in the meantime. The
  // entry is freed after the lock is released (a filter can be gigabytes).
  EntryPtr doomed;
  std::unique_lock lock(shard.mutex);
  auto it = shard.entries.find(key);
  if (it == shard.entries.end()) return nullptr;
  if (!it->second->ExpiredAt(now_ms)) return it->second;
  doomed = it->second;
  EraseLocked(shard, it);
  expired_keys_.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

EntryPtr Keyspace::Insert(std::string_view key, EntryPtr entry, int64_t now_ms,
                          bool* inserted, const InsertHook& on_inserted) {
  Shard& shard = ShardFor(key);
  EntryPtr doomed;  // an expired entry, freed after the lock is released
  std::unique_lock lock(shard.mutex);
  auto it = shard.entries.find(key);
  if (it != shard.entries.end()) {
    if (!it->second->ExpiredAt(now_ms)) {
      *inserted = false;
      return it->second;
    }
    doomed = it->second;
    EraseLocked(shard, it);
    expired_keys_.fetch_add(1, std::memory_order_relaxed);
  }
  auto stored = shard.entries.emplace(std::string(key), entry).first;
  *inserted = true;
  if (on_inserted) on_inserted(stored->first, *entry);
  return entry;
}

void Keyspace::Put(std::string_view key, EntryPtr entry, int64_t expire_at_ms) {
  Shard& shard = ShardFor(key);
  EntryPtr doomed;  // a replaced entry, freed after the lock is released
  std::unique_lock lock(shard.mutex);
  auto it = shard.entries.find(key);
  if (it != shard.entries.end()) {
    doomed = it->second;
    EraseLocked(shard, it);
  }
  auto stored = shard.entries.emplace(std::string(key), std::move(entry)).first;
  if (expire_at_ms != 0) SetDeadlineLocked(shard, stored->first, *stored->second, expire_at_ms);
}

void Keyspace::EraseLocked(
    Shard& shard,
    std::unordered_map<std::string, EntryPtr, NameHash, std::equal_to<>>::iterator it) {
  int64_t at = it->second->expire_at_ms();
  if (at != 0) shard.deadlines.erase({at, it->first});
  // A reader holding the entry still sees it as it was; WATCHers see the
  // change because the entry under the name is no longer the one they hold.
  it->second->MarkModified();
  shard.entries.erase(it);
}

bool Keyspace::Erase(std::string_view key, int64_t now_ms) {
  Shard& shard = ShardFor(key);
  EntryPtr doomed;  // destroyed after the lock is released
  std::unique_lock lock(shard.mutex);
  auto it = shard.entries.find(key);
  if (it == shard.entries.end()) return false;
  bool live = !it->second->ExpiredAt(now_ms);
  doomed = it->second;
  EraseLocked(shard, it);
  if (!live) expired_keys_.fetch_add(1, std::memory_order_relaxed);
  lock.unlock();
  return live;
}

void Keyspace::SetDeadlineLocked(Shard& shard, const std::string& name, KeyEntry& entry,
                                 int64_t at_ms) {
  int64_t old = entry.expire_at_ms();
  if (old != 0) shard.deadlines.erase({old, name});
  if (at_ms != 0) shard.deadlines.emplace(at_ms, name);
  entry.expire_at_ms_.store(at_ms, std::memory_order_relaxed);
}

Keyspace::RenameStatus Keyspace::Rename(std::string_view src, std::string_view dst, bool nx,
                                        int64_t now_ms) {
  size_t src_index = HashName(src) >> (64 - kShardBits);
  size_t dst_index = HashName(dst) >> (64 - kShardBits);
  // A replaced target is freed after the locks are released: declared
  // before them, it is destroyed after them.
  EntryPtr replaced;
  // Lock both shards in index order so two renames can never deadlock.
  std::unique_lock<std::shared_mutex> first(shards_[std::min(src_index, dst_index)].mutex);
  std::unique_lock<std::shared_mutex> second;
  if (src_index != dst_index) {
    second = std::unique_lock<std::shared_mutex>(shards_[std::max(src_index, dst_index)].mutex);
  }
  Shard& src_shard = shards_[src_index];
  Shard& dst_shard = shards_[dst_index];
  auto src_it = src_shard.entries.find(src);
  if (src_it == src_shard.entries.end() || src_it->second->ExpiredAt(now_ms)) {
    return RenameStatus::kNoSuchKey;
  }
  if (src == dst) return nx ? RenameStatus::kTargetExists : RenameStatus::kOk;
  auto dst_it = dst_shard.entries.find(dst);
  if (dst_it != dst_shard.entries.end()) {
    bool expired = dst_it->second->ExpiredAt(now_ms);
    if (nx && !expired) return RenameStatus::kTargetExists;
    replaced = dst_it->second;
    EraseLocked(dst_shard, dst_it);
    if (expired) expired_keys_.fetch_add(1, std::memory_order_relaxed);
  }
  EntryPtr moving = src_it->second;
  int64_t deadline = moving->expire_at_ms();
  if (deadline != 0) src_shard.deadlines.erase({deadline, src_it->first});
  src_shard.entries.erase(src_it);
  auto [it, ok] = dst_shard.entries.emplace(std::string(dst), moving);
  if (deadline != 0) dst_shard.deadlines.emplace(deadline, it->first);
  moving->MarkModified();
  return RenameStatus::kOk;
}

bool Keyspace::SetExpire(std::string_view key, int64_t at_ms, int64_t now_ms) {
  Shard& shard = ShardFor(key);
  std::unique_lock lock(shard.mutex);
  auto it = shard.entries.find(key);
  if (it == shard.entries.end() || it->second->ExpiredAt(now_ms)) return false;
  SetDeadlineLocked(shard, it->first, *it->second, at_ms);
  it->second->MarkModified();
  return true;
}

size_t Keyspace::Size() const {
  size_t total = 0;
  for (const Shard& shard : shards_) {
    std::shared_lock lock(shard.mutex);
    total += shard.entries.size();
  }
  return total;
}

size_t Keyspace::VolatileCount() const {
  size_t total = 0;
  for (const Shard& shard : shards_) {
    std::shared_lock lock(shard.mutex);
    total += shard.deadlines.size();
  }
  return total;
}

void Keyspace::Clear() {
  for (Shard& shard : shards_) {
    decltype(shard.entries) doomed;  // freed after the lock is released
    {
      std::unique_lock lock(shard.mutex);
      for (auto& [name, entry] : shard.entries) entry->MarkModified();
      doomed.swap(shard.entries);
      shard.deadlines.clear();
    }
  }
}

void Keyspace::ForEachKey(
    std::string_view pattern, int64_t now_ms,
    const std::function<void(const std::string&, const EntryPtr&)>& visit) const {
  bool all = pattern == "*";
  for (const Shard& shard : shards_) {
    std::shared_lock lock(shard.mutex);
    for (const auto& [name, entry] : shard.entries) {
      if (entry->ExpiredAt(now_ms)) continue;
      if (all || GlobMatch(pattern, name)) visit(name, entry);
    }
  }
}

uint64_t Keyspace::Scan(
    uint64_t cursor, size_t count, int64_t now_ms,
    const std::function<void(const std::string&, const EntryPtr&)>& visit) const {
  size_t shard_index = cursor >> (64 - kShardBits);
  std::vector<std::pair<uint64_t, std::pair<std::string, EntryPtr>>> batch;
  size_t looked_at = 0;
  while (shard_index < kShards) {
    const Shard& shard = shards_[shard_index];
    batch.clear();
    {
      std::shared_lock lock(shard.mutex);
      for (const auto& [name, entry] : shard.entries) {
        uint64_t hash = HashName(name);
        if (hash >= cursor) batch.push_back({hash, {name, entry}});
      }
    }
    std::sort(batch.begin(), batch.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    size_t i = 0;
    while (i < batch.size()) {
      // Keys with equal hashes go out together so the cursor never splits them.
      uint64_t hash = batch[i].first;
      for (; i < batch.size() && batch[i].first == hash; ++i) {
        ++looked_at;
        if (!batch[i].second.second->ExpiredAt(now_ms)) {
          visit(batch[i].second.first, batch[i].second.second);
        }
      }
      if (looked_at >= count) {
        if (hash == UINT64_MAX) return 0;
        return hash + 1;
      }
    }
    ++shard_index;
    if (shard_index == kShards) return 0;
    cursor = static_cast<uint64_t>(shard_index) << (64 - kShardBits);
    if (looked_at >= count) return cursor;
  }
  return 0;
}

size_t Keyspace::SweepExpired(int64_t now_ms, size_t max_keys) {
  size_t removed = 0;
  for (Shard& shard : shards_) {
    if (removed >= max_keys) break;
    std::vector<EntryPtr> doomed;  // freed after the lock is released
    std::unique_lock lock(shard.mutex);
    while (removed < max_keys && !shard.deadlines.empty() &&
           shard.deadlines.begin()->first <= now_ms) {
      auto it = shard.entries.find(shard.deadlines.begin()->second);
      if (it == shard.entries.end()) {  // cannot happen; keep the index honest
        shard.deadlines.erase(shard.deadlines.begin());
        continue;
      }
      doomed.push_back(it->second);
      EraseLocked(shard, it);
      ++removed;
    }
    lock.unlock();
  }
  expired_keys_.fetch_add(removed, std::memory_order_relaxed);
  return removed;
}

}  // namespace bloomgate
