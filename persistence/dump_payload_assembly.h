// One of our DUMP payloads (dump_payload.h) put together from pieces that
// arrive in order, as RESTORE-CHUNK receives a payload too big for one
// RESTORE argument. Nothing but the filter itself is held: the framing is
// parsed once its bytes are in (at most kDumpPayloadFixedBytes plus the
// 1 MiB header cap), the filter's loader is begun then, charged to the
// memory budget and checked against the per-filter limit, and every later
// byte goes straight into it while the checksum runs along. Destroying an
// unfinished assembly releases all of it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "filters/any_filter.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "persistence/dump_payload.h"
#include "persistence/filter_codec.h"

struct XXH64_state_s;  // xxhash.h's streaming state

namespace bloomgate {

class DumpPayloadAssembly {
 public:
  DumpPayloadAssembly(const FilterLimits& limits, MemoryBudget* budget);
  ~DumpPayloadAssembly();
  DumpPayloadAssembly(const DumpPayloadAssembly&) = delete;
  DumpPayloadAssembly& operator=(const DumpPayloadAssembly&) = delete;

  // The next bytes of the payload. After an error the assembly is spent:
  // the caller drops it.
  DumpPayloadError Append(std::string_view bytes, std::string* why = nullptr);
  // Bytes appended so far: the offset the next piece must start at.
  uint64_t received() const { return received_; }
  // Every byte of the payload is in, the checksum's last one included.
  bool complete() const;
  // Checks the checksum and finishes the filter into *out.
  DumpPayloadError Finish(AnyFilter* out, std::string* why = nullptr);

 private:
  DumpPayloadError TakeFraming(std::string* why);

  FilterLimits limits_;
  MemoryBudget* budget_;
  std::string framing_;  // the bytes before the payload, until they are all in
  std::unique_ptr<FilterLoader> loader_;  // set once the framing is in
  uint64_t framing_bytes_ = 0;             // its length, once known
  uint64_t payload_bytes_ = 0;
  uint64_t received_ = 0;
  std::string checksum_;  // the last 8 bytes
  ::XXH64_state_s* hash_ = nullptr;
};

}  // namespace bloomgate
