// RedisBloom's CF.SCANDUMP / CF.LOADCHUNK chunks (v2.4 and Redis 8 alike;
// its cf.c and rebloom.c), read and written for cuckoo filters in
// CuckooScheme::kRedisBloom, so a RedisBloom user can move filters here and
// back. Our own chunk format is persistence/dump_chunk.h.
//
// The iterator protocol:
//   SCANDUMP key 0   -> [1, header]                       (38 bytes, below)
//   SCANDUMP key it  -> [it + n, bytes [it - 1, it - 1 + n) of the slots]
//                       n = what is left of the sub-filter holding byte
//                       it - 1, at most kRedisBloomScanDumpBytes: a chunk
//                       never spans two sub-filters
//                    -> [0, nil] past the last sub-filter, and for every
//                       iterator while the filter holds no item
//   LOADCHUNK key 1 header, then LOADCHUNK key it chunk for each pair: the
//   chunk's bytes go to offset it - n - 1 of the concatenated slots.
//
// The header, RedisBloom's packed CFHeader in the byte order of the x86-64
// and arm64 servers it runs on (little-endian):
//
//   +0  u64 numItems      fingerprints stored
//   +8  u64 numBuckets    buckets of sub-filter 0 (a power of two)
//   +16 u64 numDeletes    deletes since the last compaction
//   +24 u64 numFilters    sub-filters; k has numBuckets x expansion^k buckets
//   +32 u16 bucketSize    slots per bucket, one byte each
//   +34 u16 maxIterations
//   +36 u16 expansion     0 (non-scaling) or a power of two
//
// The slots follow in sub-filter order, each bucket_size bytes per bucket,
// exactly our slot layout (filters/cuckoo_filter.h).
//
// Differences on purpose: RedisBloom creates the key at the header and
// copies any chunk anywhere without a bounds check; here, as for our own
// chunks, the load is staged until its last byte arrives, chunks must come
// in SCANDUMP's order, and one that does not fit is refused. A header is
// checked by the cuckoo codec's own loader (so nothing is made that a
// snapshot would refuse), and the finished filter's numItems must equal
// its occupied slots.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "filters/cuckoo_filter.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "persistence/dump_chunk.h"
#include "persistence/status.h"

namespace bloomgate {

inline constexpr size_t kRedisBloomCuckooHeaderBytes = 38;
// RedisBloom's MAX_SCANDUMP_SIZE (rebloom.c: 10485760, "10MB").
inline constexpr uint64_t kRedisBloomScanDumpBytes = 10485760;

// Whether `chunk` may be a RedisBloom cuckoo header: its size, and not one
// of our chunks (the only check there is; LOADCHUNK's iterator must be 1).
bool IsRedisBloomCuckooHeader(std::string_view chunk);

// The shape a RedisBloom header describes, in our terms (max_expansions:
// `max_expansions`, raised to numFilters if that is more, capped at
// kMaxCuckooMaxExpansions). Only sizes are checked here; the codec checks
// the fields when the load starts.
Status DecodeRedisBloomCuckooHeader(std::string_view header, uint32_t max_expansions,
                                    CuckooFilterShape* out);
std::string EncodeRedisBloomCuckooHeader(const CuckooFilterShape& shape);

// CF.SCANDUMP of a kRedisBloom filter (see above). *end is set for [0, nil].
// The caller keeps writers out while this runs.
void NextRedisBloomCuckooChunk(const CuckooFilter& filter, uint64_t iterator,
                               uint64_t* next_iterator, std::string* chunk, bool* end,
                               uint64_t max_chunk_bytes = kRedisBloomScanDumpBytes);

}  // namespace bloomgate
