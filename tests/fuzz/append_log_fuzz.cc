// The log replayer's reader over any bytes: ReadAppendLog must refuse damage
// with an error or cut a torn tail (no crash, UB, leak or unbounded
// allocation). What it accepts must be usable: every filter record's header
// and payload go through FilterLoader as start-up replay does, and a filter
// that loads must survive a snapshot round trip, before and after an info,
// an exists and an add (ExerciseFilter). A log of command records
// only must re-encode to exactly the bytes that were read.
//
// Input: byte 0 bit 0 set = bytes as they are, clear = first rewrite every
// checksum (so mutations reach the record decoder); bit 1 = allow a torn
// tail. The rest is the file.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "persistence/append_log.h"
#include "persistence/filter_codec.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bloomgate;
  using namespace bloomgate::fuzz;
  if (size < 1) return 0;
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) FixAppendLogChecksums(&file);
  const bool allow_torn_tail = (data[0] & 2) != 0;

  MemoryFileSystem fs;
  fs.Put("/d/appendonly.bglog.1", file);
  MemoryBudget budget(kFuzzBudgetBytes);
  std::string reencoded;
  bool commands_only = true;
  const auto visit = [&](const LogRecord& record) -> Status {
    if (record.type == LogRecordType::kCommand) {
      std::vector<std::string_view> args(record.args.begin(), record.args.end());
      EncodeCommandRecord(record.time_ms, args, &reencoded);
      return Status::Ok();
    }
    FUZZ_CHECK(record.type == LogRecordType::kFilter, "record type %d",
               static_cast<int>(record.type));
    commands_only = false;
    FUZZ_CHECK(!record.has_payload || record.payload.size() == record.header.payload_bytes,
               "payload of %zu bytes, header says %llu", record.payload.size(),
               static_cast<unsigned long long>(record.header.payload_bytes));
    std::unique_ptr<FilterLoader> loader;
    if (!FilterLoader::Begin(record.header.kind, record.header.bytes, record.header.payload_bytes,
                             FuzzLimits(), &budget, &loader)
             .ok()) {
      return Status::Ok();
    }
    if (record.has_payload && !record.payload.empty()) {
      const Status wrote = loader->Write(
          0, reinterpret_cast<const uint8_t*>(record.payload.data()), record.payload.size());
      FUZZ_CHECK(wrote.ok(), "a payload of exactly payload_bytes did not fit: %s",
                 wrote.message().c_str());
    }
    AnyFilter filter;
    if (loader->Finish(&filter).ok()) {
      CheckSnapshotRoundTrip(filter);
      ExerciseFilter(&filter);  // what the log's next records or a client run on it
      CheckSnapshotRoundTrip(filter);
    }
    return Status::Ok();
  };
  LogReadResult result;
  const Status read = ReadAppendLog(fs, "/d/appendonly.bglog.1", allow_torn_tail, visit, &result);
  FUZZ_CHECK(result.valid_bytes <= file.size(), "valid_bytes %llu past the end %zu",
             static_cast<unsigned long long>(result.valid_bytes), file.size());
  if (read.ok()) {
    FUZZ_CHECK(allow_torn_tail || !result.torn_tail, "a torn tail cut without permission");
    FUZZ_CHECK(result.torn_tail || result.valid_bytes == file.size(),
               "accepted with %llu of %zu bytes used and no torn tail",
               static_cast<unsigned long long>(result.valid_bytes), file.size());
  }
  if (commands_only && result.records > 0 && result.valid_bytes >= 36) {
    FUZZ_CHECK(file.compare(36, result.valid_bytes - 36, reencoded) == 0,
               "%llu command records do not re-encode to the bytes read",
               static_cast<unsigned long long>(result.records));
  }
  return 0;
}
