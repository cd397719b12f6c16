#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <optional>
#include <shared_mutex>
#include <string_view>
#include <vector>

#include "filters/admission.h"
#include "filters/filter_status.h"
#include "filters/memory_refusal.h"
#include "filters/key_hash.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"

namespace bloomgate {

// How a cuckoo filter hashes items and walks its slots. The slot layout is
// the same in both (sub-filter k: n_0 x expansion^k buckets of bucket_size
// one-byte fingerprints, 0 = empty, bucket b at byte b x bucket_size), so a
// RedisBloom dump's bytes are our slots as they are.
enum class CuckooScheme : uint8_t {
  // Ours: XXH3-128 with the filter's random seed (hash_seed.h), a 64-bit mixed
  // alternate index, pseudo-random eviction victims.
  kNative = 0,
  // RedisBloom's (cuckoo.c, v2.4 and Redis 8 alike), for filters imported
  // with CF.LOADCHUNK from its CF.SCANDUMP: h = MurmurHash64A(item, seed 0)
  // for both KeyHash halves, fp = h % 255 + 1, i2 = i1 ^ (fp x 0x5bd1e995),
  // victims evicted round-robin (slot 0, 1, .. from bucket i1), and CF.COUNT
  // adds both buckets' matches even when i1 and i2 are the same bucket.
  // Every answer is then exactly RedisBloom's. Seedless, as RedisBloom is:
  // anyone can compute which items share a bucket, so such a filter lacks
  // the random seed's hash-flooding protection (the kick budget still bounds the
  // work of one command); the README says so.
  kRedisBloom = 1,
};

struct CuckooFilterOptions {
  uint64_t capacity = 1024;      // cf-initial-size; >= 2 * bucket_size
  uint32_t bucket_size = 2;      // cf-bucket-size, BUCKETSIZE [1, 255]
  uint32_t max_iterations = 20;  // cf-max-iterations, MAXITERATIONS [1, 65535]
  // cf-expansion-factor, EXPANSION [0, 32768], rounded up to a power of two;
  // 0 = non-scaling.
  uint32_t expansion = 1;
  uint32_t max_expansions = kDefaultCuckooMaxExpansions;  // cf-max-expansions [1, 65536]
  // The item hash's seed (key_hash.h); unset: Create draws a fresh one with
  // NewHashSeed(). Set only to rebuild a known filter (tests, golden files).
  std::optional<uint64_t> hash_seed;
  // kRedisBloom only for tests: imported filters come from Restore.
  CuckooScheme scheme = CuckooScheme::kNative;
};

// Frees a cuckoo filter's slots (CuckooFilter::NewSlots), `bytes` of them.
struct CuckooSlotsDeleter {
  uint64_t bytes = 0;
  void operator()(uint8_t* slots) const;
};

// CF.INFO's eight fields, in RedisBloom's order, read under one lock.
struct CuckooFilterInfo {
  uint64_t size;            // "Size": memory_bytes(); kRedisBloom: RedisBloom's figure,
                            // 40 + 16 x num_filters + slot bytes (its struct sizes)
  uint64_t num_buckets;     // "Number of buckets": of the FIRST sub-filter
  uint64_t num_filters;     // "Number of filters"
  uint64_t items;           // "Number of items inserted": fingerprints stored now
  uint64_t deletes;         // "Number of items deleted": since the last compaction
  uint64_t bucket_size;     // "Bucket size"
  uint64_t expansion;       // "Expansion rate": rounded to a power of two; 0 = non-scaling
  uint64_t max_iterations;  // "Max iterations"
};

// One sub-filter, oldest first.
struct CuckooSubFilterInfo {
  uint64_t num_buckets;  // first sub-filter's x expansion^index
  uint64_t bytes;        // num_buckets * bucket_size: one byte per slot
  uint64_t occupied;     // non-empty slots
};

// Everything a snapshot or a dump saves of a cuckoo filter besides its slots,
// read under one lock (CuckooFilter::Shape) and given back to
// CuckooFilter::Restore. Sub-filter k has SubFilterBuckets(base_buckets,
// expansion, k) buckets of bucket_size one-byte slots.
struct CuckooFilterShape {
  uint64_t base_buckets = 0;    // sub-filter 0's buckets: a power of two, [2, kMaxCuckooBuckets]
  uint32_t bucket_size = 0;     // [1, kMaxCuckooBucketSize]
  uint32_t max_iterations = 0;  // [1, kMaxCuckooIterations]
  uint32_t expansion = 0;       // 0 or a power of two <= kMaxCuckooExpansion (already rounded)
  uint32_t max_expansions = 0;  // [1, kMaxCuckooMaxExpansions]
  uint32_t num_filters = 0;     // [1, max_expansions]; exactly 1 when expansion is 0
  uint64_t items = 0;           // occupied slots
  uint64_t deletes = 0;         // removes since the last compaction
  uint64_t hash_seed = 0;       // the item hash's seed; 0 = saved before seeds existed
                                // (always 0 for kRedisBloom: it hashes unseeded)
  CuckooScheme scheme = CuckooScheme::kNative;
};

// A cuckoo filter with RedisBloom's semantics (cuckoo.c; COMPAT.md 1.7), on
// our 128-bit XXH3 KeyHash instead of MurmurHash64A (CuckooScheme::kNative,
// described here; kRedisBloom, for imported filters, is RedisBloom's exact
// hashing and kick order: see CuckooScheme above -- one class rather than a
// second family, because everything else, the layout, growth, deletes,
// compaction, locking, codec and commands, is the same):
//
//   fingerprint fp = hash.lo % 255 + 1     8 bits, 1..255; 0 marks an empty slot
//                                          (% by a constant compiles to a multiply)
//   i1 = hash.hi                           one 64-bit index for every sub-filter
//   i2 = i1 ^ AltHash(fp)                  AltHash: a 64-bit mix of fp
//   bucket in sub-filter k = i & (num_buckets_k - 1)   (powers of two: no %)
//
//   sub-filter k:  bucket 0          bucket 1          ...   bucket n_k - 1
//                 [fp fp .. fp]     [fp fp .. fp]            [fp fp .. fp]     bucket_size bytes each
//
// n_0 = next power of two of capacity / bucket_size; n_k = n_0 x expansion^k.
// Because every n_k is a power of two and i1 is kept whole, the low bits of an
// item's bucket in a larger sub-filter are its bucket in every smaller one, and
// "alternate bucket" is an involution in each sub-filter: alt(alt(b)) = b.
//
// Insert (Add, AddIfAbsent), as RedisBloom:
//  1. a free slot in either bucket of any sub-filter, newest to oldest;
//  2. otherwise up to max_iterations cuckoo kicks in the newest sub-filter,
//     starting at bucket i1; each kick evicts a pseudo-random slot (a fixed
//     function of i1 and the kick number, see VictimSlot) and carries the
//     evicted fingerprint to its other bucket; if no kick finds room, the
//     kicks are undone in reverse, so the filter is exactly as it was;
//  3. otherwise: non-scaling -> kFull ("Filter is full"); kNative, when both
//     of the item's buckets in the newest sub-filter and in the one before
//     hold nothing but its fingerprint -> kCopiesFull (below, checked before
//     the kicks, which could not help); num_filters() == max_expansions ->
//     kMaxExpansions ("Maximum expansions reached"); else a sub-filter is
//     appended (memory checked first) and the item goes into it.
// Deliberate difference 0 (kNative only): copies of one item live in its two
// buckets of each sub-filter, 2 x bucket_size per sub-filter, so once they
// fill both in the newest one (no kick can move them: a kicked copy lands in
// the other bucket, which is full of copies too) each new sub-filter takes
// 2 x bucket_size more, and is then full the same way, each one expansion
// times bigger: ~85 CF.ADD of one item made 22 sub-filters and 4.29 GB at
// EXPANSION 2. The filter cannot tell copies from distinct items that share
// the fingerprint and the bucket pair, and those a larger sub-filter (more
// index bits) usually separates; copies never. So one sub-filter is still
// added for such an item, and once its buckets there are full of its
// fingerprint too, the add is refused (kCopiesFull, "Filter is full" plus
// why): copies cost at most one growth. A filter imported from RedisBloom
// (kRedisBloom) grows as RedisBloom does.
// Deliberate difference 1: RedisBloom evicts slot 0, 1, 0, 1 ... round-robin.
// At bucket size 2 that walk falls into cycles: measured on 2^17 slots, it
// fills 57% before the first failed insert at 20 kicks and only 60% at 500,
// where pseudo-random victims reach 67% and 87% (bucket size 4: 82% / 96%,
// round-robin 80% / 96%). Which slot is evicted is invisible to clients.
// Deliberate difference 2: RedisBloom refuses EVERY insert once the filter has
// cf-max-expansions sub-filters, even one that fits (COMPAT 1.7 quirk). Here
// only an insert that would need another sub-filter is refused; a server that
// wants the quirk checks num_filters() >= max_expansions() before inserting.
//
// Remove deletes one matching fingerprint, newest sub-filter to oldest; items
// goes down by one and deletes up by one. Like RedisBloom, it then compacts
// (without continuing past a sub-filter that cannot be emptied) when there is
// more than one sub-filter and deletes > 10% of items. Removing an item that
// was never added can delete another item's fingerprint (same fingerprint,
// same bucket) and so cause a false negative for that item.
//
// Compact() is CF.COMPACT: for each sub-filter from the newest down to the
// second, every fingerprint is moved into a free slot of one of its two
// buckets in an OLDER sub-filter, oldest first, if there is one. (Moving the
// other way is impossible: a smaller sub-filter has forgotten the high bits of
// i1 that a larger one needs.) The newest sub-filter is freed, and its memory
// returned, if it was emptied; then the next one down can be freed too, and so
// on. Sub-filters that are not the newest are never freed, even if empty, so
// sub-filter k always has n_0 x expansion^k buckets. deletes is reset to 0.
//
// Count: fingerprint matches in the item's (one or two distinct) buckets of
// every sub-filter -- an upper bound on adds minus removes (other items can
// share the fingerprint and bucket). RedisBloom counts a bucket twice when
// i1 and i2 coincide; we count it once.
//
// FP rate: a lookup compares fp with up to 2 x bucket_size slots per
// sub-filter, each matching by chance with probability 1/255, so at load
// factor a it is about 2 x bucket_size x a / 255 per sub-filter: 0.78% for
// bucket size 1 and 1.57% for 2 when full (RedisBloom's documented figures).
// Measured where the first expansion happens (filters_test, 20 kicks, 2^17
// slots, mean of 4 item sets): bucket size 1 at 39% full, FP 0.31%; size 2 at
// 66%, FP 1.03%; size 4 at 78%, FP 2.43%.
//
// Thread safety: one std::shared_mutex per filter. MayContain, Count, Info and
// the accessors take it shared (readers run in parallel); Add, AddIfAbsent,
// Remove and Compact take it exclusively. Cost: an uncontended lock/unlock
// pair is two atomic RMWs on the mutex's cache line, and every reader writes
// that line, so readers of one hot filter on different cores bounce it
// between them; writers serialise, and a writer waits for (and blocks)
// readers, for as long as an insert takes -- up to 2 x max_iterations bucket
// visits when kicks fail, or a full pass over the filter when a Remove
// triggers compaction. Different filters never contend. Measured on a busy
// 2-core VM (so indicative only): a shared lock/unlock pair alone costs
// 15-27 ns on one thread and 62-71 ns per lookup with two threads reading the
// same filter, next to 200-450 ns for a lookup that misses the cache in a
// 2 MiB filter.
class CuckooFilter {
 public:
  // Validates options, then checks every limit BEFORE allocating:
  //  - bucket_size outside [1, 255], max_iterations outside [1, 65535],
  //    expansion > 32768, max_expansions outside [1, 65536], or
  //    capacity < 2 * bucket_size -> kInvalidOptions (the server checks these
  //    first with RedisBloom's texts);
  //  - a first sub-filter of more than kMaxCuckooBuckets buckets, or more than
  //    limits.max_filter_bytes in all -> kFilterMemoryLimit;
  //  - not enough room in *budget, or the allocation fails -> kOutOfMemory.
  // On failure nothing stays reserved and *out is reset. `budget` may be
  // nullptr; otherwise it must outlive the filter. Never throws.
  // A memory refusal (here or in a growth) is described in *refusal when
  // given (filters/memory_refusal.h).
  static FilterStatus Create(const CuckooFilterOptions& options, const FilterLimits& limits,
                             MemoryBudget* budget, std::unique_ptr<CuckooFilter>* out,
                             MemoryRefusal* refusal = nullptr);

  // For loaders (persistence/filter_codec.cc): a filter of exactly `shape`,
  // every slot empty and items()/deletes() as given; fill the slots through
  // mutable_slots() before publishing the filter (the loader then checks
  // items against the occupied slots). Fields outside the ranges of
  // CuckooFilterShape, or a sub-filter above kMaxCuckooBuckets buckets ->
  // kInvalidOptions. The whole memory_bytes() is checked against
  // limits.max_filter_bytes (-> kFilterMemoryLimit) and reserved in *budget
  // (-> kOutOfMemory) before anything is allocated; failures leave nothing
  // reserved and *out reset. Never throws.
  // memory_bytes() is the original's, except after a compaction freed
  // sub-filters: the original keeps their sizeof(SubFilter) array entries
  // for reuse (16 bytes each), a restored filter has none to spare.
  static FilterStatus Restore(const CuckooFilterShape& shape, const FilterLimits& limits,
                              MemoryBudget* budget, std::unique_ptr<CuckooFilter>* out);

  // Releases memory_bytes() back to the budget. No call may be running.
  ~CuckooFilter();

  CuckooFilter(const CuckooFilter&) = delete;
  CuckooFilter& operator=(const CuckooFilter&) = delete;

  // CF.ADD: inserts one more copy of the item's fingerprint. kOk; kFull
  // (non-scaling, no room); kCopiesFull (see Insert above); kMaxExpansions;
  // or, when a sub-filter must be
  // appended, kFilterMemoryLimit / kOutOfMemory. On any failure the filter is
  // exactly as it was.
  //
  // `kicks_left`, when given, is what the caller's command may still spend
  // on cuckoo kicks (see kCommandKickBudget in limits.h): this insert makes
  // at most min(max_iterations, *kicks_left) kicks and subtracts the kicks it
  // made (a failed walk and its undo count once per kick). With nothing left
  // the item is treated as if its kicks had failed: the filter grows if it
  // can, else kFull / kMaxExpansions -- RedisBloom's answers for a full
  // filter. The result depends only on the filter and *kicks_left, so a
  // replay that passes the same budget builds the same filter.
  //
  // `admission` kAsRecorded (a journal replay, filters/admission.h) skips
  // the copies rule: a log an older build wrote holds copies it took by
  // growing. A log of this build holds none the rule refused (a refused
  // CF.ADD is not journaled, CF.INSERT's record is cut before it), and where
  // the rule did not fire the insert takes the same steps either way.
  FilterStatus Add(const KeyHash& h, uint64_t* kicks_left = nullptr,
                   Admission admission = Admission::kClient, MemoryRefusal* refusal = nullptr);

  // CF.ADDNX: if the item is (probably) present, *added = false and kOk;
  // otherwise as Add, with *added = true on kOk. Check and insert are one
  // atomic step (under the exclusive lock).
  FilterStatus AddIfAbsent(const KeyHash& h, bool* added, uint64_t* kicks_left = nullptr,
                           Admission admission = Admission::kClient,
                           MemoryRefusal* refusal = nullptr);

  // True if the item's fingerprint is in one of its buckets in any sub-filter.
  bool MayContain(const KeyHash& h) const;
  // CF.MEXISTS: out[i] = MayContain(hashes[i]), under one shared lock for
  // the whole batch, in passes: both candidate buckets of every item in
  // every sub-filter prefetched, then each item probed.
  void MayContainBatch(std::span<const KeyHash> hashes, bool* out) const;

  // CF.COUNT (see the class comment).
  uint64_t Count(const KeyHash& h) const;

  // CF.DEL: removes one copy (see the class comment); false if none matched.
  bool Remove(const KeyHash& h);

  // CF.COMPACT (see the class comment).
  void Compact();

  CuckooFilterInfo Info() const;  // all of CF.INFO at once
  uint64_t memory_bytes() const;  // exactly what is reserved in the budget
  uint64_t num_buckets() const;   // of the first sub-filter, as CF.INFO reports
  uint64_t total_buckets() const; // over all sub-filters
  uint32_t num_filters() const;
  uint64_t items() const;
  uint64_t deletes() const;
  uint32_t bucket_size() const { return bucket_size_; }
  uint32_t expansion() const { return expansion_; }  // rounded up to a power of two
  bool scaling() const { return expansion_ != 0; }
  uint32_t max_iterations() const { return max_iterations_; }
  uint32_t max_expansions() const { return max_expansions_; }
  const FilterLimits& limits() const { return limits_; }
  // The seed every item is hashed with (one for all sub-filters: an item's
  // i1 must be the same in each, or compaction could not move it down).
  uint64_t hash_seed() const { return hash_seed_; }
  CuckooScheme scheme() const { return scheme_; }
  // The item's hash under this filter's scheme: XXH3-128 with hash_seed(),
  // or for kRedisBloom MurmurHash64A(item, 0) in both halves.
  KeyHash Hash(std::string_view item) const;
  // Cuckoo kicks made since this object was created or restored: the work
  // counter the kick-budget tests bound (not saved; not in CF.INFO).
  uint64_t kicks() const;

  // Per sub-filter details, oldest first. Counts occupied slots: O(bytes).
  std::vector<CuckooSubFilterInfo> SubFilters() const;

  // Everything but the slots, under one shared lock (cheap: no slot is read).
  CuckooFilterShape Shape() const;

  // The fewest buckets a first sub-filter may have: 2 for ours (CF.RESERVE
  // rounds capacity / bucket size up to a power of two >= 2), 1 for
  // RedisBloom's scheme, whose CF.LOADCHUNK header may say so (its index is
  // i % buckets, and both of an item's buckets are then that one; RedisBloom
  // loads such a header and inserts into it).
  static constexpr uint64_t MinBaseBuckets(CuckooScheme scheme) {
    return scheme == CuckooScheme::kRedisBloom ? 1 : 2;
  }

  // Buckets of sub-filter `index`: base_buckets x expansion^index, saturating
  // at UINT64_MAX (an absurd size every caller refuses).
  static uint64_t SubFilterBuckets(uint64_t base_buckets, uint32_t expansion, uint32_t index);

  // Sub-filter `filter`'s slot bytes (SubFilters()[filter].bytes of them),
  // writable without the lock: ONLY for a loader filling a Restore()d filter
  // before it is published to other threads.
  uint8_t* mutable_slots(uint32_t filter);

  // Copies up to `len` bytes of sub-filter `filter`'s slots, starting at byte
  // `offset` (bucket b's slots are bytes b*bucket_size ..), to `out`; returns
  // how many were copied (0 past the end or for a missing sub-filter). For
  // CF.SCANDUMP-style chunked dumps and tests.
  uint64_t CopySlots(uint32_t filter, uint64_t offset, uint8_t* out, uint64_t len) const;

  // The hashing scheme, exposed for tests and a future snapshot loader.
  static uint8_t FingerprintOf(const KeyHash& h) { return static_cast<uint8_t>(h.lo % 255 + 1); }
  // The other candidate index for `fp` at index `index` (unmasked: callers
  // mask with num_buckets - 1). A 64-bit mix, so that every bit of the mask
  // depends on every bit of fp (RedisBloom's fp * 0x5bd1e995 leaves the low
  // bits of the product depending only on the low bits of fp).
  static uint64_t AltIndex(uint64_t index, uint8_t fp) {
    const uint64_t x = uint64_t{fp} * 0x9e3779b97f4a7c15ull;
    return index ^ (x ^ (x >> 32));
  }

 private:
  using Slots = std::unique_ptr<uint8_t[], CuckooSlotsDeleter>;
  // `bytes` of empty (zero) slots, or null. From 1 MiB on they are fresh
  // mapped pages that the first add reaching each faults in, as a Bloom
  // layer's words (filters/block_words.h): a sub-filter added on an event
  // loop costs a system call, not a memset of the whole array (a 256 MiB
  // sub-filter stalled its loop ~105 ms). The budget counts it whole from
  // the start, so it stays an upper bound on what the process holds.
  static Slots NewSlots(uint64_t bytes);

  struct SubFilter {
    Slots slots;               // num_buckets * bucket_size bytes, 0 = empty
    uint64_t num_buckets = 0;  // a power of two
  };

  CuckooFilter(const CuckooFilterOptions& options, uint32_t expansion, uint64_t base_buckets,
               uint64_t hash_seed, const FilterLimits& limits, MemoryBudget* budget,
               uint64_t bytes);

  // The other candidate index under this filter's scheme (unmasked).
  uint64_t Alt(uint64_t index, uint8_t fp) const {
    // RedisBloom's getAltHash: index ^ (fp * 0x5bd1e995), in 64 bits.
    return scheme_ == CuckooScheme::kRedisBloom ? index ^ (uint64_t{fp} * 0x5bd1e995ull)
                                                : AltIndex(index, fp);
  }

  // All below run with mutex_ held (shared for const, exclusive otherwise).
  uint8_t* Bucket(const SubFilter& sub, uint64_t index) const {
    return sub.slots.get() + (index & (sub.num_buckets - 1)) * bucket_size_;
  }
  uint8_t* FreeSlot(const SubFilter& sub, uint8_t fp, uint64_t index) const;
  bool Contains(uint8_t fp, uint64_t i1) const;
  FilterStatus Insert(uint8_t fp, uint64_t i1, uint64_t* kicks_left, Admission admission,
                      MemoryRefusal* refusal);
  // True iff both of the item's buckets in `sub` hold nothing but `fp`.
  bool CopiesFill(const SubFilter& sub, uint8_t fp, uint64_t i1) const;
  // At most `max_kicks` kicks; returns how many it made in *kicks_made.
  bool KickInsert(SubFilter& sub, uint8_t fp, uint64_t i1, uint32_t max_kicks,
                  uint32_t* kicks_made);
  // The slot kick number `kick` of item i1 evicts: pseudo-random, and
  // recomputable, so a failed insert can retrace its kicks backwards.
  uint32_t VictimSlot(uint64_t seed, uint32_t kick) const;
  FilterStatus Grow(MemoryRefusal* refusal);
  void CompactFrom(bool keep_going);

  const uint64_t base_buckets_;  // sub-filter 0's bucket count, a power of two
  const uint32_t bucket_size_;
  const uint32_t max_iterations_;
  const uint32_t expansion_;  // a power of two, or 0 = non-scaling
  const uint32_t max_expansions_;
  const uint64_t hash_seed_;
  const CuckooScheme scheme_;
  const FilterLimits limits_;
  MemoryBudget* const budget_;

  // Guards everything below and every slot byte.
  mutable std::shared_mutex mutex_;
  // Sub-filters, oldest first: num_filters_ in use out of filters_capacity_
  // allocated (compaction frees slots but keeps the array).
  std::unique_ptr<SubFilter[]> filters_;
  uint32_t num_filters_ = 0;
  uint32_t filters_capacity_ = 0;
  uint64_t items_ = 0;    // occupied slots over all sub-filters
  uint64_t kicks_ = 0;    // see kicks()
  uint64_t deletes_ = 0;  // successful removes since the last compaction
  uint64_t memory_bytes_;
};

}  // namespace bloomgate
