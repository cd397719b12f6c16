// The codec registry (see codec_registry.h). Registering a family is its
// declaration and its entry in `codecs` below; its kind value comes from
// filter_kind.h.
#include "persistence/codec/codec_registry.h"

#include <array>
#include <cstdlib>
#include <variant>
#include <vector>

namespace bloomgate {

// Each is defined in its family's codec file, persistence/codec/<family>_codec.cc.
const FamilyCodec& ScalableBloomCodec();
const FamilyCodec& CountingBloomCodec();
const FamilyCodec& CuckooCodec();
const FamilyCodec& CountMinSketchCodec();
const FamilyCodec& TopKCodec();
const FamilyCodec& WindowedBloomCodec();
const FamilyCodec& WindowedCountingBloomCodec();
const FamilyCodec& TDigestCodec();

namespace {

struct Registry {
  // One entry per family.
  std::vector<const FamilyCodec*> codecs = {
      &ScalableBloomCodec(),
      &CountingBloomCodec(),
      &CuckooCodec(),
      &CountMinSketchCodec(),
      &TopKCodec(),
      &WindowedBloomCodec(),
      &WindowedCountingBloomCodec(),
      &TDigestCodec(),
  };
  // By kind byte and by AnyFilter alternative, so a lookup is one load.
  std::array<const FamilyCodec*, 256> by_kind{};
  std::array<const FamilyCodec*, std::variant_size_v<AnyFilter>> by_alternative{};

  Registry() {
    for (const FamilyCodec* codec : codecs) {
      by_kind[static_cast<uint8_t>(codec->kind())] = codec;
      by_alternative[codec->alternative()] = codec;
    }
  }
};

const Registry& TheRegistry() {
  static const Registry registry;
  return registry;
}

}  // namespace

std::span<const FamilyCodec* const> RegisteredCodecs() { return TheRegistry().codecs; }

const FamilyCodec* FindCodec(FilterKind kind) {
  return TheRegistry().by_kind[static_cast<uint8_t>(kind)];
}

bool IsKnownFilterKind(uint8_t kind) { return TheRegistry().by_kind[kind] != nullptr; }

const FamilyCodec& CodecOf(const AnyFilter& filter) {
  const FamilyCodec* codec = TheRegistry().by_alternative[filter.index()];
  if (codec == nullptr) std::abort();  // an alternative without a codec: registry_test
  return *codec;
}

}  // namespace bloomgate
