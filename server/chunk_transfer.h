// SCANDUMP / LOADCHUNK for every filter family (BF., CF., CBF.), over the
// chunk format of persistence/dump_chunk.h.
//
// A LOADCHUNK sequence builds its filter in a staging area, invisible to
// every reader: EXISTS, TYPE and BF.EXISTS see nothing until the last chunk
// has arrived, and then the whole filter appears at once (and is logged as
// one record, so the log never holds half a filter). A staged load that
// receives no chunk for kStagedLoadIdleMs is dropped, so an abandoned
// restore cannot pin its memory forever.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "persistence/dump_chunk.h"

namespace bloomgate {

struct CommandContext;

// The family-specific parts of the two commands: RedisBloom's texts differ
// between BF.* and CF.* (COMPAT.md §1.6).
struct ChunkCommandTexts {
  FilterKind kind;
  std::string_view bad_iterator_scandump;  // SCANDUMP's iterator is not a number
  std::string_view bad_iterator_loadchunk;
  std::string_view bad_data;               // a chunk is refused
};

void ScanDump(CommandContext& ctx, const ChunkCommandTexts& texts);
void LoadChunk(CommandContext& ctx, const ChunkCommandTexts& texts);

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
