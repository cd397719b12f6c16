// How a count-min sketch or a top-k places its items.
//
//  - kRedisBloom (every sketch CMS.INITBY* and TOPK.RESERVE create): as
//    RedisBloom's cms.c and topk.c do, so every reply equals RedisBloom's for
//    the same commands: row r's column = MurmurHash2(item, seed r) % width;
//    top-k's fingerprint = MurmurHash2(item, seed 1919) and its decay coin
//    flips come from glibc's rand() started as in a fresh process.
//  - kNative: our first scheme, kept for sketches loaded from snapshots, logs
//    and DUMP payloads written before kRedisBloom existed, which must answer
//    as they did: one XXH3-128 KeyHash per item, row r's column =
//    fastrange64(hash.lo + r * hash.hi, width); top-k's fingerprint the low
//    32 bits of hash.hi and its coin flips from SplitMix64.
#pragma once

#include <cstdint>

namespace bloomgate {

enum class SketchScheme : uint8_t { kNative = 0, kRedisBloom = 1 };

}  // namespace bloomgate
