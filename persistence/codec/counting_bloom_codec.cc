// The counting Bloom filter's codec (FilterKind::kCountingBloom = 2).
//
// HEADER BYTES, layout version 2 (version 1 differs only in its seed):
// the common prefix (header_fields.h, 12 bytes, block_layout 1 = blocked or
// 6 = classic: blocked_counting_bloom.h's CLASSIC MODE), then
//
//   +12 f64 error_rate       as Bloom
//   +20 u32 expansion        as Bloom
//   +24 u8  counter_bits     4 or 8
//   +25 u32 num_layers       as Bloom
//   +29 per layer, 40 bytes each:
//       +0  u64 capacity     >= 1
//       +8  i64 items        net adds minus removes (may be < 0 once the
//                            "remove only what was added" rule was broken);
//                            running sums must fit in an i64
//       +16 f64 error_rate   (0, 0.25]
//       +24 u64 cells        whole blocks of block_cells, > 0, < 2^55 blocks
//       +32 u32 block_cells  block_layout 1: 512 / counter_bits, 128 or 64;
//                            block_layout 6: 64 / counter_bits, 16 or 8 (one
//                            counter word per granule)
//       +36 u32 probes       [1, 64]
//   payload: each layer's cells * counter_bits / 8 bytes, oldest first
//   (saturated counters are not stored: Finish recounts them)
//
// Read while written: no. A remove decrements counters, so a copy made while
// writers run can mix states; a snapshot copies it at its cut instead.
#include <algorithm>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "filters/blocked_counting_bloom.h"
#include "filters/counting_bloom_filter.h"
#include "persistence/codec/family_codec.h"
#include "persistence/codec/header_fields.h"
#include "persistence/codec/payload_segments.h"

namespace bloomgate {
namespace codec {
namespace {

// Where CopyPayload finds the layer count (see the diagram).
constexpr size_t kLayerCountAt = kCommonBytes + 8 + 4 + 1;  // 25

struct CountingHeader {
  double error_rate = 0;
  uint32_t expansion = 0;
  uint32_t counter_bits = 0;
  uint64_t hash_seed = 0;
  CountingLayout layout = CountingLayout::kBlocked;
  std::vector<CountingBloomLayerShape> layers;
};

Status DecodeCountingHeader(std::string_view bytes, uint64_t payload_bytes, CountingHeader* out) {
  FieldReader r(bytes);
  uint8_t block_layout = 0;
  if (Status s = GetBloomCommon(&r, &block_layout, &out->hash_seed); !s.ok()) return s;
  if (block_layout == kRedisBloomLayout) {
    return Status::Error("block_layout 5 (RedisBloom's) not supported by counting Bloom filters");
  }
  out->layout = block_layout == kClassicBloomLayout ? CountingLayout::kClassic
                                                    : CountingLayout::kBlocked;
  uint8_t counter_bits = 0;
  uint32_t num_layers = 0;
  r.F64("error_rate", &out->error_rate);
  r.U32("expansion", &out->expansion);
  r.U8("counter_bits", &counter_bits);
  r.U32("num_layers", &num_layers);
  if (r.failed()) return r.Truncated();
  if (!IsErrorRate(out->error_rate)) {
    return NotIn("error_rate", Num(out->error_rate), ErrorRateRange());
  }
  if (counter_bits != kCountingBloomNarrowCounterBits &&
      counter_bits != kCountingBloomWideCounterBits) {
    return Status::Error("counter_bits " + Num(uint64_t{counter_bits}) + " not in {4, 8}");
  }
  out->counter_bits = counter_bits;
  if (Status s = CheckExpansionAndLayers(out->expansion, num_layers); !s.ok()) return s;
  const uint32_t block_cells = CountingLayoutCells(counter_bits, out->layout);
  out->layers.reserve(num_layers);  // <= 64
  uint64_t needed = 0;
  int64_t items = 0;
  for (uint32_t i = 0; i < num_layers; ++i) {
    CountingBloomLayerShape layer{};
    uint32_t layer_block_cells = 0;
    r.SetGroup("layer", i);
    r.U64("capacity", &layer.capacity);
    r.I64("items", &layer.items);
    r.F64("error_rate", &layer.error_rate);
    r.U64("cells", &layer.cells);
    r.U32("block_cells", &layer_block_cells);
    r.U32("probes", &layer.probes);
    if (r.failed()) return r.Truncated();
    if (Status s = CheckLayer(i, layer.capacity, layer.error_rate, layer.cells, layer_block_cells,
                              block_cells, layer.probes, "cells", "block_cells");
        !s.ok()) {
      return s;
    }
    // items() sums the layers in this order in an int64; each term and
    // every partial sum stays within +-2^62, so nothing a later add or
    // delete does can overflow it.
    constexpr int64_t kLimit = static_cast<int64_t>(kMaxFilterItems);
    if (layer.items > kLimit || layer.items < -kLimit ||
        __builtin_add_overflow(items, layer.items, &items) || items > kLimit || items < -kLimit) {
      return Status::Error("layer " + Num(uint64_t{i}) + " items " +
                           std::to_string(layer.items) + " makes the item count exceed +-2^62");
    }
    // cells < 2^55 * 128, so cells * counter_bits cannot overflow.
    if (!AddBytes(&needed, layer.cells * counter_bits / 8)) return PayloadOverflow("layers");
    out->layers.push_back(layer);
  }
  if (Status s = r.CheckEnd(); !s.ok()) return s;
  return CheckPayloadBytes(needed, payload_bytes, "layers");
}

class Loader final : public SegmentedLoader {
 public:
  Loader(uint64_t payload_bytes, std::unique_ptr<CountingBloomFilter> filter)
      : SegmentedLoader(payload_bytes), filter_(std::move(filter)) {
    for (uint32_t i = 0; i < filter_->num_layers(); ++i) {
      BlockedCountingBloom* layer = filter_->mutable_layer(i);
      AddSegment(layer->bytes(), layer->mutable_words(), nullptr);
    }
  }

 private:
  Status Complete(AnyFilter* out) override {
    for (uint32_t i = 0; i < filter_->num_layers(); ++i) filter_->mutable_layer(i)->RecountSaturated();
    *out = std::move(filter_);
    return Status::Ok();
  }
  std::unique_ptr<CountingBloomFilter> filter_;
};

class Codec final : public TypedCodec<CountingBloomFilter> {
 public:
  FilterKind kind() const override { return FilterKind::kCountingBloom; }
  std::string_view name() const override { return "counting bloom"; }
  bool payload_readable_while_written() const override { return false; }
  // 29 + 40 x 64 layers = 2,589 bytes.
  uint64_t max_header_bytes() const override { return 29 + 40 * uint64_t{kMaxBloomLayers}; }

  Status BeginLoad(std::string_view header_bytes, uint64_t payload_bytes,
                   const FilterLimits& limits, MemoryBudget* budget,
                   std::unique_ptr<FilterLoader>* out) const override {
    CountingHeader header;
    if (Status s = DecodeCountingHeader(header_bytes, payload_bytes, &header); !s.ok()) return s;
    std::unique_ptr<CountingBloomFilter> filter;
    const FilterStatus status =
        OverCap(payload_bytes, limits)
            ? FilterStatus::kFilterMemoryLimit
            : CountingBloomFilter::Restore(header.error_rate, header.expansion,
                                           header.counter_bits, header.layers, limits, budget,
                                           &filter, header.hash_seed, header.layout);
    if (status != FilterStatus::kOk) return RestoreFailed(status, payload_bytes, limits, budget);
    out->reset(new (std::nothrow) Loader(payload_bytes, std::move(filter)));
    return LoaderMade(*out);
  }

 protected:
  FilterHeader DescribeTyped(const CountingBloomFilter& counting) const override {
    FilterHeader header;
    ByteWriter w(&header.bytes);
    const std::vector<CountingBloomLayerInfo> layers = counting.Layers();
    const uint32_t counter_bits = counting.counter_bits();
    header.kind = FilterKind::kCountingBloom;
    PutCommon(&w,
              counting.layout() == CountingLayout::kClassic ? kClassicBloomLayout
                                                            : kBlockedBloomLayout,
              counting.hash_seed());
    w.PutF64(counting.error_rate());
    w.PutU32(counting.expansion());
    w.PutU8(static_cast<uint8_t>(counter_bits));
    w.PutU32(static_cast<uint32_t>(layers.size()));
    for (const CountingBloomLayerInfo& layer : layers) {
      w.PutU64(layer.capacity);
      w.PutI64(layer.net_items);
      w.PutF64(layer.error_rate);
      w.PutU64(layer.cells);
      w.PutU32(counting.layer_block_cells());
      w.PutU32(layer.probes);
      header.payload_bytes += layer.bytes;
    }
    return header;
  }

  void CopyTyped(const CountingBloomFilter& f, const FilterHeader& header, uint64_t offset,
                 uint8_t* out, uint64_t len) const override {
    const uint32_t count = std::min(CountAt(header, kLayerCountAt), f.num_layers());
    CopySegments(
        count, offset, out, len, [&](uint32_t i) { return f.layer(i).bytes(); },
        [&](uint32_t i, uint64_t within, uint8_t* to, uint64_t n) {
          LoadWordBytes(f.layer(i).words(), within, to, n);
        });
  }
};

}  // namespace
}  // namespace codec

const FamilyCodec& CountingBloomCodec() {
  static const codec::Codec instance;
  return instance;
}

}  // namespace bloomgate
