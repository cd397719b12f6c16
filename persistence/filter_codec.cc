// DescribeFilter, CopyPayload, FilterLoader::Begin and CloneFilter (see
// filter_codec.h): thin wrappers that find the family's codec in the
// registry. The header bytes are drawn in each codec file
// (persistence/codec/<family>_codec.cc) and their common prefix in
// codec/header_fields.h.
#include "persistence/filter_codec.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <variant>

#include "persistence/codec/codec_registry.h"

namespace bloomgate {
namespace {

// CloneFilter copies through a buffer of this size: large enough that the
// per-piece costs (a header lookup, a cuckoo lock) vanish, small enough to
// never matter next to the filter itself.
constexpr uint64_t kClonePieceBytes = uint64_t{4} << 20;

// "1 = scalable bloom, 2 = counting bloom, 3 = cuckoo", for the message
// about a kind no family registered.
std::string KnownKinds() {
  std::string known;
  for (const FamilyCodec* codec : RegisteredCodecs()) {
    if (!known.empty()) known += ", ";
    known += std::to_string(static_cast<uint8_t>(codec->kind()));
    known += " = ";
    known += codec->name();
  }
  return known;
}

}  // namespace

std::string_view ToString(FilterKind kind) {
  const FamilyCodec* codec = FindCodec(kind);
  return codec != nullptr ? codec->name() : "unknown filter kind";
}

FilterHeader DescribeFilter(const AnyFilter& filter) { return CodecOf(filter).Describe(filter); }

void CopyPayload(const AnyFilter& filter, const FilterHeader& header, uint64_t offset,
                 uint8_t* out, uint64_t len) {
  if (offset >= header.payload_bytes) {
    std::memset(out, 0, static_cast<size_t>(len));
    return;
  }
  // Only [offset, payload_bytes) comes from the arrays; the rest is zero.
  const uint64_t inside = std::min(len, header.payload_bytes - offset);
  if (inside < len) std::memset(out + inside, 0, static_cast<size_t>(len - inside));
  CodecOf(filter).CopyPayload(filter, header, offset, out, inside);
}

Status FilterLoader::Begin(FilterKind kind, std::string_view header_bytes, uint64_t payload_bytes,
                           const FilterLimits& limits, MemoryBudget* budget,
                           std::unique_ptr<FilterLoader>* out) {
  out->reset();
  const FamilyCodec* codec = FindCodec(kind);
  if (codec == nullptr) {
    return Status::Error("unknown filter kind " + std::to_string(static_cast<uint8_t>(kind)) +
                         " (expected " + KnownKinds() + ")");
  }
  return codec->BeginLoad(header_bytes, payload_bytes, limits, budget, out)
      .WithContext(std::string(codec->name()) + " header: ");
}

AnyFilter CloneFilter(const AnyFilter& filter, MemoryBudget* budget) {
  // On failure (an allocation, or the budget's refusal: there is no cap) the result
  // holds a null filter of the same family.
  AnyFilter empty = std::visit(
      [](const auto& f) { return AnyFilter(std::remove_cvref_t<decltype(f)>()); }, filter);
  const FilterHeader header = DescribeFilter(filter);
  std::unique_ptr<FilterLoader> loader;
  if (!FilterLoader::Begin(header.kind, header.bytes, header.payload_bytes,
                           FilterLimits{/*max_filter_bytes=*/0}, budget, &loader)
           .ok()) {
    return empty;
  }
  const uint64_t piece = std::min(kClonePieceBytes, header.payload_bytes);
  std::unique_ptr<uint8_t[]> buffer(new (std::nothrow) uint8_t[static_cast<size_t>(piece)]);
  if (piece != 0 && buffer == nullptr) return empty;
  for (uint64_t offset = 0; offset < header.payload_bytes; offset += piece) {
    const uint64_t n = std::min(piece, header.payload_bytes - offset);
    CopyPayload(filter, header, offset, buffer.get(), n);
    if (!loader->Write(offset, buffer.get(), n).ok()) return empty;
  }
  AnyFilter clone;
  if (!loader->Finish(&clone).ok()) return empty;
  return clone;
}

}  // namespace bloomgate
