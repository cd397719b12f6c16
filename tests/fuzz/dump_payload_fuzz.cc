// RESTORE's payload decoder (persistence/dump_payload.h) over any bytes. It
// must refuse damage with an error (no crash, UB, leak or unbounded
// allocation), and "whatever RESTORE accepts can be saved and loaded back":
// a filter it decodes must encode to a payload that decodes to the same
// filter, and survive a snapshot round trip (WriteSnapshot + ReadSnapshot),
// before and after an info, an exists and an add (ExerciseFilter). A refusal
// there aborts.
//
// Input: byte 0 bit 0 set = leave the bytes as they are; clear = recompute
// the trailing checksum first, so the framing and codec checks behind it
// are reached: our XXH64, or with bit 1 set Redis's CRC-64 (a RedisBloom
// DUMP payload, redis_dump_payload.h). The rest is the payload.

#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "persistence/byte_io.h"
#include "persistence/crc64_jones.h"
#include "persistence/dump_payload.h"
#include "persistence/filter_codec.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bloomgate;
  using namespace bloomgate::fuzz;
  if (size < 1) return 0;
  std::string payload(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0 && payload.size() >= 8) {
    payload.resize(payload.size() - 8);
    const uint64_t sum = (data[0] & 2) != 0 ? Crc64Jones(0, payload)
                                            : XXH64(payload.data(), payload.size(), 0);
    ByteWriter(&payload).PutU64(sum);
  }
  MemoryBudget budget(kFuzzBudgetBytes);
  AnyFilter filter;
  if (DecodeDumpPayload(payload, FuzzLimits(), &budget, &filter) != DumpPayloadError::kNone) {
    FUZZ_CHECK(budget.used() == 0, "a refused payload kept %llu bytes reserved",
               static_cast<unsigned long long>(budget.used()));
    return 0;
  }
  const std::string again = EncodeDumpPayload(filter);
  AnyFilter reloaded;
  FUZZ_CHECK(DecodeDumpPayload(again, FuzzLimits(), &budget, &reloaded) == DumpPayloadError::kNone,
             "RESTORE refused the DUMP of a filter it accepted");
  const FilterHeader a = DescribeFilter(filter);
  const FilterHeader b = DescribeFilter(reloaded);
  FUZZ_CHECK(a.bytes == b.bytes && PayloadOf(filter, a) == PayloadOf(reloaded, b),
             "the DUMP of a restored filter restores as another filter");
  CheckSnapshotRoundTrip(filter);
  // What a client runs next on the restored key: info, exists, add.
  ExerciseFilter(&filter);
  CheckSnapshotRoundTrip(filter);
  return 0;
}
