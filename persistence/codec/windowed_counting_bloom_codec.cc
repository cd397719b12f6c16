// The windowed counting Bloom filter's codec (FilterKind::kWindowedCountingBloom = 7).
//
// HEADER BYTES, layout version 2: the common prefix (header_fields.h, 12
// bytes, block_layout 1, the seed every generation hashes with), then
//
//   +12 f64 error_rate         for the union, after the 0.25 cap  (0, 0.25]
//   +20 u64 capacity           distinct items per window          >= 1
//   +28 u32 expansion          each generation's growth           [1, 32768]
//   +32 u8  counter_bits       4 or 8, + 0x80 when every generation is in
//                              the classic layout (below: block_cells 16 or 8)
//   +33 u64 window_ms          W                                  [n, 10 years]
//   +41 u32 generations        n; n + 1 slots follow              [1, 64]
//   +45 i64 origin_ms          start of generation 0 (window clock)
//   +53 u64 current            the newest generation
//   +61 per slot, slot i holding a generation g with g % (n+1) == i:
//       +0  u32 num_layers     0 = never used                     [0, 64]
//       +4  u64 generation     <= current
//       +12 per layer, 40 bytes, as the counting Bloom codec's layers:
//           u64 capacity, i64 items, f64 error_rate, u64 cells,
//           u32 block_cells (512 / counter_bits; classic: 64 / counter_bits),
//           u32 probes
//   payload: each used slot's layers' cells * counter_bits / 8 bytes, slot
//   0 first (saturated counters are recounted at load)
//
// The boundary is persisted as origin_ms + generation numbers on the window
// clock, as the windowed Bloom codec does: generations whose time passed
// while the server was down are not live at the next lookup.
//
// Read while written: no. A delete decrements counters (and an add may turn
// a generation over), so a snapshot copies the filter at its cut instead;
// CBF writes hold the key exclusively, so a copy never races one.
//
// The decoding, checks and copying are the windowed codec's
// (windowed_codec.h), shared with the windowed Bloom filter; this file says
// what is counting about it.
#include <memory>
#include <string>
#include <vector>

#include "filters/blocked_counting_bloom.h"
#include "filters/windowed_counting_bloom_filter.h"
#include "persistence/codec/windowed_codec.h"

namespace bloomgate {
namespace codec {
namespace {

struct WindowedCountingBloomFamily {
  using Filter = WindowedCountingBloomFilter;
  using Options = WindowedCountingBloomOptions;
  using Generation = CountingBloomFilter;
  using LayerShape = CountingBloomLayerShape;
  using LayerInfo = CountingBloomLayerInfo;
  static constexpr FilterKind kKind = FilterKind::kWindowedCountingBloom;
  static constexpr std::string_view kName = "windowed counting bloom";
  static constexpr bool kReadableWhileWritten = false;
  static constexpr size_t kFixedBytes = 61;
  static constexpr bool kSlotHasNewItems = false;
  static constexpr const char* kCellsName = "cells";
  static constexpr const char* kBlockName = "block_cells";

  // The counter_bits byte's top bit: the classic layout (older files: 0).
  static constexpr uint8_t kClassicFlag = 0x80;
  static void ReadOptionFields(FieldReader* r, Options* o) {
    uint8_t counter_bits = 0;
    r->U8("counter_bits", &counter_bits);
    o->counter_bits = counter_bits & ~kClassicFlag;
    o->layout = (counter_bits & kClassicFlag) != 0 ? CountingLayout::kClassic
                                                   : CountingLayout::kBlocked;
  }
  static Status CheckOptionFields(const Options& o) {
    if (o.counter_bits == kCountingBloomNarrowCounterBits ||
        o.counter_bits == kCountingBloomWideCounterBits) {
      return Status::Ok();
    }
    return Status::Error("counter_bits " + Num(uint64_t{o.counter_bits}) + " not in {4, 8}");
  }
  static void WriteOptionFields(ByteWriter* w, const Filter& f) {
    w->PutU8(static_cast<uint8_t>(f.counter_bits() |
                                  (f.layout() == CountingLayout::kClassic ? kClassicFlag : 0)));
  }

  static void ReadLayerItems(FieldReader* r, LayerShape* layer) { r->I64("items", &layer->items); }
  // As the counting codec: each generation's item sum stays within +-2^62.
  static Status CheckLayerItems(uint32_t l, const LayerShape& layer, int64_t* sum) {
    constexpr int64_t kLimit = static_cast<int64_t>(kMaxFilterItems);
    if (layer.items > kLimit || layer.items < -kLimit ||
        __builtin_add_overflow(*sum, layer.items, sum) || *sum > kLimit || *sum < -kLimit) {
      return Status::Error("layer " + Num(uint64_t{l}) + " items " + std::to_string(layer.items) +
                           " makes the item count exceed +-2^62");
    }
    return Status::Ok();
  }
  static uint32_t BlockCells(const Options& o) {
    return CountingLayoutCells(o.counter_bits, o.layout.value_or(CountingLayout::kBlocked));
  }
  static uint64_t LayerBytes(uint64_t cells, const Options& o) {
    return cells * o.counter_bits / 8;
  }
  static uint64_t LayerBytes(uint64_t cells, const Filter& f) {
    return cells * f.counter_bits() / 8;
  }
  static void WriteLayer(ByteWriter* w, const Filter& f, const LayerInfo& layer) {
    w->PutU64(layer.capacity);
    w->PutI64(layer.net_items);
    w->PutF64(layer.error_rate);
    w->PutU64(layer.cells);
    w->PutU32(CountingLayoutCells(f.counter_bits(), f.layout()));
    w->PutU32(layer.probes);
  }

  static FilterStatus RestoreGeneration(const Options& o, const std::vector<LayerShape>& layers,
                                        const FilterLimits& limits, MemoryBudget* budget,
                                        std::unique_ptr<Generation>* out) {
    const double generation_error =
        WindowGenerationErrorRate(o.error_rate, kMaxBloomErrorRate, o.generations);
    return CountingBloomFilter::Restore(generation_error, o.expansion, o.counter_bits, layers,
                                        limits, budget, out, *o.hash_seed,
                                        o.layout.value_or(CountingLayout::kBlocked));
  }
  // Saturated counters are recounted once the payload is in.
  template <typename Slots>
  static void FinishLoad(Slots* slots) {
    for (auto& slot : *slots) {
      if (slot.filter == nullptr) continue;
      for (uint32_t i = 0; i < slot.filter->num_layers(); ++i) {
        slot.filter->mutable_layer(i)->RecountSaturated();
      }
    }
  }
};

}  // namespace
}  // namespace codec

const FamilyCodec& WindowedCountingBloomCodec() {
  static const codec::WindowedCodec<codec::WindowedCountingBloomFamily> instance;
  return instance;
}

}  // namespace bloomgate
