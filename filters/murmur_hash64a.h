// Austin Appleby's MurmurHash64A (64-bit, for 64-bit platforms), the hash
// RedisBloom hashes cuckoo items with: CUCKOO_GEN_HASH(item) is
// MurmurHash64A(item, len, seed 0) in its cuckoo.h (v2.x and Redis 8 alike).
// Bloomgate uses it only for filters imported from RedisBloom
// (CuckooScheme::kRedisBloom in cuckoo_filter.h), whose slots were placed
// by that hash and would answer wrongly under any other.
//
// The tail bytes are read little-endian, as RedisBloom's build on x86-64 and
// arm64 does; a golden test (cuckoo_redisbloom_test.cc) pins the values.
#pragma once

#include <cstdint>
#include <string_view>

namespace bloomgate {

uint64_t MurmurHash64A(std::string_view bytes, uint64_t seed);

}  // namespace bloomgate
