// The append-only log's bytes, its writer (group commit) and its reader.
//
// File layout (every integer little-endian, written byte by byte):
//
//   file header, 36 bytes
//   +-----------------+---------+--------------+---------------+-------------+
//   | magic           | version | generation   | created_ms    | header_xxh3 |
//   | 8 bytes         | u32     | u64          | i64 (Unix ms) | u64         |
//   | "BGLOG\r\n\x1a"| = 2     | = the file   | when Create   | XXH3-64 of  |
//   |                 |         | name's number| ran           | bytes 0..27 |
//   +-----------------+---------+--------------+---------------+-------------+
//   then records, back to back, until the end of the file:
//
//   record = 18-byte frame + body
//   +---------+-------------+-----------+-------------+---------------------+
//   | marker  | body_length | body_xxh3 | frame_check | body                |
//   | u16     | u32         | u64       | u32         | body_length bytes   |
//   | 0xB6A7  | <= 2^32 - 1 | XXH3-64   | low 32 bits |                     |
//   |         |             | of body   | of XXH3-64  |                     |
//   |         |             |           | of bytes    |                     |
//   |         |             |           | 0..13       |                     |
//   +---------+-------------+-----------+-------------+---------------------+
//
//   body = type u8 | time_ms i64 (Unix ms, >= 0) | then, by type:
//     kCommand (1)  argc u32 | argc x (len u32 | bytes)
//     kFilter  (2)  key_len u32 | key | kind u8 (FilterKind) |
//                   header_len u32 | FilterHeader.bytes | payload_bytes u64 |
//                   has_payload u8 (0 or 1) | payload (payload_bytes bytes,
//                   only when has_payload = 1)
//     kUnit    (3)  count u32 (>= 2) | count complete records (frame + body),
//                   each kCommand or kFilter, back to back
//   A body must be used up exactly: trailing bytes are malformed.
//   Version 1 files are read too: they are version 2 without kUnit.
//
// A unit (a transaction, EXEC) is one record, so the torn-tail rule below
// drops all of it or none: a log never replays half of a transaction. Its
// members keep their own frames (checked again on decode) so the stream's
// subscribers can split a unit without re-encoding.
//
// Why each piece:
//  - The magic ends in CR LF 0x1A, so a text-mode copy that rewrites line
//    ends is caught at once, and it is not all zeros, so a zero-filled file
//    never passes for a log.
//  - The marker's bytes (A7 B6) are non-zero and not ASCII: a zero-filled
//    tail or a text fragment never looks like the start of a record.
//  - frame_check covers marker, length and body_xxh3. Without it a flipped
//    bit in a length could make a record in the MIDDLE of the log seem to run
//    past the end of the file, which looks exactly like a torn write and
//    would silently drop every later record. A length is trusted only once
//    frame_check passes, and only then is anything allocated for the body,
//    and even then the buffer grows only as bytes actually arrive.
//  - body_length is a u32, so one record holds at most 4 GiB - 1 bytes
//    (kMaxLogRecordBodyBytes); the encoders refuse anything larger.
//
// THE TORN-TAIL RULE. Let R be the offset of the first record that does not
// verify, and E the file size. That record is a torn write iff
//   (a) E - R < 18: the file ends inside its frame; or
//   (b) its frame fails (wrong marker or frame_check) and every byte in
//       [R + 18, E) is zero (or there are none); or
//   (c) its frame passes and R + 18 + body_length > E: the body runs past
//       the end of the file; or
//   (d) its frame passes, the body fits, body_xxh3 fails, and every byte in
//       [R + 18 + body_length, E) is zero (or there are none).
// Anything else is corruption, and so is a body that passes its checksum but
// does not decode (an unknown type, a bad length inside, trailing bytes): its
// bytes are exactly what was written, so no crash can explain it.
// Why this rule: a crash in the middle of an append leaves a prefix of the
// last write, and a file system that grows the size before the data lands
// (ext4 with delayed allocation) leaves zeros where the data should be, so a
// torn write always ends in EOF or zeros. Damage in the middle of the log is
// followed by more records, and no record is all zeros (the marker is not),
// so it is always reported. The price: a flipped byte in the FINAL record's
// body is indistinguishable from a torn write and is dropped with it.
// A group-commit write holds many records; a crash can tear several, and
// the rule, applied to the first, covers the rest only if they are zeros.
//
// A torn FILE HEADER (the file is shorter than 36 bytes, or all zeros) means
// the process died inside AppendLogWriter::Create: Create fsyncs the header
// and the directory before it returns, so no record is ever appended to a
// file whose header is not durable, and such a file holds no records.
#include "persistence/append_log.h"

#include <xxhash.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>
#include <utility>

#include "persistence/byte_io.h"
#include "persistence/codec/codec_registry.h"

namespace bloomgate {

// 2 added kUnit records; version 1 files (no units) are still read.
const uint32_t kAppendLogFormatVersion = 2;
const uint32_t kOldestReadableLogFormatVersion = 1;

namespace {

constexpr std::string_view kFileMagic{"BGLOG\r\n\x1a", 8};
// magic 8 + version 4 + generation 8 + created_ms 8, then the checksum 8.
constexpr size_t kFileHeaderCheckedBytes = 28;
constexpr size_t kFileHeaderBytes = kFileHeaderCheckedBytes + 8;

constexpr uint16_t kRecordMarker = 0xB6A7;
// marker 2 + body_length 4 + body_xxh3 8, then frame_check 4.
constexpr size_t kFrameCheckedBytes = 14;
constexpr size_t kFrameBytes = kFrameCheckedBytes + 4;

// type 1 + time_ms 8.
constexpr uint64_t kBodyPrefixBytes = 9;

// The reader asks the file for 1 MiB at a time: 1,024 read(2) calls per GiB
// of log, while the memory it holds beyond the current record stays at 1 MiB.
constexpr size_t kReadChunkBytes = size_t{1} << 20;

// A flushed batch's buffer is handed back to the queue for reuse when it is
// at most this big, so a steady stream of small records does not allocate
// on every flush, while one huge filter record does not pin its memory.
constexpr size_t kReusedBufferBytes = size_t{1} << 20;

uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

std::string Hex(uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

uint64_t Checksum(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

// The frame's own check: the low 32 bits of XXH3-64 of its first 14 bytes.
uint32_t FrameCheck(std::string_view frame_checked_bytes) {
  return static_cast<uint32_t>(Checksum(frame_checked_bytes));
}

// `text` is a generation exactly as LogFileName writes it: decimal digits,
// no sign, no leading zeros, no overflow.
bool ParseGeneration(std::string_view text, uint64_t* generation) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || ptr != end) return false;
  if (std::to_string(value) != text) return false;  // rejects "007", "+7"
  *generation = value;
  return true;
}

// The generation in a path's file name ("dir/appendonly.bglog.7" -> 7);
// false when the name does not end in ".<number>".
bool GenerationFromPath(std::string_view path, uint64_t* generation) {
  const size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return false;
  return ParseGeneration(name.substr(dot + 1), generation);
}

// Fills in the 18-byte frame placeholder at out[start, start + 18) for the
// body that follows it, which runs to the end of *out.
void SealFrame(size_t start, std::string* out) {
  const std::string_view body(out->data() + start + kFrameBytes,
                              out->size() - start - kFrameBytes);
  std::string frame;
  frame.reserve(kFrameBytes);
  ByteWriter writer(&frame);
  writer.PutU16(kRecordMarker);
  writer.PutU32(static_cast<uint32_t>(body.size()));
  writer.PutU64(Checksum(body));
  writer.PutU32(FrameCheck(frame));
  out->replace(start, kFrameBytes, frame);
}

void EncodeFileHeader(uint64_t generation, int64_t created_ms, std::string* out) {
  ByteWriter writer(out);
  const size_t start = out->size();
  writer.PutBytes(kFileMagic);
  writer.PutU32(kAppendLogFormatVersion);
  writer.PutU64(generation);
  writer.PutI64(created_ms);
  writer.PutU64(Checksum(std::string_view(*out).substr(start, kFileHeaderCheckedBytes)));
}

bool AllZero(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
}

// Streams a file in pieces, holding at most one record plus one read.
class LogStream {
 public:
  explicit LogStream(SequentialFile* file) : file_(file) {}

  // Buffers at least `n` bytes past the cursor; fewer only at the end of the
  // file. The buffer grows only by bytes actually read, never to `n` up
  // front, so a damaged length cannot make it allocate.
  Status Fill(uint64_t n) {
    while (buffered() < n && !eof_) {
      if (pos_ > 0) {
        buffer_.erase(0, pos_);
        pos_ = 0;
      }
      Status status = file_->Read(kReadChunkBytes, &chunk_);
      if (!status.ok()) return status;
      if (chunk_.empty()) {
        eof_ = true;
        break;
      }
      buffer_.append(chunk_);
    }
    return Status::Ok();
  }

  uint64_t buffered() const { return buffer_.size() - pos_; }
  std::string_view view() const { return std::string_view(buffer_).substr(pos_); }
  void Skip(size_t n) { pos_ += n; }

  // Whether every byte from `skip` bytes past the cursor to the end of the
  // file is zero. Reads to the end; the stream is used up afterwards.
  // `skip` must be at most buffered().
  Status RestIsZero(size_t skip, bool* zero) {
    *zero = AllZero(view().substr(skip));
    buffer_.clear();
    pos_ = 0;
    while (*zero && !eof_) {
      Status status = file_->Read(kReadChunkBytes, &chunk_);
      if (!status.ok()) return status;
      if (chunk_.empty()) eof_ = true;
      *zero = AllZero(chunk_);
    }
    return Status::Ok();
  }

 private:
  SequentialFile* const file_;
  std::string buffer_;  // bytes read and not yet consumed start at pos_
  size_t pos_ = 0;
  std::string chunk_;  // one read's bytes, reused
  bool eof_ = false;
};

// A record's 18-byte frame, as read (not yet checked).
struct Frame {
  uint16_t marker = 0;
  uint32_t body_length = 0;
  uint64_t body_checksum = 0;
  uint32_t frame_check = 0;
};

// `bytes` holds at least kFrameBytes.
Frame ReadFrame(std::string_view bytes) {
  Frame frame;
  ByteReader reader(bytes.substr(0, kFrameBytes));
  reader.GetU16(&frame.marker);
  reader.GetU32(&frame.body_length);
  reader.GetU64(&frame.body_checksum);
  reader.GetU32(&frame.frame_check);
  return frame;
}

std::string DecodeFramed(std::string_view framed, LogRecord* record);

// Decodes a verified body into *record. Returns "" or what is wrong.
std::string DecodeBody(std::string_view body, LogRecord* record) {
  ByteReader reader(body);
  uint8_t type = 0;
  reader.GetU8(&type);
  reader.GetI64(&record->time_ms);
  if (reader.failed()) return "body too short for its type and time";
  // A record's time is the wall clock (Unix ms) when it ran, which a live
  // server never reads below 0; replay runs its command at that time
  // (EXPIRE adds it to a relative deadline), so a negative one is refused
  // like the snapshot's negative expire_at_ms.
  if (record->time_ms < 0) return "negative time_ms " + std::to_string(record->time_ms);
  if (type == static_cast<uint8_t>(LogRecordType::kCommand)) {
    record->type = LogRecordType::kCommand;
    record->members.clear();
    record->key.clear();
    record->header = FilterHeader{};
    record->has_payload = false;
    record->payload.clear();
    record->args.clear();
    uint32_t argc = 0;
    if (!reader.GetU32(&argc)) return "body too short for its argument count";
    // Every argument takes at least its 4-byte length: refuse a count the
    // body cannot hold before reading any of them.
    if (argc > reader.remaining() / 4) {
      return "argument count " + std::to_string(argc) + " does not fit in the " +
             std::to_string(reader.remaining()) + " bytes left";
    }
    for (uint32_t i = 0; i < argc; ++i) {
      std::string_view arg;
      if (!reader.GetString(&arg)) {
        return "argument " + std::to_string(i) + " runs past the end of the body";
      }
      record->args.emplace_back(arg);
    }
  } else if (type == static_cast<uint8_t>(LogRecordType::kFilter)) {
    record->type = LogRecordType::kFilter;
    record->members.clear();
    record->args.clear();
    std::string_view key;
    uint8_t kind = 0;
    std::string_view header_bytes;
    uint64_t payload_bytes = 0;
    uint8_t has_payload = 0;
    reader.GetString(&key);
    reader.GetU8(&kind);
    reader.GetString(&header_bytes);
    reader.GetU64(&payload_bytes);
    reader.GetU8(&has_payload);
    if (reader.failed()) return "filter fields run past the end of the body";
    if (!IsKnownFilterKind(kind)) {
      return "unknown filter kind " + std::to_string(kind);
    }
    if (has_payload > 1) return "has_payload is " + std::to_string(has_payload) + ", not 0 or 1";
    record->key.assign(key);
    record->header.kind = static_cast<FilterKind>(kind);
    record->header.bytes.assign(header_bytes);
    record->header.payload_bytes = payload_bytes;
    record->has_payload = has_payload == 1;
    record->payload.clear();
    if (record->has_payload) {
      if (payload_bytes != reader.remaining()) {
        return "payload of " + std::to_string(payload_bytes) + " bytes declared, " +
               std::to_string(reader.remaining()) + " present";
      }
      std::string_view payload;
      reader.GetBytes(payload_bytes, &payload);
      record->payload.assign(payload);
    }
  } else if (type == static_cast<uint8_t>(LogRecordType::kUnit)) {
    record->type = LogRecordType::kUnit;
    record->args.clear();
    record->key.clear();
    record->payload.clear();
    record->has_payload = false;
    record->members.clear();
    uint32_t count = 0;
    if (!reader.GetU32(&count)) return "body too short for its record count";
    if (count < 2) return "a unit of " + std::to_string(count) + " records";
    std::string_view rest;
    reader.GetBytes(reader.remaining(), &rest);
    const std::vector<std::string_view> framed = SplitFramedRecords(rest);
    size_t used = 0;
    for (std::string_view member : framed) used += member.size();
    if (used != rest.size() || framed.size() != count) {
      return "a unit declaring " + std::to_string(count) + " records holds " +
             std::to_string(framed.size()) + " and " + std::to_string(rest.size() - used) +
             " stray bytes";
    }
    record->members.resize(count);
    for (uint32_t i = 0; i < count; ++i) {
      const std::string why = DecodeFramed(framed[i], &record->members[i]);
      if (!why.empty()) return "unit member " + std::to_string(i) + ": " + why;
      if (record->members[i].type == LogRecordType::kUnit) {
        return "unit member " + std::to_string(i) + " is a unit";
      }
    }
  } else {
    return "unknown record type " + std::to_string(type);
  }
  if (reader.remaining() != 0) {
    return std::to_string(reader.remaining()) + " unexpected bytes after the record's fields";
  }
  return "";
}

// Decodes one complete framed record, checking its frame and checksum.
std::string DecodeFramed(std::string_view framed, LogRecord* record) {
  if (framed.size() < kFrameBytes) return "shorter than a record's frame";
  const Frame frame = ReadFrame(framed);
  if (frame.marker != kRecordMarker ||
      frame.frame_check != FrameCheck(framed.substr(0, kFrameCheckedBytes))) {
    return "bad record frame";
  }
  if (framed.size() - kFrameBytes != frame.body_length) {
    return "body length does not match the frame";
  }
  const std::string_view body = framed.substr(kFrameBytes);
  if (Checksum(body) != frame.body_checksum) return "body checksum mismatch";
  return DecodeBody(body, record);
}

// One pass over one log file.
class LogFileReader {
 public:
  LogFileReader(const std::string& path, bool allow_torn_tail, SequentialFile* file,
                LogReadResult* result)
      : path_(path), allow_torn_tail_(allow_torn_tail), stream_(file), result_(result) {}

  // Reads and checks the file header. *empty: the header is torn (see the
  // top of the file) and allowed, so there is nothing more to read.
  Status ReadHeader(bool* empty) {
    *empty = false;
    Status status = stream_.Fill(kFileHeaderBytes);
    if (!status.ok()) return status;
    const std::string_view bytes = stream_.view().substr(0, kFileHeaderBytes);
    if (bytes.size() < kFileHeaderBytes) {
      return TornHeader(empty, "the file ends " + std::to_string(bytes.size()) +
                                   " bytes into its " + std::to_string(kFileHeaderBytes) +
                                   "-byte header");
    }
    ByteReader reader(bytes);
    std::string_view magic;
    uint32_t version = 0;
    uint64_t generation = 0;
    int64_t created_ms = 0;
    uint64_t stored_checksum = 0;
    reader.GetBytes(kFileMagic.size(), &magic);
    reader.GetU32(&version);
    reader.GetU64(&generation);
    reader.GetI64(&created_ms);
    reader.GetU64(&stored_checksum);
    const uint64_t actual_checksum = Checksum(bytes.substr(0, kFileHeaderCheckedBytes));
    if (magic != kFileMagic || stored_checksum != actual_checksum) {
      bool zero = false;
      if (AllZero(bytes)) {
        status = stream_.RestIsZero(kFileHeaderBytes, &zero);
        if (!status.ok()) return status;
      }
      if (zero) return TornHeader(empty, "the file is all zeros");
      if (magic != kFileMagic) return HeaderError("not an append log (bad magic)");
      return HeaderError("header checksum mismatch: expected " + Hex(stored_checksum) +
                         ", actual " + Hex(actual_checksum));
    }
    if (version < kOldestReadableLogFormatVersion || version > kAppendLogFormatVersion) {
      return HeaderError("format version " + std::to_string(version) + ", this build reads " +
                         std::to_string(kOldestReadableLogFormatVersion) + " to " +
                         std::to_string(kAppendLogFormatVersion));
    }
    uint64_t named_generation = 0;
    if (GenerationFromPath(path_, &named_generation) && named_generation != generation) {
      return HeaderError("header says generation " + std::to_string(generation) +
                         ", the file name says " + std::to_string(named_generation));
    }
    stream_.Skip(kFileHeaderBytes);
    offset_ = kFileHeaderBytes;
    result_->valid_bytes = offset_;
    return Status::Ok();
  }

  Status ReadRecords(const std::function<Status(const LogRecord&)>& visit) {
    LogRecord record;
    for (;;) {
      Status status = stream_.Fill(kFrameBytes);
      if (!status.ok()) return status;
      const uint64_t available = stream_.buffered();
      if (available == 0) return Status::Ok();  // a clean end
      if (available < kFrameBytes) {  // rule (a)
        return Damaged(/*torn=*/true, "the file ends " + std::to_string(available) +
                                          " bytes into the record's " +
                                          std::to_string(kFrameBytes) + "-byte frame");
      }

      const auto [marker, body_length, body_checksum, frame_check] = ReadFrame(stream_.view());
      const uint32_t actual_frame_check =
          FrameCheck(stream_.view().substr(0, kFrameCheckedBytes));
      if (marker != kRecordMarker || frame_check != actual_frame_check) {  // rule (b)
        bool zero = false;
        status = stream_.RestIsZero(kFrameBytes, &zero);
        if (!status.ok()) return status;
        std::string what =
            marker != kRecordMarker
                ? "bad record marker " + Hex(marker) + ", expected " + Hex(kRecordMarker)
                : "frame checksum mismatch: expected " + Hex(frame_check) + ", actual " +
                      Hex(actual_frame_check);
        if (zero) what += " and only zeros follow";
        return Damaged(zero, what);
      }

      const uint64_t record_bytes = kFrameBytes + uint64_t{body_length};
      status = stream_.Fill(record_bytes);
      if (!status.ok()) return status;
      if (stream_.buffered() < record_bytes) {  // rule (c)
        return Damaged(/*torn=*/true, "the body of " + std::to_string(body_length) +
                                          " bytes runs past the end of the file (" +
                                          std::to_string(stream_.buffered() - kFrameBytes) +
                                          " present)");
      }
      const std::string_view body = stream_.view().substr(kFrameBytes, body_length);
      const uint64_t actual_checksum = Checksum(body);
      if (actual_checksum != body_checksum) {  // rule (d)
        bool zero = false;
        status = stream_.RestIsZero(record_bytes, &zero);
        if (!status.ok()) return status;
        std::string what = "body checksum mismatch: expected " + Hex(body_checksum) +
                           ", actual " + Hex(actual_checksum);
        if (zero) what += " and only zeros follow";
        return Damaged(zero, what);
      }

      const std::string why = DecodeBody(body, &record);
      if (!why.empty()) return Damaged(/*torn=*/false, "malformed body: " + why);
      status = visit(record);
      if (!status.ok()) return status;
      stream_.Skip(record_bytes);
      offset_ += record_bytes;
      ++index_;
      result_->records = index_;
      result_->valid_bytes = offset_;
      result_->record_bytes += record_bytes;
    }
  }

 private:
  std::string Where() const {
    return "append log " + path_ + ": record " + std::to_string(index_) + " at offset " +
           std::to_string(offset_) + ": ";
  }

  Status HeaderError(const std::string& what) const {
    return Status::Error("append log " + path_ + ": header at offset 0: " + what);
  }

  Status TornHeader(bool* empty, const std::string& what) {
    if (!allow_torn_tail_) return HeaderError(what + " (a torn header; not allowed here)");
    result_->torn_tail = true;
    result_->valid_bytes = 0;
    *empty = true;
    return Status::Ok();
  }

  // The record at offset_ does not verify: a torn tail (allowed or not) or
  // corruption. valid_bytes already points at the record's start.
  Status Damaged(bool torn, const std::string& what) {
    if (torn && allow_torn_tail_) {
      result_->torn_tail = true;
      return Status::Ok();
    }
    if (torn) return Status::Error(Where() + what + " (a torn final record; not allowed here)");
    return Status::Error(Where() + what);
  }

  const std::string& path_;
  const bool allow_torn_tail_;
  LogStream stream_;
  LogReadResult* const result_;
  uint64_t offset_ = 0;  // file offset of the record being read
  uint64_t index_ = 0;   // its index, from 0
};

}  // namespace

uint64_t FramedRecordBytes(uint64_t body_bytes) { return SaturatingAdd(kFrameBytes, body_bytes); }

std::string DecodeLogRecord(std::string_view framed, LogRecord* record) {
  return DecodeFramed(framed, record);
}

std::vector<std::string_view> SplitFramedRecords(std::string_view records) {
  std::vector<std::string_view> out;
  while (records.size() >= kFrameBytes) {
    const Frame frame = ReadFrame(records);
    if (frame.marker != kRecordMarker || records.size() - kFrameBytes < frame.body_length) break;
    out.push_back(records.substr(0, kFrameBytes + frame.body_length));
    records.remove_prefix(kFrameBytes + frame.body_length);
  }
  return out;
}

uint64_t UnitRecordBodyBytes(uint64_t members_bytes) {
  return SaturatingAdd(kBodyPrefixBytes + 4, members_bytes);
}

void EncodeUnitRecord(int64_t time_ms, uint32_t count, std::string_view members,
                      std::string* out) {
  const uint64_t body_bytes = UnitRecordBodyBytes(members.size());
  if (body_bytes > kMaxLogRecordBodyBytes) return;
  const size_t start = out->size();
  out->reserve(start + kFrameBytes + body_bytes);
  out->append(kFrameBytes, '\0');
  ByteWriter writer(out);
  writer.PutU8(static_cast<uint8_t>(LogRecordType::kUnit));
  writer.PutI64(time_ms);
  writer.PutU32(count);
  writer.PutBytes(members);
  SealFrame(start, out);
}

uint64_t CommandRecordBodyBytes(std::span<const std::string_view> args) {
  uint64_t bytes = kBodyPrefixBytes + 4;  // + argc
  for (std::string_view arg : args) bytes = SaturatingAdd(bytes, 4 + uint64_t{arg.size()});
  return bytes;
}

uint64_t FilterRecordBodyBytes(std::string_view key, const FilterHeader& header,
                               bool has_payload) {
  // key_len 4 + kind 1 + header_len 4 + payload_bytes 8 + has_payload 1.
  uint64_t bytes = kBodyPrefixBytes + 18;
  bytes = SaturatingAdd(bytes, key.size());
  bytes = SaturatingAdd(bytes, header.bytes.size());
  if (has_payload) bytes = SaturatingAdd(bytes, header.payload_bytes);
  return bytes;
}

void EncodeCommandRecord(int64_t time_ms, std::span<const std::string_view> args,
                         std::string* out) {
  const uint64_t body_bytes = CommandRecordBodyBytes(args);
  if (body_bytes > kMaxLogRecordBodyBytes) return;  // see CommandRecordBodyBytes
  const size_t start = out->size();
  out->reserve(start + kFrameBytes + body_bytes);
  out->append(kFrameBytes, '\0');
  ByteWriter writer(out);
  writer.PutU8(static_cast<uint8_t>(LogRecordType::kCommand));
  writer.PutI64(time_ms);
  writer.PutU32(static_cast<uint32_t>(args.size()));
  for (std::string_view arg : args) writer.PutString(arg);
  SealFrame(start, out);
}

void EncodeFilterRecord(int64_t time_ms, std::string_view key, const FilterHeader& header,
                        const AnyFilter* payload_source, std::string* out) {
  const bool has_payload = payload_source != nullptr;
  const uint64_t body_bytes = FilterRecordBodyBytes(key, header, has_payload);
  if (body_bytes > kMaxLogRecordBodyBytes) return;  // see FilterRecordBodyBytes
  const size_t start = out->size();
  out->reserve(start + kFrameBytes + body_bytes);
  out->append(kFrameBytes, '\0');
  ByteWriter writer(out);
  writer.PutU8(static_cast<uint8_t>(LogRecordType::kFilter));
  writer.PutI64(time_ms);
  writer.PutString(key);
  writer.PutU8(static_cast<uint8_t>(header.kind));
  writer.PutString(header.bytes);
  writer.PutU64(header.payload_bytes);
  writer.PutU8(has_payload ? 1 : 0);
  if (has_payload) {
    const size_t at = out->size();
    out->resize(at + header.payload_bytes);
    CopyPayload(*payload_source, header, /*offset=*/0, reinterpret_cast<uint8_t*>(out->data() + at),
                header.payload_bytes);
  }
  SealFrame(start, out);
}

std::string LogFileName(std::string_view base, uint64_t generation) {
  std::string name(base);
  name += '.';
  name += std::to_string(generation);
  return name;
}

Status ListLogGenerations(FileSystem& fs, const std::string& dir, std::string_view base,
                          std::vector<uint64_t>* generations) {
  generations->clear();
  std::vector<std::string> names;
  Status status = fs.ListDirectory(dir, &names);
  if (!status.ok()) return status;
  for (const std::string& name : names) {
    const std::string_view view = name;
    uint64_t generation = 0;
    if (view.size() > base.size() + 1 && view.substr(0, base.size()) == base &&
        view[base.size()] == '.' && ParseGeneration(view.substr(base.size() + 1), &generation)) {
      generations->push_back(generation);
    }
  }
  std::sort(generations->begin(), generations->end());
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// AppendLogWriter
//
// Ordering: Append puts a record's bytes into pending_ in one step under
// mutex_, so records never interleave bytes, and the file holds them in the
// order their Append calls took the lock. The sequence Append returns is the
// file offset just past the record, so "written_ >= sequence" means the
// record, and everything queued before it, is in the file. Flush(seq)
// returns only then, so a server that calls Flush before sending a write's
// reply never acknowledges a write the log does not hold (with sync=false it
// has reached the kernel and survives a crash of the process; with sync=true
// it survives a power loss). Two clients' writes to different keys may land
// in either order; the server appends under its key locks, so writes to one
// key land in the order they ran.
//
// Group commit: the first Flush that finds work becomes the flusher: it
// takes ALL of pending_ (not just up to its own sequence), writes it without
// holding mutex_, and publishes written_/synced_. Appenders keep queueing
// meanwhile, and other flushers wait on flushed_ and then re-check: usually
// the batch covered them and they return without a system call.
// ---------------------------------------------------------------------------

Status AppendLogWriter::Create(FileSystem* fs, const std::string& dir, std::string_view base,
                               uint64_t generation, int64_t now_ms,
                               std::unique_ptr<AppendLogWriter>* out) {
  out->reset();
  const std::string path = JoinPath(dir, LogFileName(base, generation));
  std::unique_ptr<WritableFile> file;
  Status status = fs->CreateNew(path, &file);
  if (!status.ok()) return status;
  std::string header;
  EncodeFileHeader(generation, now_ms, &header);
  status = file->Append(header);
  if (status.ok()) status = file->Sync();
  if (status.ok()) status = fs->SyncDirectory(dir.empty() ? "." : dir);
  if (!status.ok()) {
    // Remove the half-made file so a retry of the same generation can
    // create it again (CreateNew refuses an existing file).
    (void)file->Close();
    (void)fs->Remove(path);
    return status;
  }
  out->reset(new AppendLogWriter(fs, path, generation, std::move(file), header.size()));
  return Status::Ok();
}

AppendLogWriter::AppendLogWriter(FileSystem* fs, std::string path, uint64_t generation,
                                 std::unique_ptr<WritableFile> file, uint64_t header_bytes)
    : fs_(fs),
      path_(std::move(path)),
      generation_(generation),
      file_(std::move(file)),
      appended_(header_bytes),
      written_(header_bytes),
      synced_(header_bytes) {
  // Before the writer is shared with any other thread, so relaxed is enough.
  written_bytes_seen_.store(header_bytes, std::memory_order_relaxed);
}

AppendLogWriter::~AppendLogWriter() {
  // Close is a no-op when the owner already closed; its error, if any, was
  // latched and reported to every Flush caller already.
  (void)Close();
}

uint64_t AppendLogWriter::Append(std::string_view encoded_record) {
  std::lock_guard lock(mutex_);
  appended_ += encoded_record.size();
  // After a failure or Close nothing will be written again, so the bytes are
  // not kept; the sequence still advances, and Flush of it reports why.
  if (error_.ok() && !closed_) pending_.append(encoded_record);
  return appended_;
}

Status AppendLogWriter::Flush(uint64_t sequence, bool sync) {
  std::unique_lock lock(mutex_);
  // A sequence Append never returned would wait forever; treat it as
  // "everything queued so far".
  sequence = std::min(sequence, appended_);
  for (;;) {
    if (!error_.ok()) return error_;
    if (written_ >= sequence && (!sync || synced_ >= sequence)) return Status::Ok();
    if (flushing_) {
      // Another thread's batch, or Close's final one, may cover us: wait and
      // re-check. (Checking closed_ first failed a flush that raced a
      // snapshot cut's Close, which latched a log error and refused every
      // later write with MISCONF.)
      flushed_.wait(lock);
      continue;
    }
    if (closed_) return Status::Error("append log " + path_ + ": flush after close");
    break;
  }

  flushing_ = true;
  std::string batch;
  batch.swap(pending_);
  const uint64_t batch_end = appended_;
  lock.unlock();

  // Only the flusher (flushing_ == true) touches file_, so it needs no lock;
  // appenders keep queueing into pending_ meanwhile.
  Status status = Status::Ok();
  if (!batch.empty()) status = file_->Append(batch);
  // fdatasync covers every byte written so far, so the whole batch.
  if (status.ok() && sync) status = file_->Sync();

  lock.lock();
  flushing_ = false;
  if (status.ok()) {
    written_ = batch_end;
    if (sync) synced_ = batch_end;
    written_bytes_seen_.store(written_, std::memory_order_relaxed);  // see its declaration
  } else if (error_.ok()) {
    // Latched: part of the batch may be in the file, so the file's end is
    // unknown and nothing may follow it. A later read sees a torn tail.
    error_ = status;
  }
  if (pending_.empty() && batch.capacity() <= kReusedBufferBytes) {
    batch.clear();
    pending_.swap(batch);
  }
  // notify_all, not notify_one: each waiter has its own sequence and sync
  // need, so each must re-check; the next one with work left becomes the
  // flusher.
  flushed_.notify_all();
  return error_;
}

Status AppendLogWriter::Sync() {
  uint64_t target = 0;
  {
    std::lock_guard lock(mutex_);
    target = appended_;
  }
  return Flush(target, /*sync=*/true);
}

Status AppendLogWriter::Close() {
  std::unique_lock lock(mutex_);
  flushed_.wait(lock, [this] { return !flushing_; });
  if (closed_) return error_;
  closed_ = true;
  // Keep other Flush callers away from file_ until it is closed; they wait
  // on flushed_ and then see closed_ (or that this flush covered them).
  flushing_ = true;
  std::string batch;
  batch.swap(pending_);
  const uint64_t batch_end = appended_;
  const bool healthy = error_.ok();
  lock.unlock();

  Status status = Status::Ok();
  if (healthy) {
    if (!batch.empty()) status = file_->Append(batch);
    if (status.ok()) status = file_->Sync();
  }
  Status close_status = file_->Close();
  if (status.ok()) status = std::move(close_status);

  lock.lock();
  flushing_ = false;
  if (status.ok() && healthy) {
    written_ = batch_end;
    synced_ = batch_end;
    written_bytes_seen_.store(written_, std::memory_order_relaxed);  // see its declaration
  } else if (error_.ok()) {
    error_ = status;
  }
  flushed_.notify_all();
  return error_;
}

uint64_t AppendLogWriter::written_bytes() const {
  return written_bytes_seen_.load(std::memory_order_relaxed);  // see its declaration
}

Status ReadAppendLog(FileSystem& fs, const std::string& path, bool allow_torn_tail,
                     const std::function<Status(const LogRecord&)>& visit,
                     LogReadResult* result) {
  *result = LogReadResult{};
  std::unique_ptr<SequentialFile> file;
  Status status = fs.OpenForRead(path, &file);
  if (!status.ok()) return status;
  LogFileReader reader(path, allow_torn_tail, file.get(), result);
  bool empty = false;
  status = reader.ReadHeader(&empty);
  if (!status.ok() || empty) return status;
  return reader.ReadRecords(visit);
}

}  // namespace bloomgate
