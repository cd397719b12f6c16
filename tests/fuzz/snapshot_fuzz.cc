// The snapshot loader over any bytes: ReadSnapshot must refuse damage with an
// error (no crash, UB, leak or unbounded allocation), and whatever it
// accepts must be writable again (WriteSnapshot) and load back the same, and
// take an info, an exists and an add (ExerciseFilter) and still save.
//
// Input: byte 0 bit 0 set = use the bytes as they are; clear (the default) =
// first rewrite every checksum the framing lets us find, so mutations reach
// the record and filter decoders instead of stopping at a checksum. The rest
// is the file.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "persistence/filter_codec.h"
#include "persistence/snapshot_file.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bloomgate;
  using namespace bloomgate::fuzz;
  if (size < 1) return 0;
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) FixSnapshotChecksums(&file);

  MemoryFileSystem fs;
  fs.Put("/d/dump.bgs", std::move(file));
  MemoryBudget budget(kFuzzBudgetBytes);
  SnapshotInfo info;
  std::vector<LoadedRecord> records;
  const Status read = ReadSnapshot(fs, "/d/dump.bgs", FuzzLimits(), &budget, &info, &records);
  if (!read.ok()) {
    FUZZ_CHECK(records.empty(), "a refused snapshot left %zu records", records.size());
    FUZZ_CHECK(!read.message().empty(), "a refusal without a message");
    return 0;
  }
  FUZZ_CHECK(info.records == records.size(), "info says %llu records, got %zu",
             static_cast<unsigned long long>(info.records), records.size());

  // Save everything that loaded, as the server's next snapshot would, and
  // load it back: it must come back exactly.
  std::vector<SnapshotRecordSource> sources;
  for (const LoadedRecord& record : records) {
    sources.push_back(SnapshotRecordSource{
        .name = record.name, .expire_at_ms = record.expire_at_ms, .filter = &record.filter});
  }
  MemoryFileSystem out;
  uint64_t bytes = 0;
  const Status written = WriteSnapshot(out, "/e", "dump.bgs", info.meta, sources, &bytes);
  FUZZ_CHECK(written.ok(), "WriteSnapshot refused what ReadSnapshot accepted: %s",
             written.message().c_str());
  MemoryBudget budget_again(kFuzzBudgetBytes);
  std::vector<LoadedRecord> again;
  const Status reread =
      ReadSnapshot(out, "/e/dump.bgs", FuzzLimits(), &budget_again, nullptr, &again);
  FUZZ_CHECK(reread.ok(), "ReadSnapshot refused its own rewrite: %s", reread.message().c_str());
  FUZZ_CHECK(again.size() == records.size(), "%zu records, then %zu", records.size(),
             again.size());
  for (size_t i = 0; i < records.size(); ++i) {
    FUZZ_CHECK(again[i].name == records[i].name &&
                   again[i].expire_at_ms == records[i].expire_at_ms,
               "record %zu changed name or expiry", i);
    const FilterHeader a = DescribeFilter(records[i].filter);
    const FilterHeader b = DescribeFilter(again[i].filter);
    FUZZ_CHECK(a.kind == b.kind && a.bytes == b.bytes && a.payload_bytes == b.payload_bytes,
               "record %zu: header changed", i);
    FUZZ_CHECK(PayloadOf(records[i].filter, a) == PayloadOf(again[i].filter, b),
               "record %zu: payload changed", i);
  }
  // What clients run on the loaded keys: info, exists and an add on each,
  // and the result still saves and loads.
  for (LoadedRecord& record : again) {
    ExerciseFilter(&record.filter);
    CheckSnapshotRoundTrip(record.filter, record.expire_at_ms);
  }
  return 0;
}
