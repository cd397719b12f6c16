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
// with false positives or fill its layers (issue 10's per-filter random
// seeds protect only our blocked filters). Such a filter keeps RedisBloom's
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

// RedisBloom's bits per entry for a layer error rate (calc_bpe).
double RedisBloomBitsPerEntry(double error_rate);
// RedisBloom's hash count for that bpe: ceil(ln 2 x bpe).
uint32_t RedisBloomHashes(double bits_per_entry);

// The shape RedisBloom's bloom_init gives a layer of `capacity` entries at
// `error_rate` (NOROUND): cells = bits (a multiple of 64), probes = hashes,
// block_cells = kRedisBloomWordBits. Saturated (cells ==
// MaxBlockedCells(64)) when the layer could never exist.
BlockedShape ChooseRedisBloomShape(double error_rate, uint64_t capacity);

// BF.INFO's "Size" as RedisBloom computes it: its chain struct (32 bytes),
// one 64-byte link struct per layer, and the layers' bit arrays. E.g.
// bf-autocreated.json: 32 + 4 x 64 + 2,688 = 2,976.
uint64_t RedisBloomInfoSize(uint32_t layers, uint64_t bit_array_bytes);

// One RedisBloom-layout layer: a classic Bloom bit array, k probes spread
// over the whole array (no blocks), addressed as above. Thread safety as
// BlockedBloom: Add and MayContain run concurrently with no lock; bits are
// only ever set.
class ClassicBloom {
 public:
  // A zeroed array of `bits` bits (a multiple of 64, > 0) and `probes`
  // hashes in [1, kMaxBloomProbes], or nullptr if that is invalid or the
  // allocation fails. Never throws.
  static std::unique_ptr<ClassicBloom> Create(uint64_t bits, uint32_t probes);
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
  const std::atomic<uint64_t>* words() const { return words_; }
  uint64_t num_words() const { return num_words_; }
  // For a loader filling the layer before it is published (see BlockedBloom).
  std::atomic<uint64_t>* mutable_words() { return words_; }

 private:
  ClassicBloom(std::atomic<uint64_t>* words, uint64_t num_words, uint32_t probes);

  std::atomic<uint64_t>* const words_;  // rounded up to whole 64-byte lines
  const uint64_t num_words_;
  const uint32_t probes_;
};

// Relaxed everywhere, for the reasons given at BlockedBloom::Add: nothing
// is published through these bits and RMWs on one word are never lost.
inline bool ClassicBloom::Add(const KeyHash& h) {
  const uint64_t bits = num_words_ * 64;
  bool flipped = false;
  for (uint32_t i = 0; i < probes_; ++i) {
    // RedisBloom's double hashing; % is a division, but RedisBloom's bit
    // positions are defined by it (bits is rarely a power of two).
    const uint64_t x = (h.lo + uint64_t{i} * h.hi) % bits;
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
    const uint64_t x = (h.lo + uint64_t{i} * h.hi) % bits;
    if ((words_[x >> 6].load(std::memory_order_relaxed) & (uint64_t{1} << (x & 63))) == 0) {
      return false;
    }
  }
  return true;
}

}  // namespace bloomgate
