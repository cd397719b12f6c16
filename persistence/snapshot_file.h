// Snapshot files: every key of the keyspace, its expiry and its filter, in
// the versioned, checksummed format drawn in persistence/FORMAT.md.
//
// Writing is atomic: the file is written as a temporary in the same
// directory, fsynced, renamed over the old snapshot, and the directory is
// fsynced. A failure at any step removes the temporary, leaves the previous
// snapshot untouched and returns an error naming the step.
//
// Reading verifies everything (magic, version, every header and payload
// checksum, the trailer, record count, every filter parameter) and builds
// the filters; on any failure it returns an error naming the file, the
// record (index and key) and, for a checksum, the expected and actual
// values, and *records is left empty: a damaged file is never half-loaded.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "filters/any_filter.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "persistence/file_system.h"
#include "persistence/filter_codec.h"
#include "persistence/status.h"

namespace bloomgate {

// Version 2: filter headers carry each filter's own hash seed (layout
// version 2, codec/header_fields.h), and FilterKind 4 (count-min sketch) and
// 5 (top-k) may appear. The file's own bytes are laid out as in version 1,
// which is still read (its filters hash with seed 0, and it has no kind 4/5).
// Version 3 adds FilterKind 6 (windowed Bloom), version 4 FilterKind 7
// (windowed counting Bloom), version 5 FilterKind 8 (t-digest); their bytes are
// laid out as in version 2.
inline constexpr uint32_t kSnapshotFormatVersion = 5;
inline constexpr uint32_t kOldestSnapshotFormatVersion = 1;

// The longest key name a snapshot holds: Redis's proto-max-bulk-len default
// (512 MiB), the longest argument a client can send. Checked before the
// name's bytes are allocated, on write and on read.
inline constexpr uint64_t kMaxSnapshotKeyBytes = uint64_t{512} << 20;

// The longest FilterHeader::bytes a snapshot holds. Each codec states its
// longest (FamilyCodec::max_header_bytes; codec_registry_test checks every
// one fits): today the largest is a cuckoo filter with
// kMaxCuckooMaxExpansions sub-filters, 56 + 8 x 65,536 = 524,344 bytes; a
// 64-layer Bloom filter needs 2,588. 1 MiB leaves a 2x margin and still
// bounds what a damaged length can make the reader allocate.
inline constexpr uint64_t kMaxSnapshotFilterHeaderBytes = uint64_t{1} << 20;

// One key to write. `filter` must stay alive for the call; a counting or
// cuckoo filter must not be written meanwhile (pass a CloneFilter copy).
struct SnapshotRecordSource {
  std::string name;
  int64_t expire_at_ms = 0;  // 0 = no deadline; else Unix ms
  const AnyFilter* filter = nullptr;
  // DescribeFilter(*filter) as taken earlier, or nullopt to describe the
  // filter when it is written. A scalable Bloom filter written while adds
  // continue is described at the snapshot's cut, so its item counts (and
  // layer count) are exactly those of the cut, whatever bits later adds set.
  std::optional<FilterHeader> header;
};

struct SnapshotMeta {
  int64_t created_ms = 0;       // Unix ms
  // The append-only log generation that continues this snapshot: start-up
  // replays logs of this generation and later (FORMAT.md, "Snapshot + log").
  uint64_t log_generation = 0;
};

struct SnapshotInfo {
  uint32_t format_version = 0;
  SnapshotMeta meta;
  uint64_t records = 0;
  uint64_t file_bytes = 0;
};

struct LoadedRecord {
  std::string name;
  int64_t expire_at_ms = 0;
  AnyFilter filter;
};

// Writes dir/filename atomically (see above). *bytes_written (may be null):
// the file's size on success, 0 on any error.
//
// The temporary is dir/<filename>.tmp.<pid>.<counter> (IsSnapshotTempFile).
// A failure of the final directory fsync comes after the rename: the new
// snapshot is then already in place under `filename` and no temporary is
// left, but a crash could still bring the old one back, so the error means
// "not known to be durable" and the logs the old snapshot needs must stay.
// Refuses, before creating any file, a null filter, a negative expiry, a
// name longer than kMaxSnapshotKeyBytes and a name given twice, so it never
// writes a file that ReadSnapshot would refuse.
Status WriteSnapshot(FileSystem& fs, const std::string& dir, const std::string& filename,
                     const SnapshotMeta& meta, std::span<const SnapshotRecordSource> records,
                     uint64_t* bytes_written);

// Reads and verifies `path`, building each filter with `limits` and
// reserving its memory in `budget` (may be null). `info` may be null. On
// error *info is reset too. Records come in file order; keys whose
// expire_at_ms has passed are returned like any other (the caller decides).
Status ReadSnapshot(FileSystem& fs, const std::string& path, const FilterLimits& limits,
                    MemoryBudget* budget, SnapshotInfo* info, std::vector<LoadedRecord>* records);

// True if `name` (a directory entry, not a path) is a temporary that
// WriteSnapshot of `filename` creates. Only a crash mid-write leaves one
// behind; start-up may remove them, but never while a save may be running.
bool IsSnapshotTempFile(std::string_view filename, std::string_view name);

}  // namespace bloomgate
