// The count-min sketch's codec (FilterKind::kCountMinSketch = 4).
//
// HEADER BYTES, layout version 1: the common prefix (header_fields.h, 12
// bytes): hash_algorithm 1 with block_layout 3 (SketchScheme::kNative), or
// hash_algorithm 3 with block_layout 5 (SketchScheme::kRedisBloom, every
// sketch CMS.INITBY* creates: MurmurHash2 per row, as RedisBloom); then
//
//   +12 u64 width    >= 1
//   +20 u64 depth    >= 1, width x depth <= 2^61 cells
//   +28 u64 total    sum of the increments, <= 2^63 - 1 (CMS.INFO count)
//   payload: ceil(width x depth / 2) words of 8 little-endian bytes, which
//   is the cells as little-endian u32s, row by row; with an odd cell count
//   the last 4 bytes are padding and must be 0
//
// Read while written: no. An increment is not idempotent, so a copy made
// while CMS.INCRBY runs could hold half of one (some rows) and the log would
// then replay all of it; a snapshot copies the sketch at its cut instead.
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "filters/count_min_sketch.h"
#include "persistence/codec/family_codec.h"
#include "persistence/codec/header_fields.h"
#include "persistence/codec/payload_segments.h"

namespace bloomgate {
namespace codec {
namespace {

struct CountMinHeader {
  SketchScheme scheme = SketchScheme::kNative;
  uint64_t width = 0;
  uint64_t depth = 0;
  uint64_t total = 0;
};

Status DecodeCountMinHeader(std::string_view bytes, uint64_t payload_bytes, CountMinHeader* out) {
  FieldReader r(bytes);
  if (Status s = GetSketchCommon(&r, kCountMinLayout, &out->scheme); !s.ok()) return s;
  r.U64("width", &out->width);
  r.U64("depth", &out->depth);
  r.U64("total", &out->total);
  if (r.failed()) return r.Truncated();
  if (Status s = r.CheckEnd(); !s.ok()) return s;
  if (out->width < 1) return NotIn("width", Num(out->width), "[1, 2^61]");
  if (out->depth < 1 || out->width > CountMinSketch::kMaxCells / out->depth) {
    return NotIn("depth", Num(out->depth), "[1, 2^61 / width]");
  }
  if (out->total > CountMinSketch::kMaxTotal) {
    return NotIn("total", Num(out->total), "[0, 2^63 - 1]");
  }
  const uint64_t needed = (out->width * out->depth + 1) / 2 * 8;  // <= 2^63
  return CheckPayloadBytes(needed, payload_bytes, "cells");
}

class Loader final : public SegmentedLoader {
 public:
  Loader(uint64_t payload_bytes, std::unique_ptr<CountMinSketch> sketch)
      : SegmentedLoader(payload_bytes), sketch_(std::move(sketch)) {
    AddSegment(payload_bytes, sketch_->mutable_words(), nullptr);
  }

 private:
  Status Complete(AnyFilter* out) override {
    // The padding lane of an odd cell count: a sketch never writes it, so a
    // non-zero value means the bytes are not ours.
    if (sketch_->cells() % 2 == 1) {
      const uint64_t last = sketch_->words()[sketch_->num_words() - 1].load(
          std::memory_order_relaxed);
      if ((last >> 32) != 0) {
        return Status::Error("count-min payload: padding after the last cell is not zero");
      }
    }
    *out = std::move(sketch_);
    return Status::Ok();
  }
  std::unique_ptr<CountMinSketch> sketch_;
};

class Codec final : public TypedCodec<CountMinSketch> {
 public:
  FilterKind kind() const override { return FilterKind::kCountMinSketch; }
  std::string_view name() const override { return "count-min sketch"; }
  bool payload_readable_while_written() const override { return false; }
  uint64_t max_header_bytes() const override { return kCommonBytes + 3 * 8; }  // 36

  Status BeginLoad(std::string_view header_bytes, uint64_t payload_bytes,
                   const FilterLimits& limits, MemoryBudget* budget,
                   std::unique_ptr<FilterLoader>* out) const override {
    CountMinHeader header;
    if (Status s = DecodeCountMinHeader(header_bytes, payload_bytes, &header); !s.ok()) return s;
    std::unique_ptr<CountMinSketch> sketch;
    const FilterStatus status =
        OverCap(payload_bytes, limits)
            ? FilterStatus::kFilterMemoryLimit
            : CountMinSketch::Restore(header.width, header.depth, header.total, limits, budget,
                                      &sketch, /*refusal=*/nullptr, header.scheme);
    if (status != FilterStatus::kOk) return RestoreFailed(status, payload_bytes, limits, budget);
    out->reset(new (std::nothrow) Loader(payload_bytes, std::move(sketch)));
    return LoaderMade(*out);
  }

 protected:
  FilterHeader DescribeTyped(const CountMinSketch& sketch) const override {
    FilterHeader header;
    ByteWriter w(&header.bytes);
    header.kind = FilterKind::kCountMinSketch;
    if (sketch.scheme() == SketchScheme::kRedisBloom) {
      PutCommon(&w, kRedisBloomLayout, /*hash_seed=*/0, kHashMurmur2);
    } else {
      PutCommon(&w, kCountMinLayout, /*hash_seed=*/0);
    }
    w.PutU64(sketch.width());
    w.PutU64(sketch.depth());
    w.PutU64(sketch.total());
    header.payload_bytes = sketch.num_words() * 8;
    return header;
  }

  void CopyTyped(const CountMinSketch& sketch, const FilterHeader& header, uint64_t offset,
                 uint8_t* out, uint64_t len) const override {
    CopySegments(
        1, offset, out, len, [&](uint32_t) { return header.payload_bytes; },
        [&](uint32_t, uint64_t within, uint8_t* to, uint64_t n) {
          LoadWordBytes(sketch.words(), within, to, n);
        });
  }
};

}  // namespace
}  // namespace codec

const FamilyCodec& CountMinSketchCodec() {
  static const codec::Codec instance;
  return instance;
}

}  // namespace bloomgate
