#include "filters/key_hash.h"

// Compile XXH3 into this translation unit so HashKey is one call with the
// hash inlined and built with our flags; the output is identical to
// libxxhash's XXH3_128bits (the golden test checks both agree).
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace bloomgate {

KeyHash HashKey(std::string_view item) {
  const XXH128_hash_t h = XXH3_128bits(item.data(), item.size());
  return KeyHash{/*lo=*/h.low64, /*hi=*/h.high64};
}

}  // namespace bloomgate
