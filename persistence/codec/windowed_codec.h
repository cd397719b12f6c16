// The codec both windowed families share (windowed Bloom, kind 6; windowed
// counting Bloom, kind 7). Their headers differ only where the generation
// type does; each family's file documents its bytes and defines a Family
// struct for this template:
//
//   using Filter, Options, Generation, LayerShape, LayerInfo
//   kKind, kName, kReadableWhileWritten
//   kFixedBytes          the bytes before the first slot
//   kSlotHasNewItems     a u64 new_items after each slot's generation
//   kCellsName, kBlockName   the layer fields' names in load errors
//   ReadOptionFields(r, o)    family fields between expansion and window_ms
//   CheckOptionFields(o)      and their ranges
//   WriteOptionFields(w, f)
//   ReadLayerItems(r, layer), CheckLayerItems(l, layer, &sum)
//   BlockCells(o), LayerBytes(cells, counter_bits-or-options)
//   WriteLayer(w, f, info)
//   RestoreGeneration(o, layers, limits, budget, &generation)
//   FinishLoad(slots)    after the payload, before Restore
//
// The shared part, in every layout version 2 windowed header: the common
// prefix (header_fields.h, 12 bytes), f64 error_rate, u64 capacity, u32
// expansion, [family fields], u64 window_ms, u32 generations, i64 origin_ms,
// u64 current; then n + 1 slots of u32 num_layers, u64 generation,
// [u64 new_items], and 40 bytes per layer (u64 capacity, 64-bit items, f64
// error_rate, u64 cells, u32 block size in cells, u32 probes); payload:
// each used slot's layers' cells, slot 0 first.
//
// A slot turned over since the header was made is copied as zeros: that
// generation was dropped live before the copy ended, so it is no longer
// live when anything loads it.
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/window_generations.h"
#include "persistence/codec/family_codec.h"
#include "persistence/codec/header_fields.h"
#include "persistence/codec/payload_segments.h"

namespace bloomgate {
namespace codec {

inline constexpr size_t kWindowLayerBytes = 40;

template <typename Family>
class WindowedCodec final : public TypedCodec<typename Family::Filter> {
  using Filter = typename Family::Filter;
  using Options = typename Family::Options;
  using Generation = typename Family::Generation;
  using LayerShape = typename Family::LayerShape;
  using LayerInfo = typename Family::LayerInfo;
  using SlotView = WindowSlotView<Generation>;
  using RestoredSlot = typename WindowGenerations<Generation>::RestoredSlot;

  static constexpr size_t kSlotBytes = Family::kSlotHasNewItems ? 20 : 12;

  struct SlotHeader {
    uint64_t generation = 0;
    uint64_t new_items = 0;
    std::vector<LayerShape> layers;  // empty: never used
  };

  struct WindowHeader {
    Options options;
    int64_t origin_ms = 0;
    uint64_t current = 0;
    std::vector<SlotHeader> slots;
  };

 public:
  FilterKind kind() const override { return Family::kKind; }
  std::string_view name() const override { return Family::kName; }
  bool payload_readable_while_written() const override { return Family::kReadableWhileWritten; }
  // Bloom: 60 + 65 slots x (20 + 40 x 64 layers) = 167,760 bytes;
  // counting: 61 + 65 x (12 + 40 x 64) = 167,241.
  uint64_t max_header_bytes() const override {
    return Family::kFixedBytes + (uint64_t{kMaxWindowGenerations} + 1) *
                                     (kSlotBytes + kWindowLayerBytes * kMaxBloomLayers);
  }

  Status BeginLoad(std::string_view header_bytes, uint64_t payload_bytes,
                   const FilterLimits& limits, MemoryBudget* budget,
                   std::unique_ptr<FilterLoader>* out) const override {
    WindowHeader header;
    if (Status s = DecodeWindowHeader(header_bytes, payload_bytes, &header); !s.ok()) return s;
    std::vector<RestoredSlot> slots(header.slots.size());
    for (size_t i = 0; i < header.slots.size(); ++i) {
      const SlotHeader& s = header.slots[i];
      slots[i].generation = s.generation;
      slots[i].new_items = s.new_items;
      if (s.layers.empty()) continue;
      // max-filter-memory caps each generation, live (a turnover creates
      // one) and here alike, so a filter that ran is never refused at load.
      const FilterStatus status =
          Family::RestoreGeneration(header.options, s.layers, limits, budget, &slots[i].filter);
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
  FilterHeader DescribeTyped(const Filter& f) const override {
    return f.WithSlots([&f](const std::vector<SlotView>& slots) {
      FilterHeader header;
      ByteWriter w(&header.bytes);
      header.kind = Family::kKind;
      PutCommon(&w, kBlockedBloomLayout, f.hash_seed());
      w.PutF64(f.error_rate());
      w.PutU64(f.capacity());
      w.PutU32(f.expansion());
      Family::WriteOptionFields(&w, f);
      w.PutU64(f.window_ms());
      w.PutU32(f.generations());
      w.PutI64(f.origin_ms());
      w.PutU64(f.current_generation());
      for (const SlotView& slot : slots) {
        if (!slot.present) {
          w.PutU32(0);
          w.PutU64(slot.generation);
          if constexpr (Family::kSlotHasNewItems) w.PutU64(0);
          continue;
        }
        const std::vector<LayerInfo> layers = slot.filter->Layers();
        w.PutU32(static_cast<uint32_t>(layers.size()));
        w.PutU64(slot.generation);
        if constexpr (Family::kSlotHasNewItems) w.PutU64(slot.new_items);
        for (const LayerInfo& layer : layers) {
          Family::WriteLayer(&w, f, layer);
          header.payload_bytes += layer.bytes;
        }
      }
      return header;
    });
  }

  void CopyTyped(const Filter& f, const FilterHeader& header, uint64_t offset, uint8_t* out,
                 uint64_t len) const override {
    // The header's own view of the segments: (slot, generation, layer, bytes).
    struct Segment {
      uint32_t slot;
      uint64_t generation;
      uint32_t layer;
      uint64_t bytes;
    };
    std::vector<Segment> segments;
    ByteReader r(std::string_view(header.bytes)
                     .substr(std::min(Family::kFixedBytes, header.bytes.size())));
    const uint32_t num_slots = f.generations() + 1;
    for (uint32_t i = 0; i < num_slots; ++i) {
      uint32_t num_layers = 0;
      uint64_t generation = 0, new_items = 0;
      if (!r.GetU32(&num_layers) || !r.GetU64(&generation)) break;
      if (Family::kSlotHasNewItems && !r.GetU64(&new_items)) break;
      for (uint32_t l = 0; l < num_layers; ++l) {
        uint64_t capacity = 0, items = 0, cells = 0;
        double error = 0;
        uint32_t block = 0, probes = 0;
        if (!r.GetU64(&capacity) || !r.GetU64(&items) || !r.GetF64(&error) ||
            !r.GetU64(&cells) || !r.GetU32(&block) || !r.GetU32(&probes)) {
          break;
        }
        segments.push_back({i, generation, l, Family::LayerBytes(cells, f)});
      }
    }
    f.WithSlots([&](const std::vector<SlotView>& slots) {
      CopySegments(
          static_cast<uint32_t>(segments.size()), offset, out, len,
          [&](uint32_t s) { return segments[s].bytes; },
          [&](uint32_t s, uint64_t within, uint8_t* to, uint64_t n) {
            const Segment& seg = segments[s];
            const SlotView& slot = slots[seg.slot];
            // Turned over since the header (see the file comment): zeros.
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

 private:
  class Loader final : public SegmentedLoader {
   public:
    Loader(uint64_t payload_bytes, std::vector<RestoredSlot> slots, WindowHeader header)
        : SegmentedLoader(payload_bytes), slots_(std::move(slots)), header_(std::move(header)) {
      for (auto& slot : slots_) {
        if (slot.filter == nullptr) continue;
        for (uint32_t i = 0; i < slot.filter->num_layers(); ++i) {
          auto* layer = slot.filter->mutable_layer(i);
          this->AddSegment(layer->bytes(), layer->mutable_words(), nullptr);
        }
      }
    }
    // Set after construction: the filter that gives the memory back.
    FilterLimits limits;
    MemoryBudget* budget = nullptr;

   private:
    Status Complete(AnyFilter* out) override {
      Family::FinishLoad(&slots_);
      std::unique_ptr<Filter> filter;
      const FilterStatus status = Filter::Restore(header_.options, header_.origin_ms,
                                                  header_.current, std::move(slots_), limits,
                                                  budget, &filter);
      if (status != FilterStatus::kOk) {
        return Status::Error(std::string(Family::kName) + ": the slots do not make a filter");
      }
      *out = std::move(filter);
      return Status::Ok();
    }
    std::vector<RestoredSlot> slots_;
    WindowHeader header_;
  };

  static Status DecodeWindowHeader(std::string_view bytes, uint64_t payload_bytes,
                                   WindowHeader* out) {
    FieldReader r(bytes);
    uint64_t seed = 0;
    if (Status s = GetCommon(&r, kBlockedBloomLayout, &seed); !s.ok()) return s;
    Options& o = out->options;
    o.hash_seed = seed;
    r.F64("error_rate", &o.error_rate);
    r.U64("capacity", &o.capacity);
    r.U32("expansion", &o.expansion);
    Family::ReadOptionFields(&r, &o);
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
    if (Status s = Family::CheckOptionFields(o); !s.ok()) return s;
    if (o.generations == 0 || o.generations > kMaxWindowGenerations) {
      return NotIn("generations", Num(uint64_t{o.generations}), Range(1, kMaxWindowGenerations));
    }
    if (o.window_ms < o.generations || o.window_ms > kMaxWindowMs) {
      return NotIn("window_ms", Num(o.window_ms), Range(o.generations, kMaxWindowMs));
    }
    // What a live window can hold (window_generations.h): an origin in the
    // window clock's range, and no generation past the one current at its end.
    if (!IsWindowOrigin(out->origin_ms)) {
      return NotIn("origin_ms", Num(out->origin_ms),
                   "[" + Num(-kMaxWindowClockMs) + ", " + Num(kMaxWindowClockMs) + "]");
    }
    const uint64_t last = LastWindowGeneration(
        out->origin_ms, (o.window_ms + o.generations - 1) / o.generations);
    if (out->current > last) return NotIn("current", Num(out->current), Range(0, last));
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
      if constexpr (Family::kSlotHasNewItems) r.U64("new_items", &slot.new_items);
      if (r.failed()) return r.Truncated();
      if (num_layers == 0) continue;
      if (Status s = CheckExpansionAndLayers(o.expansion, num_layers); !s.ok()) return s;
      if (slot.generation > out->current || slot.generation % num_slots != i) {
        return Status::Error("slot " + Num(uint64_t{i}) + " holds generation " +
                             Num(slot.generation) +
                             ", which is not its slot's or is past current " + Num(out->current));
      }
      has_current |= slot.generation == out->current;
      if (Status s = DecodeLayers(&r, num_layers, o, &slot, &needed); !s.ok()) return s;
    }
    if (!has_current) {
      return Status::Error("no slot holds the current generation " + Num(out->current));
    }
    if (Status s = r.CheckEnd(); !s.ok()) return s;
    return CheckPayloadBytes(needed, payload_bytes, "slots");
  }

  static Status DecodeLayers(FieldReader* r, uint32_t num_layers, const Options& o,
                             SlotHeader* slot, uint64_t* needed) {
    int64_t items_sum = 0;
    slot->layers.reserve(num_layers);  // <= 64
    for (uint32_t l = 0; l < num_layers; ++l) {
      LayerShape layer{};
      uint32_t block = 0;
      r->SetGroup("layer", l);
      r->U64("capacity", &layer.capacity);
      Family::ReadLayerItems(r, &layer);
      r->F64("error_rate", &layer.error_rate);
      r->U64(Family::kCellsName, &layer.cells);
      r->U32(Family::kBlockName, &block);
      r->U32("probes", &layer.probes);
      if (r->failed()) return r->Truncated();
      if (Status s = CheckLayer(l, layer.capacity, layer.error_rate, layer.cells, block,
                                Family::BlockCells(o), layer.probes, Family::kCellsName,
                                Family::kBlockName);
          !s.ok()) {
        return s;
      }
      if (Status s = Family::CheckLayerItems(l, layer, &items_sum); !s.ok()) return s;
      if (!AddBytes(needed, Family::LayerBytes(layer.cells, o))) return PayloadOverflow("slots");
      slot->layers.push_back(layer);
    }
    return Status::Ok();
  }
};

}  // namespace codec
}  // namespace bloomgate
