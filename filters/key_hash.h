#pragma once

#include <cstdint>
#include <string_view>

namespace bloomgate {

// The 128-bit hash of one item: XXH3_128bits(item, the filter's seed), split into its
// two 64-bit halves. This is the ONE place an item is hashed; every filter
// and every layer of a scalable filter reuses the same KeyHash (as RedisBloom
// reuses its hash across sub-filters), so a BF.MADD of n items hashes n times.
//
// Why 128 bits: a blocked Bloom filter needs two independent values, one to
// pick the 512-bit block and one to derive the probes inside it. Both halves
// are 64 bits because a 32-bit block hash would dominate the FP rate past
// ~40M keys (RocksDB's measurement for 10 bits/key) and could not address
// more than 2^32 blocks (256 GiB).
//
// The function is part of the persistent format: snapshots store filter bits,
// so changing the hash (or a filter's seed) makes that filter answer wrongly:
// the seed is saved with the filter (persistence/codec/header_fields.h).
// XXH3's output is frozen since xxHash 0.8.0, and a golden test pins it.
struct KeyHash {
  uint64_t lo;  // low 64 bits of XXH128: drives the probes inside the block
  uint64_t hi;  // high 64 bits of XXH128: picks the block (fastrange)
};

// XXH3_128bits_withSeed(item, seed). Seed 0 is plain XXH3_128bits, the hash
// of every filter saved before per-filter seeds (layout version 1); each new
// filter draws its own seed (filters/hash_seed.h) and hashes through its
// Hash(item), never through a seed of its own choosing.
KeyHash HashKey(std::string_view item, uint64_t seed);
inline KeyHash HashKey(std::string_view item) { return HashKey(item, 0); }

}  // namespace bloomgate
