// The append-only log: every acknowledged write, as a checksummed record,
// appended before its reply is sent (format in persistence/FORMAT.md).
//
// Files are numbered by generation: <base>.<generation>, e.g.
// "appendonly.bglog.7". A snapshot names the generation that continues it,
// so start-up = load the snapshot, then replay every log of that generation
// and later, in order. Rotation (a new generation) happens while the server
// holds its global write barrier, so each write is in exactly one of
// "before the snapshot" and "in a log it names".
//
// Records:
//   kCommand  a command's arguments, with the Unix ms time it ran (replay
//             runs it at that time, so EXPIRE and lazy expiry replay
//             exactly): the command as received, or an effect in command
//             form (server/durability/journal.h) where re-running it could come out
//             differently;
//   kFilter   a whole filter stored under a key: a creation (header only, an
//             all-zero payload) or a LOADCHUNK'd filter (header + payload);
//   kUnit     records that take effect together (a transaction): complete
//             kCommand and kFilter records inside one record, so a torn tail
//             never leaves half of them (format version 2).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "filters/any_filter.h"
#include "persistence/file_system.h"
#include "persistence/filter_codec.h"
#include "persistence/status.h"

namespace bloomgate {

// The version this build writes, and the oldest it reads (append_log.cc
// says what each version added).
extern const uint32_t kAppendLogFormatVersion;
extern const uint32_t kOldestReadableLogFormatVersion;

enum class LogRecordType : uint8_t { kCommand = 1, kFilter = 2, kUnit = 3 };

struct LogRecord {
  LogRecordType type = LogRecordType::kCommand;
  int64_t time_ms = 0;
  std::vector<std::string> args;  // kCommand
  std::string key;                // kFilter
  FilterHeader header;            // kFilter
  bool has_payload = false;       // kFilter: false = all-zero payload
  std::string payload;            // kFilter with has_payload: header.payload_bytes bytes
  std::vector<LogRecord> members;  // kUnit: its records, in order (never a unit)
};

// Encoders: append one complete record (framing and checksum included) to *out.
void EncodeCommandRecord(int64_t time_ms, std::span<const std::string_view> args,
                         std::string* out);
// `payload_source` null: a creation record with no payload; else the
// payload is copied from it with CopyPayload(*payload_source, header, ...).
void EncodeFilterRecord(int64_t time_ms, std::string_view key, const FilterHeader& header,
                        const AnyFilter* payload_source, std::string* out);

// A unit of `members`: complete encoded kCommand/kFilter records, back to
// back (`count` of them, at least 2). Appends nothing if the unit's body
// would exceed kMaxLogRecordBodyBytes (check UnitRecordBodyBytes first).
void EncodeUnitRecord(int64_t time_ms, uint32_t count, std::string_view members,
                      std::string* out);
uint64_t UnitRecordBodyBytes(uint64_t members_bytes);
// The framed records in `records` (back to back, each complete), in order:
// how a unit's members, or a batch of records, are split again.
std::vector<std::string_view> SplitFramedRecords(std::string_view records);

// The largest record body the format can hold: its length field is a u32,
// so 4 GiB - 1 bytes. A filter record carries the filter's whole payload, so
// only a filter of about 4 GiB (the default max_filter_bytes) can reach it.
inline constexpr uint64_t kMaxLogRecordBodyBytes = UINT32_MAX;

// Body bytes the matching Encode*Record call would produce. A caller checks
// the result against kMaxLogRecordBodyBytes first: a larger record can't be
// logged, so the encoders append NOTHING for it (the log never holds a record
// the reader would refuse), and the caller must refuse the write or save
// a snapshot instead.
uint64_t CommandRecordBodyBytes(std::span<const std::string_view> args);
uint64_t FilterRecordBodyBytes(std::string_view key, const FilterHeader& header,
                               bool has_payload);
// Bytes a record of `body_bytes` takes framed (what a log file grows by).
uint64_t FramedRecordBytes(uint64_t body_bytes);

// Decodes one complete framed record (an Encode*Record's output, or a
// stream's record): "" on success, else what is wrong. `framed` must hold
// exactly one record.
std::string DecodeLogRecord(std::string_view framed, LogRecord* record);

std::string LogFileName(std::string_view base, uint64_t generation);
// Generations of the files named <base>.<number> in `dir`, ascending.
Status ListLogGenerations(FileSystem& fs, const std::string& dir, std::string_view base,
                          std::vector<uint64_t>* generations);

// Appends to one log file. Append, Flush and Sync may be called from any
// threads at once.
class AppendLogWriter {
 public:
  // Creates dir/LogFileName(base, generation) with its file header, fsyncs
  // it and the directory.
  static Status Create(FileSystem* fs, const std::string& dir, std::string_view base,
                       uint64_t generation, int64_t now_ms, std::unique_ptr<AppendLogWriter>* out);
  ~AppendLogWriter();

  // Queues an encoded record (from Encode*Record); returns the sequence
  // number that Flush must reach for it to be written.
  uint64_t Append(std::string_view encoded_record);
  // Ensures every record up to `sequence` has been written to the file
  // (write(2)), and with `sync` also fdatasync'd. Group commit: one caller
  // writes (and syncs) everything queued so far while others wait for it.
  // After the first failure every later call fails with the same error.
  Status Flush(uint64_t sequence, bool sync);
  // Writes whatever is queued and fdatasyncs (appendfsync everysec).
  Status Sync();
  // Flushes, syncs and closes; the writer accepts nothing afterwards.
  Status Close();

  uint64_t generation() const { return generation_; }
  const std::string& path() const { return path_; }
  // File bytes written so far (header included), for INFO.
  uint64_t written_bytes() const;

 private:
  AppendLogWriter(FileSystem* fs, std::string path, uint64_t generation,
                  std::unique_ptr<WritableFile> file, uint64_t header_bytes);

  FileSystem* const fs_;
  const std::string path_;
  const uint64_t generation_;
  std::unique_ptr<WritableFile> file_;

  std::mutex mutex_;                 // guards everything below
  std::condition_variable flushed_;  // signalled when a flush ends
  std::string pending_;              // queued, not yet written
  uint64_t appended_ = 0;            // sequence of the last queued byte
  uint64_t written_ = 0;             // bytes written to the file
  uint64_t synced_ = 0;              // bytes known durable
  bool flushing_ = false;            // one thread is writing
  Status error_ = Status::Ok();      // latched first failure
  bool closed_ = false;              // Close ran: nothing more is queued or written
  // A copy of written_ for written_bytes(), which is const and so cannot lock
  // mutex_. Stored under mutex_, read without it, both relaxed: INFO wants
  // a recent count, and nothing else is published through this value.
  std::atomic<uint64_t> written_bytes_seen_{0};
};

struct LogReadResult {
  uint64_t records = 0;
  uint64_t valid_bytes = 0;  // file offset just past the last good record
  bool torn_tail = false;    // bytes after valid_bytes were cut off as a torn final record
  // The framed bytes of the records visited (valid_bytes less the file
  // header): what they took in the journal's stream, whose records are the
  // log's byte for byte.
  uint64_t record_bytes = 0;
};

// Reads `path`, calling `visit` for each good record in order (a visit
// error stops the read and is returned). A damaged FINAL record (its length
// runs past the end of the file, or its checksum fails and nothing but
// zeros follows it) is a torn write: with `allow_torn_tail` it is reported
// in result->torn_tail and not visited; otherwise, and for damage anywhere
// else, the read fails with the file, the offset and expected/actual
// checksums.
// The exact byte layout and the precise torn-tail rule are drawn at the top
// of append_log.cc. On failure *result still holds the records visited and,
// in valid_bytes, the offset where the failing record starts.
Status ReadAppendLog(FileSystem& fs, const std::string& path, bool allow_torn_tail,
                     const std::function<Status(const LogRecord&)>& visit,
                     LogReadResult* result);

}  // namespace bloomgate
