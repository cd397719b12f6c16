// RedisBloom's BF.SCANDUMP chunks, so filters move both ways between
// RedisBloom and Bloomgate. Facts from RedisBloom v2.4's public
// source (sb.c SB_NewChainFromHeader / SBChain_GetEncodedChunk /
// SBChain_LoadEncodedChunk, rebloom.c) and the dumps in
// ../shared/redisbloom-dumps, whose chunks we reproduce byte for byte.
//
// Header chunk (iterator 1): RedisBloom writes its packed x86-64 structs;
// we read and write the same bytes field by field, little-endian:
//
//   +0  u64 size        items in the whole chain (the links' sizes summed)
//   +8  u32 nfilters    links, oldest first
//   +12 u32 options     1 NOROUND | 4 FORCE64 [| 8 NO_SCALING]; 2 ENTS_ARE_BITS
//                       (power-of-two layers) and 32-bit hashing (no FORCE64)
//                       are refused: RedisBloom has created neither since 2.0
//   +16 u32 growth      the expansion (RedisBloom keeps 2 for NONSCALING)
//   +20 per link, 53 bytes each:
//       +0  u64 bytes   of its bit array, a multiple of 8
//       +8  u64 bits    bytes x 8
//       +16 u64 size    items in the link
//       +24 f64 error   the link's error rate
//       +32 f64 bpe     bits per entry, -ln(error) / ln(2)^2 exactly
//       +40 u32 hashes  ceil(ln 2 x bpe)
//       +44 u64 entries the link's capacity
//       +52 u8  n2      0 (NOROUND)
//
// Data chunks: the links' bit arrays back to back, each cut into pieces of
// at most kRedisBloomMaxChunkBytes that never span two links. SCANDUMP at
// iterator it (>= 1) returns the piece starting at byte it - 1 and the next
// iterator it + n; LOADCHUNK gets that next iterator with the n bytes, so
// the piece belongs at it - n - 1. [0, ""] ends the dump.
//
// These chunks carry no checksum and no state tag (RedisBloom has none):
// a damaged data chunk is not detected, and a dump taken while the filter
// changed is not either. Our own chunks (dump_chunk.h) check both.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "filters/scalable_bloom_filter.h"
#include "persistence/status.h"

namespace bloomgate {

// RedisBloom v2.4's MAX_SCANDUMP_SIZE (rebloom.c: 10,485,760 bytes).
inline constexpr uint64_t kRedisBloomMaxChunkBytes = 10485760;
inline constexpr size_t kRedisBloomHeaderFixedBytes = 20;
inline constexpr size_t kRedisBloomLinkBytes = 53;

// The reply of BF.SCANDUMP key iterator for a RedisBloom-layout filter, as
// RedisBloom would give it. The caller keeps writers out meanwhile.
void NextRedisBloomChunk(const ScalableBloomFilter& filter, uint64_t iterator,
                         uint64_t* next_iterator, std::string* chunk,
                         uint64_t max_chunk_bytes = kRedisBloomMaxChunkBytes);

// Translates a RedisBloom header chunk into our scalable Bloom codec's
// header bytes (bloom_codec.cc, block_layout 5) and payload size, checking
// everything RedisBloom checks (lengths, bits = bytes x 8, hashes against
// bpe, error rate) and what we need (known options, layer and expansion
// limits, bpe exactly RedisBloom's for the error, sizes adding up). The
// codec then checks the rest, memory limits included, when the load begins.
Status RedisBloomHeaderToFilterHeader(std::string_view chunk, std::string* header_bytes,
                                      uint64_t* payload_bytes);

}  // namespace bloomgate
