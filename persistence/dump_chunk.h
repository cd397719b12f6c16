// SCANDUMP / LOADCHUNK chunks for BF.*, CF.* and CBF.*: a filter cut into
// self-checking pieces that a client copies out and replays elsewhere.
//
// The iterator protocol is RedisBloom's, which client libraries rely on:
//   SCANDUMP key 0    -> [1, header chunk]
//   SCANDUMP key it   -> [it + n, chunk with payload bytes [it - 1, it - 1 + n)]
//                        while it - 1 < payload size; then [0, ""] (the end)
//   LOADCHUNK key it chunk, for every pair in order: the first (a header
//   chunk) starts a load, the rest fill it; the filter exists once the last
//   payload byte has arrived.
// The iterator a client passes back to LOADCHUNK is not needed here: every
// chunk says what it is and where its bytes go.
//
// Chunk bytes (little-endian, as persistence/byte_io.h):
//
//   +0  4  magic "BGDC"
//   +4  u8 chunk format version   2 (1 still read: its filters have seed 0)
//   +5  u8 chunk type             1 = header, 2 = payload
//   +6  u8 filter kind            FilterKind
//   +7  u64 header id             XXH3-64 of the FilterHeader bytes, seeded
//                                 with the dump's state tag: binds payload
//                                 chunks to their header chunk and to the
//                                 state of the filter the header described
//   header chunk:
//   +15 u64 payload_bytes
//   +23 u32 header length H
//   +27 H   FilterHeader bytes (codec/<family>_codec.cc)
//   payload chunk:
//   +15 u64 offset                 of its first byte in the payload
//   +23 u64 length n               >= 1
//   +31 n   payload bytes
//   end u64 checksum               XXH3-64 (seed 0) of every byte before it
//
// So a damaged, truncated or foreign chunk (a RedisBloom dump has no "BGDC"
// magic) is refused with an error and creates nothing; chunks must arrive in
// order, each exactly once, and from the same dump as their header.
//
// Consistency: RedisBloom's dump is only meaningful if the filter does not
// change between the SCANDUMP calls, and it does not notice when it did.
// Here every chunk carries its dump's header id, which mixes in a state tag
// the caller derives from the filter's identity and write version (the
// server: its key entry's id and version, which every change bumps), so a
// payload chunk taken after any change — even one that leaves the header as
// it was, or a RENAME of a like-shaped filter onto the key — is refused at
// LOADCHUNK as belonging to another dump, and the client restarts the dump.
// Chunks of a dump from before tags existed (tag 0) still load together.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "filters/any_filter.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "persistence/filter_codec.h"
#include "persistence/status.h"

namespace bloomgate {

// The most bytes one chunk may have, framing included: RedisBloom's
// MAX_SCANDUMP_SIZE (16 MiB), which clients size their buffers for.
inline constexpr uint64_t kMaxDumpChunkBytes = uint64_t{16} << 20;
// Framing of a payload chunk: 31 bytes before the payload, 8 after.
inline constexpr uint64_t kPayloadChunkFramingBytes = 39;
// Payload bytes per chunk: the cap less one 64-byte block, which holds the
// framing (39 bytes) and keeps every chunk's offset a multiple of 64, so
// loading stores whole words (no partial-word merges).
inline constexpr uint64_t kDumpChunkPayloadBytes = kMaxDumpChunkBytes - 64;
static_assert(kDumpChunkPayloadBytes + kPayloadChunkFramingBytes <= kMaxDumpChunkBytes);

// The chunk SCANDUMP returns for `iterator` (see above): *next_iterator and
// *chunk are the two reply elements; at the end *next_iterator = 0 and
// *chunk is empty. max_payload_bytes (>= 1) is for tests; the server keeps
// the default. `state_tag` must change whenever the filter may have changed
// (see Consistency above); the caller must keep writers out while this runs.
// A header chunk is at most 35 + 56 + 8 x 65536 bytes (~512 KiB, a cuckoo
// filter with 65536 sub-filters), far below the cap.
void NextDumpChunk(const AnyFilter& filter, uint64_t iterator, uint64_t* next_iterator,
                   std::string* chunk, uint64_t max_payload_bytes = kDumpChunkPayloadBytes,
                   uint64_t state_tag = 0);

// Whether `chunk` claims to be a header chunk (magic and type byte only; no
// validation): how LOADCHUNK tells "start a new load" from "continue one".
bool IsHeaderChunk(std::string_view chunk);

// One LOADCHUNK sequence in progress. Holds the zeroed filter (its memory
// already reserved in the budget) until Finish hands it over; destroying it
// earlier frees everything. A refused chunk changes nothing, so the client
// may send the right one next.
class ChunkedFilterLoad {
 public:
  // Validates a header chunk (framing, checksum, kind == expected_kind, and
  // every header field through FilterLoader::Begin with `limits` and
  // `budget`) and allocates the filter. On error *out stays null.
  static Status Start(std::string_view header_chunk, FilterKind expected_kind,
                      const FilterLimits& limits, MemoryBudget* budget,
                      std::unique_ptr<ChunkedFilterLoad>* out);

  // A load of RedisBloom's BF.SCANDUMP chunks (persistence/redisbloom_dump.h):
  // `header_chunk` is its header (LOADCHUNK at iterator 1), translated into
  // a RedisBloom-layout scalable Bloom filter and checked as Start checks.
  static Status StartRedisBloom(std::string_view header_chunk, const FilterLimits& limits,
                                MemoryBudget* budget, std::unique_ptr<ChunkedFilterLoad>* out);


  // Stores one payload chunk. It must be of this load's kind and header, and
  // start exactly where the previous one ended (the first at offset 0):
  // anything out of order, repeated, overlapping, past the end or damaged is
  // refused. *other_dump (optional) is set when the refusal is an intact
  // chunk of this kind whose header id is not this load's: the filter
  // changed during the dump, or the chunk is from another one.
  Status Add(std::string_view payload_chunk, bool* other_dump = nullptr);

  // A load of a RedisBloom CF.SCANDUMP (persistence/redisbloom_cuckoo_chunk.h):
  // a 38-byte header starts it, AddRedisBloom stores each data chunk with
  // the iterator LOADCHUNK was given. Add refuses our chunks for it, and
  // AddRedisBloom refuses chunks for a load of ours.
  static Status StartRedisBloomCuckoo(std::string_view header, uint32_t max_expansions,
                                      const FilterLimits& limits, MemoryBudget* budget,
                                      std::unique_ptr<ChunkedFilterLoad>* out);

  // One RedisBloom data chunk (Bloom or cuckoo) as LOADCHUNK got it: its n
  // bytes belong at payload offset iterator - n - 1 (RedisBloom's
  // SBChain_LoadEncodedChunk and CF_LoadEncodedChunk alike), which must be
  // where the previous one ended (RedisBloom's clients send them in order;
  // RedisBloom itself would also take them out of order, we refuse that);
  // past the end is refused.
  Status AddRedisBloom(uint64_t iterator, std::string_view data);
  bool redisbloom() const { return redisbloom_; }

  // True once every payload byte has arrived (at once for a 0-byte payload).
  bool complete() const { return loaded_bytes_ == payload_bytes_; }

  // Hands the filter over; an error if !complete() or the payload does not
  // match its header (e.g. a cuckoo item count). Call at most once.
  Status Finish(AnyFilter* out);

  FilterKind kind() const { return kind_; }
  uint64_t payload_bytes() const { return payload_bytes_; }
  uint64_t loaded_bytes() const { return loaded_bytes_; }

 private:
  ChunkedFilterLoad(FilterKind kind, uint64_t header_id, uint64_t payload_bytes,
                    std::unique_ptr<FilterLoader> loader, bool redisbloom = false);

  const FilterKind kind_;
  const uint64_t header_id_;
  const uint64_t payload_bytes_;
  uint64_t loaded_bytes_ = 0;  // payload [0, loaded_bytes_) has arrived
  std::unique_ptr<FilterLoader> loader_;
  const bool redisbloom_;  // RedisBloom's chunks (AddRedisBloom), not ours (Add)
};

}  // namespace bloomgate
