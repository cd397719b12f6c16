// What ReadAppendLog makes of damaged logs: cut at every length, padded with
// zeros, every byte flipped, and hand-made records that pass their checksums
// but are malformed. The rule under test is drawn at the top of
// persistence/append_log.cc ("THE TORN-TAIL RULE").
//
// The logs live in memory: each test reads hundreds of variants, and a
// FileSystem over a map keeps that fast and leaves nothing on disk.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "persistence/append_log.h"
#include "persistence/byte_io.h"

namespace bloomgate {
namespace {

// Enough of a file system for AppendLogWriter::Create and ReadAppendLog.
class MemoryFileSystem : public FileSystem {
 public:
  std::map<std::string, std::string> files;

  Status CreateNew(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    if (files.count(path) != 0) return Status::Error("create " + path + ": File exists");
    *out = std::make_unique<File>(&files[path]);  // map nodes never move
    return Status::Ok();
  }
  Status OpenForAppend(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    if (files.count(path) == 0) return Status::Error("open " + path + ": No such file");
    *out = std::make_unique<File>(&files[path]);
    return Status::Ok();
  }
  Status OpenForRead(const std::string& path, std::unique_ptr<SequentialFile>* out) override {
    auto it = files.find(path);
    if (it == files.end()) return Status::Error("open " + path + ": No such file");
    *out = std::make_unique<Reader>(it->second);
    return Status::Ok();
  }
  Status Rename(const std::string&, const std::string&) override { return Unsupported(); }
  Status SyncDirectory(const std::string&) override { return Status::Ok(); }
  Status Remove(const std::string& path) override {
    files.erase(path);
    return Status::Ok();
  }
  Status Truncate(const std::string&, uint64_t) override { return Unsupported(); }
  Status FileSize(const std::string& path, uint64_t* size) override {
    *size = files.at(path).size();
    return Status::Ok();
  }
  bool Exists(const std::string& path) override { return files.count(path) != 0; }
  Status ListDirectory(const std::string&, std::vector<std::string>*) override {
    return Unsupported();
  }

 private:
  static Status Unsupported() { return Status::Error("not supported in memory"); }

  class File : public WritableFile {
   public:
    explicit File(std::string* bytes) : bytes_(bytes) {}
    Status Append(std::string_view data) override {
      bytes_->append(data);
      return Status::Ok();
    }
    Status Sync() override { return Status::Ok(); }
    Status Close() override { return Status::Ok(); }

   private:
    std::string* bytes_;
  };

  class Reader : public SequentialFile {
   public:
    explicit Reader(std::string bytes) : bytes_(std::move(bytes)) {}
    Status Read(size_t n, std::string* out) override {
      *out = bytes_.substr(pos_, n);
      pos_ += out->size();
      return Status::Ok();
    }

   private:
    std::string bytes_;
    size_t pos_ = 0;
  };
};

constexpr size_t kHeaderBytes = 36;
constexpr char kPath[] = "mem/appendonly.bglog.1";

std::string Command(int64_t time_ms, const std::vector<std::string_view>& args) {
  std::string out;
  EncodeCommandRecord(time_ms, args, &out);
  return out;
}

std::string FilterCreation(std::string_view key) {
  FilterHeader header;
  header.kind = FilterKind::kCountingBloom;
  header.bytes = "opaque header bytes";
  header.payload_bytes = 4096;
  std::string out;
  EncodeFilterRecord(/*time_ms=*/77, key, header, /*payload_source=*/nullptr, &out);
  return out;
}

// A log and where each of its records ends.
struct Log {
  std::string bytes;
  std::vector<size_t> ends;  // file offset just past record i
  std::vector<std::string> records;
};

// A file header from the real writer, then `records`.
Log MakeLog(const std::vector<std::string>& records) {
  MemoryFileSystem fs;
  std::unique_ptr<AppendLogWriter> writer;
  Status status =
      AppendLogWriter::Create(&fs, "mem", "appendonly.bglog", 1, /*now_ms=*/42, &writer);
  EXPECT_TRUE(status.ok()) << status.message();
  Log log;
  for (const std::string& record : records) {
    log.ends.push_back(writer->Append(record));
    log.records.push_back(record);
  }
  EXPECT_TRUE(writer->Close().ok());
  log.bytes = fs.files.at(kPath);
  return log;
}

// Four commands and a filter creation record, of varied shapes (a time near
// INT64_MAX: many non-zero bytes, and a time the reader accepts). The final
// record ends in a non-zero byte, so flipping or cutting it always changes it.
Log SmallLog() {
  return MakeLog({Command(1, {"BF.ADD", "k", "a"}), Command(2, {"BF.MADD", "", "\r\n", "z"}),
                  FilterCreation("cbf"), Command(INT64_MAX - 3, {std::string_view("\0\0x", 3)}),
                  Command(4, {"PING", "!"})});
}

struct ReadOutcome {
  Status status = Status::Ok();
  LogReadResult result;
  std::vector<LogRecord> records;
};

ReadOutcome ReadBytes(const std::string& bytes, bool allow_torn_tail,
                      const std::string& path = kPath) {
  MemoryFileSystem fs;
  fs.files[path] = bytes;
  ReadOutcome outcome;
  outcome.status = ReadAppendLog(
      fs, path, allow_torn_tail,
      [&](const LogRecord& record) {
        outcome.records.push_back(record);
        return Status::Ok();
      },
      &outcome.result);
  return outcome;
}

// The record as the reader returns it from an intact log.
std::vector<LogRecord> IntactRecords(const Log& log) {
  ReadOutcome read = ReadBytes(log.bytes, /*allow_torn_tail=*/false);
  EXPECT_TRUE(read.status.ok()) << read.status.message();
  EXPECT_EQ(read.records.size(), log.records.size());
  return read.records;
}

bool SameRecord(const LogRecord& a, const LogRecord& b) {
  return a.type == b.type && a.time_ms == b.time_ms && a.args == b.args && a.key == b.key &&
         a.header.kind == b.header.kind && a.header.bytes == b.header.bytes &&
         a.header.payload_bytes == b.header.payload_bytes && a.has_payload == b.has_payload &&
         a.payload == b.payload;
}

// Records visited must be exactly the first n intact ones.
::testing::AssertionResult IsPrefixOf(const std::vector<LogRecord>& visited,
                                      const std::vector<LogRecord>& intact) {
  if (visited.size() > intact.size()) return ::testing::AssertionFailure() << "too many records";
  for (size_t i = 0; i < visited.size(); ++i) {
    if (!SameRecord(visited[i], intact[i])) {
      return ::testing::AssertionFailure() << "record " << i << " differs from the original";
    }
  }
  return ::testing::AssertionSuccess();
}

// Records complete within the first `length` bytes.
size_t CompleteRecords(const Log& log, size_t length) {
  size_t n = 0;
  while (n < log.ends.size() && log.ends[n] <= length) ++n;
  return n;
}

bool AtRecordBoundary(const Log& log, size_t length) {
  if (length == kHeaderBytes) return true;
  for (size_t end : log.ends) {
    if (end == length) return true;
  }
  return false;
}

TEST(AppendLogTornTail, EveryCutKeepsExactlyTheRecordsWhoseBytesAreComplete) {
  const Log log = SmallLog();
  const std::vector<LogRecord> intact = IntactRecords(log);
  for (size_t length = kHeaderBytes; length <= log.bytes.size(); ++length) {
    SCOPED_TRACE("cut at " + std::to_string(length) + " of " + std::to_string(log.bytes.size()));
    const std::string cut = log.bytes.substr(0, length);
    const size_t complete = CompleteRecords(log, length);
    const bool boundary = AtRecordBoundary(log, length);

    ReadOutcome allowed = ReadBytes(cut, /*allow_torn_tail=*/true);
    ASSERT_TRUE(allowed.status.ok()) << allowed.status.message();
    EXPECT_EQ(allowed.result.records, complete);
    EXPECT_EQ(allowed.result.torn_tail, !boundary);
    EXPECT_EQ(allowed.result.valid_bytes, complete == 0 ? kHeaderBytes : log.ends[complete - 1]);
    EXPECT_EQ(allowed.records.size(), complete);
    EXPECT_TRUE(IsPrefixOf(allowed.records, intact));

    ReadOutcome strict = ReadBytes(cut, /*allow_torn_tail=*/false);
    EXPECT_EQ(strict.status.ok(), boundary) << strict.status.message();
    EXPECT_TRUE(IsPrefixOf(strict.records, intact));
    if (!boundary) {
      EXPECT_NE(strict.status.message().find(kPath), std::string::npos)
          << strict.status.message();
    }
  }
}

// Records of `log` whose bytes are unchanged in `bytes`, counted from the
// first up to the first changed one. A cut that removes only zero bytes
// (the filter record ends in has_payload = 0) is undone by zero padding.
size_t IntactPrefix(const Log& log, const std::string& bytes) {
  size_t n = 0;
  size_t start = kHeaderBytes;
  while (n < log.ends.size() && log.ends[n] <= bytes.size() &&
         bytes.compare(start, log.ends[n] - start, log.bytes, start, log.ends[n] - start) == 0) {
    start = log.ends[n];
    ++n;
  }
  return n;
}

// ext4 can grow a file before its data lands, leaving zeros in place of the
// last write: a cut followed by zeros (short of a block, or a whole one) is
// still a torn tail, and so are zeros after a complete record.
TEST(AppendLogTornTail, ZerosAfterACutAreStillATornTail) {
  const Log log = SmallLog();
  const std::vector<LogRecord> intact = IntactRecords(log);
  for (size_t zeros : {size_t{1}, size_t{17}, size_t{18}, size_t{100}, size_t{4096}}) {
    for (size_t length = kHeaderBytes; length <= log.bytes.size(); ++length) {
      SCOPED_TRACE("cut at " + std::to_string(length) + " + " + std::to_string(zeros) + " zeros");
      const std::string padded = log.bytes.substr(0, length) + std::string(zeros, '\0');
      const size_t complete = IntactPrefix(log, padded);
      EXPECT_GE(complete, CompleteRecords(log, length));
      const size_t valid = complete == 0 ? kHeaderBytes : log.ends[complete - 1];
      // Not torn only when the zeros happened to rebuild a record exactly.
      const bool torn = padded.size() > valid;

      ReadOutcome allowed = ReadBytes(padded, /*allow_torn_tail=*/true);
      ASSERT_TRUE(allowed.status.ok()) << allowed.status.message();
      EXPECT_EQ(allowed.result.torn_tail, torn);
      EXPECT_EQ(allowed.result.records, complete);
      EXPECT_EQ(allowed.result.valid_bytes, valid);
      EXPECT_TRUE(IsPrefixOf(allowed.records, intact));

      EXPECT_EQ(ReadBytes(padded, /*allow_torn_tail=*/false).status.ok(), !torn);
    }
  }
}

// Flips every byte of the log, one at a time, three ways (all bits, the low
// bit, the high bit). Each variant must fail, or, only when the byte lies in
// the final record, drop that record as a torn tail. No variant may visit a
// modified record.
TEST(AppendLogDamage, EveryFlippedByteFailsOrDropsOnlyTheFinalRecord) {
  const Log log = SmallLog();
  const std::vector<LogRecord> intact = IntactRecords(log);
  const size_t final_start = log.ends[log.ends.size() - 2];
  size_t torn_variants = 0;
  for (size_t at = 0; at < log.bytes.size(); ++at) {
    for (unsigned char mask : {0xFF, 0x01, 0x80}) {
      SCOPED_TRACE("byte " + std::to_string(at) + " ^ " + std::to_string(mask));
      std::string damaged = log.bytes;
      damaged[at] = static_cast<char>(damaged[at] ^ mask);

      ReadOutcome allowed = ReadBytes(damaged, /*allow_torn_tail=*/true);
      EXPECT_TRUE(IsPrefixOf(allowed.records, intact));
      if (allowed.status.ok()) {
        ++torn_variants;
        EXPECT_GE(at, final_start) << "damage before the final record was accepted";
        EXPECT_TRUE(allowed.result.torn_tail);
        EXPECT_EQ(allowed.result.records, log.records.size() - 1);
        EXPECT_EQ(allowed.result.valid_bytes, final_start);
      } else {
        EXPECT_NE(allowed.status.message().find(kPath), std::string::npos);
      }
      if (at < final_start) {
        EXPECT_FALSE(allowed.status.ok());
      }

      ReadOutcome strict = ReadBytes(damaged, /*allow_torn_tail=*/false);
      EXPECT_FALSE(strict.status.ok());
      EXPECT_TRUE(IsPrefixOf(strict.records, intact));
    }
  }
  // Flips in the final record's body (not its frame) are the torn ones.
  EXPECT_GT(torn_variants, 0u);
}

TEST(AppendLogDamage, DamageMidFileNamesTheFileOffsetRecordAndChecksums) {
  const Log log = SmallLog();
  std::string damaged = log.bytes;
  const size_t second_start = log.ends[0];
  damaged[second_start + 18 + 3] ^= 0x10;  // inside record 1's body (its time)

  ReadOutcome read = ReadBytes(damaged, /*allow_torn_tail=*/true);
  ASSERT_FALSE(read.status.ok());
  const std::string& message = read.status.message();
  EXPECT_NE(message.find(kPath), std::string::npos) << message;
  EXPECT_NE(message.find("record 1 at offset " + std::to_string(second_start)), std::string::npos)
      << message;
  EXPECT_NE(message.find("body checksum mismatch: expected 0x"), std::string::npos) << message;
  EXPECT_NE(message.find(", actual 0x"), std::string::npos) << message;
  EXPECT_EQ(read.records.size(), 1u);
  EXPECT_EQ(read.result.records, 1u);
  EXPECT_EQ(read.result.valid_bytes, second_start);
}

TEST(AppendLogDamage, NonZeroBytesAfterADamagedFinalRecordFail) {
  const Log log = SmallLog();
  std::string damaged = log.bytes;
  damaged[log.bytes.size() - 2] ^= 0x01;  // final record's body
  ASSERT_TRUE(ReadBytes(damaged, /*allow_torn_tail=*/true).status.ok());
  // The same damage followed by zeros and then one stray byte: not a torn
  // write, because a crash leaves nothing but zeros after the torn part.
  damaged += std::string(50, '\0') + "x";
  EXPECT_FALSE(ReadBytes(damaged, /*allow_torn_tail=*/true).status.ok());
}

TEST(AppendLogDamage, ATornHeaderIsAnEmptyLogOnlyWhenTornTailsAreAllowed) {
  const Log log = SmallLog();
  for (size_t length = 0; length < kHeaderBytes; ++length) {
    SCOPED_TRACE("header cut at " + std::to_string(length));
    ReadOutcome allowed = ReadBytes(log.bytes.substr(0, length), /*allow_torn_tail=*/true);
    ASSERT_TRUE(allowed.status.ok()) << allowed.status.message();
    EXPECT_EQ(allowed.result.records, 0u);
    EXPECT_EQ(allowed.result.valid_bytes, 0u);
    EXPECT_TRUE(allowed.result.torn_tail);
    EXPECT_FALSE(ReadBytes(log.bytes.substr(0, length), /*allow_torn_tail=*/false).status.ok());
  }
  // A file grown but never written (all zeros) is a torn header too...
  ReadOutcome zeros = ReadBytes(std::string(4096, '\0'), /*allow_torn_tail=*/true);
  ASSERT_TRUE(zeros.status.ok()) << zeros.status.message();
  EXPECT_TRUE(zeros.result.torn_tail);
  EXPECT_EQ(zeros.result.valid_bytes, 0u);
  // ...but a zeroed header with data after it is damage.
  std::string zeroed_header = log.bytes;
  zeroed_header.replace(0, kHeaderBytes, kHeaderBytes, '\0');
  EXPECT_FALSE(ReadBytes(zeroed_header, /*allow_torn_tail=*/true).status.ok());
}

// A file header built by hand, with a valid checksum over whatever it says.
std::string Header(std::string_view magic, uint32_t version, uint64_t generation) {
  std::string header(magic);
  ByteWriter writer(&header);
  writer.PutU32(version);
  writer.PutU64(generation);
  writer.PutI64(0);
  writer.PutU64(XXH3_64bits(header.data(), header.size()));
  return header;
}

// A record framed by hand around any body, so the body passes its checksum.
std::string Framed(std::string_view body) {
  std::string frame;
  ByteWriter writer(&frame);
  writer.PutU16(0xB6A7);
  writer.PutU32(static_cast<uint32_t>(body.size()));
  writer.PutU64(XXH3_64bits(body.data(), body.size()));
  writer.PutU32(static_cast<uint32_t>(XXH3_64bits(frame.data(), frame.size())));
  return frame + std::string(body);
}

const std::string kMagic("BGLOG\r\n\x1a", 8);

TEST(AppendLogDamage, HandMadeHeaderAndFramesMatchTheWriter) {
  // Guards the helpers below: a hand-made log reads like a written one.
  const std::string body = SmallLog().records[0].substr(18);
  ReadOutcome read = ReadBytes(Header(kMagic, kAppendLogFormatVersion, 1) + Framed(body), false);
  ASSERT_TRUE(read.status.ok()) << read.status.message();
  EXPECT_EQ(read.records.size(), 1u);
}

TEST(AppendLogDamage, AWrongMagicOrVersionFailsEvenWithAValidChecksum) {
  ReadOutcome magic = ReadBytes(Header("BGLOG\r\n\x1b", kAppendLogFormatVersion, 1), true);
  EXPECT_FALSE(magic.status.ok());
  EXPECT_NE(magic.status.message().find("magic"), std::string::npos) << magic.status.message();

  ReadOutcome version = ReadBytes(Header(kMagic, kAppendLogFormatVersion + 1, 1), true);
  EXPECT_FALSE(version.status.ok());
  EXPECT_NE(version.status.message().find("format version " +
                                          std::to_string(kAppendLogFormatVersion + 1)),
            std::string::npos)
      << version.status.message();
}

// Bodies that pass their checksum but do not decode are never a torn tail:
// their bytes are exactly what was written.
TEST(AppendLogDamage, MalformedBodiesFailEvenAsTheFinalRecord) {
  auto body = [](uint8_t type, const std::string& rest) {
    std::string out;
    ByteWriter writer(&out);
    writer.PutU8(type);
    writer.PutI64(9);
    writer.PutBytes(rest);
    return out;
  };
  auto u32 = [](uint32_t v) {
    std::string out;
    ByteWriter(&out).PutU32(v);
    return out;
  };
  auto u64 = [](uint64_t v) {
    std::string out;
    ByteWriter(&out).PutU64(v);
    return out;
  };
  const std::string key = u32(1) + "k";
  const std::string filter_header = u32(2) + "hh";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"unknown record type 4", body(4, u32(0))},
      {"a unit of 1 records", body(3, u32(1))},
      {"a unit declaring 2 records holds 0 and 3 stray bytes", body(3, u32(2) + "abc")},
      {"unknown record type 0", body(0, "")},
      {"too short", std::string("\x01\x00\x00", 3)},
      // 4 billion arguments in a 13-byte body: refused before any is read.
      {"argument count 4294967295", body(1, u32(0xFFFFFFFF))},
      {"runs past the end", body(1, u32(1) + u32(1000) + "abc")},
      {"unexpected bytes", body(1, u32(1) + u32(1) + "a" + "extra")},
      {"unknown filter kind 9", body(2, key + "\x09" + filter_header + u64(4) + '\0')},
      {"has_payload is 2", body(2, key + "\x01" + filter_header + u64(4) + '\x02')},
      {"payload of 4 bytes declared, 3 present",
       body(2, key + "\x01" + filter_header + u64(4) + '\x01' + "abc")},
      {"1 unexpected bytes", body(2, key + "\x01" + filter_header + u64(4) + '\0' + "z")},
      {"filter fields run past", body(2, u32(100) + "k")},
  };
  const std::string good = SmallLog().records[0];
  for (const auto& [expected, bad_body] : cases) {
    SCOPED_TRACE(expected);
    for (bool final_record : {true, false}) {
      const std::string bytes = Header(kMagic, kAppendLogFormatVersion, 1) + good +
                                Framed(bad_body) + (final_record ? "" : good);
      ReadOutcome read = ReadBytes(bytes, /*allow_torn_tail=*/true);
      ASSERT_FALSE(read.status.ok());
      EXPECT_NE(read.status.message().find("malformed body"), std::string::npos)
          << read.status.message();
      EXPECT_NE(read.status.message().find(expected), std::string::npos) << read.status.message();
      EXPECT_NE(read.status.message().find("record 1 at offset " +
                                           std::to_string(kHeaderBytes + good.size())),
                std::string::npos)
          << read.status.message();
      EXPECT_EQ(read.records.size(), 1u);
    }
  }
}

TEST(AppendLogDamage, AVisitErrorStopsTheReadAndIsReturned) {
  const Log log = SmallLog();
  MemoryFileSystem fs;
  fs.files[kPath] = log.bytes;
  int visits = 0;
  LogReadResult result;
  Status status = ReadAppendLog(
      fs, kPath, /*allow_torn_tail=*/false,
      [&](const LogRecord&) {
        return ++visits == 2 ? Status::Error("replay failed") : Status::Ok();
      },
      &result);
  EXPECT_EQ(status.message(), "replay failed");
  EXPECT_EQ(visits, 2);
  EXPECT_EQ(result.records, 1u);
}

TEST(AppendLogDamage, AMissingFileFails) {
  MemoryFileSystem fs;
  LogReadResult result;
  EXPECT_FALSE(ReadAppendLog(fs, kPath, true, [](const LogRecord&) { return Status::Ok(); },
                             &result)
                   .ok());
}

}  // namespace
}  // namespace bloomgate
