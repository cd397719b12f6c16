// A filter's whole payload in one string (CopyPayload from offset 0): what
// the codec tests hand a loader or compare byte for byte.

#pragma once

#include <cstdint>
#include <string>

#include "persistence/filter_codec.h"

namespace bloomgate::test_support {

inline std::string WholePayload(const AnyFilter& filter, const FilterHeader& header) {
  std::string payload(header.payload_bytes, '\0');
  CopyPayload(filter, header, 0, reinterpret_cast<uint8_t*>(payload.data()), payload.size());
  return payload;
}

}  // namespace bloomgate::test_support
