// The codec registry: the one list of filter families the persistent
// formats know, each as its FamilyCodec (family_codec.h). Snapshot, log and
// chunk readers ask it whether a kind byte names a family; DescribeFilter,
// CopyPayload, FilterLoader::Begin and CloneFilter find their codec here.
#pragma once

#include <cstdint>
#include <span>

#include "filters/any_filter.h"
#include "persistence/codec/family_codec.h"
#include "persistence/codec/filter_kind.h"

namespace bloomgate {

// Every registered codec, in registration order. Built on first use; the
// list never changes afterwards, so threads read it without locks.
std::span<const FamilyCodec* const> RegisteredCodecs();

// The codec for `kind`, or null if no family registered it.
const FamilyCodec* FindCodec(FilterKind kind);
// Whether `kind` (a byte read from a file) names a registered family.
bool IsKnownFilterKind(uint8_t kind);

// The codec of the family `filter` holds. Every AnyFilter alternative has
// one (registry_test checks it), so this never fails.
const FamilyCodec& CodecOf(const AnyFilter& filter);
inline FilterKind KindOf(const AnyFilter& filter) { return CodecOf(filter).kind(); }

}  // namespace bloomgate
