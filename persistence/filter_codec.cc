// Filter headers and payloads (see filter_codec.h).
//
// HEADER BYTES, layout version 1. Every integer little-endian, written field
// by field with ByteWriter (never a packed struct); f64 = the IEEE-754 bit
// pattern as a u64. Sizes in bytes.
//
// Common prefix, all families (12 bytes):
//
//   +0  u16 layout_version   1
//   +2  u8  hash_algorithm   1 = XXH3-128 of the item bytes (filters/key_hash.h)
//   +3  u64 hash_seed        0
//   +11 u8  block_layout     1 = 512-bit blocked: block = fastrange64(hash.hi,
//                                blocks), probe i = top bits of hash.lo * M^i,
//                                M = 0x9e3779b97f4a7c15 (blocked_bloom.h,
//                                blocked_counting_bloom.h); Bloom and counting
//                            2 = cuckoo: fp = hash.lo % 255 + 1, i1 = hash.hi,
//                                i2 = CuckooFilter::AltIndex(i1, fp),
//                                bucket = i & (buckets - 1); cuckoo only
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
//       +32 u32 block_bits   512
//       +36 u32 probes       [1, 64]
//   payload: each layer's bits / 8 bytes, oldest layer first
//
// Counting Bloom (kind 2), 29 + 40 x layers bytes:
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
//       +32 u32 block_cells  512 / counter_bits: 128 or 64
//       +36 u32 probes       [1, 64]
//   payload: each layer's cells * counter_bits / 8 bytes, oldest first
//   (saturated counters are not stored: Finish recounts them)
//
// Cuckoo (kind 3), 56 + 8 x sub-filters bytes:
//
//   +12 u32 bucket_size      [1, 255]
//   +16 u32 max_iterations   [1, 65535]
//   +20 u32 expansion        0 or a power of two <= 32768
//   +24 u32 max_expansions   [1, 65536]
//   +28 u64 base_buckets     power of two, [2, 2^56]
//   +36 u32 num_filters      [1, max_expansions]; 1 when expansion is 0
//   +40 u64 items            occupied slots; Finish checks it against them
//   +48 u64 deletes          removes since the last compaction
//   +56 per sub-filter, 8 bytes each:
//       +0  u64 num_buckets  must be base_buckets x expansion^k, <= 2^56
//   payload: each sub-filter's num_buckets * bucket_size slot bytes
//
// Nothing follows the last field: a header with trailing bytes is refused.
// Versioning: any change to these bytes, or to what a field means, takes a
// new layout_version; Begin refuses versions it does not know.
#include "persistence/filter_codec.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "filters/blocked_bloom.h"
#include "filters/blocked_counting_bloom.h"
#include "persistence/byte_io.h"

namespace bloomgate {
namespace {

constexpr uint16_t kLayoutVersion = 1;
constexpr uint8_t kHashXxh3_128 = 1;
constexpr uint64_t kHashSeed = 0;
constexpr uint8_t kBlockedBloomLayout = 1;
constexpr uint8_t kCuckooLayout = 2;

// Where CopyPayload finds the layer / sub-filter count (see the diagram).
constexpr size_t kCommonBytes = 12;
constexpr size_t kBloomLayerCountAt = kCommonBytes + 8 + 4;        // 24
constexpr size_t kCountingLayerCountAt = kCommonBytes + 8 + 4 + 1;  // 25
constexpr size_t kCuckooFilterCountAt = kCommonBytes + 4 * 4 + 8;  // 36

// CloneFilter copies through a buffer of this size: large enough that the
// per-piece costs (a header lookup, a cuckoo lock) vanish, small enough to
// never matter next to the filter itself.
constexpr uint64_t kClonePieceBytes = uint64_t{4} << 20;

// ---- Little-endian word arrays ------------------------------------------

uint64_t ToLittleEndian(uint64_t v) {
  if constexpr (std::endian::native == std::endian::big) return __builtin_bswap64(v);
  return v;
}

// Copies bytes [byte_offset, byte_offset + n) of a word array, as its
// little-endian serialisation, to `out`. One relaxed load per word (a plain
// 8-byte move on x86-64 and ARM64), so this runs at a good fraction of memcpy
// speed without reading the atomics behind the compiler's back; the loads
// are relaxed for the reason given in blocked_bloom.h (no data is published
// through the bits).
void LoadWordBytes(const std::atomic<uint64_t>* words, uint64_t byte_offset, uint8_t* out,
                   uint64_t n) {
  uint64_t index = byte_offset / 8;
  const uint64_t skip = byte_offset % 8;
  if (skip != 0 && n > 0) {
    const uint64_t word = ToLittleEndian(words[index++].load(std::memory_order_relaxed));
    const uint64_t take = std::min<uint64_t>(8 - skip, n);
    std::memcpy(out, reinterpret_cast<const uint8_t*>(&word) + skip, take);
    out += take;
    n -= take;
  }
  for (; n >= 8; n -= 8, out += 8) {
    const uint64_t word = ToLittleEndian(words[index++].load(std::memory_order_relaxed));
    std::memcpy(out, &word, 8);
  }
  if (n > 0) {
    const uint64_t word = ToLittleEndian(words[index].load(std::memory_order_relaxed));
    std::memcpy(out, &word, n);
  }
}

// The inverse, for a loader: whole words are stored, a partial word at either
// end is merged with what is there. Relaxed: the filter is not published yet
// (handing it over later is what orders these stores for its readers), and
// one loader is written by one thread at a time.
void StoreWordBytes(std::atomic<uint64_t>* words, uint64_t byte_offset, const uint8_t* in,
                    uint64_t n) {
  uint64_t index = byte_offset / 8;
  const uint64_t skip = byte_offset % 8;
  auto merge = [&](uint64_t at, uint64_t from, uint64_t count) {
    uint64_t word = ToLittleEndian(words[at].load(std::memory_order_relaxed));
    std::memcpy(reinterpret_cast<uint8_t*>(&word) + from, in, count);
    words[at].store(ToLittleEndian(word), std::memory_order_relaxed);
    in += count;
    n -= count;
  };
  if (skip != 0 && n > 0) merge(index++, skip, std::min<uint64_t>(8 - skip, n));
  for (; n >= 8; n -= 8, in += 8) {
    uint64_t word;
    std::memcpy(&word, in, 8);
    words[index++].store(ToLittleEndian(word), std::memory_order_relaxed);
  }
  if (n > 0) merge(index, 0, n);
}

// ---- Messages -------------------------------------------------------------

std::string Num(uint64_t v) { return std::to_string(v); }
std::string Num(int64_t v) { return std::to_string(v); }
std::string Num(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.17g", v);
  return buffer;
}

// "layer 3 probes 0 not in [1, 64]"
Status NotIn(const std::string& field, const std::string& value, const std::string& range) {
  return Status::Error(field + " " + value + " not in " + range);
}

std::string Range(uint64_t lo, uint64_t hi) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on
  // "[" + std::string&&.
  std::string range = "[";
  range += Num(lo);
  range += ", ";
  range += Num(hi);
  range += "]";
  return range;
}

bool IsErrorRate(double rate) { return rate > 0 && rate <= kMaxBloomErrorRate; }  // NaN: false
std::string ErrorRateRange() { return "(0, " + Num(kMaxBloomErrorRate) + "]"; }

// ---- Header decoding --------------------------------------------------------

// A ByteReader that remembers which field ran past the end, for the message.
// Field names of a repeated group are built only on failure.
class FieldReader {
 public:
  explicit FieldReader(std::string_view bytes) : reader_(bytes), size_(bytes.size()) {}

  // Names the repeated group being read ("layer", 3) for messages.
  void SetGroup(const char* group, uint64_t index) {
    group_ = group;
    group_index_ = index;
  }

  void U8(const char* field, uint8_t* v) { Note(field, reader_.GetU8(v)); }
  void U16(const char* field, uint16_t* v) { Note(field, reader_.GetU16(v)); }
  void U32(const char* field, uint32_t* v) { Note(field, reader_.GetU32(v)); }
  void U64(const char* field, uint64_t* v) { Note(field, reader_.GetU64(v)); }
  void I64(const char* field, int64_t* v) { Note(field, reader_.GetI64(v)); }
  void F64(const char* field, double* v) { Note(field, reader_.GetF64(v)); }

  bool failed() const { return reader_.failed(); }
  size_t remaining() const { return reader_.remaining(); }

  // The error for the first field that did not fit.
  Status Truncated() const {
    return Status::Error("header ends inside " + missing_ + " at byte " + Num(uint64_t{missing_at_}) +
                         " (header is " + Num(uint64_t{size_}) + " bytes)");
  }
  // Ok iff every byte was read.
  Status CheckEnd() const {
    if (failed()) return Truncated();
    if (remaining() != 0) {
      return Status::Error("header has " + Num(uint64_t{remaining()}) +
                           " bytes after its last field (header is " + Num(uint64_t{size_}) +
                           " bytes)");
    }
    return Status::Ok();
  }

 private:
  void Note(const char* field, bool ok) {
    if (ok || !missing_.empty()) return;
    missing_ = group_ == nullptr ? std::string(field)
                                 : std::string(group_) + " " + Num(group_index_) + " " + field;
    missing_at_ = reader_.position();
  }

  ByteReader reader_;
  const size_t size_;
  const char* group_ = nullptr;
  uint64_t group_index_ = 0;
  std::string missing_;
  size_t missing_at_ = 0;
};

void PutCommon(ByteWriter* w, uint8_t layout) {
  w->PutU16(kLayoutVersion);
  w->PutU8(kHashXxh3_128);
  w->PutU64(kHashSeed);
  w->PutU8(layout);
}

Status GetCommon(FieldReader* r, uint8_t expected_layout) {
  uint16_t version = 0;
  uint8_t hash = 0;
  uint64_t seed = 0;
  uint8_t layout = 0;
  // The version first: a later version may lay out everything after it
  // differently, so nothing else is looked at before it is known.
  r->U16("layout_version", &version);
  if (r->failed()) return r->Truncated();
  if (version != kLayoutVersion) {
    return Status::Error("layout_version " + Num(uint64_t{version}) + " not supported (expected " +
                         Num(uint64_t{kLayoutVersion}) + ")");
  }
  r->U8("hash_algorithm", &hash);
  r->U64("hash_seed", &seed);
  r->U8("block_layout", &layout);
  if (r->failed()) return r->Truncated();
  if (hash != kHashXxh3_128) {
    return Status::Error("hash_algorithm " + Num(uint64_t{hash}) +
                         " not supported (expected 1 = XXH3-128)");
  }
  if (seed != kHashSeed) {
    return Status::Error("hash_seed " + Num(seed) + " not supported (expected 0)");
  }
  if (layout != expected_layout) {
    return Status::Error("block_layout " + Num(uint64_t{layout}) +
                         " not supported for this family (expected " +
                         Num(uint64_t{expected_layout}) + ")");
  }
  return Status::Ok();
}

Status CheckExpansionAndLayers(uint32_t expansion, uint32_t num_layers) {
  if (expansion > kMaxBloomExpansion) {
    return NotIn("expansion", Num(uint64_t{expansion}), Range(0, kMaxBloomExpansion));
  }
  if (num_layers < 1 || num_layers > kMaxBloomLayers) {
    return NotIn("num_layers", Num(uint64_t{num_layers}), Range(1, kMaxBloomLayers));
  }
  if (expansion == 0 && num_layers != 1) {
    return Status::Error("num_layers " + Num(uint64_t{num_layers}) +
                         " but expansion 0 (NONSCALING) filters have exactly 1 layer");
  }
  return Status::Ok();
}

// Validates one layer's common fields; `cells` is bits for Bloom.
Status CheckLayer(uint32_t index, uint64_t capacity, double error_rate, uint64_t cells,
                  uint32_t block_cells, uint32_t expected_block_cells, uint32_t probes,
                  const char* cells_name, const char* block_name) {
  const std::string layer = "layer " + Num(uint64_t{index}) + " ";
  if (capacity == 0) return Status::Error(layer + "capacity 0 not in [1, 2^64 - 1]");
  if (!IsErrorRate(error_rate)) return NotIn(layer + "error_rate", Num(error_rate), ErrorRateRange());
  if (block_cells != expected_block_cells) {
    return Status::Error(layer + block_name + " " + Num(uint64_t{block_cells}) + " (expected " +
                         Num(uint64_t{expected_block_cells}) + ")");
  }
  const uint64_t max_cells = MaxBlockedCells(expected_block_cells) - expected_block_cells;
  if (cells == 0 || cells % expected_block_cells != 0 || cells > max_cells) {
    return Status::Error(layer + cells_name + " " + Num(cells) + " not a multiple of " +
                         Num(uint64_t{expected_block_cells}) + " in [" +
                         Num(uint64_t{expected_block_cells}) + ", " + Num(max_cells) + "]");
  }
  if (probes < 1 || probes > kMaxBloomProbes) {
    return NotIn(layer + "probes", Num(uint64_t{probes}), Range(1, kMaxBloomProbes));
  }
  return Status::Ok();
}

Status CheckPayloadBytes(uint64_t needed, uint64_t payload_bytes, const char* what) {
  if (needed != payload_bytes) {
    return Status::Error("payload_bytes " + Num(payload_bytes) + " but the " + what + " need " +
                         Num(needed));
  }
  return Status::Ok();
}

// Sums array sizes, refusing a sum past 2^64 (64 layers of 2^61 bytes can).
bool AddBytes(uint64_t* total, uint64_t bytes) {
  return !__builtin_add_overflow(*total, bytes, total);
}

Status PayloadOverflow(const char* what) {
  return Status::Error(std::string("the ") + what + " need more than 2^64 payload bytes");
}

struct BloomHeader {
  double error_rate = 0;
  uint32_t expansion = 0;
  std::vector<BloomLayerShape> layers;
};

Status DecodeBloomHeader(std::string_view bytes, uint64_t payload_bytes, BloomHeader* out) {
  FieldReader r(bytes);
  if (Status s = GetCommon(&r, kBlockedBloomLayout); !s.ok()) return s;
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
                              BlockedBloom::kBlockBits, layer.probes, "bits", "block_bits");
        !s.ok()) {
      return s;
    }
    if (!AddBytes(&items, layer.items) || items > kMaxFilterItems) {
      return Status::Error("layer " + Num(uint64_t{i}) + " items " + Num(layer.items) +
                           " makes the item count exceed 2^62");
    }
    if (!AddBytes(&needed, layer.cells / 8)) return PayloadOverflow("layers");
    out->layers.push_back(layer);
  }
  if (Status s = r.CheckEnd(); !s.ok()) return s;
  return CheckPayloadBytes(needed, payload_bytes, "layers");
}

struct CountingHeader {
  double error_rate = 0;
  uint32_t expansion = 0;
  uint32_t counter_bits = 0;
  std::vector<CountingBloomLayerShape> layers;
};

Status DecodeCountingHeader(std::string_view bytes, uint64_t payload_bytes, CountingHeader* out) {
  FieldReader r(bytes);
  if (Status s = GetCommon(&r, kBlockedBloomLayout); !s.ok()) return s;
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
  const uint32_t block_cells = BlockedCountingBloom::BlockCellsFor(counter_bits);
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

Status DecodeCuckooHeader(std::string_view bytes, uint64_t payload_bytes,
                          CuckooFilterShape* out) {
  FieldReader r(bytes);
  if (Status s = GetCommon(&r, kCuckooLayout); !s.ok()) return s;
  CuckooFilterShape& shape = *out;
  r.U32("bucket_size", &shape.bucket_size);
  r.U32("max_iterations", &shape.max_iterations);
  r.U32("expansion", &shape.expansion);
  r.U32("max_expansions", &shape.max_expansions);
  r.U64("base_buckets", &shape.base_buckets);
  r.U32("num_filters", &shape.num_filters);
  r.U64("items", &shape.items);
  r.U64("deletes", &shape.deletes);
  if (r.failed()) return r.Truncated();
  if (shape.deletes > kMaxFilterItems) {
    return NotIn("deletes", Num(shape.deletes), "[0, 2^62]");
  }
  if (shape.bucket_size < 1 || shape.bucket_size > kMaxCuckooBucketSize) {
    return NotIn("bucket_size", Num(uint64_t{shape.bucket_size}), Range(1, kMaxCuckooBucketSize));
  }
  if (shape.max_iterations < 1 || shape.max_iterations > kMaxCuckooIterations) {
    return NotIn("max_iterations", Num(uint64_t{shape.max_iterations}),
                 Range(1, kMaxCuckooIterations));
  }
  if (shape.expansion > kMaxCuckooExpansion ||
      (shape.expansion != 0 && !std::has_single_bit(shape.expansion))) {
    return Status::Error("expansion " + Num(uint64_t{shape.expansion}) +
                         " not 0 or a power of two in [1, " + Num(uint64_t{kMaxCuckooExpansion}) +
                         "]");
  }
  if (shape.max_expansions < 1 || shape.max_expansions > kMaxCuckooMaxExpansions) {
    return NotIn("max_expansions", Num(uint64_t{shape.max_expansions}),
                 Range(1, kMaxCuckooMaxExpansions));
  }
  if (shape.base_buckets < 2 || shape.base_buckets > kMaxCuckooBuckets ||
      !std::has_single_bit(shape.base_buckets)) {
    return Status::Error("base_buckets " + Num(shape.base_buckets) +
                         " not a power of two in [2, 2^56]");
  }
  if (shape.num_filters < 1 || shape.num_filters > shape.max_expansions) {
    return NotIn("num_filters", Num(uint64_t{shape.num_filters}),
                 Range(1, shape.max_expansions) + " (max_expansions)");
  }
  if (shape.expansion == 0 && shape.num_filters != 1) {
    return Status::Error("num_filters " + Num(uint64_t{shape.num_filters}) +
                         " but expansion 0 (non-scaling) filters have exactly 1");
  }
  // Refuse a count the bytes cannot hold before looping over it.
  if (r.remaining() / 8 < shape.num_filters) {
    return Status::Error("header ends inside sub-filter " + Num(uint64_t{r.remaining() / 8}) +
                         " num_buckets (num_filters " + Num(uint64_t{shape.num_filters}) + ")");
  }
  uint64_t needed = 0;
  for (uint32_t k = 0; k < shape.num_filters; ++k) {
    uint64_t buckets = 0;
    r.SetGroup("sub-filter", k);
    r.U64("num_buckets", &buckets);
    if (r.failed()) return r.Truncated();
    const uint64_t expected = CuckooFilter::SubFilterBuckets(shape.base_buckets, shape.expansion, k);
    if (expected > kMaxCuckooBuckets) {
      return Status::Error("sub-filter " + Num(uint64_t{k}) +
                           " would need more than 2^56 buckets (base_buckets " +
                           Num(shape.base_buckets) + " x expansion " +
                           Num(uint64_t{shape.expansion}) + "^" + Num(uint64_t{k}) + ")");
    }
    if (buckets != expected) {
      return Status::Error("sub-filter " + Num(uint64_t{k}) + " num_buckets " + Num(buckets) +
                           " (expected base_buckets x expansion^" + Num(uint64_t{k}) + " = " +
                           Num(expected) + ")");
    }
    // buckets * bucket_size <= 2^56 * 255 < 2^64.
    if (!AddBytes(&needed, buckets * shape.bucket_size)) return PayloadOverflow("sub-filters");
  }
  if (Status s = r.CheckEnd(); !s.ok()) return s;
  if (shape.items > needed) {
    return Status::Error("items " + Num(shape.items) + " but the sub-filters have only " +
                         Num(needed) + " slots");
  }
  return CheckPayloadBytes(needed, payload_bytes, "sub-filters");
}

// The message for a Restore that failed after the header was valid.
Status RestoreFailed(FilterStatus status, uint64_t payload_bytes, const FilterLimits& limits,
                     const MemoryBudget* budget) {
  switch (status) {
    case FilterStatus::kFilterMemoryLimit:
      return Status::Error("a filter of " + Num(payload_bytes) +
                           " payload bytes (plus bookkeeping) exceeds the per-filter limit of " +
                           Num(limits.max_filter_bytes) + " bytes");
    case FilterStatus::kOutOfMemory:
      if (budget != nullptr && budget->limit() != 0) {
        return Status::Error("out of memory for a filter of " + Num(payload_bytes) +
                             " payload bytes (budget: " + Num(budget->used()) + " of " +
                             Num(budget->limit()) + " bytes used)");
      }
      return Status::Error("out of memory for a filter of " + Num(payload_bytes) +
                           " payload bytes");
    default:
      return Status::Error(std::string("could not build the filter: ") + ToString(status));
  }
}

// ---- Loaders ------------------------------------------------------------

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

  Status Write(uint64_t offset, const uint8_t* data, uint64_t len) override {
    if (finished_) return Status::Error("payload write after Finish");
    if (offset > payload_bytes_ || len > payload_bytes_ - offset) {
      return Status::Error("payload write of " + Num(len) + " bytes at offset " + Num(offset) +
                           " goes past the " + Num(payload_bytes_) + " payload bytes");
    }
    while (len > 0) {
      // The last segment that begins at or before `offset`.
      const auto after = std::upper_bound(
          segments_.begin(), segments_.end(), offset,
          [](uint64_t at, const PayloadSegment& segment) { return at < segment.begin; });
      const PayloadSegment& segment = *(after - 1);
      const uint64_t within = offset - segment.begin;
      const uint64_t n = std::min(len, segment.bytes - within);
      if (segment.words != nullptr) {
        StoreWordBytes(segment.words, within, data, n);
      } else {
        std::memcpy(segment.slots + within, data, static_cast<size_t>(n));
      }
      offset += n;
      data += n;
      len -= n;
    }
    return Status::Ok();
  }

  Status Finish(AnyFilter* out) override {
    if (finished_) return Status::Error("Finish called twice");
    finished_ = true;
    return Complete(out);
  }

 protected:
  virtual Status Complete(AnyFilter* out) = 0;

  void AddSegment(uint64_t bytes, std::atomic<uint64_t>* words, uint8_t* slots) {
    const uint64_t begin = segments_.empty() ? 0 : segments_.back().begin + segments_.back().bytes;
    segments_.push_back(PayloadSegment{begin, bytes, words, slots});
  }

 private:
  const uint64_t payload_bytes_;
  std::vector<PayloadSegment> segments_;  // in payload order, contiguous
  bool finished_ = false;
};

class BloomLoader final : public SegmentedLoader {
 public:
  BloomLoader(uint64_t payload_bytes, std::unique_ptr<ScalableBloomFilter> filter)
      : SegmentedLoader(payload_bytes), filter_(std::move(filter)) {
    for (uint32_t i = 0; i < filter_->num_layers(); ++i) {
      BlockedBloom* layer = filter_->mutable_layer(i);
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

class CountingLoader final : public SegmentedLoader {
 public:
  CountingLoader(uint64_t payload_bytes, std::unique_ptr<CountingBloomFilter> filter)
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

class CuckooLoader final : public SegmentedLoader {
 public:
  CuckooLoader(uint64_t payload_bytes, std::unique_ptr<CuckooFilter> filter)
      : SegmentedLoader(payload_bytes), filter_(std::move(filter)) {
    const CuckooFilterShape shape = filter_->Shape();
    for (uint32_t k = 0; k < shape.num_filters; ++k) {
      const uint64_t buckets = CuckooFilter::SubFilterBuckets(shape.base_buckets, shape.expansion, k);
      AddSegment(buckets * shape.bucket_size, nullptr, filter_->mutable_slots(k));
    }
  }

 private:
  Status Complete(AnyFilter* out) override {
    uint64_t occupied = 0;
    for (const CuckooSubFilterInfo& sub : filter_->SubFilters()) occupied += sub.occupied;
    if (occupied != filter_->items()) {
      return Status::Error("cuckoo payload: items " + Num(filter_->items()) + " but " +
                           Num(occupied) + " occupied slots");
    }
    *out = std::move(filter_);
    return Status::Ok();
  }
  std::unique_ptr<CuckooFilter> filter_;
};

// ---- CopyPayload helpers ------------------------------------------------

uint32_t CountAt(const FilterHeader& header, size_t at) {
  ByteReader r(std::string_view(header.bytes).substr(std::min(at, header.bytes.size())));
  uint32_t count = 0;
  return r.GetU32(&count) ? count : 0;
}

// Copies [offset, offset + len) of a payload made of `count` arrays, each
// described by describe(i, &bytes) and copied by copy(i, within, out, n).
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

Status LoaderMade(const std::unique_ptr<FilterLoader>& loader) {
  return loader != nullptr ? Status::Ok() : Status::Error("out of memory for the filter loader");
}

}  // namespace

std::string_view ToString(FilterKind kind) {
  switch (kind) {
    case FilterKind::kScalableBloom:
      return "scalable bloom";
    case FilterKind::kCountingBloom:
      return "counting bloom";
    case FilterKind::kCuckoo:
      return "cuckoo";
  }
  return "unknown filter kind";
}

FilterHeader DescribeFilter(const AnyFilter& filter) {
  FilterHeader header;
  ByteWriter w(&header.bytes);
  if (const auto* bloom = std::get_if<std::unique_ptr<ScalableBloomFilter>>(&filter)) {
    const std::vector<BloomLayerInfo> layers = (*bloom)->Layers();
    header.kind = FilterKind::kScalableBloom;
    PutCommon(&w, kBlockedBloomLayout);
    w.PutF64((*bloom)->error_rate());
    w.PutU32((*bloom)->expansion());
    w.PutU32(static_cast<uint32_t>(layers.size()));
    for (const BloomLayerInfo& layer : layers) {
      w.PutU64(layer.capacity);
      w.PutU64(layer.items);
      w.PutF64(layer.error_rate);
      w.PutU64(layer.bits);
      w.PutU32(static_cast<uint32_t>(BlockedBloom::kBlockBits));
      w.PutU32(layer.probes);
      header.payload_bytes += layer.bytes;
    }
  } else if (const auto* counting = std::get_if<std::unique_ptr<CountingBloomFilter>>(&filter)) {
    const std::vector<CountingBloomLayerInfo> layers = (*counting)->Layers();
    const uint32_t counter_bits = (*counting)->counter_bits();
    header.kind = FilterKind::kCountingBloom;
    PutCommon(&w, kBlockedBloomLayout);
    w.PutF64((*counting)->error_rate());
    w.PutU32((*counting)->expansion());
    w.PutU8(static_cast<uint8_t>(counter_bits));
    w.PutU32(static_cast<uint32_t>(layers.size()));
    for (const CountingBloomLayerInfo& layer : layers) {
      w.PutU64(layer.capacity);
      w.PutI64(layer.net_items);
      w.PutF64(layer.error_rate);
      w.PutU64(layer.cells);
      w.PutU32(BlockedCountingBloom::BlockCellsFor(counter_bits));
      w.PutU32(layer.probes);
      header.payload_bytes += layer.bytes;
    }
  } else {
    const CuckooFilter& cuckoo = *std::get<std::unique_ptr<CuckooFilter>>(filter);
    const CuckooFilterShape shape = cuckoo.Shape();  // the one shared lock
    header.kind = FilterKind::kCuckoo;
    PutCommon(&w, kCuckooLayout);
    w.PutU32(shape.bucket_size);
    w.PutU32(shape.max_iterations);
    w.PutU32(shape.expansion);
    w.PutU32(shape.max_expansions);
    w.PutU64(shape.base_buckets);
    w.PutU32(shape.num_filters);
    w.PutU64(shape.items);
    w.PutU64(shape.deletes);
    for (uint32_t k = 0; k < shape.num_filters; ++k) {
      const uint64_t buckets = CuckooFilter::SubFilterBuckets(shape.base_buckets, shape.expansion, k);
      w.PutU64(buckets);
      header.payload_bytes += buckets * shape.bucket_size;
    }
  }
  return header;
}

void CopyPayload(const AnyFilter& filter, const FilterHeader& header, uint64_t offset,
                 uint8_t* out, uint64_t len) {
  if (offset >= header.payload_bytes) {
    std::memset(out, 0, static_cast<size_t>(len));
    return;
  }
  // Only [offset, payload_bytes) comes from the arrays; the rest is zero.
  const uint64_t inside = std::min(len, header.payload_bytes - offset);
  if (inside < len) std::memset(out + inside, 0, static_cast<size_t>(len - inside));
  len = inside;

  if (const auto* bloom = std::get_if<std::unique_ptr<ScalableBloomFilter>>(&filter)) {
    const ScalableBloomFilter& f = **bloom;
    // The header fixes the layers; layers appended since are left out (and
    // layers are never removed, so each index stays valid).
    const uint32_t count = std::min(CountAt(header, kBloomLayerCountAt), f.num_layers());
    CopySegments(
        count, offset, out, len, [&](uint32_t i) { return f.layer(i).bytes(); },
        [&](uint32_t i, uint64_t within, uint8_t* to, uint64_t n) {
          LoadWordBytes(f.layer(i).words(), within, to, n);
        });
  } else if (const auto* counting = std::get_if<std::unique_ptr<CountingBloomFilter>>(&filter)) {
    const CountingBloomFilter& f = **counting;
    const uint32_t count = std::min(CountAt(header, kCountingLayerCountAt), f.num_layers());
    CopySegments(
        count, offset, out, len, [&](uint32_t i) { return f.layer(i).bytes(); },
        [&](uint32_t i, uint64_t within, uint8_t* to, uint64_t n) {
          LoadWordBytes(f.layer(i).words(), within, to, n);
        });
  } else {
    const CuckooFilter& f = *std::get<std::unique_ptr<CuckooFilter>>(filter);
    // Sub-filter k's size is fixed by k (base x expansion^k), so a sub-filter
    // freed by compaction since the header was made just reads as zeros.
    CopySegments(
        CountAt(header, kCuckooFilterCountAt), offset, out, len,
        [&](uint32_t k) {
          return CuckooFilter::SubFilterBuckets(f.num_buckets(), f.expansion(), k) *
                 f.bucket_size();
        },
        [&](uint32_t k, uint64_t within, uint8_t* to, uint64_t n) {
          const uint64_t copied = f.CopySlots(k, within, to, n);  // takes the shared lock
          if (copied < n) std::memset(to + copied, 0, static_cast<size_t>(n - copied));
        });
  }
}

Status FilterLoader::Begin(FilterKind kind, std::string_view header_bytes, uint64_t payload_bytes,
                           const FilterLimits& limits, MemoryBudget* budget,
                           std::unique_ptr<FilterLoader>* out) {
  out->reset();
  const std::string context = std::string(ToString(kind)) + " header: ";
  // Cheap first refusal, before any decoding: the arrays alone would break
  // the per-filter cap (the exact total is checked again by Restore).
  auto over_cap = [&] {
    return limits.max_filter_bytes != 0 && payload_bytes > limits.max_filter_bytes;
  };
  switch (kind) {
    case FilterKind::kScalableBloom: {
      BloomHeader header;
      if (Status s = DecodeBloomHeader(header_bytes, payload_bytes, &header); !s.ok()) {
        return s.WithContext(context);
      }
      std::unique_ptr<ScalableBloomFilter> filter;
      const FilterStatus status =
          over_cap() ? FilterStatus::kFilterMemoryLimit
                     : ScalableBloomFilter::Restore(header.error_rate, header.expansion,
                                                    header.layers, limits, budget, &filter);
      if (status != FilterStatus::kOk) {
        return RestoreFailed(status, payload_bytes, limits, budget).WithContext(context);
      }
      out->reset(new (std::nothrow) BloomLoader(payload_bytes, std::move(filter)));
      return LoaderMade(*out);
    }
    case FilterKind::kCountingBloom: {
      CountingHeader header;
      if (Status s = DecodeCountingHeader(header_bytes, payload_bytes, &header); !s.ok()) {
        return s.WithContext(context);
      }
      std::unique_ptr<CountingBloomFilter> filter;
      const FilterStatus status =
          over_cap() ? FilterStatus::kFilterMemoryLimit
                     : CountingBloomFilter::Restore(header.error_rate, header.expansion,
                                                    header.counter_bits, header.layers, limits,
                                                    budget, &filter);
      if (status != FilterStatus::kOk) {
        return RestoreFailed(status, payload_bytes, limits, budget).WithContext(context);
      }
      out->reset(new (std::nothrow) CountingLoader(payload_bytes, std::move(filter)));
      return LoaderMade(*out);
    }
    case FilterKind::kCuckoo: {
      CuckooFilterShape shape;
      if (Status s = DecodeCuckooHeader(header_bytes, payload_bytes, &shape); !s.ok()) {
        return s.WithContext(context);
      }
      std::unique_ptr<CuckooFilter> filter;
      const FilterStatus status = over_cap() ? FilterStatus::kFilterMemoryLimit
                                             : CuckooFilter::Restore(shape, limits, budget, &filter);
      if (status != FilterStatus::kOk) {
        return RestoreFailed(status, payload_bytes, limits, budget).WithContext(context);
      }
      out->reset(new (std::nothrow) CuckooLoader(payload_bytes, std::move(filter)));
      return LoaderMade(*out);
    }
  }
  return Status::Error("unknown filter kind " + Num(uint64_t{static_cast<uint8_t>(kind)}) +
                       " (expected 1 = scalable bloom, 2 = counting bloom, 3 = cuckoo)");
}

AnyFilter CloneFilter(const AnyFilter& filter) {
  // On failure (only an allocation can fail: no cap, no budget) the result
  // holds a null filter of the same family.
  AnyFilter empty = std::visit(
      [](const auto& f) { return AnyFilter(std::remove_cvref_t<decltype(f)>()); }, filter);
  const FilterHeader header = DescribeFilter(filter);
  std::unique_ptr<FilterLoader> loader;
  if (!FilterLoader::Begin(header.kind, header.bytes, header.payload_bytes,
                           FilterLimits{/*max_filter_bytes=*/0}, /*budget=*/nullptr, &loader)
           .ok()) {
    return empty;
  }
  const uint64_t piece = std::min(kClonePieceBytes, header.payload_bytes);
  std::unique_ptr<uint8_t[]> buffer(new (std::nothrow) uint8_t[static_cast<size_t>(piece)]);
  if (piece != 0 && buffer == nullptr) return empty;
  for (uint64_t offset = 0; offset < header.payload_bytes; offset += piece) {
    const uint64_t n = std::min(piece, header.payload_bytes - offset);
    CopyPayload(filter, header, offset, buffer.get(), n);
    if (!loader->Write(offset, buffer.get(), n).ok()) return empty;
  }
  AnyFilter clone;
  if (!loader->Finish(&clone).ok()) return empty;
  return clone;
}

}  // namespace bloomgate
