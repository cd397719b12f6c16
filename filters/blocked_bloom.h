#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "filters/bloom_math.h"
#include "filters/key_hash.h"

namespace bloomgate {

// One Bloom filter layer in the blocked ("cache-local") layout: the bit array
// is split into 512-bit blocks, one 64-byte cache line each, and all probes of
// an item fall into one block. A lookup touches one cache line instead of k,
// at the price of a few more bits/key for the same FP rate (bloom_math.h).
//
//   words_  +-- block 0 (64 B, 64-B aligned) --+-- block 1 --+-- ... --+
//           | w0 w1 w2 w3 w4 w5 w6 w7          |             |         |
//           +----------------------------------+-------------+---------+
//   block = fastrange64(hash.hi, num_blocks)          (Lemire; never %)
//   probe i = top 9 bits of hash.lo * M^i, M = 0x9e3779b97f4a7c15 (odd:
//             2^64 / golden ratio) -> word = bit >> 6, bit-in-word = bit & 63
//
// The probe sequence is RocksDB's FastLocalBloom with 64-bit arithmetic:
// multiplying by an odd constant is a bijection on 64-bit values and its top
// bits depend on every input bit, so each multiplication yields a fresh 9-bit
// position. We measure 0.972% FP at 10 bits/key and 6 probes (RocksDB's
// 32-bit version: 0.957%; the model in bloom_math.h: 0.989%).
//
// Thread safety: Add and MayContain may run concurrently from any number of
// threads with no lock. Bits are only ever set, never cleared.
class BlockedBloom {
 public:
  static constexpr uint64_t kBlockBits = kBloomBlockBits;
  static constexpr uint64_t kBlockBytes = kBlockBits / 8;      // 64: one cache line
  static constexpr uint64_t kWordsPerBlock = kBlockBits / 64;  // 8
  static constexpr uint64_t kProbeMultiplier = 0x9e3779b97f4a7c15ull;

  // Bytes of the bit array for `shape` (whole blocks; never overflows: a shape
  // has at most kMaxBloomBits bits, i.e. < 2^61 bytes).
  static uint64_t BytesFor(const BloomShape& shape);

  // A zeroed filter for `shape`, or nullptr if the shape is invalid (no bits,
  // or probes outside [1, kMaxBloomProbes]) or the allocation fails. Never
  // throws. The array is written once here (zeroed), so the resident memory
  // equals BytesFor(shape) from the start: what the budget counts is what the
  // process really holds, and an over-committed allocation fails now rather
  // than when a later Add touches the page. Zeroing runs at memset speed.
  static std::unique_ptr<BlockedBloom> Create(const BloomShape& shape);

  // Over `words` (num_blocks x 64 bytes, 64-byte aligned, zeroed), which it
  // frees when destroyed iff `owns_words` (then they must come from
  // internal::NewZeroedBlockWords). Non-owning: a layer whose bits share one
  // allocation with its filter (BloomLayer::CreateAt). Create checks the
  // shape; this checks nothing.
  BlockedBloom(std::atomic<uint64_t>* words, uint64_t num_blocks, uint32_t probes,
               bool owns_words);
  ~BlockedBloom();
  BlockedBloom(const BlockedBloom&) = delete;
  BlockedBloom& operator=(const BlockedBloom&) = delete;

  // Sets the item's bits. True iff this call flipped at least one bit from 0
  // to 1 (seen in fetch_or's return value), i.e. the item was not already
  // (probably) present. Two threads adding the same new item at once can both
  // see true: each flipped a different bit. Lock-free.
  bool Add(const KeyHash& h);

  // False: the item was certainly never added (no false negatives: once an
  // Add returns, every later MayContain that happens after it sees its bits).
  // True: probably added. Wait-free.
  bool MayContain(const KeyHash& h) const;

  // Prefetches the item's block, so a caller can hash and prefetch a batch
  // before probing it (the "prepare" half of RocksDB's prepare/probe split).
  void Prefetch(const KeyHash& h) const;

  uint64_t bits() const { return num_blocks_ * kBlockBits; }
  uint32_t probes() const { return probes_; }
  uint64_t bytes() const { return num_blocks_ * kBlockBytes; }

  uint64_t num_blocks() const { return num_blocks_; }

  // Raw read access for snapshots: num_words() words, block after block,
  // bit j of word i is bit 64*i + j of the filter.
  const std::atomic<uint64_t>* words() const { return words_; }
  uint64_t num_words() const { return num_blocks_ * kWordsPerBlock; }

  // Raw write access, same layout, ONLY for a loader filling a restored
  // filter before it is published to other threads (persistence/
  // filter_codec.cc), and for the inline copy a scalable filter's layer keeps
  // (BloomLayerTraits::Probe), which sets bits only through BlockSet. Once
  // published, bits change only through Add / BlockSet, which is what keeps
  // "bits are never cleared" true for concurrent readers.
  std::atomic<uint64_t>* mutable_words() { return words_; }

  // The probe half on its own, over a layer's {words, num_blocks, probes}
  // held by the caller (ScalableBloomFilter keeps one such triple per layer
  // inline, so a lookup over 16 layers does not chase 16 x 3 pointers to
  // reach them). Add, MayContain and Prefetch are exactly these over the
  // members: the bits set and tested are the same.
  static std::atomic<uint64_t>* BlockIn(std::atomic<uint64_t>* words, uint64_t num_blocks,
                                        uint64_t hi) {
    // Lemire's fastrange: the high half of hi * num_blocks maps hi uniformly
    // to [0, num_blocks) with one multiplication, where % would cost a
    // division.
    const uint64_t block =
        static_cast<uint64_t>((static_cast<unsigned __int128>(hi) * num_blocks) >> 64);
    return words + block * kWordsPerBlock;
  }
  // The probes' bits, gathered into one mask per word of the block.
  struct BlockMasks {
    uint64_t word[kWordsPerBlock];
  };
  static BlockMasks MasksFor(uint64_t lo, uint32_t probes) {
    BlockMasks m = {};
    uint64_t x = lo;
    for (uint32_t i = 0; i < probes; ++i) {
      const uint32_t bit = static_cast<uint32_t>(x >> (64 - 9));
      m.word[bit >> 6] |= uint64_t{1} << (bit & 63);
      x *= kProbeMultiplier;
    }
    return m;
  }
  static bool BlockHas(const std::atomic<uint64_t>* block, const BlockMasks& m);
  // Sets the masks' bits; true iff at least one flipped from 0 to 1.
  static bool BlockSet(std::atomic<uint64_t>* block, const BlockMasks& m);
  static bool BlockMayContain(const std::atomic<uint64_t>* block, uint64_t lo, uint32_t probes);

 private:
  std::atomic<uint64_t>* BlockFor(uint64_t hi) const { return BlockIn(words_, num_blocks_, hi); }

  std::atomic<uint64_t>* const words_;  // 64-byte aligned, num_blocks_ * 8 words
  const uint64_t num_blocks_;
  const uint32_t probes_;
  const bool owns_words_;  // in the padding: 24 bytes either way
};

// Relaxed is enough for every bit access below. Nothing else is published
// through these bits: no thread reads other memory because it saw a bit set,
// and a Bloom filter only promises that bits are never lost. fetch_or is a
// read-modify-write, and RMWs on one word are never lost whatever the memory
// order (they form one modification order), so concurrent adds to the same
// word all survive. When a caller needs "an Add that returned happens-before
// this lookup", it already has that edge (a lock, a reply round-trip, a
// release/acquire in the layer list), and coherence then guarantees the
// lookup sees the bits.
inline bool BlockedBloom::BlockHas(const std::atomic<uint64_t>* block, const BlockMasks& m) {
  for (uint64_t w = 0; w < kWordsPerBlock; ++w) {
    // Relaxed (see above).
    if ((block[w].load(std::memory_order_relaxed) & m.word[w]) != m.word[w]) return false;
  }
  return true;
}

inline bool BlockedBloom::BlockSet(std::atomic<uint64_t>* block, const BlockMasks& m) {
  // At most 8 RMWs instead of k, and none for a word whose bits are all set
  // already.
  bool flipped = false;
  for (uint64_t w = 0; w < kWordsPerBlock; ++w) {
    const uint64_t mask = m.word[w];
    if (mask == 0) continue;
    // Relaxed (see above). A plain load first: re-adding a present item, the
    // common case for hot keys, then writes nothing and the line stays shared.
    if ((block[w].load(std::memory_order_relaxed) & mask) == mask) continue;
    // Relaxed (see above); `old` tells whether this call flipped any bit.
    const uint64_t old = block[w].fetch_or(mask, std::memory_order_relaxed);
    flipped |= (old & mask) != mask;
  }
  return flipped;
}

inline bool BlockedBloom::BlockMayContain(const std::atomic<uint64_t>* block, uint64_t lo,
                                          uint32_t probes) {
  uint64_t x = lo;
  for (uint32_t i = 0; i < probes; ++i) {
    const uint32_t bit = static_cast<uint32_t>(x >> (64 - 9));
    // Relaxed (see above). Stop at the first clear bit: most misses stop after
    // one or two probes.
    if ((block[bit >> 6].load(std::memory_order_relaxed) & (uint64_t{1} << (bit & 63))) == 0) {
      return false;
    }
    x *= kProbeMultiplier;
  }
  return true;
}

inline bool BlockedBloom::Add(const KeyHash& h) {
  return BlockSet(BlockFor(h.hi), MasksFor(h.lo, probes_));
}

inline bool BlockedBloom::MayContain(const KeyHash& h) const {
  return BlockMayContain(BlockFor(h.hi), h.lo, probes_);
}

inline void BlockedBloom::Prefetch(const KeyHash& h) const {
  // One line: blocks are 64 bytes and 64-byte aligned. Read intent, keep in
  // all cache levels (locality 3).
  __builtin_prefetch(BlockFor(h.hi), /*rw=*/0, /*locality=*/3);
}

}  // namespace bloomgate
