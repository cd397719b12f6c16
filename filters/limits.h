#pragma once

#include <cstdint>

namespace bloomgate {

// Bounds shared by command validation and the snapshot loader: one constant
// each, so a filter can never be created that its own snapshot refuses to load.

// Per-filter limits, filled from the server config.
struct FilterLimits {
  // Cap on one filter's memory_bytes(), all layers and bookkeeping included.
  // 0 means no per-filter cap (the shared MemoryBudget still applies).
  // 4 GiB holds ~2.9 billion items at 1% in one layer (11.6 bits/key).
  uint64_t max_filter_bytes = 4ull << 30;
};

// RedisBloom's EXPANSION range is [0, 32768]; 0 means NONSCALING.
constexpr uint32_t kMaxBloomExpansion = 32768;

// Larger requested error rates are capped to 0.25, as Redis 8 does
// (BF_ERROR_RATE_CAP in RedisBloom's config.h).
constexpr double kMaxBloomErrorRate = 0.25;

// The smallest error rate a new Bloom-like filter (BF, CBF and their
// windowed forms) may ask for. RedisBloom takes any rate in (0, 1); here a
// layer has at most kMaxBloomProbes probes, and once the optimum k =
// log2(1/p) passes 64 (p < ~5e-20) each further decade costs ever more bits
// per item (bloom_math.h's ChooseClassicShape, 1 bit per cell): 96 at 1e-20,
// 237 at 1e-40, 2,300 at 1e-100, 3.1 million at 1e-300 -- so with no floor
// the client's choice of rate, not what it adds, would set the memory (BF
// 1e-300 and 10,000 adds: 3.9 GB). At 1e-30 a scaling filter's deepest layer
// (layer 63, 2^-64 of the rate: 5.4e-50) costs 344 bits per item, 86 bytes a
// 4-bit counting one; a rate that low already means "no false positive in
// 10^30 lookups", far past any real need.
constexpr double kMinBloomErrorRate = 1e-30;

// A layer's error rate must stay above the smallest normal double
// (DBL_MIN, 2.2250738585072014e-308; Rust's f64::MIN_POSITIVE, which is
// valkey-bloom's bound): a filter whose TIGHTENING ratio is tiny reaches it
// within its 64 layers (0.01 x 1e-5^63 underflows), and growth stops there
// (FilterStatus::kErrorRateUnderflow) instead of sizing a layer for 0.
constexpr double kMinLayerErrorRate = 2.2250738585072014e-308;

// Layers of one scalable filter. Each layer halves the error rate, so layer i
// of a filter created at the 0.25 cap is sized for 0.125 * 2^-i. Why 64:
//  - with EXPANSION >= 2, layer 63 alone would hold >= 2^63 items and could
//    never be allocated, so the cap never binds there: it only stops
//    EXPANSION 1 filters (64 x capacity items), which RedisBloom lets grow
//    until the error underflows double (~1070 layers);
//  - the deepest layer's error stays far from 0 (0.125 * 2^-63 ~= 1.4e-20,
//    vs 2^-1074), so sizing stays finite, even if costly: 512-bit blocks need
//    ~1,235 bits/key and 40 probes there (see bloom_math.h), and the byte
//    caps decide;
//  - it bounds a miss to 64 cache lines and the retired layer lists a filter
//    keeps for lock-free readers to 64*65/2 = 2,080 pointers (16 KiB).
constexpr uint32_t kMaxBloomLayers = 64;

// The largest item count (a Bloom filter's items(), a counting filter's net
// count in either sign, a cuckoo filter's deletes) a loader accepts, for
// every layer and for the sum. Counts only ever grow by one per add, so a
// filter that starts at or under 2^62 needs 2^62 (4.6e18) more adds, ~146
// years at 10^9 a second, before anything could overflow 64 bits: whatever a
// client loads (SCANDUMP/LOADCHUNK takes counts from the client) can be saved
// and loaded back. Without the bound a chunk claiming 2^64 - 10 items was
// accepted and the first growth wrote a snapshot start-up refused.
constexpr uint64_t kMaxFilterItems = uint64_t{1} << 62;

// Probes per item inside one 512-bit block. The best count for the blocked
// layout is 6-7 at 1%, 9 at 0.1%, 12 at 0.01%, 22 at 1e-9 and 40 at 1e-20 (the
// deepest layer above), so 64 is never the binding limit for a sane request.
constexpr uint32_t kMaxBloomProbes = 64;

// Counting Bloom filters (CBF.*) reuse kMaxBloomExpansion, kMaxBloomErrorRate
// and kMaxBloomLayers. Their counters are 4 or 8 bits wide (COUNTERBITS).
constexpr uint32_t kCountingBloomNarrowCounterBits = 4;  // max 15, 128 per block
constexpr uint32_t kCountingBloomWideCounterBits = 8;    // max 255, 64 per block

// Cuckoo filters (CF.*), RedisBloom's ranges (Redis 8 config.c and
// CF.RESERVE): BUCKETSIZE [1, 255], MAXITERATIONS [1, 65535], EXPANSION
// [0, 32768] (0 = non-scaling), cf-max-expansions [1, 65536] (default 32).
// CAPACITY must be at least 2 * BUCKETSIZE; there is no fixed upper bound (our
// caps are on memory), but see kMaxCuckooBuckets.
constexpr uint32_t kMaxCuckooBucketSize = 255;
constexpr uint32_t kMaxCuckooIterations = 65535;
constexpr uint32_t kMaxCuckooExpansion = 32768;
constexpr uint32_t kMaxCuckooMaxExpansions = 65536;
constexpr uint32_t kDefaultCuckooMaxExpansions = 32;

// The cuckoo kicks one command may make over all its items: a fixed
// allowance plus kKicksPerItem per item. Why: MAXITERATIONS goes up to 65,535
// and a failed insert walks that many kicks and undoes them, so a 20,000-item
// CF.INSERT into a full filter made 1.3 billion kicks and held its I/O
// thread (and every client on it) for 23 s (54 s on our shared VM, in
// bench/long_command_bench.py; 0.22 s with this bound, parsing and the
// 20,000 replies included). A kick and its undo are two slot swaps, so one
// CF.ADD at MAXITERATIONS 65,535 still makes all its kicks, while a long
// CF.INSERT stops kicking once the allowance is spent: later items answer as
// for a full filter (README "Limits"). 20 per item is RedisBloom's default
// MAXITERATIONS, so a command at the defaults is never cut short: its work
// already scales with its length, as parsing it does. A constant, not a
// setting: replaying CF.INSERT from the log must spend the same budget.
// The allowance is given up front and kKicksPerItem accrues as each item is
// tried, so an item's outcome depends only on the items before it: a
// CF.INSERT journaled cut short (stopped by maxmemory) replays its prefix
// exactly. CommandKickBudget(n) is what n items may spend in all.
constexpr uint64_t kCommandKickAllowance = uint64_t{1} << 20;
constexpr uint64_t kKicksPerItem = 20;
constexpr uint64_t CommandKickBudget(uint64_t items) {
  return kCommandKickAllowance + kKicksPerItem * items;  // items < 2^59: no overflow
}

// The most buckets one cuckoo sub-filter may have: 2^56, RedisBloom's guard
// on its 56-bit bucket count. With 255-slot buckets that is < 2^64 bytes, so
// no byte count overflows; any such filter is refused by the memory caps or
// fails to allocate long before.
constexpr uint64_t kMaxCuckooBuckets = uint64_t{1} << 56;

}  // namespace bloomgate
