// SCANDUMP / LOADCHUNK for every filter family (BF., CF., CBF., CMS., TOPK.), over the
// chunk format of persistence/dump_chunk.h.
//
// A LOADCHUNK sequence builds its filter in a staging area, invisible to
// every reader: EXISTS, TYPE and BF.EXISTS see nothing until the last chunk
// has arrived, and then the whole filter appears at once (and is logged as
// one record, so the log never holds half a filter). A staged load that
// receives no chunk for kStagedLoadIdleMs is dropped, so an abandoned
// restore cannot pin its memory forever.
//
// A dump is of one moment or refused: SCANDUMP runs while no writer changes
// its key (a commuting family's SCANDUMP takes the key from its order-free
// writes too: family_rows.h), and binds each chunk to the entry and its
// write version, so LOADCHUNK refuses a chunk taken after any change with
// errors::kDumpChanged (restart the dump).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "persistence/dump_chunk.h"

namespace bloomgate {

struct CommandContext;

// The family-specific texts of the two commands: RedisBloom's differ between
// BF.* and CF.* (COMPAT.md §1.6). Which kinds they serve is the family
// registry's: every family registered under the row's group (BF.*: the
// scalable and the windowed Bloom filter).
struct ChunkCommandTexts {
  std::string_view bad_iterator_scandump;  // SCANDUMP's iterator is not a number
  std::string_view bad_iterator_loadchunk;
  std::string_view bad_data;               // a chunk is refused
  // The dump's end is [0, nil] (RedisBloom's CF.SCANDUMP replies a null),
  // else [0, ""] (BF.SCANDUMP's empty buffer).
  bool end_is_null = false;
  // The first chunk (iterator 1, always a header in RedisBloom's protocol)
  // is damaged or refused; empty = bad_data. CF.*: "Couldn't create filter!".
  std::string_view bad_header = {};
};

void ScanDump(CommandContext& ctx, const ChunkCommandTexts& texts);
void LoadChunk(CommandContext& ctx, const ChunkCommandTexts& texts);

}  // namespace bloomgate
