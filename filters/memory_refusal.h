#pragma once

#include <cstdint>

#include "filters/filter_status.h"

namespace bloomgate {

// Which memory limit refused a creation or a growth, with its figures: what
// the caller needs to tell a client how far over it was (server/commands/
// errors.h's InsufficientMemory makes the text). Filled where the check runs
// (internal::CheckAndReserve in memory_reservation.h, or a failed
// allocation); a filter's Create / growth takes an optional pointer to one.
struct MemoryRefusal {
  enum class Limit : uint8_t {
    kNone,        // nothing was refused for memory
    kFilterCap,   // FilterLimits::max_filter_bytes (max-filter-memory)
    kBudget,      // the shared MemoryBudget (maxmemory)
    kAllocation,  // the allocator itself failed (or the size is absurd)
  };
  Limit limit = Limit::kNone;
  // kFilterCap: the whole filter's size it would have had; kBudget and
  // kAllocation: the bytes asked for at once (all of a new filter, one layer
  // or sub-filter of a growing one).
  uint64_t needed_bytes = 0;
  // kFilterCap: max_filter_bytes; kBudget: the budget's limit.
  uint64_t limit_bytes = 0;
  // kBudget: what the budget held when it refused (free = limit - used).
  uint64_t used_bytes = 0;

  // The status a filter reports for this refusal.
  FilterStatus status() const {
    return limit == Limit::kFilterCap ? FilterStatus::kFilterMemoryLimit
                                      : FilterStatus::kOutOfMemory;
  }
};

}  // namespace bloomgate
