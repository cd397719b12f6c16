// How a payload maps onto a filter's arrays, shared by every codec.
//
// A payload is the concatenation of a filter's arrays (layers, sub-filters)
// in a fixed order. Word arrays (Bloom and counting layers) are serialised
// as little-endian u64s; byte arrays (cuckoo slots) as they are. Copying out
// walks the arrays with CopySegments; loading in writes through a
// SegmentedLoader, which finds the array each offset falls in.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "persistence/filter_codec.h"

namespace bloomgate::codec {

// Copies bytes [byte_offset, byte_offset + n) of a word array, as its
// little-endian serialisation, to `out`. Relaxed loads (see the .cc).
void LoadWordBytes(const std::atomic<uint64_t>* words, uint64_t byte_offset, uint8_t* out,
                   uint64_t n);
// The inverse, for a loader: whole words are stored, a partial word at either
// end is merged with what is there.
void StoreWordBytes(std::atomic<uint64_t>* words, uint64_t byte_offset, const uint8_t* in,
                    uint64_t n);

// The u32 at `at` of an encoded header (a layer or sub-filter count), or 0
// if the header is too short.
uint32_t CountAt(const FilterHeader& header, size_t at);

// Copies [offset, offset + len) of a payload made of `count` arrays, each
// sized by size_of(i) and copied by copy_from(i, within, out, n); bytes past
// the arrays are written as 0.
template <typename SizeOf, typename CopyFrom>
void CopySegments(uint32_t count, uint64_t offset, uint8_t* out, uint64_t len, SizeOf size_of,
                  CopyFrom copy_from) {
  uint64_t begin = 0;
  for (uint32_t i = 0; i < count && len > 0; ++i) {
    const uint64_t bytes = size_of(i);
    if (offset < begin + bytes) {
      const uint64_t within = offset - begin;
      const uint64_t n = std::min(len, bytes - within);
      copy_from(i, within, out, n);
      offset += n;
      out += n;
      len -= n;
    }
    begin += bytes;
  }
  if (len > 0) std::memset(out, 0, static_cast<size_t>(len));  // past the arrays
}

// One array of the payload inside a filter being loaded.
struct PayloadSegment {
  uint64_t begin = 0;                       // payload offset of its first byte
  uint64_t bytes = 0;
  std::atomic<uint64_t>* words = nullptr;   // a Bloom or counting layer (LE words)
  uint8_t* slots = nullptr;                 // a cuckoo sub-filter (one byte per slot)
};

// Writes go to the segments; each family adds what Finish checks.
class SegmentedLoader : public FilterLoader {
 public:
  explicit SegmentedLoader(uint64_t payload_bytes) : payload_bytes_(payload_bytes) {}

  Status Write(uint64_t offset, const uint8_t* data, uint64_t len) override;
  Status Finish(AnyFilter* out) override;

 protected:
  virtual Status Complete(AnyFilter* out) = 0;

  void AddSegment(uint64_t bytes, std::atomic<uint64_t>* words, uint8_t* slots);

 private:
  const uint64_t payload_bytes_;
  std::vector<PayloadSegment> segments_;  // in payload order, contiguous
  bool finished_ = false;
};

// The result of `new (std::nothrow)` a loader, as a Status.
Status LoaderMade(const std::unique_ptr<FilterLoader>& loader);

}  // namespace bloomgate::codec
