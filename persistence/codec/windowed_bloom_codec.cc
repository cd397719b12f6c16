// The windowed Bloom filter's codec (FilterKind::kWindowedBloom = 6).
//
// HEADER BYTES, layout version 2: the common prefix (header_fields.h, 12
// bytes, block_layout 1, the seed every generation hashes with), then
//
// Windowed Bloom (kind 6), 60 + per slot (20 + 40 x layers) bytes:
//
//   +12 f64 error_rate         for the union, after the 0.25 cap  (0, 0.25]
//   +20 u64 capacity           distinct items per window          >= 1
//   +28 u32 expansion          each generation's growth           [1, 32768]
//   +32 u64 window_ms          W                                  [n, 10 years]
//   +40 u32 generations        n; n + 1 slots follow              [1, 64]
//   +44 i64 origin_ms          start of generation 0 (window clock)
//   +52 u64 current            the newest generation
//   +60 per slot, slot i holding a generation g with g % (n+1) == i:
//       +0  u32 num_layers     0 = never used                     [0, 64]
//       +4  u64 generation     <= current
//       +12 u64 new_items      adds new to the window (BF.CARD)
//       +20 per layer, 40 bytes, as the scalable Bloom codec's layers:
//           u64 capacity, u64 items, f64 error_rate, u64 bits,
//           u32 block_bits (512), u32 probes
//   payload: each used slot's layers' bits / 8 bytes, slot 0 first
//
// The boundary is persisted as origin_ms + generation numbers, on the
// window clock (server/base/clock.h), which equals the wall clock when
// the process starts; a loaded filter's generations whose time passed while
// the server was down are simply not live at the next lookup.
//
// Read while written: yes. Bits are only ever set; a turnover replaces a
// slot's generation under the filter's slot lock, which a copy holds for
// each piece (a slot turned over since the header was made is copied as
// zeros, windowed_codec.h).
//
// The decoding, checks and copying are the windowed codec's
// (windowed_codec.h), shared with the windowed counting filter; this file
// says what is Bloom about it.
#include <memory>
#include <vector>

#include "filters/blocked_bloom.h"
#include "filters/windowed_bloom_filter.h"
#include "persistence/codec/windowed_codec.h"

namespace bloomgate {
namespace codec {
namespace {

struct WindowedBloomFamily {
  using Filter = WindowedBloomFilter;
  using Options = WindowedBloomOptions;
  using Generation = ScalableBloomFilter;
  using LayerShape = BloomLayerShape;
  using LayerInfo = BloomLayerInfo;
  static constexpr FilterKind kKind = FilterKind::kWindowedBloom;
  static constexpr std::string_view kName = "windowed bloom";
  static constexpr bool kReadableWhileWritten = true;
  static constexpr size_t kFixedBytes = 60;
  static constexpr bool kSlotHasNewItems = true;  // BF.CARD's share per generation
  static constexpr const char* kCellsName = "bits";
  static constexpr const char* kBlockName = "block_bits";

  static void ReadOptionFields(FieldReader*, Options*) {}
  static Status CheckOptionFields(const Options&) { return Status::Ok(); }
  static void WriteOptionFields(ByteWriter*, const Filter&) {}

  static void ReadLayerItems(FieldReader* r, LayerShape* layer) { r->U64("items", &layer->items); }
  static Status CheckLayerItems(uint32_t l, const LayerShape& layer, int64_t*) {
    if (layer.items <= kMaxFilterItems) return Status::Ok();
    return Status::Error("layer " + Num(uint64_t{l}) + " items " + Num(layer.items) +
                         " exceed 2^62");
  }
  static uint32_t BlockCells(const Options&) { return BlockedBloom::kBlockBits; }
  template <typename OptionsOrFilter>
  static uint64_t LayerBytes(uint64_t bits, const OptionsOrFilter&) { return bits / 8; }
  static void WriteLayer(ByteWriter* w, const Filter&, const LayerInfo& layer) {
    w->PutU64(layer.capacity);
    w->PutU64(layer.items);
    w->PutF64(layer.error_rate);
    w->PutU64(layer.bits);
    w->PutU32(static_cast<uint32_t>(BlockedBloom::kBlockBits));
    w->PutU32(layer.probes);
  }

  static FilterStatus RestoreGeneration(const Options& o, const std::vector<LayerShape>& layers,
                                        const FilterLimits& limits, MemoryBudget* budget,
                                        std::unique_ptr<Generation>* out) {
    return ScalableBloomFilter::Restore(Filter::GenerationErrorRate(o.error_rate, o.generations),
                                        o.expansion, layers, limits, budget, out, *o.hash_seed);
  }
  template <typename Slots>
  static void FinishLoad(Slots*) {}
};

}  // namespace
}  // namespace codec

const FamilyCodec& WindowedBloomCodec() {
  static const codec::WindowedCodec<codec::WindowedBloomFamily> instance;
  return instance;
}

}  // namespace bloomgate
