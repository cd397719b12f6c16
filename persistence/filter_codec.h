// The seam between the filter library and every persistent form of a
// filter (snapshot records, log records, SCANDUMP chunks): a filter is
// described by a small HEADER (its family and every parameter of its hash
// contract and shape) and a PAYLOAD (its raw arrays as little-endian bytes).
// This file turns filters into those two and back; it knows nothing of
// files, checksums or the wire.
//
// Payload layout by family (documented with the header bytes in FORMAT.md):
//   scalable Bloom   layer 0's words, layer 1's words, ... oldest first; each
//                    word as 8 little-endian bytes (bit j of word i is bit
//                    64*i + j of the layer)
//   counting Bloom   the same, with the counter lanes of blocked_counting_bloom.h
//   cuckoo           sub-filter 0's slots, sub-filter 1's, ... one byte each
//
// Reading the payload while the filter is in use: safe for a family whose
// codec says payload_readable_while_written() (scalable Bloom: bits are only
// ever set; the header fixes the number of layers, layers added later are
// left out). For the others (counting Bloom, cuckoo) a copy made while
// writers run can mix states, so callers copy them while no writer runs
// (the server: CloneFilter at its snapshot cut) or accept a later checksum
// or validation failure.
//
// Each family's header and payload are one codec (persistence/codec/
// <family>_codec.cc, behind codec/family_codec.h); these functions find the
// codec in codec/codec_registry.h and call it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "filters/any_filter.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "persistence/codec/filter_kind.h"
#include "persistence/status.h"

namespace bloomgate {

struct FilterHeader {
  FilterKind kind = FilterKind::kScalableBloom;
  std::string bytes;           // the encoded description (FORMAT.md)
  uint64_t payload_bytes = 0;  // how many payload bytes follow it
};

// Describes `filter` as it is now. For a cuckoo filter this takes its lock
// shared once.
FilterHeader DescribeFilter(const AnyFilter& filter);

// Copies payload bytes [offset, offset + len) of `filter` into `out`, in the
// layout of `header` (which came from DescribeFilter of the same filter).
// Bytes past header.payload_bytes, or of a cuckoo sub-filter that compaction
// has freed since, are written as 0.
void CopyPayload(const AnyFilter& filter, const FilterHeader& header, uint64_t offset,
                 uint8_t* out, uint64_t len);

// Rebuilds a filter from a header and its payload, written in any order and
// in pieces. Begin validates every header field against filters/limits.h
// (unknown family or layout version, hash algorithm or seed other than ours,
// zero or out-of-range sizes, probes, error rates, counter widths, layer
// counts) and that payload_bytes is exactly what the shapes need, and only
// then allocates the zeroed filter, reserving its memory in `budget` (which
// may be null) and honouring `limits`. Finish validates what the payload
// implies (e.g. a cuckoo filter's item count is recounted from its slots; a
// counting filter's saturated counters are recounted) and hands the filter
// over. A loader that is destroyed without Finish frees everything.
class FilterLoader {
 public:
  static Status Begin(FilterKind kind, std::string_view header_bytes, uint64_t payload_bytes,
                      const FilterLimits& limits, MemoryBudget* budget,
                      std::unique_ptr<FilterLoader>* out);
  virtual ~FilterLoader() = default;

  // Stores payload bytes at [offset, offset + len); an error if they do not
  // fit inside payload_bytes.
  virtual Status Write(uint64_t offset, const uint8_t* data, uint64_t len) = 0;
  // Payload bytes never written stay 0 (a fresh filter has an all-zero
  // payload, so a creation record needs no payload at all).
  virtual Status Finish(AnyFilter* out) = 0;
};

// An exact, private copy of `filter`, for a snapshot cut: counting and
// cuckoo filters are cloned while no writer runs and then written at
// leisure. Copies cuckoo slots under the filter's shared lock. With a
// `budget` the copy is charged to it like any filter (and released when the
// copy is freed); when it does not fit the result holds a null filter.
AnyFilter CloneFilter(const AnyFilter& filter, MemoryBudget* budget = nullptr);

}  // namespace bloomgate
