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
// window clock (server/keyspace/clock.h), which equals the wall clock when
// the process starts; a loaded filter's generations whose time passed while
// the server was down are simply not live at the next lookup.
//
// Read while written: yes. Bits are only ever set; a turnover replaces a
// slot's generation under the filter's slot lock, which a copy holds for
// each piece. A slot turned over since the header was made is written as
// zeros: that generation was dropped live before the copy ended, so it is
// no longer live when anything loads it.
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "filters/blocked_bloom.h"
#include "filters/windowed_bloom_filter.h"
#include "persistence/codec/family_codec.h"
#include "persistence/codec/header_fields.h"
#include "persistence/codec/payload_segments.h"

namespace bloomgate {
namespace codec {
namespace {

constexpr size_t kFixedBytes = 60;
constexpr size_t kSlotBytes = 20;
constexpr size_t kLayerBytes = 40;

struct SlotHeader {
  uint64_t generation = 0;
  uint64_t new_items = 0;
  std::vector<BloomLayerShape> layers;  // empty: never used
};

struct WindowHeader {
  WindowedBloomOptions options;
  int64_t origin_ms = 0;
  uint64_t current = 0;
  std::vector<SlotHeader> slots;
};

Status DecodeWindowHeader(std::string_view bytes, uint64_t payload_bytes, WindowHeader* out) {
  FieldReader r(bytes);
  uint64_t seed = 0;
  if (Status s = GetCommon(&r, kBlockedBloomLayout, &seed); !s.ok()) return s;
  WindowedBloomOptions& o = out->options;
  o.hash_seed = seed;
  r.F64("error_rate", &o.error_rate);
  r.U64("capacity", &o.capacity);
  r.U32("expansion", &o.expansion);
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
    r.U64("new_items", &slot.new_items);
    if (r.failed()) return r.Truncated();
    if (num_layers == 0) continue;
    if (Status s = CheckExpansionAndLayers(o.expansion, num_layers); !s.ok()) return s;
    if (slot.generation > out->current || slot.generation % num_slots != i) {
      return Status::Error("slot " + Num(uint64_t{i}) + " holds generation " +
                           Num(slot.generation) + ", which is not its slot's or is past current " +
                           Num(out->current));
    }
    has_current |= slot.generation == out->current;
    slot.layers.reserve(num_layers);  // <= 64
    for (uint32_t l = 0; l < num_layers; ++l) {
      BloomLayerShape layer{};
      uint32_t block_bits = 0;
      r.SetGroup("layer", l);
      r.U64("capacity", &layer.capacity);
      r.U64("items", &layer.items);
      r.F64("error_rate", &layer.error_rate);
      r.U64("bits", &layer.cells);
      r.U32("block_bits", &block_bits);
      r.U32("probes", &layer.probes);
      if (r.failed()) return r.Truncated();
      if (Status s = CheckLayer(l, layer.capacity, layer.error_rate, layer.cells, block_bits,
                                BlockedBloom::kBlockBits, layer.probes, "bits", "block_bits");
          !s.ok()) {
        return s;
      }
      if (layer.items > kMaxFilterItems) {
        return Status::Error("layer " + Num(uint64_t{l}) + " items " + Num(layer.items) +
                             " exceed 2^62");
      }
      if (!AddBytes(&needed, layer.cells / 8)) return PayloadOverflow("slots");
      slot.layers.push_back(layer);
    }
  }
  if (!has_current) {
    return Status::Error("no slot holds the current generation " + Num(out->current));
  }
  if (Status s = r.CheckEnd(); !s.ok()) return s;
  return CheckPayloadBytes(needed, payload_bytes, "slots");
}

class Loader final : public SegmentedLoader {
 public:
  Loader(uint64_t payload_bytes, std::vector<WindowedBloomFilter::RestoredSlot> slots,
         WindowHeader header)
      : SegmentedLoader(payload_bytes), slots_(std::move(slots)), header_(std::move(header)) {
    for (auto& slot : slots_) {
      if (slot.filter == nullptr) continue;
      for (uint32_t i = 0; i < slot.filter->num_layers(); ++i) {
        BloomLayer* layer = slot.filter->mutable_layer(i);
        AddSegment(layer->bytes(), layer->mutable_words(), nullptr);
      }
    }
  }
  // Set after construction: the filter that gives the memory back.
  FilterLimits limits;
  MemoryBudget* budget = nullptr;

 private:
  Status Complete(AnyFilter* out) override {
    std::unique_ptr<WindowedBloomFilter> filter;
    const FilterStatus status =
        WindowedBloomFilter::Restore(header_.options, header_.origin_ms, header_.current,
                                     std::move(slots_), limits, budget, &filter);
    if (status != FilterStatus::kOk) {
      return Status::Error("windowed bloom: the slots do not make a filter");
    }
    *out = std::move(filter);
    return Status::Ok();
  }
  std::vector<WindowedBloomFilter::RestoredSlot> slots_;
  WindowHeader header_;
};

class Codec final : public TypedCodec<WindowedBloomFilter> {
 public:
  FilterKind kind() const override { return FilterKind::kWindowedBloom; }
  std::string_view name() const override { return "windowed bloom"; }
  bool payload_readable_while_written() const override { return true; }
  // 60 + 65 slots x (20 + 40 x 64 layers) = 167,760 bytes.
  uint64_t max_header_bytes() const override {
    return kFixedBytes +
           (uint64_t{kMaxWindowGenerations} + 1) * (kSlotBytes + kLayerBytes * kMaxBloomLayers);
  }

  Status BeginLoad(std::string_view header_bytes, uint64_t payload_bytes,
                   const FilterLimits& limits, MemoryBudget* budget,
                   std::unique_ptr<FilterLoader>* out) const override {
    WindowHeader header;
    if (Status s = DecodeWindowHeader(header_bytes, payload_bytes, &header); !s.ok()) return s;
    std::vector<WindowedBloomFilter::RestoredSlot> slots(header.slots.size());
    const double generation_error = WindowedBloomFilter::GenerationErrorRate(
        header.options.error_rate, header.options.generations);
    for (size_t i = 0; i < header.slots.size(); ++i) {
      const SlotHeader& s = header.slots[i];
      slots[i].generation = s.generation;
      slots[i].new_items = s.new_items;
      if (s.layers.empty()) continue;
      // max-filter-memory caps each generation, live (a turnover creates
      // one) and here alike, so a filter that ran is never refused at load.
      const FilterStatus status = ScalableBloomFilter::Restore(
          generation_error, header.options.expansion, s.layers, limits, budget, &slots[i].filter,
          *header.options.hash_seed);
      if (status != FilterStatus::kOk) {
        return RestoreFailed(status, payload_bytes, limits, budget);
      }
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
  FilterHeader DescribeTyped(const WindowedBloomFilter& f) const override {
    return f.WithSlots([&f](const std::vector<WindowSlotInfo>& slots) {
      FilterHeader header;
      ByteWriter w(&header.bytes);
      header.kind = FilterKind::kWindowedBloom;
      PutCommon(&w, kBlockedBloomLayout, f.hash_seed());
      w.PutF64(f.error_rate());
      w.PutU64(f.capacity());
      w.PutU32(f.expansion());
      w.PutU64(f.window_ms());
      w.PutU32(f.generations());
      w.PutI64(f.origin_ms());
      w.PutU64(f.current_generation());
      for (const WindowSlotInfo& slot : slots) {
        if (!slot.present) {
          w.PutU32(0);
          w.PutU64(slot.generation);
          w.PutU64(0);
          continue;
        }
        const std::vector<BloomLayerInfo> layers = slot.filter->Layers();
        w.PutU32(static_cast<uint32_t>(layers.size()));
        w.PutU64(slot.generation);
        w.PutU64(slot.new_items);
        for (const BloomLayerInfo& layer : layers) {
          w.PutU64(layer.capacity);
          w.PutU64(layer.items);
          w.PutF64(layer.error_rate);
          w.PutU64(layer.bits);
          w.PutU32(static_cast<uint32_t>(BlockedBloom::kBlockBits));
          w.PutU32(layer.probes);
          header.payload_bytes += layer.bytes;
        }
      }
      return header;
    });
  }

  void CopyTyped(const WindowedBloomFilter& f, const FilterHeader& header, uint64_t offset,
                 uint8_t* out, uint64_t len) const override {
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
    for (uint32_t i = 0; i < num_slots; ++i) {
      uint32_t num_layers = 0;
      uint64_t generation = 0, new_items = 0;
      if (!r.GetU32(&num_layers) || !r.GetU64(&generation) || !r.GetU64(&new_items)) break;
      for (uint32_t l = 0; l < num_layers; ++l) {
        uint64_t capacity = 0, items = 0, bits = 0;
        double error = 0;
        uint32_t block_bits = 0, probes = 0;
        if (!r.GetU64(&capacity) || !r.GetU64(&items) || !r.GetF64(&error) || !r.GetU64(&bits) ||
            !r.GetU32(&block_bits) || !r.GetU32(&probes)) {
          break;
        }
        segments.push_back({i, generation, l, bits / 8});
      }
    }
    f.WithSlots([&](const std::vector<WindowSlotInfo>& slots) {
      CopySegments(
          static_cast<uint32_t>(segments.size()), offset, out, len,
          [&](uint32_t s) { return segments[s].bytes; },
          [&](uint32_t s, uint64_t within, uint8_t* to, uint64_t n) {
            const Segment& seg = segments[s];
            const WindowSlotInfo& slot = slots[seg.slot];
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
};

}  // namespace
}  // namespace codec

const FamilyCodec& WindowedBloomCodec() {
  static const codec::Codec instance;
  return instance;
}

}  // namespace bloomgate
