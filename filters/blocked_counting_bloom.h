#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "filters/bloom_math.h"
#include "filters/counter_lanes.h"
#include "filters/key_hash.h"

namespace bloomgate {

// How a batch's counter updates reach the words (CountingBloomFilter::
// AddBatch). kShared: one compare-and-swap loop per word, as Increment, safe
// beside any other call from any thread. kExclusive: a relaxed load and a
// relaxed store per word, for a caller that no other writer of the filter can
// run beside (CBF.* commands hold their key exclusively, FamilyWrites::
// kExclusive): a racing Add or Remove could lose its update, a racing reader
// sees each word before or after, as with kShared. Why it exists: CBF.MADD
// increments ~6 words per item (7 probes, 4-bit counters), and each `lock
// cmpxchg` costs some 20 cycles of a core whatever the line's state.
enum class CounterWrites { kShared, kExclusive };

// One counting Bloom filter layer in the blocked layout of BlockedBloom: the
// counters are packed into 64-bit words, eight words (one 64-byte cache line)
// per block, and all counters of an item fall into one block.
//
//   4-bit counters: 128 cells per block, 16 lanes per word
//     bits of word w:  63..60     ...  11..8       7..4        3..0
//     cell:            16w+15     ...  16w+2       16w+1       16w
//   8-bit counters: 64 cells per block, 8 lanes per word
//     bits of word w:  63..56     ...  15..8       7..0
//     cell:            8w+7       ...  8w+1        8w
//
//   block = fastrange64(hash.hi, num_blocks)                  (as BlockedBloom)
//   probe i = top log2(block_cells) bits (7 or 6) of hash.lo * M^i,
//             M = 0x9e3779b97f4a7c15; cell c of the block is lane c % (64/bits)
//             of word c / (64/bits).
//
// A cell is "set" when its counter is non-zero, so MayContain answers exactly
// as a BlockedBloom with block_bits = block_cells would, and ChooseBlockedShape
// sizes it with the same model. An item's probes may repeat a cell; Increment
// and Decrement touch each distinct cell of the item once.
//
// CLASSIC MODE. A layer created with shape.block_cells ==
// ClassicCellsFor(counter_bits) (16 or 8: one 64-bit word, the granule its
// cells come in) is a classic counting Bloom array instead: the same words
// and lanes, but probe i of k is cell fastrange64(lo + i x (hi | 1), cells)
// of the whole array, so an item touches up to k lines and the textbook
// sizing applies (bloom_math.h's ChooseClassicShape). Why it exists: 128- or
// 64-cell blocks need ever more cells per key as the rate falls (the Poisson
// tail of crowded blocks): 82 cells/key at 1.2e-6, 2.4 million at 1.7e-20
// (bloom_math.h), which a scaling filter's deep layers reach; a classic array
// needs 28 and 96 there. The words are laid out as in the blocked mode (cell
// c is lane c % (64/bits) of word c / (64/bits)), so saturation counting,
// snapshots and merges read them the same way; the array is allocated in whole
// 64-byte lines (zero padding past num_words()).
//
// Saturation: a counter that reaches max_count() (15 or 255) is never
// incremented past it and never decremented again. An overflow therefore costs
// accuracy (the cell stays set after its items are gone, and MinCounter can
// under-report a count above the maximum) but can never cause a false
// negative. saturated_counters() counts cells that have become saturated; it
// grows by exactly one per cell, in the update that took the cell to the max.
//
// Thread safety: every operation may run concurrently with any other from any
// number of threads, without a lock. Each word is updated with a
// compare-and-swap loop that applies the item's whole change to that word at
// once, so concurrent increments and decrements of the same counters are never
// lost or applied twice (CAS failures retry on the fresh value). An item's
// change to its (up to 8) words is not atomic as a whole: a concurrent reader
// can see some of its words updated and not others, which for an Increment
// racing a MayContain just means "not yet added".
class BlockedCountingBloom {
 public:
  static constexpr uint64_t kBlockBytes = 64;    // one cache line
  static constexpr uint64_t kWordsPerBlock = 8;  // 64-bit words per block
  static constexpr uint64_t kProbeMultiplier = 0x9e3779b97f4a7c15ull;

  // Cells per block for a counter width: 128 for 4 bits, 64 for 8 bits.
  static constexpr uint32_t BlockCellsFor(uint32_t counter_bits) {
    return static_cast<uint32_t>(kBlockBytes * 8) / counter_bits;
  }
  // A classic layer's granule (see CLASSIC MODE): one word, 16 or 8 cells.
  static constexpr uint32_t ClassicCellsFor(uint32_t counter_bits) { return 64 / counter_bits; }
  // The counter width a layer shape's block_cells implies (128 or 16: 4 bits;
  // 64 or 8: 8 bits), or 0 for any other value.
  static constexpr uint32_t CounterBitsForCells(uint32_t block_cells) {
    if (block_cells == BlockCellsFor(4) || block_cells == ClassicCellsFor(4)) return 4;
    if (block_cells == BlockCellsFor(8) || block_cells == ClassicCellsFor(8)) return 8;
    return 0;
  }
  static constexpr bool IsClassicCells(uint32_t block_cells) {
    return block_cells == ClassicCellsFor(4) || block_cells == ClassicCellsFor(8);
  }

  // Bytes allocated for `shape`'s counter array (whole 64-byte lines; < 2^61).
  static uint64_t BytesFor(const BlockedShape& shape);

  // A zeroed layer for `shape`, or nullptr if counter_bits is not 4 or 8, the
  // shape is not for BlockCellsFor(counter_bits)-cell blocks (or, classic,
  // ClassicCellsFor(counter_bits)-cell granules), has no cells or
  // probes outside [1, kMaxBloomProbes], or the allocation fails. Never
  // throws. Like BlockedBloom::Create, the array is zeroed here so the memory
  // is resident from the start.
  static std::unique_ptr<BlockedCountingBloom> Create(const BlockedShape& shape,
                                                      uint32_t counter_bits);

  ~BlockedCountingBloom();
  BlockedCountingBloom(const BlockedCountingBloom&) = delete;
  BlockedCountingBloom& operator=(const BlockedCountingBloom&) = delete;

  // Adds one to each of the item's distinct counters that is below the max.
  void Increment(const KeyHash& h);

  // Subtracts one from each of the item's distinct counters that is neither 0
  // nor saturated. True iff this call took one of them from 1 to 0, so this
  // layer no longer reports the item. Callers only decrement items the layer
  // reports (MayContain); a counter already at 0 is left at 0, never wrapped.
  bool Decrement(const KeyHash& h);

  // True iff all the item's counters are non-zero. No false negatives while
  // only items that were incremented are decremented. Wait-free.
  bool MayContain(const KeyHash& h) const;

  // The smallest of the item's counters: 0 iff !MayContain(h); otherwise an
  // upper bound on its increments minus decrements, unless that minimum is
  // saturated (then the true figure may be higher).
  uint64_t MinCounter(const KeyHash& h) const;

  // The counter of cell `cell` (0 <= cell < cells()), for tests and debugging.
  uint64_t Counter(uint64_t cell) const;

  // Prefetches the item's block (see BlockedBloom::Prefetch).
  void Prefetch(const KeyHash& h) const;

  // The probe half on its own, over a layer's {words, num_blocks} held by the
  // caller (CountingBloomFilter keeps them inline in each layer), for
  // CountingBloomFilter::AddBatch: an item's cells are gathered once
  // (internal::ProbeCells) and the same masks answer "does this layer report
  // it?" and are what the increment adds.
  static std::atomic<uint64_t>* BlockIn(std::atomic<uint64_t>* words, uint64_t num_blocks,
                                        uint64_t hi) {
    // Lemire's fastrange, as BlockedBloom::BlockIn.
    const uint64_t block =
        static_cast<uint64_t>((static_cast<unsigned __int128>(hi) * num_blocks) >> 64);
    return words + block * kWordsPerBlock;
  }
  // True iff every cell of `m` is non-zero in `block`.
  template <uint32_t kBits>
  static bool BlockHas(const std::atomic<uint64_t>* block, const internal::CellMasks& m);
  // Adds one to each cell of `m` that is below the max (see CounterWrites)
  // and returns how many cells it took to the max, for NoteSaturated.
  template <uint32_t kBits, CounterWrites kWrites>
  static uint64_t BlockIncrement(std::atomic<uint64_t>* block, const internal::CellMasks& m);
  // What one read of an item's block says (ReadBlock).
  struct BlockReading {
    bool has;         // every cell of the item is non-zero, as BlockHas
    bool below_half;  // no counter of the block is above 7 (4 bits) or 127 (8 bits)
  };
  // BlockHas, and whether the whole block is below half its max, in one
  // pass over its 8 words without a branch per word: the common case, where
  // the per-counter saturation tests of BlockIncrement cannot matter (see
  // BlockIncrementBelowHalf). A block with a counter at half its max or
  // more is answered by BlockHas. Only for a caller that no writer of the
  // filter runs beside (CounterWrites::kExclusive): the words may be read
  // with wider loads than one word.
  template <uint32_t kBits>
  static BlockReading ReadBlock(const std::atomic<uint64_t>* block, const internal::CellMasks& m);
  // ReadBlock one word at a time: what ReadBlock is without SSE2, and what
  // the tests hold its SSE2 form to.
  template <uint32_t kBits>
  static BlockReading ReadBlockByWords(const std::atomic<uint64_t>* block,
                                       const internal::CellMasks& m);
  // BlockIncrement<kBits, kExclusive> of a block that ReadBlock found
  // below_half, with nothing written to it since: a counter of at most 7
  // (127) plus one stays below the max, so no cell saturates and there is
  // nothing to test per counter. Adds `m` to every word of the block (those
  // without cells of the item are stored unchanged), a relaxed store each.
  static void BlockIncrementBelowHalf(std::atomic<uint64_t>* block, const internal::CellMasks& m);
  // Adds `cells` newly saturated cells (BlockIncrement's result) to
  // saturated_counters().
  void NoteSaturated(uint64_t cells) {
    // Relaxed: a statistic, published through nothing.
    saturated_.fetch_add(cells, std::memory_order_relaxed);
  }

  uint64_t cells() const { return num_words_ * (64 / counter_bits_); }
  // Cells per 64-byte line (128 or 64), in both modes: what a scan of the
  // words in lines (filter_health) reads per line.
  uint32_t block_cells() const { return block_cells_; }
  bool classic() const { return classic_; }
  // The block_cells of the shape this layer was made for: block_cells(), or
  // ClassicCellsFor(counter_bits()) for a classic layer.
  uint32_t shape_cells() const { return classic_ ? ClassicCellsFor(counter_bits_) : block_cells_; }
  uint32_t probes() const { return probes_; }
  uint32_t counter_bits() const { return counter_bits_; }
  uint64_t max_count() const { return (uint64_t{1} << counter_bits_) - 1; }
  // Of the counters themselves (num_words() x 8; a classic layer's padding
  // to whole lines is not counted here, BytesFor counts it).
  uint64_t bytes() const { return num_words_ * 8; }
  // Cells whose counter has reached max_count(); exact once updates are quiet.
  uint64_t saturated_counters() const;

  // 64-byte lines of the array: blocks, or a classic layer's padded lines.
  uint64_t num_blocks() const { return num_blocks_; }

  // Raw read access for snapshots: num_words() words, block after block, in
  // the lane layout drawn above.
  const std::atomic<uint64_t>* words() const { return words_; }
  uint64_t num_words() const { return num_words_; }

  // Raw write access, same layout, ONLY for a loader filling a restored
  // layer before it is published to other threads (persistence/
  // filter_codec.cc); call RecountSaturated() once the words are in place.
  std::atomic<uint64_t>* mutable_words() { return words_; }

  // Sets saturated_counters() to the number of cells now at max_count() and
  // returns it. For loaders after filling mutable_words(): a saturated cell
  // never changes again, so this equals what the original layer counted one
  // update at a time. Reads every word: O(bytes()).
  uint64_t RecountSaturated();

 private:
  BlockedCountingBloom(std::atomic<uint64_t>* words, uint64_t num_blocks, uint64_t num_words,
                       uint32_t probes, uint32_t counter_bits, bool classic);

  std::atomic<uint64_t>* BlockFor(uint64_t hi) const { return BlockIn(words_, num_blocks_, hi); }

  template <uint32_t kBits>
  void IncrementImpl(const KeyHash& h);
  template <uint32_t kBits>
  bool DecrementImpl(const KeyHash& h);
  template <uint32_t kBits>
  uint64_t MinCounterImpl(const KeyHash& h) const;
  // Classic mode: the item's distinct cells (<= probes_) into out[],
  // returning how many.
  uint32_t ClassicCells(const KeyHash& h, uint64_t* out) const;
  // One up (below the max) or down (above 0, off the max) on each distinct
  // cell; returns how many it took to the max (up) or to 0 (down).
  uint32_t ClassicStep(const KeyHash& h, bool up);
  void ClassicIncrement(const KeyHash& h);
  bool ClassicDecrement(const KeyHash& h);
  uint64_t ClassicMinCounter(const KeyHash& h) const;

  std::atomic<uint64_t>* const words_;  // 64-byte aligned, num_blocks_ * 8 words
  const uint64_t num_blocks_;  // 64-byte lines allocated
  const uint64_t num_words_;   // counter words: num_blocks_ x 8 when blocked
  const uint32_t probes_;
  const uint32_t counter_bits_;  // 4 or 8
  const uint32_t block_cells_;   // 128 or 64
  const bool classic_;
  // On its own cache line: bumped rarely, but the fields above are read by
  // every operation and must not share a line that a writer dirties.
  // Relaxed fetch_add: a statistic, published through nothing.
  alignas(64) std::atomic<uint64_t> saturated_{0};
};

// ---------------------------------------------------------------- details ---
// Memory order: relaxed for every counter access (see the .cc).

template <uint32_t kBits>
inline bool BlockedCountingBloom::BlockHas(const std::atomic<uint64_t>* block,
                                           const internal::CellMasks& m) {
  using L = internal::Lanes<kBits>;
  for (uint64_t w = 0; w < kWordsPerBlock; ++w) {
    const uint64_t mine = m.word[w];
    if (mine == 0) continue;
    // Relaxed (see blocked_counting_bloom.cc).
    if ((L::NonZero(block[w].load(std::memory_order_relaxed)) & mine) != mine) return false;
  }
  return true;
}

template <uint32_t kBits>
inline BlockedCountingBloom::BlockReading BlockedCountingBloom::ReadBlockByWords(
    const std::atomic<uint64_t>* block, const internal::CellMasks& m) {
  using L = internal::Lanes<kBits>;
  uint64_t any = 0;      // every word ORed: its kHigh bits say "some counter >= half"
  uint64_t missing = 0;  // cells of the item found zero (meaningful when below half)
#pragma GCC unroll 8
  for (uint64_t w = 0; w < kWordsPerBlock; ++w) {
    // Relaxed (see blocked_counting_bloom.cc).
    const uint64_t v = block[w].load(std::memory_order_relaxed);
    any |= v;
    missing |= m.word[w] ^ L::NonZeroBelowHalf(v, m.word[w]);
  }
  if ((any & L::kHigh) != 0) return {BlockHas<kBits>(block, m), /*below_half=*/false};
  return {missing == 0, /*below_half=*/true};
}

template <uint32_t kBits>
inline BlockedCountingBloom::BlockReading BlockedCountingBloom::ReadBlock(
    const std::atomic<uint64_t>* block, const internal::CellMasks& m) {
#if defined(__SSE2__)
  // ReadBlockByWords two words at a time: the block in four 128-bit loads
  // (64-byte aligned; no writer runs beside, so these plain loads race with
  // no store), the masks in four more, and the 64-bit lane arithmetic is the
  // same. About 30 instructions instead of 56 one word at a time.
  using L = internal::Lanes<kBits>;
  const auto* words = reinterpret_cast<const __m128i*>(block);
  const auto* masks = reinterpret_cast<const __m128i*>(m.word);
  const __m128i below_high = _mm_set1_epi64x(static_cast<long long>(L::kBelowHigh));
  __m128i any = _mm_setzero_si128();
  __m128i missing = _mm_setzero_si128();
  for (int i = 0; i < 4; ++i) {
    const __m128i v = _mm_load_si128(words + i);
    any = _mm_or_si128(any, v);
    // The item's lanes whose v + kBelowHigh has no top bit: its zero cells.
    const __m128i nonzero = _mm_srli_epi64(_mm_add_epi64(v, below_high), kBits - 1);
    missing = _mm_or_si128(missing, _mm_andnot_si128(nonzero, _mm_loadu_si128(masks + i)));
  }
  // A lane's top bit is its byte's top bit for 8-bit lanes; for 4-bit lanes
  // the low nibble's (bit 3) is moved up to bit 7 of its byte first.
  if constexpr (kBits == 4) any = _mm_or_si128(any, _mm_slli_epi64(any, 4));
  if (_mm_movemask_epi8(any) != 0) return {BlockHas<kBits>(block, m), /*below_half=*/false};
  const int zero_bytes = _mm_movemask_epi8(_mm_cmpeq_epi8(missing, _mm_setzero_si128()));
  return {zero_bytes == 0xffff, /*below_half=*/true};
#else
  return ReadBlockByWords<kBits>(block, m);
#endif
}

inline void BlockedCountingBloom::BlockIncrementBelowHalf(std::atomic<uint64_t>* block,
                                                          const internal::CellMasks& m) {
#pragma GCC unroll 8
  for (uint64_t w = 0; w < kWordsPerBlock; ++w) {
    // Relaxed, and a plain load and store: the caller is the only writer.
    block[w].store(block[w].load(std::memory_order_relaxed) + m.word[w],
                   std::memory_order_relaxed);
  }
}

template <uint32_t kBits, CounterWrites kWrites>
inline uint64_t BlockedCountingBloom::BlockIncrement(std::atomic<uint64_t>* block,
                                                     const internal::CellMasks& m) {
  using L = internal::Lanes<kBits>;
  uint64_t newly_saturated = 0;
  for (uint64_t w = 0; w < kWordsPerBlock; ++w) {
    const uint64_t mine = m.word[w];
    if (mine == 0) continue;
    // Relaxed (see blocked_counting_bloom.cc).
    uint64_t old = block[w].load(std::memory_order_relaxed);
    for (;;) {
      // Saturated counters stay where they are: add only below the max.
      const uint64_t add = mine & ~L::Saturated(old);
      if (add == 0) break;  // all of this word's cells are saturated
      const uint64_t next = old + add;
      if constexpr (kWrites == CounterWrites::kExclusive) {
        // No other writer (the caller's promise): nothing can come between
        // the load and this store.
        block[w].store(next, std::memory_order_relaxed);
      } else if (!block[w].compare_exchange_weak(old, next, std::memory_order_relaxed,
                                                 std::memory_order_relaxed)) {
        continue;  // a failure refreshed `old`: recompute from what is there
      }
      // Exactly the lanes this update moved to the max: counted once, ever,
      // since a saturated lane is never changed again. Almost always none:
      // popcount only then (a libgcc call on baseline x86-64, ~20
      // instructions, which was 12% of CBF.MADD's instructions when it ran
      // for every word).
      if (const uint64_t saturated = add & L::Saturated(next); saturated != 0) {
        newly_saturated += static_cast<uint64_t>(std::popcount(saturated));
      }
      break;
    }
  }
  return newly_saturated;
}

}  // namespace bloomgate
