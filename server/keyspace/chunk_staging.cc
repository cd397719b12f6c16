#include "server/keyspace/chunk_staging.h"

#include <vector>

namespace bloomgate {

void ChunkStaging::Put(const std::string& key, std::unique_ptr<ChunkedFilterLoad> load,
                       int64_t now_ms) {
  std::unique_ptr<ChunkedFilterLoad> replaced;  // freed after the lock
  std::lock_guard lock(mutex_);
  Staged& staged = loads_[key];
  replaced = std::move(staged.load);
  staged.load = std::move(load);
  staged.last_chunk_ms = now_ms;
}

std::unique_ptr<ChunkedFilterLoad> ChunkStaging::Take(std::string_view key) {
  std::lock_guard lock(mutex_);
  auto it = loads_.find(std::string(key));
  if (it == loads_.end()) return nullptr;
  std::unique_ptr<ChunkedFilterLoad> load = std::move(it->second.load);
  loads_.erase(it);
  return load;
}

size_t ChunkStaging::DropIdle(int64_t now_ms) {
  std::vector<std::unique_ptr<ChunkedFilterLoad>> dropped;  // freed after the lock
  std::lock_guard lock(mutex_);
  for (auto it = loads_.begin(); it != loads_.end();) {
    if (now_ms - it->second.last_chunk_ms > kStagedLoadIdleMs) {
      dropped.push_back(std::move(it->second.load));
      it = loads_.erase(it);
    } else {
      ++it;
    }
  }
  return dropped.size();
}

void ChunkStaging::Clear() {
  std::unordered_map<std::string, Staged> dropped;
  std::lock_guard lock(mutex_);
  dropped.swap(loads_);
}

size_t ChunkStaging::size() const {
  std::lock_guard lock(mutex_);
  return loads_.size();
}

}  // namespace bloomgate
