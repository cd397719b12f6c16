// The scalable Bloom filter's codec (FilterKind::kScalableBloom = 1).
//
// HEADER BYTES, layout version 2 (version 1 differs only in its seed):
// the common prefix (header_fields.h, 12 bytes, block_layout 1, 6 for our
// classic layout, or 5 with hash_algorithm 2 for a filter in RedisBloom's
// layout), then
//
// Scalable Bloom (kind 1), 28 + 40 x layers bytes:
//
//   +12 f64 error_rate       requested, after the 0.25 cap   (0, 0.25]
//   +20 u32 expansion        0 = NONSCALING                   [0, 32768]
//   +24 u32 num_layers       exactly 1 when expansion is 0    [1, 64]
//   +28 per layer, oldest first, 40 bytes each:
//       +0  u64 capacity     >= 1
//       +8  u64 items        their sum must fit in a u64
//       +16 f64 error_rate   (0, 0.25]
//       +24 u64 bits         whole 512-bit blocks, > 0, < 2^55 blocks
//                            (layout 5: whole 64-bit words, > 0;
//                            layout 6: whole 128-bit granules, > 0)
//       +32 u32 block_bits   512 (layout 5: 64, layout 6: 128)
//       +36 u32 probes       [1, 64]
//   then, only when block_layout carries kBloomTighteningFlag (129 or 134:
//   a filter made with valkey-bloom's TIGHTENING other than 0.5):
//       f64 tightening       each new layer's error rate = the newest's x
//                            this; layer 0's = error_rate x this   (0, 1)
//   payload: each layer's bits / 8 bytes, oldest layer first
//
// The flag and its field came without a layout_version bump, on the terms of
// block_layout 6 (persistence/FORMAT.md): every header written before reads
// as before (tightening 0.5), and an older build refuses a flagged header by
// name ("block_layout 129 not supported") instead of growing the filter at
// the wrong rates.
//
// Read while written: yes. Bits are only ever set, so a copy made while adds
// continue holds every bit set before the copy began (and maybe some set
// during it). The header fixes the number of layers; layers added later are
// left out.
#include <algorithm>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "filters/blocked_bloom.h"
#include "filters/scalable_bloom_filter.h"
#include "persistence/codec/family_codec.h"
#include "persistence/codec/header_fields.h"
#include "persistence/codec/payload_segments.h"

namespace bloomgate {
namespace codec {
namespace {

// Where CopyPayload finds the layer count (see the diagram).
constexpr size_t kLayerCountAt = kCommonBytes + 8 + 4;  // 24

struct BloomHeader {
  double error_rate = 0;
  uint32_t expansion = 0;
  uint64_t hash_seed = 0;
  BloomLayout layout = BloomLayout::kBlocked;
  double tightening = kErrorTighteningRatio;
  std::vector<BloomLayerShape> layers;
};

Status DecodeBloomHeader(std::string_view bytes, uint64_t payload_bytes, BloomHeader* out) {
  FieldReader r(bytes);
  uint8_t block_layout = 0;
  bool has_tightening = false;
  if (Status s = GetBloomCommon(&r, &block_layout, &out->hash_seed, &has_tightening); !s.ok()) {
    return s;
  }
  const bool redisbloom = block_layout == kRedisBloomLayout;
  out->layout = redisbloom                              ? BloomLayout::kRedisBloom
                : block_layout == kClassicBloomLayout ? BloomLayout::kClassic
                                                        : BloomLayout::kBlocked;
  const uint32_t expected_block_bits = BloomLayoutCells(out->layout);
  uint32_t num_layers = 0;
  r.F64("error_rate", &out->error_rate);
  r.U32("expansion", &out->expansion);
  r.U32("num_layers", &num_layers);
  if (r.failed()) return r.Truncated();
  if (!IsErrorRate(out->error_rate)) {
    return NotIn("error_rate", Num(out->error_rate), ErrorRateRange());
  }
  if (Status s = CheckExpansionAndLayers(out->expansion, num_layers); !s.ok()) return s;
  out->layers.reserve(num_layers);  // <= 64
  uint64_t needed = 0;
  uint64_t items = 0;
  for (uint32_t i = 0; i < num_layers; ++i) {
    BloomLayerShape layer{};
    uint32_t block_bits = 0;
    r.SetGroup("layer", i);
    r.U64("capacity", &layer.capacity);
    r.U64("items", &layer.items);
    r.F64("error_rate", &layer.error_rate);
    r.U64("bits", &layer.cells);
    r.U32("block_bits", &block_bits);
    r.U32("probes", &layer.probes);
    if (r.failed()) return r.Truncated();
    if (Status s = CheckLayer(i, layer.capacity, layer.error_rate, layer.cells, block_bits,
                              expected_block_bits, layer.probes, "bits", "block_bits");
        !s.ok()) {
      return s;
    }
    // RedisBloom's hash count is a function of the layer's error rate; a
    // header saying otherwise would export chunks RedisBloom refuses.
    if (redisbloom &&
        layer.probes != RedisBloomHashes(RedisBloomBitsPerEntry(layer.error_rate))) {
      return Status::Error("layer " + Num(uint64_t{i}) + " probes " + Num(uint64_t{layer.probes}) +
                           " but RedisBloom's hash count for error_rate " +
                           Num(layer.error_rate) + " is " +
                           Num(uint64_t{RedisBloomHashes(RedisBloomBitsPerEntry(layer.error_rate))}));
    }
    if (!AddBytes(&items, layer.items) || items > kMaxFilterItems) {
      return Status::Error("layer " + Num(uint64_t{i}) + " items " + Num(layer.items) +
                           " makes the item count exceed 2^62");
    }
    if (!AddBytes(&needed, layer.cells / 8)) return PayloadOverflow("layers");
    out->layers.push_back(layer);
  }
  if (has_tightening) {
    r.SetGroup(nullptr, 0);
    r.F64("tightening", &out->tightening);
    if (r.failed()) return r.Truncated();
    if (!IsTighteningRatio(out->tightening)) {
      return NotIn("tightening", Num(out->tightening), "(0, 1)");
    }
  }
  if (Status s = r.CheckEnd(); !s.ok()) return s;
  return CheckPayloadBytes(needed, payload_bytes, "layers");
}

class Loader final : public SegmentedLoader {
 public:
  Loader(uint64_t payload_bytes, std::unique_ptr<ScalableBloomFilter> filter)
      : SegmentedLoader(payload_bytes), filter_(std::move(filter)) {
    for (uint32_t i = 0; i < filter_->num_layers(); ++i) {
      BloomLayer* layer = filter_->mutable_layer(i);
      AddSegment(layer->bytes(), layer->mutable_words(), nullptr);
    }
  }

 private:
  Status Complete(AnyFilter* out) override {
    // Per-layer items came with the header; bits need no check.
    *out = std::move(filter_);
    return Status::Ok();
  }
  std::unique_ptr<ScalableBloomFilter> filter_;
};

class Codec final : public TypedCodec<ScalableBloomFilter> {
 public:
  FilterKind kind() const override { return FilterKind::kScalableBloom; }
  std::string_view name() const override { return "scalable bloom"; }
  bool payload_readable_while_written() const override { return true; }
  // 28 + 40 x 64 layers + 8 (tightening) = 2,596 bytes.
  uint64_t max_header_bytes() const override { return 28 + 40 * uint64_t{kMaxBloomLayers} + 8; }

  Status BeginLoad(std::string_view header_bytes, uint64_t payload_bytes,
                   const FilterLimits& limits, MemoryBudget* budget,
                   std::unique_ptr<FilterLoader>* out) const override {
    BloomHeader header;
    if (Status s = DecodeBloomHeader(header_bytes, payload_bytes, &header); !s.ok()) return s;
    std::unique_ptr<ScalableBloomFilter> filter;
    const FilterStatus status =
        OverCap(payload_bytes, limits)
            ? FilterStatus::kFilterMemoryLimit
            : ScalableBloomFilter::Restore(header.error_rate, header.expansion, header.layers,
                                           limits, budget, &filter, header.hash_seed,
                                           header.layout, header.tightening);
    if (status != FilterStatus::kOk) return RestoreFailed(status, payload_bytes, limits, budget);
    out->reset(new (std::nothrow) Loader(payload_bytes, std::move(filter)));
    return LoaderMade(*out);
  }

 protected:
  FilterHeader DescribeTyped(const ScalableBloomFilter& bloom) const override {
    FilterHeader header;
    ByteWriter w(&header.bytes);
    const std::vector<BloomLayerInfo> layers = bloom.Layers();
    header.kind = FilterKind::kScalableBloom;
    // Only a ratio other than RedisBloom's is written (and flagged), so
    // every other filter's header stays byte for byte what it was.
    const bool tightened = bloom.tightening() != kErrorTighteningRatio;
    const uint8_t flag = tightened ? kBloomTighteningFlag : 0;
    switch (bloom.layout()) {
      case BloomLayout::kRedisBloom:
        PutCommon(&w, kRedisBloomLayout, /*hash_seed=*/0, kHashMurmur64A);
        break;
      case BloomLayout::kClassic:
        PutCommon(&w, kClassicBloomLayout | flag, bloom.hash_seed());
        break;
      case BloomLayout::kBlocked:
        PutCommon(&w, kBlockedBloomLayout | flag, bloom.hash_seed());
        break;
    }
    w.PutF64(bloom.error_rate());
    w.PutU32(bloom.expansion());
    w.PutU32(static_cast<uint32_t>(layers.size()));
    for (const BloomLayerInfo& layer : layers) {
      w.PutU64(layer.capacity);
      w.PutU64(layer.items);
      w.PutF64(layer.error_rate);
      w.PutU64(layer.bits);
      w.PutU32(bloom.block_cells());
      w.PutU32(layer.probes);
      header.payload_bytes += layer.bytes;
    }
    if (tightened) w.PutF64(bloom.tightening());
    return header;
  }

  void CopyTyped(const ScalableBloomFilter& f, const FilterHeader& header, uint64_t offset,
                 uint8_t* out, uint64_t len) const override {
    // The header fixes the layers; layers appended since are left out (and
    // layers are never removed, so each index stays valid).
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

const FamilyCodec& ScalableBloomCodec() {
  static const codec::Codec instance;
  return instance;
}

}  // namespace bloomgate
