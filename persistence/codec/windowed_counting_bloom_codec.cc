// The windowed counting Bloom filter's codec (FilterKind::kWindowedCountingBloom = 7).
//
// HEADER BYTES, layout version 2: the common prefix (header_fields.h, 12
// bytes, block_layout 1, the seed every generation hashes with), then
//
//   +12 f64 error_rate         for the union, after the 0.25 cap  (0, 0.25]
//   +20 u64 capacity           distinct items per window          >= 1
//   +28 u32 expansion          each generation's growth           [1, 32768]
//   +32 u8  counter_bits       4 or 8
//   +33 u64 window_ms          W                                  [n, 10 years]
//   +41 u32 generations        n; n + 1 slots follow              [1, 64]
//   +45 i64 origin_ms          start of generation 0 (window clock)
//   +53 u64 current            the newest generation
//   +61 per slot, slot i holding a generation g with g % (n+1) == i:
//       +0  u32 num_layers     0 = never used                     [0, 64]
//       +4  u64 generation     <= current
//       +12 per layer, 40 bytes, as the counting Bloom codec's layers:
//           u64 capacity, i64 items, f64 error_rate, u64 cells,
//           u32 block_cells (512 / counter_bits), u32 probes
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
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "filters/blocked_counting_bloom.h"
#include "filters/windowed_counting_bloom_filter.h"
#include "persistence/codec/family_codec.h"
#include "persistence/codec/header_fields.h"
#include "persistence/codec/payload_segments.h"

namespace bloomgate {
namespace codec {
namespace {

constexpr size_t kFixedBytes = 61;
constexpr size_t kSlotBytes = 12;
constexpr size_t kLayerBytes = 40;

struct SlotHeader {
  uint64_t generation = 0;
  std::vector<CountingBloomLayerShape> layers;  // empty: never used
};

struct WindowHeader {
  WindowedCountingBloomOptions options;
  int64_t origin_ms = 0;
  uint64_t current = 0;
  std::vector<SlotHeader> slots;
};

Status DecodeLayers(FieldReader* r, uint32_t num_layers, uint32_t counter_bits,
                    SlotHeader* slot, uint64_t* needed) {
  const uint32_t block_cells = BlockedCountingBloom::BlockCellsFor(counter_bits);
  constexpr int64_t kLimit = static_cast<int64_t>(kMaxFilterItems);
  int64_t items = 0;
  slot->layers.reserve(num_layers);  // <= 64
  for (uint32_t l = 0; l < num_layers; ++l) {
    CountingBloomLayerShape layer{};
    uint32_t layer_block_cells = 0;
    r->SetGroup("layer", l);
    r->U64("capacity", &layer.capacity);
    r->I64("items", &layer.items);
    r->F64("error_rate", &layer.error_rate);
    r->U64("cells", &layer.cells);
    r->U32("block_cells", &layer_block_cells);
    r->U32("probes", &layer.probes);
    if (r->failed()) return r->Truncated();
    if (Status s = CheckLayer(l, layer.capacity, layer.error_rate, layer.cells, layer_block_cells,
                              block_cells, layer.probes, "cells", "block_cells");
        !s.ok()) {
      return s;
    }
    // As the counting codec: each generation's item sum stays within +-2^62.
    if (layer.items > kLimit || layer.items < -kLimit ||
        __builtin_add_overflow(items, layer.items, &items) || items > kLimit || items < -kLimit) {
      return Status::Error("layer " + Num(uint64_t{l}) + " items " +
                           std::to_string(layer.items) + " makes the item count exceed +-2^62");
    }
    if (!AddBytes(needed, layer.cells * counter_bits / 8)) return PayloadOverflow("slots");
    slot->layers.push_back(layer);
  }
  return Status::Ok();
}

Status DecodeWindowHeader(std::string_view bytes, uint64_t payload_bytes, WindowHeader* out) {
  FieldReader r(bytes);
  uint64_t seed = 0;
  if (Status s = GetCommon(&r, kBlockedBloomLayout, &seed); !s.ok()) return s;
  WindowedCountingBloomOptions& o = out->options;
  o.hash_seed = seed;
  uint8_t counter_bits = 0;
  r.F64("error_rate", &o.error_rate);
  r.U64("capacity", &o.capacity);
  r.U32("expansion", &o.expansion);
  r.U8("counter_bits", &counter_bits);
  r.U64("window_ms", &o.window_ms);
  r.U32("generations", &o.generations);
  r.I64("origin_ms", &out->origin_ms);
  r.U64("current", &out->current);
  if (r.failed()) return r.Truncated();
  if (!IsErrorRate(o.error_rate)) return NotIn("error_rate", Num(o.error_rate), ErrorRateRange());
  if (o.capacity == 0) return NotIn("capacity", Num(o.capacity), ">= 1");
  if (o.expansion == 0 || o.expansion > kMaxBloomExpansion) {
    return NotIn("expansion", Num(uint64_t{o.expansion}), Range(1, kMaxBloomExpansion));
  }
  if (counter_bits != kCountingBloomNarrowCounterBits &&
      counter_bits != kCountingBloomWideCounterBits) {
    return Status::Error("counter_bits " + Num(uint64_t{counter_bits}) + " not in {4, 8}");
  }
  o.counter_bits = counter_bits;
  if (o.generations == 0 || o.generations > kMaxWindowGenerations) {
    return NotIn("generations", Num(uint64_t{o.generations}), Range(1, kMaxWindowGenerations));
  }
  if (o.window_ms < o.generations || o.window_ms > kMaxWindowMs) {
    return NotIn("window_ms", Num(o.window_ms), Range(o.generations, kMaxWindowMs));
  }
  const uint32_t num_slots = o.generations + 1;
  out->slots.resize(num_slots);
  uint64_t needed = 0;
  bool has_current = false;
  for (uint32_t i = 0; i < num_slots; ++i) {
    SlotHeader& slot = out->slots[i];
    uint32_t num_layers = 0;
    r.SetGroup("slot", i);
    r.U32("num_layers", &num_layers);
    r.U64("generation", &slot.generation);
    if (r.failed()) return r.Truncated();
    if (num_layers == 0) continue;
    if (Status s = CheckExpansionAndLayers(o.expansion, num_layers); !s.ok()) return s;
    if (slot.generation > out->current || slot.generation % num_slots != i) {
      return Status::Error("slot " + Num(uint64_t{i}) + " holds generation " +
                           Num(slot.generation) + ", which is not its slot's or is past current " +
                           Num(out->current));
    }
    has_current |= slot.generation == out->current;
    if (Status s = DecodeLayers(&r, num_layers, counter_bits, &slot, &needed); !s.ok()) return s;
  }
  if (!has_current) {
    return Status::Error("no slot holds the current generation " + Num(out->current));
  }
  if (Status s = r.CheckEnd(); !s.ok()) return s;
  return CheckPayloadBytes(needed, payload_bytes, "slots");
}

class Loader final : public SegmentedLoader {
 public:
  Loader(uint64_t payload_bytes, std::vector<WindowedCountingBloomFilter::RestoredSlot> slots,
         WindowHeader header)
      : SegmentedLoader(payload_bytes), slots_(std::move(slots)), header_(std::move(header)) {
    for (auto& slot : slots_) {
      if (slot.filter == nullptr) continue;
      for (uint32_t i = 0; i < slot.filter->num_layers(); ++i) {
        BlockedCountingBloom* layer = slot.filter->mutable_layer(i);
        AddSegment(layer->bytes(), layer->mutable_words(), nullptr);
      }
    }
  }
  FilterLimits limits;
  MemoryBudget* budget = nullptr;

 private:
  Status Complete(AnyFilter* out) override {
    for (auto& slot : slots_) {
      if (slot.filter == nullptr) continue;
      for (uint32_t i = 0; i < slot.filter->num_layers(); ++i) {
        slot.filter->mutable_layer(i)->RecountSaturated();
      }
    }
    std::unique_ptr<WindowedCountingBloomFilter> filter;
    const FilterStatus status =
        WindowedCountingBloomFilter::Restore(header_.options, header_.origin_ms, header_.current,
                                             std::move(slots_), limits, budget, &filter);
    if (status != FilterStatus::kOk) {
      return Status::Error("windowed counting bloom: the slots do not make a filter");
    }
    *out = std::move(filter);
    return Status::Ok();
  }
  std::vector<WindowedCountingBloomFilter::RestoredSlot> slots_;
  WindowHeader header_;
};

class Codec final : public TypedCodec<WindowedCountingBloomFilter> {
 public:
  FilterKind kind() const override { return FilterKind::kWindowedCountingBloom; }
  std::string_view name() const override { return "windowed counting bloom"; }
  bool payload_readable_while_written() const override { return false; }
  // 61 + 65 slots x (12 + 40 x 64 layers) = 167,241 bytes.
  uint64_t max_header_bytes() const override {
    return kFixedBytes +
           (uint64_t{kMaxWindowGenerations} + 1) * (kSlotBytes + kLayerBytes * kMaxBloomLayers);
  }

  Status BeginLoad(std::string_view header_bytes, uint64_t payload_bytes,
                   const FilterLimits& limits, MemoryBudget* budget,
                   std::unique_ptr<FilterLoader>* out) const override {
    WindowHeader header;
    if (Status s = DecodeWindowHeader(header_bytes, payload_bytes, &header); !s.ok()) return s;
    std::vector<WindowedCountingBloomFilter::RestoredSlot> slots(header.slots.size());
    const WindowedCountingBloomOptions& o = header.options;
    const double generation_error =
        WindowGenerationErrorRate(o.error_rate, kMaxBloomErrorRate, o.generations);
    for (size_t i = 0; i < header.slots.size(); ++i) {
      const SlotHeader& s = header.slots[i];
      slots[i].generation = s.generation;
      if (s.layers.empty()) continue;
      // max-filter-memory caps each generation, live and here alike.
      const FilterStatus status =
          CountingBloomFilter::Restore(generation_error, o.expansion, o.counter_bits, s.layers,
                                       limits, budget, &slots[i].filter, *o.hash_seed);
      if (status != FilterStatus::kOk) return RestoreFailed(status, payload_bytes, limits, budget);
    }
    auto* loader = new (std::nothrow) Loader(payload_bytes, std::move(slots), std::move(header));
    if (loader != nullptr) {
      loader->limits = limits;
      loader->budget = budget;
    }
    out->reset(loader);
    return LoaderMade(*out);
  }

 protected:
  FilterHeader DescribeTyped(const WindowedCountingBloomFilter& f) const override {
    return f.WithSlots([&f](const std::vector<WindowCountingSlotInfo>& slots) {
      FilterHeader header;
      ByteWriter w(&header.bytes);
      header.kind = FilterKind::kWindowedCountingBloom;
      PutCommon(&w, kBlockedBloomLayout, f.hash_seed());
      w.PutF64(f.error_rate());
      w.PutU64(f.capacity());
      w.PutU32(f.expansion());
      w.PutU8(static_cast<uint8_t>(f.counter_bits()));
      w.PutU64(f.window_ms());
      w.PutU32(f.generations());
      w.PutI64(f.origin_ms());
      w.PutU64(f.current_generation());
      const uint32_t block_cells = BlockedCountingBloom::BlockCellsFor(f.counter_bits());
      for (const WindowCountingSlotInfo& slot : slots) {
        if (!slot.present) {
          w.PutU32(0);
          w.PutU64(slot.generation);
          continue;
        }
        const std::vector<CountingBloomLayerInfo> layers = slot.filter->Layers();
        w.PutU32(static_cast<uint32_t>(layers.size()));
        w.PutU64(slot.generation);
        for (const CountingBloomLayerInfo& layer : layers) {
          w.PutU64(layer.capacity);
          w.PutI64(layer.net_items);
          w.PutF64(layer.error_rate);
          w.PutU64(layer.cells);
          w.PutU32(block_cells);
          w.PutU32(layer.probes);
          header.payload_bytes += layer.bytes;
        }
      }
      return header;
    });
  }

  void CopyTyped(const WindowedCountingBloomFilter& f, const FilterHeader& header,
                 uint64_t offset, uint8_t* out, uint64_t len) const override {
    // The header's own view of the segments: (slot, generation, layer, bytes).
    struct Segment {
      uint32_t slot;
      uint64_t generation;
      uint32_t layer;
      uint64_t bytes;
    };
    std::vector<Segment> segments;
    ByteReader r(std::string_view(header.bytes).substr(std::min(kFixedBytes, header.bytes.size())));
    const uint32_t num_slots = f.generations() + 1;
    const uint32_t counter_bits = f.counter_bits();
    for (uint32_t i = 0; i < num_slots; ++i) {
      uint32_t num_layers = 0;
      uint64_t generation = 0;
      if (!r.GetU32(&num_layers) || !r.GetU64(&generation)) break;
      for (uint32_t l = 0; l < num_layers; ++l) {
        uint64_t capacity = 0, cells = 0;
        int64_t items = 0;
        double error = 0;
        uint32_t block_cells = 0, probes = 0;
        if (!r.GetU64(&capacity) || !r.GetI64(&items) || !r.GetF64(&error) || !r.GetU64(&cells) ||
            !r.GetU32(&block_cells) || !r.GetU32(&probes)) {
          break;
        }
        segments.push_back({i, generation, l, cells * counter_bits / 8});
      }
    }
    f.WithSlots([&](const std::vector<WindowCountingSlotInfo>& slots) {
      CopySegments(
          static_cast<uint32_t>(segments.size()), offset, out, len,
          [&](uint32_t s) { return segments[s].bytes; },
          [&](uint32_t s, uint64_t within, uint8_t* to, uint64_t n) {
            const Segment& seg = segments[s];
            const WindowCountingSlotInfo& slot = slots[seg.slot];
            // Turned over since the header (the generation was dropped): zeros.
            if (!slot.present || slot.generation != seg.generation ||
                seg.layer >= slot.filter->num_layers() ||
                slot.filter->layer(seg.layer).bytes() != seg.bytes) {
              std::memset(to, 0, static_cast<size_t>(n));
              return;
            }
            LoadWordBytes(slot.filter->layer(seg.layer).words(), within, to, n);
          });
      return 0;
    });
  }
};

}  // namespace
}  // namespace codec

const FamilyCodec& WindowedCountingBloomCodec() {
  static const codec::Codec instance;
  return instance;
}

}  // namespace bloomgate
