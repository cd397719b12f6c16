#pragma once

namespace bloomgate {

// What a filter operation can report. Filters return these values; only
// server/ turns them into client-visible error texts (one function, one
// header), so the filter library never knows the wire format.
enum class FilterStatus {
  kOk,
  // A non-scaling filter reached its capacity and the item is new
  // (RedisBloom: "ERR non scaling filter is full").
  kFull,
  // Creating or growing the filter would exceed FilterLimits::max_filter_bytes,
  // or the requested shape is absurd (it could never fit in 64-bit memory).
  kFilterMemoryLimit,
  // The shared MemoryBudget would be exceeded, or the allocation itself failed.
  kOutOfMemory,
  // Scale-out impossible: the filter already has kMaxBloomLayers layers.
  kTooManyLayers,
  // Create() was given options outside their documented ranges (a counting
  // filter's counter width other than 4 or 8, a cuckoo bucket size of 0, ...).
  // The server validates options first, with RedisBloom's texts, so seeing
  // this is a server bug; map it to a generic "ERR could not create filter".
  // (ScalableBloomFilter predates it and reports bad options as
  // kFilterMemoryLimit.)
  kInvalidOptions,
  // A cuckoo filter needs a new sub-filter but already has max_expansions of
  // them (RedisBloom: "Maximum expansions reached").
  kMaxExpansions,
  // A cuckoo insert found the item's two buckets in the newest sub-filter
  // full of copies of its own fingerprint: a new sub-filter would hold only
  // 2 x bucket_size more copies and be refused the same way after them, so
  // copies of one item grew a filter to its memory cap (RedisBloom answers
  // such an add by growing; see CuckooFilter's class comment).
  kCopiesFull,
  // Scale-out impossible: the next layer's error rate (the newest one's x
  // the filter's tightening ratio) would not stay above kMinLayerErrorRate
  // (valkey-bloom: "ERR false positive degrades to 0 on scale out").
  kErrorRateUnderflow,
};

// A short lower-case name for logs and test messages, e.g. "filter memory limit".
// Not a client-visible error text.
const char* ToString(FilterStatus status);

}  // namespace bloomgate
