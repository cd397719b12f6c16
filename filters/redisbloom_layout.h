// RedisBloom's Bloom layer ("link") layout, so a filter imported from
// RedisBloom's BF.SCANDUMP answers exactly as RedisBloom did: the same bits,
// the same hash, the same sizing of layers grown later. Facts taken from
// RedisBloom v2.4's public source (bloom.c, sb.c) and checked against the
// dumps in ../shared/redisbloom-dumps (every BF.EXISTS answer, added items
// and 5,000 probes each, comes out identical):
//
//  - hash: a = MurmurHash64A(item, seed 0xc6a4a7935bd1e995),
//          b = MurmurHash64A(item, seed a)      (the "FORCE64" 64-bit hash)
//  - probe i of k: bit (a + i * b) mod bits, arithmetic mod 2^64, where
//    bits = bytes x 8 (filters made with NOROUND: not a power of two, so
//    RedisBloom takes a real modulo, and so must we);
//  - bit x lives in byte x / 8 at bit x % 8 (least significant first), which
//    on a little-endian machine is bit x % 64 of 64-bit word x / 64: the word
//    layout BlockedBloom's snapshots already use, so the payload is the same
//    bytes RedisBloom dumps;
//  - sizing (bloom_init with NOROUND): bpe = -ln(error) / 0.480453013918201
//    (ln 2 squared, as RedisBloom writes it), bits = (uint64)(entries x bpe)
//    rounded up to a multiple of 64, hashes = ceil(0.693147180559945 x bpe).
//    E.g. BF.RESERVE k 0.01 1000 -> layer error 0.005, bpe 11.0277534,
//    11,027 bits -> 1,384 bytes, 8 hashes (bf-reserved.json).
//
// Seedless: RedisBloom hashes every filter with the same fixed seeds, so
// anyone can compute which items collide in an imported filter and flood it
// with false positives or fill its layers (our per-filter random seeds,
// hash_seed.h, protect only our blocked filters). Such a filter keeps RedisBloom's
// hash for as long as it lives, because its bits were set by that hash; the
// README says so ("Coming from RedisBloom").
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "filters/bloom_math.h"
#include "filters/key_hash.h"

namespace bloomgate {

// The hash itself is filters/murmur_hash64a.h, shared with the cuckoo import.

// RedisBloom's item hash as a KeyHash: lo = a, hi = b (see above).
KeyHash RedisBloomHash(std::string_view item);

// A layer's cells per "block" in the LayerChain sense: one 64-bit word
// (RedisBloom rounds every layer to whole words). The chain tells the two
// Bloom layer kinds apart by it (kBloomBlockBits = 512 is ours).
inline constexpr uint32_t kRedisBloomWordBits = 64;

// Our own classic layers (a filter created here at an error rate where the
// blocked layout stops paying, bloom_math.h's ClassicBloomPays) are rounded
// to whole 128-bit granules: a granule distinct from RedisBloom's 64 (and our
// blocked 512) is how the chain and the snapshot header tell the three Bloom
// layer kinds apart. It costs nothing against RedisBloom: we round its bit
// count *down* to the granule (at most 127 bits fewer a layer).
inline constexpr uint32_t kClassicBloomGranuleBits = 128;

// RedisBloom's bits per entry for a layer error rate (calc_bpe).
double RedisBloomBitsPerEntry(double error_rate);
// RedisBloom's hash count for that bpe: ceil(ln 2 x bpe); 0 when that is not
// a uint32_t (a bpe out of range or NaN, as a damaged dump may carry).
uint32_t RedisBloomHashes(double bits_per_entry);

// The shape RedisBloom's bloom_init gives a layer of `capacity` entries at
// `error_rate` (NOROUND): cells = bits (a multiple of 64), probes = hashes,
// block_cells = kRedisBloomWordBits. Saturated (cells ==
// MaxBlockedCells(64)) when the layer could never exist.
BlockedShape ChooseRedisBloomShape(double error_rate, uint64_t capacity);

// The shape of one of OUR classic layers (ClassicProbing::kFastRange, our
// seeded hash) for `capacity` items at `error_rate`: RedisBloom's bit count
// for the same layer (ChooseRedisBloomShape: bits/entry ln(1/p) / ln(2)^2,
// the real-valued optimum) rounded down to whole granules (never below one),
// and the better of the two whole hash counts around ln 2 x bits/entry
// (RedisBloom always takes the upper one). So the bit array is never larger
// than RedisBloom's, and the predicted FP (StandardBloomFpRate) is never
// worse than RedisBloom's layer at the same bits: both sit 0-2% above the
// layer rate, because no whole k reaches the real-valued optimum (e.g. p =
// 0.05: k = 5, FP 1.7% over; p = 5e-4: k = 11, 0.0%). The filter stays under
// its requested rate because layer 0 gets half of it (layer_chain.h), which
// the bench row accuracy/layout measures with >= 1M probes per rate.
// block_cells = kClassicBloomGranuleBits; saturated like the others. Where
// RedisBloom's hash count would exceed kMaxBloomProbes (layer rates under
// ~5e-20), ChooseClassicShape's 64-probe sizing instead.
BlockedShape ChooseClassicBloomShape(double error_rate, uint64_t capacity);

// BF.INFO's "Size" as RedisBloom computes it: its chain struct (32 bytes),
// one 64-byte link struct per layer, and the layers' bit arrays. E.g.
// bf-autocreated.json: 32 + 4 x 64 + 2,688 = 2,976.
uint64_t RedisBloomInfoSize(uint32_t layers, uint64_t bit_array_bytes);

// Where probe i of a classic layer falls, for x_i = lo + i * hi (mod 2^64).
enum class ClassicProbing : uint8_t {
  // RedisBloom's: x_i mod bits (a division per probe; RedisBloom's bit
  // positions are defined by it, so an imported filter must keep it).
  kModulo,
  // Ours (a filter created here at a low error rate, bloom_math.h's
  // ClassicBloomPays): fastrange64(x_i, bits), the high half of x_i * bits,
  // one multiplication instead of a 64-bit division (k is 11-31 at the rates
  // that pick this kind, so that is 11-31 divisions saved per lookup).
  kFastRange,
};

// One classic layer: a Bloom bit array, k probes spread over the whole array
// (no blocks), addressed as above -- RedisBloom's (kModulo, for imported
// filters) or ours (kFastRange). Thread safety as BlockedBloom: Add and
// MayContain run concurrently with no lock; bits are only ever set.
class ClassicBloom {
 public:
  // A zeroed array of `bits` bits (a multiple of 64, > 0) and `probes`
  // hashes in [1, kMaxBloomProbes], or nullptr if that is invalid or the
  // allocation fails. Never throws.
  static std::unique_ptr<ClassicBloom> Create(uint64_t bits, uint32_t probes,
                                              ClassicProbing probing = ClassicProbing::kModulo);
  // Whole 64-byte lines for `bits` (a multiple of 64): what Create allocates,
  // so a health scan may read blocks of 8 words.
  static uint64_t BytesFor(uint64_t bits) { return (bits / 64 + 7) / 8 * 64; }
  // Over `words` (BytesFor(num_words x 64) bytes, zeroed), which it frees
  // when destroyed iff `owns_words` (as BlockedBloom's). Checks nothing.
  ClassicBloom(std::atomic<uint64_t>* words, uint64_t num_words, uint32_t probes,
               ClassicProbing probing, bool owns_words);
  ~ClassicBloom();
  ClassicBloom(const ClassicBloom&) = delete;
  ClassicBloom& operator=(const ClassicBloom&) = delete;

  // True iff this call flipped a bit from 0 to 1. Lock-free.
  bool Add(const KeyHash& h);
  // False: certainly never added. Wait-free.
  bool MayContain(const KeyHash& h) const;

  uint64_t bits() const { return num_words_ * 64; }
  uint64_t bytes() const { return num_words_ * 8; }
  uint32_t probes() const { return probes_; }
  ClassicProbing probing() const { return probing_; }
  const std::atomic<uint64_t>* words() const { return words_; }
  uint64_t num_words() const { return num_words_; }
  // For a loader filling the layer before it is published (see BlockedBloom).
  std::atomic<uint64_t>* mutable_words() { return words_; }

 private:
  // Bit position of x_i. The branch goes the same way for every call on one
  // layer, so it predicts perfectly.
  uint64_t Position(uint64_t x, uint64_t bits) const {
    if (probing_ == ClassicProbing::kModulo) return x % bits;
    return static_cast<uint64_t>((static_cast<unsigned __int128>(x) * bits) >> 64);
  }

  std::atomic<uint64_t>* const words_;  // rounded up to whole 64-byte lines
  const uint64_t num_words_;
  const uint32_t probes_;
  const ClassicProbing probing_;
  const bool owns_words_;  // in the padding: 24 bytes either way
};

// Relaxed everywhere, for the reasons given at BlockedBloom::Add: nothing
// is published through these bits and RMWs on one word are never lost.
inline bool ClassicBloom::Add(const KeyHash& h) {
  const uint64_t bits = num_words_ * 64;
  bool flipped = false;
  for (uint32_t i = 0; i < probes_; ++i) {
    // Double hashing (see ClassicProbing for where x_i falls).
    const uint64_t x = Position(h.lo + uint64_t{i} * h.hi, bits);
    const uint64_t mask = uint64_t{1} << (x & 63);
    std::atomic<uint64_t>& word = words_[x >> 6];
    if ((word.load(std::memory_order_relaxed) & mask) != 0) continue;
    flipped |= (word.fetch_or(mask, std::memory_order_relaxed) & mask) == 0;
  }
  return flipped;
}

inline bool ClassicBloom::MayContain(const KeyHash& h) const {
  const uint64_t bits = num_words_ * 64;
  for (uint32_t i = 0; i < probes_; ++i) {
    const uint64_t x = Position(h.lo + uint64_t{i} * h.hi, bits);
    if ((words_[x >> 6].load(std::memory_order_relaxed) & (uint64_t{1} << (x & 63))) == 0) {
      return false;
    }
  }
  return true;
}

}  // namespace bloomgate
