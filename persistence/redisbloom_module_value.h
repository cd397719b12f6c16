// RedisBloom's module values as its rdb_load functions read them (RedisBloom
// 2.4: rebloom.c BFRdbLoad / CFRdbLoad, rm_cms.c CMSRdbLoad, rm_topk.c
// TopKRdbLoad, rm_tdigest.c TDigestRdbLoad), turned into our filters so that
// every answer after the move is the one RedisBloom gives. Used by RESTORE
// (a DUMP payload, redis_dump_payload.h) and by import-rdb (an RDB file).
//
// The values, in order (U = unsigned, D = double, S = string; every value
// behind its module opcode, rdb_encoding.h):
//
//   MBbloom--  encver 2-4   U size, U nfilters, U options, [encver 4: U growth,
//                           else 2]; per link: U entries, D error, U hashes,
//                           D bpe, U bits, U n2, S bit array, U items
//              -> the scalable Bloom codec's RedisBloom layout, through the
//                 same header translation BF.LOADCHUNK uses (redisbloom_dump.h)
//   MBbloomCF  encver 4     U numFilters, U numBuckets, U numItems, U numDeletes,
//                           U bucketSize, U maxIterations, U expansion; per
//                           sub-filter: U numBuckets (numBuckets x expansion^i),
//                           S its slots (numBuckets x bucketSize bytes)
//              -> a kRedisBloom cuckoo filter, through CF.LOADCHUNK's header
//                 translation (redisbloom_cuckoo_chunk.h); cf-max-expansions
//                 is not saved by RedisBloom: its default, 32, applies
//   CMSk-TYPE  encver 0     U width, U depth, U count, S width x depth u32 cells
//   TopK-TYPE  encver 0     U k, U width, U depth, D decay, S width x depth
//                           buckets {u32 fp, u32 count}, S k heap slots of 24
//                           bytes {u32 fp, u32 itemlen, u64 pointer, u32 count,
//                           4 padding}, then k S items with their NUL ("\0"
//                           alone: an empty slot)
//              -> kRedisBloom; the decay's rand() starts from a fresh
//                 process's state, as a RedisBloom restarted on the file
//   TDIS-TYPE  encver 0     D compression, D min, D max, U cap, U merged_nodes,
//                           U unmerged_nodes, U total_compressions,
//                           D merged_weight, D unmerged_weight, merged_nodes
//                           x D mean, merged_nodes x D weight
//              RedisBloom compresses before it saves: a value with unmerged
//              nodes, a cap other than 6 x compression + 10, or a weight that
//              is not a whole number is not one it wrote, and is refused.
//
// Every count and length is checked against the bytes present (or the
// filter limits) before anything is allocated for it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "filters/any_filter.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "persistence/dump_payload.h"
#include "persistence/rdb_encoding.h"

namespace bloomgate {

// The five module type names, in the order above.
std::span<const std::string_view> RedisBloomModuleTypes();
bool IsRedisBloomModuleType(std::string_view name);

// Reads one module value of `type` (a name from the list) at `encver` from
// *reader, up to and including its EOF opcode, into *out. On an error *out
// is unchanged and nothing stays reserved; *why says what was wrong.
DumpPayloadError DecodeRedisBloomValue(std::string_view type, uint32_t encver,
                                       rdb::RdbReader* reader, const FilterLimits& limits,
                                       MemoryBudget* budget, AnyFilter* out, std::string* why);

}  // namespace bloomgate
