#include "filters/murmur_hash64a.h"

#include <cstring>

namespace bloomgate {

uint64_t MurmurHash64A(std::string_view bytes, uint64_t seed) {
  // The multiplier and shift of the published algorithm.
  constexpr uint64_t m = 0xc6a4a7935bd1e995ull;
  constexpr int r = 47;
  const size_t len = bytes.size();
  uint64_t h = seed ^ (uint64_t{len} * m);
  const char* p = bytes.data();
  const size_t blocks = len / 8;
  for (size_t i = 0; i < blocks; ++i, p += 8) {
    uint64_t k = 0;
    for (int b = 7; b >= 0; --b) k = (k << 8) | static_cast<uint8_t>(p[b]);  // little-endian
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  const size_t tail = len & 7;
  if (tail != 0) {
    // The published switch falls through from byte tail-1 down to byte 0.
    for (size_t b = tail; b-- > 0;) h ^= uint64_t{static_cast<uint8_t>(p[b])} << (8 * b);
    h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

}  // namespace bloomgate
