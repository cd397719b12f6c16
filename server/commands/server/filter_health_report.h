// Filter health for operators (filters/filter_health.h has the measures):
//   BLOOMGATE.HEALTH key    per layer: cells, cells set, fill ratio, the FP
//                           rate that fill implies now and the one it was
//                           sized for; counting: saturated counters; cuckoo:
//                           the load of each sub-filter.
//   INFO filterhealth       totals over every filter, without reading bits.
//   a warning in the log    when a non-scaling filter reaches its capacity.
// BF.INFO / CF.INFO / CBF.INFO keep RedisBloom's replies unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace bloomgate {

class ServerContext;

// The "# Filterhealth" section of INFO (not in the default set: it walks
// every key, O(keys), though it reads no bits).
std::string FilterHealthSection(ServerContext& server);

// Called by a non-scaling family's add path with the item count before and
// after a command's adds: logs (rate-limited) the moment it reaches its
// capacity, after which adds are refused.
void NoteNonScalingFill(std::string_view command, std::string_view key, uint64_t items_before,
                        uint64_t items_after, uint64_t capacity);

}  // namespace bloomgate
