#include "filters/key_hash.h"

// Compile XXH3 into this translation unit so HashKey is one call with the
// hash inlined and built with our flags; the output is identical to
// libxxhash's XXH3_128bits (the golden test checks both agree).
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace bloomgate {

KeyHash HashKey(std::string_view item, uint64_t seed) {
  // With seed 0 this is XXH3_128bits exactly (xxhash.h: "seed == 0 produces
  // the same results as XXH3_128bits()"), which keeps legacy filters valid.
  const XXH128_hash_t h = XXH3_128bits_withSeed(item.data(), item.size(), seed);
  return KeyHash{/*lo=*/h.low64, /*hi=*/h.high64};
}

}  // namespace bloomgate
