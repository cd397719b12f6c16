// What every family's header codec shares: the 12-byte common prefix, a
// field reader whose errors name the field that ran out, the layer checks of
// the two blocked families, and the texts of range errors. Each family's
// own fields are drawn in its codec file (bloom_codec.cc, ...).
//
// COMMON PREFIX, layout version 2, all families (12 bytes). Every integer
// little-endian, written field by field with ByteWriter (never a packed
// struct); f64 = the IEEE-754 bit pattern as a u64. Sizes in bytes.
//
//   +0  u16 layout_version   2 (written); 1 is still read
//   +2  u8  hash_algorithm   1 = XXH3-128 of the item bytes (filters/key_hash.h)
//                            2 = MurmurHash64A, seed 0: a filter imported from
//                                RedisBloom, with block_layout 5 and hash_seed 0
//                                (Bloom: filters/redisbloom_layout.h; cuckoo:
//                                filters/murmur_hash64a.h)
//                            3 = MurmurHash2 (32-bit), seeded per row: a count-min
//                                sketch or top-k of SketchScheme::kRedisBloom,
//                                with block_layout 5 and hash_seed 0
//                                (filters/murmur_hash2.h, sketch_scheme.h)
//   +3  u64 hash_seed        the filter's own seed: items are hashed with
//                            XXH3_128bits_withSeed(item, hash_seed). Any
//                            value in version 2 (a new filter draws a random
//                            non-zero one; 0 is a filter first saved in
//                            version 1). Version 1 had no per-filter seeds:
//                            its headers must say 0, plain XXH3_128bits.
//   +11 u8  block_layout     1 = 512-bit blocked: block = fastrange64(hash.hi,
//                                blocks), probe i = top bits of hash.lo * M^i,
//                                M = 0x9e3779b97f4a7c15 (blocked_bloom.h,
//                                blocked_counting_bloom.h); Bloom and counting
//                            2 = cuckoo: fp = hash.lo % 255 + 1, i1 = hash.hi,
//                                i2 = CuckooFilter::AltIndex(i1, fp),
//                                bucket = i & (buckets - 1); cuckoo only
//                            3 = count-min: row r's cell = fastrange64(hash.lo
//                                + r * hash.hi, width) (count_min_sketch.h)
//                            4 = HeavyKeeper: buckets as count-min, fp = the
//                                low 32 bits of hash.hi (top_k.h)
//                            5 = RedisBloom's layout of the family, only with
//                                hash_algorithm 2. Bloom: classic k-probe bit
//                                array, probe i = (a + i b) mod bits over the
//                                whole layer, bits a multiple of 64 (a filter
//                                imported from RedisBloom's BF.SCANDUMP).
//                                Cuckoo: h = MurmurHash64A(item, 0), fp = h %
//                                255 + 1, i1 = h, i2 = i1 ^ (fp x 0x5bd1e995),
//                                bucket = i % buckets, victims round-robin
//                                (CuckooScheme::kRedisBloom).
//                                Count-min (hash 3): row r's cell =
//                                MurmurHash2(item, r) % width. Top-k (hash 3):
//                                buckets as count-min, fp = MurmurHash2(item,
//                                1919), decay drawn from glibc's rand() whose
//                                state the top-k header holds
//                                (SketchScheme::kRedisBloom)
//                            +128 (kBloomTighteningFlag) on Bloom's 1 or 6: a
//                                filter whose tightening ratio is not 0.5
//                                (valkey-bloom's TIGHTENING); an f64 with it
//                                ends the header (bloom_codec.cc)
//                            6 = Bloom only, with hash_algorithm 1: our classic
//                                k-probe bit array, probe i = fastrange64(lo +
//                                i hi, bits) over the whole layer, bits a
//                                multiple of 128 (a filter created at an error
//                                rate where one block per item stops paying:
//                                filters/bloom_math.h ClassicBloomPays)
// Hash 2 / layout 5, hash 3 / layout 5, and layout 6, came without a layout_version
// bump: no byte or field meaning of an existing filter changed, and a build that
// predates them refuses such a header by name (hash_algorithm 2 or 3 not
// supported). A top-k of hash 3 has its own fields after the prefix
// (top_k_codec.cc): they exist only under the new hash, which old builds refuse.
//
// Nothing follows a family's last field: a header with trailing bytes is
// refused. Versioning: any change to these bytes, or to what a field means,
// takes a new layout_version; decoders refuse versions they do not know.
// Version 1 -> 2 (per-filter seeds): only what hash_seed may hold changed,
// so a version 1 header decodes as version 2 with seed 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "filters/admission.h"
#include "filters/filter_status.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "filters/sketch_scheme.h"
#include "persistence/byte_io.h"
#include "persistence/status.h"

namespace bloomgate::codec {

inline constexpr uint16_t kLayoutVersion = 2;
inline constexpr uint16_t kLegacyLayoutVersion = 1;  // seed always 0
inline constexpr uint8_t kHashXxh3_128 = 1;
inline constexpr uint8_t kHashMurmur64A = 2;  // RedisBloom's cuckoo hash, seed 0
inline constexpr uint8_t kHashMurmur2 = 3;    // RedisBloom's sketch hash, seed = row
inline constexpr uint64_t kLegacyHashSeed = 0;
inline constexpr uint8_t kBlockedBloomLayout = 1;
inline constexpr uint8_t kCuckooLayout = 2;
inline constexpr uint8_t kCountMinLayout = 3;
inline constexpr uint8_t kHeavyKeeperLayout = 4;
// The family's RedisBloom layout (Bloom and cuckoo), with kHashMurmur64A.
inline constexpr uint8_t kRedisBloomLayout = 5;
// Our classic Bloom layout (kHashXxh3_128, the filter's seed).
inline constexpr uint8_t kClassicBloomLayout = 6;
// Set on a scalable Bloom header's block_layout (1 or 6 -> 129 or 134): the
// filter's tightening ratio is not RedisBloom's 0.5 and ends the header.
inline constexpr uint8_t kBloomTighteningFlag = 0x80;
inline constexpr size_t kCommonBytes = 12;

// ---- Message pieces ---------------------------------------------------------

std::string Num(uint64_t v);
std::string Num(int64_t v);
std::string Num(double v);  // %.17g: round-trips every double
// "layer 3 probes 0 not in [1, 64]"
Status NotIn(const std::string& field, const std::string& value, const std::string& range);
std::string Range(uint64_t lo, uint64_t hi);  // "[lo, hi]"

bool IsErrorRate(double rate);  // (0, kMaxBloomErrorRate]; NaN: false
std::string ErrorRateRange();

// ---- Field reader -----------------------------------------------------------

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
  Status Truncated() const;
  // Ok iff every byte was read.
  Status CheckEnd() const;

 private:
  void Note(const char* field, bool ok);

  ByteReader reader_;
  const size_t size_;
  const char* group_ = nullptr;
  uint64_t group_index_ = 0;
  std::string missing_;
  size_t missing_at_ = 0;
};

// ---- The common prefix ------------------------------------------------------

void PutCommon(ByteWriter* w, uint8_t layout, uint64_t hash_seed,
               uint8_t hash_algorithm = kHashXxh3_128);
// GetCommon for the Bloom-like families, which have three layouts: blocked
// or classic (XXH3, seeded) or RedisBloom (its Murmur hash, seed 0).
// *layout says which. With `has_tightening` (scalable Bloom only), an XXH3
// layout may carry kBloomTighteningFlag and *has_tightening says whether it
// did (bloom_codec.cc: a tightening field ends the header); without it the
// flag is refused as an unknown layout.
Status GetBloomCommon(FieldReader* r, uint8_t* layout, uint64_t* hash_seed,
                      bool* has_tightening = nullptr);
// Reads and checks the prefix; the version first, since a later version may
// lay out everything after it differently. *hash_seed is the filter's seed.
Status GetCommon(FieldReader* r, uint8_t expected_layout, uint64_t* hash_seed);
// The same for a family that may also hold RedisBloom-hashed filters
// (cuckoo): hash_algorithm 2 is accepted with block_layout
// `redisbloom_layout` and seed 0, and *redisbloom says it was.
Status GetCommonOrRedisBloom(FieldReader* r, uint8_t expected_layout, uint8_t redisbloom_layout,
                             uint64_t* hash_seed, bool* redisbloom);
// The same for a family that hashes unseeded (count-min sketch, top-k:
// CMS.MERGE needs every sketch to hash alike): a non-zero seed is refused.
Status GetCommonUnseeded(FieldReader* r, uint8_t expected_layout);
// The same for the two sketch families: hash 1 with `native_layout` and seed
// 0 (SketchScheme::kNative), or hash 3 with block_layout 5 and seed 0
// (SketchScheme::kRedisBloom); *scheme says which.
Status GetSketchCommon(FieldReader* r, uint8_t native_layout, SketchScheme* scheme);

// ---- Checks shared by the blocked families (Bloom, counting Bloom) ---------

Status CheckExpansionAndLayers(uint32_t expansion, uint32_t num_layers);
// Validates one layer's common fields; `cells` is bits for Bloom.
Status CheckLayer(uint32_t index, uint64_t capacity, double error_rate, uint64_t cells,
                  uint32_t block_cells, uint32_t expected_block_cells, uint32_t probes,
                  const char* cells_name, const char* block_name);

// ---- Payload size -----------------------------------------------------------

Status CheckPayloadBytes(uint64_t needed, uint64_t payload_bytes, const char* what);
// Sums array sizes, refusing a sum past 2^64 (64 layers of 2^61 bytes can).
bool AddBytes(uint64_t* total, uint64_t bytes);
Status PayloadOverflow(const char* what);

// The message for a Restore that failed after the header was valid.
Status RestoreFailed(FilterStatus status, uint64_t payload_bytes, const FilterLimits& limits,
                     const MemoryBudget* budget);

// Cheap first refusal, before any decoding: the arrays alone would break the
// per-filter cap (the exact total is checked again by each family's Restore),
// unless the thread replays what was acknowledged (filters/admission.h).
inline bool OverCap(uint64_t payload_bytes, const FilterLimits& limits) {
  return limits.max_filter_bytes != 0 && payload_bytes > limits.max_filter_bytes && LimitsJudge();
}

}  // namespace bloomgate::codec
