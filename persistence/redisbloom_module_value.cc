#include "persistence/redisbloom_module_value.h"

#include <array>
#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "filters/count_min_sketch.h"
#include "filters/cuckoo_filter.h"
#include "filters/t_digest.h"
#include "filters/top_k.h"
#include "persistence/byte_io.h"
#include "persistence/codec/cuckoo_header.h"
#include "persistence/redisbloom_cuckoo_chunk.h"
#include "persistence/redisbloom_dump.h"

namespace bloomgate {
namespace {

using E = DumpPayloadError;

constexpr std::array<std::string_view, 5> kTypes = {"MBbloom--", "MBbloomCF", "CMSk-TYPE",
                                                      "TopK-TYPE", "TDIS-TYPE"};

// rebloom.c's encoding versions: 2 added options, 4 the growth factor
// (RedisBloom 2.2+ writes 4). Earlier ones hashed in 32 bits, which the
// RedisBloom Bloom layout does not hold (RedisBloomHeaderToFilterHeader
// refuses options without FORCE64 by name).
constexpr uint32_t kBloomMinEncver = 2;
constexpr uint32_t kBloomGrowthEncver = 4;
// Cuckoo encvers before 4 kept one bucket count for all sub-filters and no
// deletes count (RedisBloom before 2.2); 4 is what 2.2 and later write.
constexpr uint32_t kCuckooEncver = 4;
// RedisBloom's CF_MAX_EXPANSIONS default (rebloom.c CFMaxExpansions).
constexpr uint32_t kCuckooMaxExpansions = 32;
// topk.h's HeapBucket on the 64-bit servers RedisBloom runs on.
constexpr uint64_t kTopKHeapSlotBytes = 24;
constexpr uint64_t kTopKBucketBytes = 8;

DumpPayloadError Refuse(DumpPayloadError error, std::string* why, std::string message) {
  if (why != nullptr) *why = std::move(message);
  return error;
}

DumpPayloadError ReadFailed(const rdb::RdbReader& reader, std::string_view type,
                            std::string* why) {
  return Refuse(reader.over_limit() ? E::kFilterTooLarge : E::kBadData, why,
                std::string(type) + ": " + reader.error());
}

DumpPayloadError FromStatus(FilterStatus status, std::string_view type, std::string* why) {
  switch (status) {
    case FilterStatus::kFilterMemoryLimit:
      return Refuse(E::kFilterTooLarge, why, std::string(type) + ": over max-filter-memory");
    case FilterStatus::kOutOfMemory:
      return Refuse(E::kOutOfMemory, why, std::string(type) + ": over maxmemory");
    default: return Refuse(E::kBadData, why, std::string(type) + ": fields out of range");
  }
}

// The sketches have one encoding version so far (rm_cms.c CMS_ENC_VER,
// rm_topk.c TOPK_ENC_VER, rm_tdigest.c: 0).
bool SketchEncverKnown(std::string_view type, uint32_t encver, std::string* why) {
  if (encver == 0) return true;
  Refuse(E::kBadData, why, std::string(type) + " encver " + std::to_string(encver));
  return false;
}

uint32_t LoadU32(std::string_view bytes, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
  return v;
}

// The most one string may hold: what the filter limit allows (the bytes of
// a plain string are in the input anyway; this bounds what an LZF string
// claims to decompress to).
uint64_t MaxString(const FilterLimits& limits) {
  return limits.max_filter_bytes != 0 ? limits.max_filter_bytes : UINT64_MAX;
}

// Strings read from the input, kept alive until the filter is built: a
// plain one views the input, a decompressed one lives here.
class StringStore {
 public:
  bool Read(rdb::RdbReader* reader, uint64_t max_len, std::string_view* out) {
    std::string& scratch = scratch_.emplace_back();
    return reader->ModuleString(max_len, out, &scratch);
  }

 private:
  std::deque<std::string> scratch_;
};

DumpPayloadError DecodeBloom(uint32_t encver, rdb::RdbReader* r, const FilterLimits& limits,
                             MemoryBudget* budget, AnyFilter* out, std::string* why) {
  constexpr std::string_view kType = "MBbloom--";
  if (encver < kBloomMinEncver || encver > kBloomGrowthEncver) {
    return Refuse(E::kBadData, why, "MBbloom-- encver " + std::to_string(encver) +
                                        " (RedisBloom 2.x writes 2-4)");
  }
  uint64_t size = 0, nfilters = 0, options = 0, growth = 2;
  r->ModuleUnsigned(&size);
  r->ModuleUnsigned(&nfilters);
  r->ModuleUnsigned(&options);
  if (encver >= kBloomGrowthEncver) r->ModuleUnsigned(&growth);
  if (r->failed()) return ReadFailed(*r, kType, why);
  if (nfilters < 1 || nfilters > kMaxBloomLayers || options > UINT32_MAX || growth > UINT32_MAX) {
    return Refuse(E::kBadData, why, "MBbloom--: nfilters, options or growth out of range");
  }
  // The SCANDUMP header chunk these fields make (redisbloom_dump.h), so the
  // filter is checked exactly as a BF.LOADCHUNK of it is.
  std::string header;
  ByteWriter w(&header);
  w.PutU64(size);
  w.PutU32(static_cast<uint32_t>(nfilters));
  w.PutU32(static_cast<uint32_t>(options));
  w.PutU32(static_cast<uint32_t>(growth));
  StringStore store;
  std::vector<std::string_view> pieces;
  for (uint64_t i = 0; i < nfilters; ++i) {
    uint64_t entries = 0, hashes = 0, bits = 0, n2 = 0, items = 0;
    double error = 0, bpe = 0;
    std::string_view bytes;
    r->ModuleUnsigned(&entries);
    r->ModuleDouble(&error);
    r->ModuleUnsigned(&hashes);
    r->ModuleDouble(&bpe);
    r->ModuleUnsigned(&bits);
    r->ModuleUnsigned(&n2);
    store.Read(r, MaxString(limits), &bytes);
    r->ModuleUnsigned(&items);
    if (r->failed()) return ReadFailed(*r, kType, why);
    if (hashes > UINT32_MAX || n2 > UINT8_MAX) {
      return Refuse(E::kBadData, why, "MBbloom--: hashes or n2 out of range");
    }
    w.PutU64(bytes.size());
    w.PutU64(bits);
    w.PutU64(items);
    w.PutF64(error);
    w.PutF64(bpe);
    w.PutU32(static_cast<uint32_t>(hashes));
    w.PutU64(entries);
    w.PutU8(static_cast<uint8_t>(n2));
    pieces.push_back(bytes);
  }
  if (!r->ModuleEof()) return ReadFailed(*r, kType, why);
  std::string header_bytes;
  uint64_t payload_bytes = 0;
  if (Status s = RedisBloomHeaderToFilterHeader(header, &header_bytes, &payload_bytes); !s.ok()) {
    return Refuse(E::kBadData, why, "MBbloom--: " + s.message());
  }
  return LoadFilterImage(FilterKind::kScalableBloom, header_bytes, payload_bytes, pieces, limits,
                         budget, out, why);
}

DumpPayloadError DecodeCuckoo(uint32_t encver, rdb::RdbReader* r, const FilterLimits& limits,
                              MemoryBudget* budget, AnyFilter* out, std::string* why) {
  constexpr std::string_view kType = "MBbloomCF";
  if (encver != kCuckooEncver) {
    return Refuse(E::kBadData, why, "MBbloomCF encver " + std::to_string(encver) +
                                        " (RedisBloom 2.2 and later write 4)");
  }
  uint64_t filters = 0, buckets = 0, items = 0, deletes = 0, bucket_size = 0, iterations = 0,
           expansion = 0;
  r->ModuleUnsigned(&filters);
  r->ModuleUnsigned(&buckets);
  r->ModuleUnsigned(&items);
  r->ModuleUnsigned(&deletes);
  r->ModuleUnsigned(&bucket_size);
  r->ModuleUnsigned(&iterations);
  r->ModuleUnsigned(&expansion);
  if (r->failed()) return ReadFailed(*r, kType, why);
  if (filters < 1 || filters > kMaxCuckooMaxExpansions || bucket_size > UINT16_MAX ||
      iterations > UINT16_MAX || expansion > UINT16_MAX) {
    return Refuse(E::kBadData, why,
                  "MBbloomCF: numFilters, bucketSize, maxIterations or expansion out of range");
  }
  // CF.SCANDUMP's header of these fields (redisbloom_cuckoo_chunk.h).
  std::string header;
  ByteWriter w(&header);
  w.PutU64(items);
  w.PutU64(buckets);
  w.PutU64(deletes);
  w.PutU64(filters);
  w.PutU16(static_cast<uint16_t>(bucket_size));
  w.PutU16(static_cast<uint16_t>(iterations));
  w.PutU16(static_cast<uint16_t>(expansion));
  CuckooFilterShape shape;
  if (Status s = DecodeRedisBloomCuckooHeader(header, kCuckooMaxExpansions, &shape); !s.ok()) {
    return Refuse(E::kBadData, why, "MBbloomCF: " + s.message());
  }
  StringStore store;
  std::vector<std::string_view> pieces;
  for (uint64_t i = 0, expected = buckets; i < filters; ++i) {
    uint64_t sub_buckets = 0;
    std::string_view slots;
    r->ModuleUnsigned(&sub_buckets);
    store.Read(r, MaxString(limits), &slots);
    if (r->failed()) return ReadFailed(*r, kType, why);
    // Sub-filter i has numBuckets x expansion^i buckets (cuckoo.c's growth).
    if (sub_buckets != expected || bucket_size == 0 ||
        slots.size() / bucket_size != sub_buckets || slots.size() % bucket_size != 0) {
      return Refuse(E::kBadData, why,
                    "MBbloomCF: sub-filter " + std::to_string(i) + " has " +
                        std::to_string(sub_buckets) + " buckets in " +
                        std::to_string(slots.size()) + " bytes");
    }
    pieces.push_back(slots);
    if (expansion != 0 && expected > UINT64_MAX / expansion) expected = 0;  // cannot match
    expected *= expansion;
  }
  if (!r->ModuleEof()) return ReadFailed(*r, kType, why);
  const FilterHeader ours = DescribeCuckooShape(shape);
  return LoadFilterImage(FilterKind::kCuckoo, ours.bytes, ours.payload_bytes, pieces, limits,
                         budget, out, why);
}

DumpPayloadError DecodeCountMin(uint32_t encver, rdb::RdbReader* r, const FilterLimits& limits,
                                MemoryBudget* budget, AnyFilter* out, std::string* why) {
  constexpr std::string_view kType = "CMSk-TYPE";
  if (!SketchEncverKnown(kType, encver, why)) return E::kBadData;
  uint64_t width = 0, depth = 0, count = 0;
  std::string_view cells;
  std::string scratch;
  r->ModuleUnsigned(&width);
  r->ModuleUnsigned(&depth);
  r->ModuleUnsigned(&count);
  r->ModuleString(MaxString(limits), &cells, &scratch);
  if (!r->ModuleEof()) return ReadFailed(*r, kType, why);
  if (width < 1 || depth < 1 || width > CountMinSketch::kMaxCells / depth ||
      cells.size() != width * depth * 4) {
    return Refuse(E::kBadData, why,
                  "CMSk-TYPE: " + std::to_string(width) + " x " + std::to_string(depth) +
                      " cells in " + std::to_string(cells.size()) + " bytes");
  }
  std::unique_ptr<CountMinSketch> sketch;
  const FilterStatus status = CountMinSketch::Restore(width, depth, count, limits, budget, &sketch,
                                                      nullptr, SketchScheme::kRedisBloom);
  if (status != FilterStatus::kOk) return FromStatus(status, kType, why);
  // Cell c is the low (even c) or high half of word c / 2.
  std::atomic<uint64_t>* words = sketch->mutable_words();
  for (uint64_t c = 0; c < width * depth; c += 2) {
    uint64_t word = LoadU32(cells, c * 4);
    if (c + 1 < width * depth) word |= uint64_t{LoadU32(cells, (c + 1) * 4)} << 32;
    words[c / 2].store(word, std::memory_order_relaxed);
  }
  *out = std::move(sketch);
  return E::kNone;
}

DumpPayloadError DecodeTopK(uint32_t encver, rdb::RdbReader* r, const FilterLimits& limits,
                            MemoryBudget* budget, AnyFilter* out, std::string* why) {
  constexpr std::string_view kType = "TopK-TYPE";
  if (!SketchEncverKnown(kType, encver, why)) return E::kBadData;
  uint64_t k = 0, width = 0, depth = 0;
  double decay = 0;
  std::string_view data, heap;
  StringStore store;
  r->ModuleUnsigned(&k);
  r->ModuleUnsigned(&width);
  r->ModuleUnsigned(&depth);
  r->ModuleDouble(&decay);
  store.Read(r, MaxString(limits), &data);
  store.Read(r, MaxString(limits), &heap);
  if (r->failed()) return ReadFailed(*r, kType, why);
  if (k < 1 || width < 1 || depth < 1 || k > UINT32_MAX || width > UINT32_MAX ||
      depth > UINT32_MAX || data.size() / kTopKBucketBytes / depth != width ||
      data.size() != width * depth * kTopKBucketBytes || heap.size() != k * kTopKHeapSlotBytes) {
    return Refuse(E::kBadData, why,
                  "TopK-TYPE: k " + std::to_string(k) + ", " + std::to_string(width) + " x " +
                      std::to_string(depth) + " in " + std::to_string(data.size()) + " + " +
                      std::to_string(heap.size()) + " bytes");
  }
  std::vector<TopKBucket> buckets(width * depth);  // bounded by data.size()
  for (size_t i = 0; i < buckets.size(); ++i) {
    buckets[i].fp = LoadU32(data, i * kTopKBucketBytes);
    buckets[i].count = LoadU32(data, i * kTopKBucketBytes + 4);
  }
  std::vector<TopKEntry> slots(k);  // bounded by heap.size()
  for (size_t i = 0; i < slots.size(); ++i) {
    std::string_view item;
    if (!store.Read(r, MaxString(limits), &item)) return ReadFailed(*r, kType, why);
    if (item.empty() || item.back() != '\0') {
      return Refuse(E::kBadData, why, "TopK-TYPE: heap item without its NUL");
    }
    TopKEntry& slot = slots[i];
    slot.fp = LoadU32(heap, i * kTopKHeapSlotBytes);
    slot.count = LoadU32(heap, i * kTopKHeapSlotBytes + 16);
    // topk.c keeps "\0" alone as no item (TopKRdbLoad: itemSize 1 -> NULL).
    slot.filled = item.size() > 1;
    if (slot.filled) slot.item.assign(item.substr(0, item.size() - 1));
  }
  if (!r->ModuleEof()) return ReadFailed(*r, kType, why);
  TopKOptions options;
  options.k = static_cast<uint32_t>(k);
  options.width = static_cast<uint32_t>(width);
  options.depth = static_cast<uint32_t>(depth);
  options.decay = decay;
  options.scheme = SketchScheme::kRedisBloom;
  std::unique_ptr<TopK> topk;
  const FilterStatus status = TopK::Create(options, limits, budget, &topk);
  if (status != FilterStatus::kOk) return FromStatus(status, kType, why);
  if (!topk->Load(std::move(buckets), std::move(slots))) {
    return Refuse(E::kBadData, why, "TopK-TYPE: heap slots inconsistent");
  }
  *out = std::move(topk);
  return E::kNone;
}

DumpPayloadError DecodeTDigest(uint32_t encver, rdb::RdbReader* r, const FilterLimits& limits,
                               MemoryBudget* budget, AnyFilter* out, std::string* why) {
  constexpr std::string_view kType = "TDIS-TYPE";
  if (!SketchEncverKnown(kType, encver, why)) return E::kBadData;
  double compression = 0, merged_weight = 0, unmerged_weight = 0;
  uint64_t cap = 0, merged = 0, unmerged = 0, compressions = 0;
  TDigest::State state;
  r->ModuleDouble(&compression);
  r->ModuleDouble(&state.min);
  r->ModuleDouble(&state.max);
  r->ModuleUnsigned(&cap);
  r->ModuleUnsigned(&merged);
  r->ModuleUnsigned(&unmerged);
  r->ModuleUnsigned(&compressions);
  r->ModuleDouble(&merged_weight);
  r->ModuleDouble(&unmerged_weight);
  if (r->failed()) return ReadFailed(*r, kType, why);
  if (!(compression >= 1 && compression <= TDigest::kMaxCompression) ||
      compression != std::floor(compression)) {
    return Refuse(E::kBadData, why, "TDIS-TYPE: compression not a whole number in range");
  }
  const int64_t c = static_cast<int64_t>(compression);
  if (cap != static_cast<uint64_t>(TDigest::CapacityFor(c)) || merged > cap || unmerged != 0 ||
      unmerged_weight != 0 || compressions > INT64_MAX) {
    return Refuse(E::kBadData, why,
                  "TDIS-TYPE: cap " + std::to_string(cap) + ", " + std::to_string(merged) +
                      " merged and " + std::to_string(unmerged) +
                      " unmerged nodes (RedisBloom saves a compressed digest)");
  }
  // 18 input bytes a centroid (two opcodes, two doubles): a count the rest
  // of the input cannot hold is refused before the arrays are made.
  if (merged > r->remaining() / 18) {
    return Refuse(E::kBadData, why,
                  "TDIS-TYPE: " + std::to_string(merged) + " nodes in " +
                      std::to_string(r->remaining()) + " bytes");
  }
  std::vector<double> means;
  std::vector<int64_t> weights;
  means.reserve(merged);
  weights.reserve(merged);
  for (uint64_t i = 0; i < merged; ++i) {
    double mean = 0;
    if (!r->ModuleDouble(&mean)) return ReadFailed(*r, kType, why);
    means.push_back(mean);
  }
  for (uint64_t i = 0; i < merged; ++i) {
    double weight = 0;
    if (!r->ModuleDouble(&weight)) return ReadFailed(*r, kType, why);
    if (!(weight >= 1 && weight <= static_cast<double>(INT64_MAX)) ||
        weight != std::floor(weight)) {
      return Refuse(E::kBadData, why, "TDIS-TYPE: a centroid weight that is not a count");
    }
    weights.push_back(static_cast<int64_t>(weight));
  }
  if (!r->ModuleEof()) return ReadFailed(*r, kType, why);
  if (!(merged_weight >= 0 && merged_weight <= static_cast<double>(INT64_MAX)) ||
      merged_weight != std::floor(merged_weight)) {
    return Refuse(E::kBadData, why, "TDIS-TYPE: merged_weight not a count");
  }
  state.merged_nodes = static_cast<uint32_t>(merged);
  state.merged_weight = static_cast<int64_t>(merged_weight);
  state.total_compressions = static_cast<int64_t>(compressions);
  state.means = means;
  state.weights = weights;
  std::unique_ptr<TDigest> digest;
  const FilterStatus status = TDigest::Create(c, limits, budget, &digest);
  if (status != FilterStatus::kOk) return FromStatus(status, kType, why);
  if (!digest->Restore(state)) {
    return Refuse(E::kBadData, why, "TDIS-TYPE: centroids, weights or min/max inconsistent");
  }
  *out = std::move(digest);
  return E::kNone;
}

}  // namespace

std::span<const std::string_view> RedisBloomModuleTypes() { return kTypes; }

bool IsRedisBloomModuleType(std::string_view name) {
  for (const std::string_view type : kTypes) {
    if (type == name) return true;
  }
  return false;
}

DumpPayloadError DecodeRedisBloomValue(std::string_view type, uint32_t encver,
                                       rdb::RdbReader* reader, const FilterLimits& limits,
                                       MemoryBudget* budget, AnyFilter* out, std::string* why) {
  if (type == kTypes[0]) return DecodeBloom(encver, reader, limits, budget, out, why);
  if (type == kTypes[1]) return DecodeCuckoo(encver, reader, limits, budget, out, why);
  if (type == kTypes[2]) return DecodeCountMin(encver, reader, limits, budget, out, why);
  if (type == kTypes[3]) return DecodeTopK(encver, reader, limits, budget, out, why);
  if (type == kTypes[4]) return DecodeTDigest(encver, reader, limits, budget, out, why);
  return Refuse(E::kBadData, why, "module type " + std::string(type) + " is not RedisBloom's");
}

}  // namespace bloomgate
