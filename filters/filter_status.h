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
};

// A short lower-case name for logs and test messages, e.g. "filter memory limit".
// Not a client-visible error text.
const char* ToString(FilterStatus status);

}  // namespace bloomgate
