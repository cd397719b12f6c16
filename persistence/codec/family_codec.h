// The one interface every filter family's codec implements: how a filter of
// that family becomes a header and a payload (filter_codec.h) and back.
//
// One codec per family, each in its own file (bloom_codec.cc, ...), listed
// once in codec_registry.cc. Everything persistent that differs by family
// goes through here: DescribeFilter, CopyPayload, FilterLoader::Begin and
// CloneFilter look the codec up and call it, and the snapshot, log and
// chunk formats ask the registry which kinds exist.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <string_view>
#include <variant>

#include "filters/any_filter.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "persistence/filter_codec.h"
#include "persistence/status.h"

namespace bloomgate {

class FamilyCodec {
 public:
  virtual ~FamilyCodec() = default;

  // The persistent tag its records carry (codec/filter_kind.h).
  virtual FilterKind kind() const = 0;
  // For messages: "scalable bloom".
  virtual std::string_view name() const = 0;
  // Which AnyFilter alternative holds this family's filters (its index).
  virtual size_t alternative() const = 0;

  // Whether CopyPayload may run while writers change the filter and still
  // give an image the header describes (Bloom: bits are only ever set, so a
  // copy holds every bit set before it began). If not, a snapshot copies the
  // filter at its cut, before the next write (server/durability).
  virtual bool payload_readable_while_written() const = 0;

  // The longest header a valid filter of this family has, from the limits
  // in filters/limits.h; a snapshot refuses headers past
  // kMaxSnapshotFilterHeaderBytes (codec_registry_test checks each fits).
  virtual uint64_t max_header_bytes() const = 0;

  // DescribeFilter for a filter this codec holds.
  virtual FilterHeader Describe(const AnyFilter& filter) const = 0;
  // CopyPayload for a filter this codec holds, with [offset, offset + len)
  // inside header.payload_bytes (the caller zeroes what lies past it).
  virtual void CopyPayload(const AnyFilter& filter, const FilterHeader& header, uint64_t offset,
                           uint8_t* out, uint64_t len) const = 0;
  // FilterLoader::Begin for this kind; messages without the family prefix
  // (Begin adds "<name> header: ").
  virtual Status BeginLoad(std::string_view header_bytes, uint64_t payload_bytes,
                           const FilterLimits& limits, MemoryBudget* budget,
                           std::unique_ptr<FilterLoader>* out) const = 0;
};

// The index of alternative T in std::variant<Ts...>, or sizeof...(Ts).
template <typename T, typename... Ts>
constexpr size_t AlternativeIndex(const std::variant<Ts...>*) {
  constexpr bool kSame[] = {std::is_same_v<T, Ts>...};
  for (size_t i = 0; i < sizeof...(Ts); ++i) {
    if (kSame[i]) return i;
  }
  return sizeof...(Ts);
}

// A codec for the family stored as std::unique_ptr<Filter> in AnyFilter:
// does the variant dispatch once, so each codec works on its own type.
template <typename Filter>
class TypedCodec : public FamilyCodec {
 public:
  static constexpr size_t kAlternative =
      AlternativeIndex<std::unique_ptr<Filter>>(static_cast<const AnyFilter*>(nullptr));
  static_assert(kAlternative < std::variant_size_v<AnyFilter>,
                "a family's filter needs its alternative in AnyFilter (filters/any_filter.h)");

  size_t alternative() const final { return kAlternative; }
  FilterHeader Describe(const AnyFilter& filter) const final {
    return DescribeTyped(*std::get<std::unique_ptr<Filter>>(filter));
  }
  void CopyPayload(const AnyFilter& filter, const FilterHeader& header, uint64_t offset,
                   uint8_t* out, uint64_t len) const final {
    CopyTyped(*std::get<std::unique_ptr<Filter>>(filter), header, offset, out, len);
  }

 protected:
  virtual FilterHeader DescribeTyped(const Filter& filter) const = 0;
  virtual void CopyTyped(const Filter& filter, const FilterHeader& header, uint64_t offset,
                         uint8_t* out, uint64_t len) const = 0;
};

}  // namespace bloomgate
