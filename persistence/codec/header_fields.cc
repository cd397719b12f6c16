// The header-field helpers every codec shares (see header_fields.h).
#include "persistence/codec/header_fields.h"

#include <cstdio>
#include <string>

#include "filters/bloom_math.h"

namespace bloomgate::codec {

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

// ---- Field reader -----------------------------------------------------------

Status FieldReader::Truncated() const {
  return Status::Error("header ends inside " + missing_ + " at byte " + Num(uint64_t{missing_at_}) +
                       " (header is " + Num(uint64_t{size_}) + " bytes)");
}

Status FieldReader::CheckEnd() const {
  if (failed()) return Truncated();
  if (remaining() != 0) {
    return Status::Error("header has " + Num(uint64_t{remaining()}) +
                         " bytes after its last field (header is " + Num(uint64_t{size_}) +
                         " bytes)");
  }
  return Status::Ok();
}

void FieldReader::Note(const char* field, bool ok) {
  if (ok || !missing_.empty()) return;
  missing_ = group_ == nullptr ? std::string(field)
                               : std::string(group_) + " " + Num(group_index_) + " " + field;
  missing_at_ = reader_.position();
}

// ---- The common prefix ------------------------------------------------------

void PutCommon(ByteWriter* w, uint8_t layout, uint64_t hash_seed, uint8_t hash_algorithm) {
  w->PutU16(kLayoutVersion);
  w->PutU8(hash_algorithm);
  w->PutU64(hash_seed);
  w->PutU8(layout);
}

namespace {

// GetCommon's work; redisbloom_layout 0 = the family has no RedisBloom form.
// `classic_layout` 0 = the family has no second XXH3 layout; otherwise
// *layout says which of the two the header names.
// `redisbloom_hash` is the hash_algorithm that goes with redisbloom_layout
// (2 for Bloom and cuckoo, 3 for the sketches).
std::string HashName(uint8_t hash) {
  return hash == kHashMurmur2 ? "3 = MurmurHash2 (RedisBloom's, seeded per row)"
                              : "2 = MurmurHash64A (RedisBloom's, seed 0)";
}

// `flag` (0 = none): a bit the family may set on its XXH3 layouts; *flagged
// says whether it was, and the layout is checked without it.
Status ReadCommon(FieldReader* r, uint8_t expected_layout, uint8_t redisbloom_layout,
                  uint64_t* hash_seed, bool* redisbloom, uint8_t classic_layout = 0,
                  uint8_t* layout_out = nullptr, uint8_t redisbloom_hash = kHashMurmur64A,
                  uint8_t flag = 0, bool* flagged = nullptr) {
  *redisbloom = false;
  uint16_t version = 0;
  uint8_t hash = 0;
  uint64_t seed = 0;
  uint8_t layout = 0;
  // The version first: a later version may lay out everything after it
  // differently, so nothing else is looked at before it is known.
  r->U16("layout_version", &version);
  if (r->failed()) return r->Truncated();
  if (version != kLayoutVersion && version != kLegacyLayoutVersion) {
    return Status::Error("layout_version " + Num(uint64_t{version}) + " not supported (expected " +
                         Num(uint64_t{kLegacyLayoutVersion}) + " or " +
                         Num(uint64_t{kLayoutVersion}) + ")");
  }
  r->U8("hash_algorithm", &hash);
  r->U64("hash_seed", &seed);
  r->U8("block_layout", &layout);
  if (r->failed()) return r->Truncated();
  if (redisbloom_layout != 0 && version == kLayoutVersion && hash == redisbloom_hash) {
    // A filter hashed as RedisBloom hashes: its hash is unseeded and its
    // layout is the family's RedisBloom one.
    if (seed != 0) {
      return Status::Error("hash_seed " + Num(seed) + " with hash_algorithm " +
                           HashName(redisbloom_hash));
    }
    if (layout != redisbloom_layout) {
      return Status::Error("block_layout " + Num(uint64_t{layout}) + " with hash_algorithm " +
                           Num(uint64_t{redisbloom_hash}) + " (expected " +
                           Num(uint64_t{redisbloom_layout}) + ")");
    }
    *hash_seed = 0;
    *redisbloom = true;
    return Status::Ok();
  }
  if (hash != kHashXxh3_128) {
    return Status::Error("hash_algorithm " + Num(uint64_t{hash}) +
                         " not supported (expected 1 = XXH3-128" +
                         (redisbloom_layout != 0 ? " or " + HashName(redisbloom_hash) : "") +
                         ")");
  }
  if (version == kLegacyLayoutVersion && seed != kLegacyHashSeed) {
    return Status::Error("hash_seed " + Num(seed) +
                         " in a layout_version 1 header (version 1 filters have seed 0)");
  }
  if (flag != 0 && version == kLayoutVersion && (layout & flag) != 0) {
    *flagged = true;
    layout &= static_cast<uint8_t>(~flag);
  }
  if (layout != expected_layout && (classic_layout == 0 || layout != classic_layout)) {
    return Status::Error("block_layout " + Num(uint64_t{layout}) +
                         " not supported for this family (expected " +
                         Num(uint64_t{expected_layout}) +
                         (classic_layout != 0 ? " or " + Num(uint64_t{classic_layout})
                                              : std::string()) +
                         (redisbloom_layout != 0
                              ? ", or " + Num(uint64_t{redisbloom_layout}) +
                                    " with hash_algorithm " + Num(uint64_t{redisbloom_hash})
                              : std::string()) +
                         ")");
  }
  *hash_seed = seed;
  if (layout_out != nullptr) *layout_out = layout;
  return Status::Ok();
}

}  // namespace

Status GetCommon(FieldReader* r, uint8_t expected_layout, uint64_t* hash_seed) {
  bool redisbloom = false;
  return ReadCommon(r, expected_layout, /*redisbloom_layout=*/0, hash_seed, &redisbloom);
}

Status GetCommonOrRedisBloom(FieldReader* r, uint8_t expected_layout, uint8_t redisbloom_layout,
                             uint64_t* hash_seed, bool* redisbloom) {
  return ReadCommon(r, expected_layout, redisbloom_layout, hash_seed, redisbloom);
}

Status GetBloomCommon(FieldReader* r, uint8_t* layout, uint64_t* hash_seed,
                      bool* has_tightening) {
  bool redisbloom = false;
  uint8_t xxh3_layout = kBlockedBloomLayout;
  if (has_tightening != nullptr) *has_tightening = false;
  Status status = ReadCommon(r, kBlockedBloomLayout, kRedisBloomLayout, hash_seed, &redisbloom,
                             kClassicBloomLayout, &xxh3_layout, kHashMurmur64A,
                             has_tightening != nullptr ? kBloomTighteningFlag : 0,
                             has_tightening);
  *layout = redisbloom ? kRedisBloomLayout : xxh3_layout;
  return status;
}

Status GetCommonUnseeded(FieldReader* r, uint8_t expected_layout) {
  uint64_t seed = 0;
  if (Status s = GetCommon(r, expected_layout, &seed); !s.ok()) return s;
  if (seed != 0) {
    return Status::Error("hash_seed " + Num(seed) + " for a family that hashes unseeded");
  }
  return Status::Ok();
}

Status GetSketchCommon(FieldReader* r, uint8_t native_layout, SketchScheme* scheme) {
  uint64_t seed = 0;
  bool redisbloom = false;
  if (Status s = ReadCommon(r, native_layout, kRedisBloomLayout, &seed, &redisbloom,
                            /*classic_layout=*/0, /*layout_out=*/nullptr, kHashMurmur2);
      !s.ok()) {
    return s;
  }
  if (seed != 0) {
    return Status::Error("hash_seed " + Num(seed) + " for a family that hashes unseeded");
  }
  *scheme = redisbloom ? SketchScheme::kRedisBloom : SketchScheme::kNative;
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

}  // namespace bloomgate::codec
