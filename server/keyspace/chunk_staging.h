// Staged LOADCHUNK sequences: a filter being restored chunk by chunk lives
// here, invisible to every reader, until its last chunk arrives
// (server/commands/family_shared/chunk_transfer.h). A staged load that receives no chunk
// for kStagedLoadIdleMs is dropped, so an abandoned restore cannot pin its
// memory forever.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "persistence/dump_chunk.h"

namespace bloomgate {

class ChunkStaging {
 public:
  static constexpr int64_t kStagedLoadIdleMs = 60'000;

  // A new load for `key` replaces any earlier one.
  void Put(const std::string& key, std::unique_ptr<ChunkedFilterLoad> load, int64_t now_ms);
  // Takes the load out (the caller puts it back if it is not finished).
  std::unique_ptr<ChunkedFilterLoad> Take(std::string_view key);
  // Drops loads idle for longer than kStagedLoadIdleMs; returns how many.
  size_t DropIdle(int64_t now_ms);
  void Clear();
  size_t size() const;

 private:
  struct Staged {
    std::unique_ptr<ChunkedFilterLoad> load;
    int64_t last_chunk_ms = 0;
  };
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Staged> loads_;
};

}  // namespace bloomgate
