#include "filters/murmur_hash2.h"

namespace bloomgate {

uint32_t MurmurHash2(std::string_view bytes, uint32_t seed) {
  // The mixing constants of the reference: m = 0x5bd1e995, r = 24.
  constexpr uint32_t kM = 0x5bd1e995;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t left = bytes.size();
  // RedisBloom passes the length as an int: items are Redis strings of at
  // most 512 MiB, so the 32-bit truncation never bites.
  uint32_t h = seed ^ static_cast<uint32_t>(left);
  for (; left >= 4; left -= 4, p += 4) {
    uint32_t k = uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
                 uint32_t{p[3]} << 24;
    k *= kM;
    k ^= k >> 24;
    k *= kM;
    h *= kM;
    h ^= k;
  }
  switch (left) {
    case 3: h ^= uint32_t{p[2]} << 16; [[fallthrough]];
    case 2: h ^= uint32_t{p[1]} << 8; [[fallthrough]];
    case 1:
      h ^= p[0];
      h *= kM;
      break;
    default: break;
  }
  h ^= h >> 13;
  h *= kM;
  h ^= h >> 15;
  return h;
}

}  // namespace bloomgate
