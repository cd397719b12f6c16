// The top-k (HeavyKeeper) codec (FilterKind::kTopK = 5).
//
// HEADER BYTES, layout version 1: the common prefix (header_fields.h, 12
// bytes), then by its hash_algorithm:
//
// hash_algorithm 1, block_layout 4 (SketchScheme::kNative):
//   +12 u32 k            >= 1 heap slots
//   +16 u32 width        >= 1
//   +20 u32 depth        >= 1
//   +24 f64 decay        (0, 1]
//   +32 u64 prng_state   SplitMix64 state: the next decay decisions
//   +40 u64 item_bytes   sum of the heap items' lengths
//   payload, all little-endian:
//     width x depth buckets, row by row, 8 bytes each: u32 fp, u32 count
//     k heap slots in heap order, 12 bytes each: u32 count, u32 fp, u32 length
//       (count 0 = empty: fp and length 0); counts form a min-heap
//     the slots' item bytes, concatenated in slot order (item_bytes in all)
//
// hash_algorithm 3, block_layout 5 (SketchScheme::kRedisBloom, every top-k
// TOPK.RESERVE creates; filters/top_k_redisbloom.cc):
//   +12 u32 k, +16 u32 width, +20 u32 depth, +24 f64 decay: as above
//   +32 u32 x 31 random  glibc rand()'s state, oldest word first
//                        (GlibcRandom::Words): the next decay decisions;
//                        any values
//   +156 u64 item_bytes  as above
//   payload: as above, except that a slot's third u32 is 0 for an empty slot
//     (count and fp 0 too) and length + 1 for a filled one (an item may be
//     empty, and may have count 0); the counts need not form a min-heap
//
// Read while written: no. An add moves counts and heap slots together; a
// snapshot copies the filter at its cut instead.
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "filters/top_k.h"
#include "persistence/codec/family_codec.h"
#include "persistence/codec/header_fields.h"
#include "persistence/codec/payload_segments.h"

namespace bloomgate {
namespace codec {
namespace {

constexpr uint64_t kBucketBytes = 8;
constexpr uint64_t kSlotBytes = 12;

constexpr uint64_t kRandomWords = GlibcRandom::kWords;

struct TopKHeader {
  TopKOptions options;
  uint64_t item_bytes = 0;
};

uint64_t FixedPayloadBytes(const TopKOptions& o) {
  // width x depth <= TopK::kMaxBuckets (checked first), so this stays < 2^64.
  return uint64_t{o.width} * o.depth * kBucketBytes + uint64_t{o.k} * kSlotBytes;
}

Status DecodeTopKHeader(std::string_view bytes, uint64_t payload_bytes, TopKHeader* out) {
  FieldReader r(bytes);
  TopKOptions& o = out->options;
  if (Status s = GetSketchCommon(&r, kHeavyKeeperLayout, &o.scheme); !s.ok()) return s;
  r.U32("k", &o.k);
  r.U32("width", &o.width);
  r.U32("depth", &o.depth);
  r.F64("decay", &o.decay);
  if (o.scheme == SketchScheme::kRedisBloom) {
    std::array<uint32_t, kRandomWords> words{};
    for (uint32_t& word : words) r.U32("random", &word);
    o.random = GlibcRandom::FromWords(words);
  } else {
    r.U64("prng_state", &o.prng_state);
  }
  r.U64("item_bytes", &out->item_bytes);
  if (r.failed()) return r.Truncated();
  if (Status s = r.CheckEnd(); !s.ok()) return s;
  if (o.k < 1) return NotIn("k", Num(uint64_t{o.k}), "[1, 2^32 - 1]");
  if (o.width < 1) return NotIn("width", Num(uint64_t{o.width}), "[1, 2^32 - 1]");
  if (o.depth < 1) return NotIn("depth", Num(uint64_t{o.depth}), "[1, 2^32 - 1]");
  if (!(o.decay > 0) || !(o.decay <= 1)) return NotIn("decay", Num(o.decay), "(0, 1]");
  // width x depth < 2^64 and x 8 could still overflow: the bound TopK::Create
  // keeps too, so no filter a command made is refused here.
  if (uint64_t{o.width} * o.depth > TopK::kMaxBuckets) {
    return Status::Error("width x depth " + Num(uint64_t{o.width} * o.depth) + " above 2^60");
  }
  uint64_t needed = FixedPayloadBytes(o);
  if (!AddBytes(&needed, out->item_bytes)) return PayloadOverflow("heap items");
  return CheckPayloadBytes(needed, payload_bytes, "buckets, heap slots and items");
}

uint32_t GetU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
void PutU32(uint32_t v, uint8_t* p) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Copies bytes [offset, offset + n) of `count` fixed-size records, each
// serialised by write(i, record).
template <typename Write>
void CopyRecords(uint64_t count, uint64_t record_bytes, uint64_t offset, uint8_t* out, uint64_t n,
                 Write write) {
  uint8_t record[16];
  while (n > 0) {
    const uint64_t i = offset / record_bytes;
    const uint64_t within = offset % record_bytes;
    const uint64_t take = std::min(n, record_bytes - within);
    if (i < count) {
      write(i, record);
      std::memcpy(out, record + within, static_cast<size_t>(take));
    } else {
      std::memset(out, 0, static_cast<size_t>(take));
    }
    offset += take;
    out += take;
    n -= take;
  }
}

// The whole payload is staged, then parsed and checked in Complete: the
// heap's variable-length items do not map onto fixed arrays.
class Loader final : public SegmentedLoader {
 public:
  Loader(uint64_t payload_bytes, std::unique_ptr<uint8_t[]> staged, std::unique_ptr<TopK> topk)
      : SegmentedLoader(payload_bytes), staged_(std::move(staged)), topk_(std::move(topk)),
        payload_bytes_(payload_bytes) {
    AddSegment(payload_bytes, nullptr, staged_.get());
  }

 private:
  Status Complete(AnyFilter* out) override {
    const uint8_t* p = staged_.get();
    std::vector<TopKBucket> buckets;
    std::vector<TopKEntry> heap;
    try {
      buckets.resize(topk_->buckets().size());
      heap.resize(topk_->k());
    } catch (const std::bad_alloc&) {
      return Status::Error("top-k payload: out of memory");
    }
    for (TopKBucket& b : buckets) {
      b.fp = GetU32(p);
      b.count = GetU32(p + 4);
      p += kBucketBytes;
    }
    std::vector<uint32_t> lengths(heap.size());
    uint64_t item_total = 0;
    const bool redisbloom = topk_->scheme() == SketchScheme::kRedisBloom;
    for (size_t i = 0; i < heap.size(); ++i) {
      heap[i].count = GetU32(p);
      heap[i].fp = GetU32(p + 4);
      lengths[i] = GetU32(p + 8);
      if (redisbloom) {
        // 0 = empty, else length + 1.
        heap[i].filled = lengths[i] != 0;
        if (heap[i].filled) --lengths[i];
      }
      item_total += lengths[i];
      p += kSlotBytes;
    }
    const uint64_t fixed = static_cast<uint64_t>(p - staged_.get());
    if (fixed + item_total != payload_bytes_) {
      return Status::Error("top-k payload: heap items take " + Num(item_total) + " bytes but " +
                           Num(payload_bytes_ - fixed) + " follow the slots");
    }
    for (size_t i = 0; i < heap.size(); ++i) {
      heap[i].item.assign(reinterpret_cast<const char*>(p), lengths[i]);
      p += lengths[i];
    }
    if (!topk_->Load(std::move(buckets), std::move(heap))) {
      return Status::Error(redisbloom ? "top-k payload: an empty heap slot holds a count or fp"
                                      : "top-k payload: heap slots are not a min-heap with empty "
                                        "slots empty");
    }
    staged_.reset();
    *out = std::move(topk_);
    return Status::Ok();
  }
  std::unique_ptr<uint8_t[]> staged_;
  std::unique_ptr<TopK> topk_;
  const uint64_t payload_bytes_;
};

class Codec final : public TypedCodec<TopK> {
 public:
  FilterKind kind() const override { return FilterKind::kTopK; }
  std::string_view name() const override { return "top-k"; }
  bool payload_readable_while_written() const override { return false; }
  // 164: the kRedisBloom header (kNative's is 48).
  uint64_t max_header_bytes() const override {
    return kCommonBytes + 3 * 4 + 2 * 8 + kRandomWords * 4;
  }

  Status BeginLoad(std::string_view header_bytes, uint64_t payload_bytes,
                   const FilterLimits& limits, MemoryBudget* budget,
                   std::unique_ptr<FilterLoader>* out) const override {
    TopKHeader header;
    if (Status s = DecodeTopKHeader(header_bytes, payload_bytes, &header); !s.ok()) return s;
    std::unique_ptr<TopK> topk;
    const FilterStatus status = OverCap(payload_bytes, limits)
                                    ? FilterStatus::kFilterMemoryLimit
                                    : TopK::Create(header.options, limits, budget, &topk);
    if (status != FilterStatus::kOk) return RestoreFailed(status, payload_bytes, limits, budget);
    std::unique_ptr<uint8_t[]> staged(
        new (std::nothrow) uint8_t[static_cast<size_t>(std::max<uint64_t>(payload_bytes, 1))]());
    if (staged == nullptr) return Status::Error("out of memory staging a top-k payload");
    out->reset(new (std::nothrow) Loader(payload_bytes, std::move(staged), std::move(topk)));
    return LoaderMade(*out);
  }

 protected:
  FilterHeader DescribeTyped(const TopK& topk) const override {
    FilterHeader header;
    ByteWriter w(&header.bytes);
    header.kind = FilterKind::kTopK;
    const bool redisbloom = topk.scheme() == SketchScheme::kRedisBloom;
    if (redisbloom) {
      PutCommon(&w, kRedisBloomLayout, /*hash_seed=*/0, kHashMurmur2);
    } else {
      PutCommon(&w, kHeavyKeeperLayout, /*hash_seed=*/0);
    }
    w.PutU32(topk.k());
    w.PutU32(topk.width());
    w.PutU32(topk.depth());
    w.PutF64(topk.decay());
    if (redisbloom) {
      for (uint32_t word : topk.random().Words()) w.PutU32(word);
    } else {
      w.PutU64(topk.prng_state());
    }
    uint64_t item_bytes = 0;
    for (const TopKEntry& e : topk.heap()) item_bytes += e.item.size();
    w.PutU64(item_bytes);
    header.payload_bytes =
        topk.buckets().size() * kBucketBytes + topk.heap().size() * kSlotBytes + item_bytes;
    return header;
  }

  void CopyTyped(const TopK& topk, const FilterHeader& header, uint64_t offset, uint8_t* out,
                 uint64_t len) const override {
    const auto buckets = topk.buckets();
    const auto heap = topk.heap();
    const bool redisbloom = topk.scheme() == SketchScheme::kRedisBloom;
    const uint64_t bucket_part = buckets.size() * kBucketBytes;
    const uint64_t slot_part = heap.size() * kSlotBytes;
    uint64_t item_part = 0;
    for (const TopKEntry& e : heap) item_part += e.item.size();
    CopySegments(
        3, offset, out, len,
        [&](uint32_t i) { return i == 0 ? bucket_part : i == 1 ? slot_part : item_part; },
        [&](uint32_t i, uint64_t within, uint8_t* to, uint64_t n) {
          if (i == 0) {
            CopyRecords(buckets.size(), kBucketBytes, within, to, n,
                        [&](uint64_t b, uint8_t* rec) {
                          PutU32(buckets[b].fp, rec);
                          PutU32(buckets[b].count, rec + 4);
                        });
          } else if (i == 1) {
            CopyRecords(heap.size(), kSlotBytes, within, to, n, [&](uint64_t s, uint8_t* rec) {
              PutU32(heap[s].count, rec);
              PutU32(heap[s].fp, rec + 4);
              const uint32_t length = static_cast<uint32_t>(heap[s].item.size());
              PutU32(redisbloom ? (heap[s].filled ? length + 1 : 0) : length, rec + 8);
            });
          } else {
            // The items, concatenated in slot order.
            uint64_t begin = 0;
            for (const TopKEntry& e : heap) {
              const uint64_t size = e.item.size();
              if (n == 0) break;
              if (within < begin + size) {
                const uint64_t from = within - begin;
                const uint64_t take = std::min(n, size - from);
                std::memcpy(to, e.item.data() + from, static_cast<size_t>(take));
                to += take;
                within += take;
                n -= take;
              }
              begin += size;
            }
            if (n > 0) std::memset(to, 0, static_cast<size_t>(n));
          }
        });
    (void)header;
  }
};

}  // namespace
}  // namespace codec

const FamilyCodec& TopKCodec() {
  static const codec::Codec instance;
  return instance;
}

}  // namespace bloomgate
