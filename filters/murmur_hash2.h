// Austin Appleby's 32-bit MurmurHash2, the hash RedisBloom's count-min
// sketch and top-k use (contrib/MurmurHash2.c): CMS row r hashes the item
// with seed r and takes the hash modulo the width; top-k row r does the
// same, and its fingerprint is the hash with seed 1919 (topk.c's GA).
// Bloomgate uses it for sketches of SketchScheme::kRedisBloom, so that their
// overcounts, decays and expulsions fall where RedisBloom's fall.
//
// Words and tail bytes are read little-endian, as RedisBloom's build on
// x86-64 and arm64 reads them; murmur_hash2_test.cc pins known values.
#pragma once

#include <cstdint>
#include <string_view>

namespace bloomgate {

uint32_t MurmurHash2(std::string_view bytes, uint32_t seed);

}  // namespace bloomgate
