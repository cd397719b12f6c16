// Top-k heavy hitters (our TOPK.* family): HeavyKeeper (Gong et al., USENIX
// ATC 2018) as RedisBloom's topk.c runs it. The decay's coin flips come from
// a generator whose state is part of the filter (saved by a snapshot and a
// dump, restored by the loader), so replaying the same adds on the same
// state evicts the same items. (RedisBloom flips with the process's rand(),
// so its replicas and its AOF replay can diverge.)
//
// Two schemes (filters/sketch_scheme.h). SketchScheme::kRedisBloom, what
// TOPK.RESERVE creates, answers every command as RedisBloom 2.4 does
// (top_k_redisbloom.cc has its rules: MurmurHash2 rows and fingerprint,
// glibc's rand() from a fresh process's state, topk.c's heap and LIST
// order). SketchScheme::kNative, for filters saved before it, is this:
//
//   buckets: depth rows x width, each {fp u32, count u32}
//   an item's bucket in row r: fastrange64(hash.lo + r * hash.hi, width)
//   its fingerprint: the low 32 bits of hash.hi
//   heap: k slots {count, fp, item}, a min-heap on count (slot 0 smallest);
//         count 0 marks an empty slot
//
// Add(item, n), per row, as topk.c:
//  - an empty bucket takes the item: fp, count = n;
//  - a bucket with the item's fp grows by n (saturating at 2^32 - 1) if the
//    item is in the heap or the bucket's count is <= the heap's minimum;
//  - another item's bucket decays: n times, with probability decay^count,
//    count -= 1; when it reaches 0 the item takes it with the remaining
//    increments as its count (topk.c goes on flipping coins against the new
//    owner; we stop there, the owner has just arrived);
// then the item's estimate is the largest count it holds; if it is in the
// heap its heap count becomes that estimate, else if the estimate beats the
// heap minimum it replaces the minimum slot, whose item is "expelled".
//
// Determinism: decay^count is computed with multiplications only (a table of
// decay^0..255 built by repeated multiplication, then squaring), never pow(),
// so the same state gives the same decisions on every IEEE-754 machine
// whatever its libm. The PRNG is SplitMix64 (Vigna): any 64-bit state is
// valid, which keeps the loader's check trivial.
//
// Concurrency: none inside. The server holds the key exclusively for every
// write (FamilyWrites::kExclusive) and shared for reads, which is the
// per-key lock the family needs; Add must not run concurrently with anything.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "filters/filter_status.h"
#include "filters/glibc_random.h"
#include "filters/key_hash.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "filters/memory_refusal.h"
#include "filters/sketch_scheme.h"

namespace bloomgate {

struct TopKOptions {
  uint32_t k = 1;
  uint32_t width = 8;    // RedisBloom's TOPK.RESERVE defaults
  uint32_t depth = 7;
  double decay = 0.9;    // (0, 1]
  uint64_t prng_state = 0;  // kNative: SplitMix64 state; any value
  SketchScheme scheme = SketchScheme::kNative;
  // kRedisBloom: the rand() state of the next decay decision.
  GlibcRandom random = GlibcRandom::FreshProcess();
};

struct TopKBucket {
  uint32_t fp = 0;
  uint32_t count = 0;
};

// One heap slot. kNative: count 0 = empty. kRedisBloom: `filled` says
// whether it holds an item (RedisBloom can list an item with count 0 in its
// heap, and an empty item is an item).
struct TopKEntry {
  uint32_t count = 0;
  uint32_t fp = 0;
  std::string item;
  bool filled = false;
};

class TopK {
 public:
  // Hashes unseeded (XXH3 seed 0), unlike the Bloom and cuckoo families: sketches
  // meant for CMS.MERGE must hash alike. Kept for the codecs' hash contract.
  static constexpr uint64_t hash_seed() { return 0; }

  static constexpr uint32_t kMaxCount = UINT32_MAX;
  // Bytes a heap slot costs besides its item's bytes.
  static constexpr uint64_t kSlotBytes = sizeof(TopKEntry);

  // k, width, depth >= 1, decay in (0, 1] (NaN refused), else
  // kInvalidOptions; the buckets and slots over limits.max_filter_bytes ->
  // kFilterMemoryLimit; over the budget or a failed allocation ->
  // kOutOfMemory. Empty buckets and heap.
  // A memory refusal is described in *refusal when given.
  static FilterStatus Create(const TopKOptions& options, const FilterLimits& limits,
                             MemoryBudget* budget, std::unique_ptr<TopK>* out,
                             MemoryRefusal* refusal = nullptr);

  // width x depth buckets at most: 2^60 (8 EiB of 8-byte buckets), far past
  // every byte cap; the bound keeps width x depth x 8 under 2^64 (two u32s
  // multiply to up to 2^64 - 2^33 + 1, and 2^31 x 2^30 x 8 wrapped to 0). A
  // larger shape is kFilterMemoryLimit, and the loader refuses it too.
  static constexpr uint64_t kMaxBuckets = uint64_t{1} << 60;

  // Releases what it reserved.
  ~TopK();
  TopK(const TopK&) = delete;
  TopK& operator=(const TopK&) = delete;

  // Adds `increment` occurrences (TOPK.ADD: 1; TOPK.INCRBY: 0..100,000).
  // Returns true and sets *expelled when an item left the heap to make room.
  bool Add(const KeyHash& h, std::string_view item, uint32_t increment, std::string* expelled);

  bool Query(const KeyHash& h, std::string_view item) const;  // in the heap
  // The item's estimate (topk.c's TopK_Count): the largest count among its
  // buckets that carry its fingerprint (for a heap item, only those at or
  // above the heap minimum).
  uint32_t Count(const KeyHash& h, std::string_view item) const;
  // The heap's items, largest count first (ties: item bytes ascending).
  std::vector<TopKEntry> List() const;

  uint32_t k() const { return k_; }
  uint32_t width() const { return width_; }
  uint32_t depth() const { return depth_; }
  double decay() const { return decay_; }
  SketchScheme scheme() const { return scheme_; }
  uint64_t prng_state() const { return prng_state_; }
  const GlibcRandom& random() const { return random_; }
  // Buckets and slots plus the heap's item bytes (MEMORY USAGE).
  uint64_t memory_bytes() const { return fixed_bytes_ + item_bytes_; }
  static uint64_t FixedBytesFor(uint32_t k, uint32_t width, uint32_t depth);

  // For the codec: the buckets row by row, and the heap slots as stored.
  std::span<const TopKBucket> buckets() const { return buckets_; }
  std::span<const TopKEntry> heap() const { return heap_; }
  // For loaders, before the filter is published: replaces the buckets and
  // the heap (exactly width x depth and k of them). Empty slots must hold no
  // item, and a kNative heap must be a valid min-heap (a kRedisBloom one
  // need not: topk.c never sifts a decayed count up); returns false
  // (changing nothing) otherwise.
  bool Load(std::vector<TopKBucket> buckets, std::vector<TopKEntry> heap);

 private:
  TopK(const TopKOptions& options, uint64_t fixed_bytes, MemoryBudget* budget);

  // topk.c's TopK_Count over the item's buckets (bucket_of(row) is row r's
  // index): the largest count carrying its fingerprint, for a heap item
  // only those at or above the heap minimum. Both schemes.
  template <typename BucketOf>
  uint32_t Estimate(uint32_t fp, bool in_heap, BucketOf bucket_of) const {
    const uint32_t heap_min = heap_[0].count;
    uint32_t result = 0;
    for (uint32_t row = 0; row < depth_; ++row) {
      const TopKBucket& b = buckets_[bucket_of(row)];
      if (b.fp == fp && (!in_heap || b.count >= heap_min) && b.count > result) result = b.count;
    }
    return result;
  }

  // kRedisBloom (top_k_redisbloom.cc).
  bool AddRedisBloom(std::string_view item, uint32_t increment, std::string* expelled);
  int64_t FindFilled(uint32_t fp, std::string_view item) const;
  bool QueryRedisBloom(std::string_view item) const;
  uint32_t CountRedisBloom(std::string_view item) const;
  std::vector<TopKEntry> ListRedisBloom() const;
  double RedisBloomDecay(uint32_t count) const;
  size_t RedisBloomBucket(std::string_view item, uint32_t row) const;
  void HeapifyDownRedisBloom(size_t start);

  uint64_t NextRandom();
  double DecayPower(uint32_t count) const;  // decay^count, multiplications only
  size_t BucketIndex(const KeyHash& h, uint32_t row) const;
  static uint32_t Fingerprint(const KeyHash& h) { return static_cast<uint32_t>(h.hi); }
  // The heap slot holding the item, or -1.
  int64_t FindInHeap(uint32_t fp, std::string_view item) const;
  void SiftDown(size_t slot);
  void SiftUp(size_t slot);
  void ChargeItem(uint64_t bytes);
  void UnchargeItem(uint64_t bytes);

  const uint32_t k_;
  const uint32_t width_;
  const uint32_t depth_;
  const double decay_;
  const SketchScheme scheme_;
  uint64_t prng_state_;
  GlibcRandom random_;
  const uint64_t fixed_bytes_;
  MemoryBudget* const budget_;
  // Item bytes are charged to the budget when it has room and always counted
  // in memory_bytes(): refusing an add for them would make a replay of the
  // same adds (in another budget) come out differently. item_charged_ is
  // what the budget actually holds, released exactly.
  uint64_t item_bytes_ = 0;
  uint64_t item_charged_ = 0;
  std::vector<TopKBucket> buckets_;
  std::vector<TopKEntry> heap_;
  double decay_table_[256];  // decay^i (kRedisBloom: pow(decay, i), as topk.c)
};

}  // namespace bloomgate
