// The RDB file reader behind `bloomgate import-rdb` (persistence/rdb_file.h)
// over any bytes: it must refuse or read every key without a crash, UB, leak
// or unbounded allocation, keep nothing reserved for a refused value, and
// every RedisBloom filter it decodes must survive our own snapshot round
// trip (what import-rdb --output writes).
//
// Input: byte 0 bit 0 set = leave the bytes as they are; clear = recompute
// the trailing CRC-64 first, so the parse behind the checksum is reached.
// The rest is the file.

#include <cstddef>
#include <cstdint>
#include <string>

#include "persistence/crc64_jones.h"
#include "persistence/rdb_file.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bloomgate;
  using namespace bloomgate::fuzz;
  if (size < 1) return 0;
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0 && file.size() >= 8) {
    file.resize(file.size() - 8);
    const uint64_t crc = Crc64Jones(0, file);
    for (int i = 0; i < 8; ++i) file.push_back(static_cast<char>(crc >> (8 * i)));
  }
  RdbFile rdb;
  if (!RdbFile::Open(file, &rdb).ok()) return 0;
  MemoryBudget budget(kFuzzBudgetBytes);
  for (;;) {
    RdbKey key;
    AnyFilter filter;
    Status status = Status::Ok();
    if (!rdb.Next(FuzzLimits(), &budget, &key, &filter, &status)) break;
    const bool decoded = std::visit([](const auto& f) { return f != nullptr; }, filter);
    FUZZ_CHECK(decoded == (key.redisbloom && key.decode_error == DumpPayloadError::kNone),
               "key %s: a filter without a decode, or a decode without a filter",
               key.name.c_str());
    if (decoded) CheckSnapshotRoundTrip(filter);
  }
  FUZZ_CHECK(budget.used() == 0, "%llu bytes stayed reserved after every filter was freed",
             static_cast<unsigned long long>(budget.used()));
  return 0;
}
