// The append-only log on a real file system: exact bytes, round trips of
// both record types, the writer's group commit under concurrent appenders,
// latched failures, and log file naming. Damage and torn tails are in
// append_log_damage_test.cc.
#include "persistence/append_log.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <xxhash.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "fault_file_system.h"
#include "filters/scalable_bloom_filter.h"
#include "persistence/byte_io.h"

namespace bloomgate {
namespace {

// A fresh directory per test, removed with its contents afterwards.
class LogTempDir {
 public:
  LogTempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "bloomgate-append-log-XXXXXX").string();
    // mkdtemp picks a unique name atomically, so parallel ctest runs never collide.
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << pattern;
    path_ = pattern;
  }
  ~LogTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  LogTempDir(const LogTempDir&) = delete;
  LogTempDir& operator=(const LogTempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFileBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  ASSERT_TRUE(out.good()) << "could not write " << path;
}

std::string EncodeCommand(int64_t time_ms, const std::vector<std::string>& args) {
  std::vector<std::string_view> views(args.begin(), args.end());
  std::string out;
  EncodeCommandRecord(time_ms, views, &out);
  return out;
}

struct LogReadOutcome {
  Status status = Status::Ok();
  LogReadResult result;
  std::vector<LogRecord> records;
};

LogReadOutcome ReadLog(const std::string& path, bool allow_torn_tail) {
  LogReadOutcome outcome;
  outcome.status = ReadAppendLog(
      *DefaultFileSystem(), path, allow_torn_tail,
      [&](const LogRecord& record) {
        outcome.records.push_back(record);
        return Status::Ok();
      },
      &outcome.result);
  return outcome;
}

std::unique_ptr<AppendLogWriter> CreateWriter(FileSystem* fs, const std::string& dir,
                                              uint64_t generation) {
  std::unique_ptr<AppendLogWriter> writer;
  Status status = AppendLogWriter::Create(fs, dir, "appendonly.bglog", generation,
                                          /*now_ms=*/1700000000000, &writer);
  EXPECT_TRUE(status.ok()) << status.message();
  return writer;
}

// The 36-byte file header and the 18-byte record frame, built here from the
// diagram at the top of append_log.cc rather than by the code under test.
constexpr size_t kLogHeaderBytes = 36;
constexpr size_t kFrameBytes = 18;

std::string ExpectedFrame(std::string_view body) {
  std::string frame;
  ByteWriter writer(&frame);
  writer.PutU16(0xB6A7);
  writer.PutU32(static_cast<uint32_t>(body.size()));
  writer.PutU64(XXH3_64bits(body.data(), body.size()));
  writer.PutU32(static_cast<uint32_t>(XXH3_64bits(frame.data(), frame.size())));
  return frame;
}

TEST(AppendLogFormat, FileHeaderBytesMatchTheDiagram) {
  LogTempDir dir;
  auto writer = CreateWriter(DefaultFileSystem(), dir.path(), /*generation=*/7);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->Close().ok());

  std::string expected("BGLOG\r\n\x1a", 8);
  ByteWriter out(&expected);
  out.PutU32(kAppendLogFormatVersion);
  out.PutU64(7);
  out.PutI64(1700000000000);
  out.PutU64(XXH3_64bits(expected.data(), expected.size()));
  ASSERT_EQ(expected.size(), kLogHeaderBytes);
  EXPECT_EQ(ReadFileBytes(dir.path() + "/appendonly.bglog.7"), expected);
}

TEST(AppendLogFormat, CommandRecordBytesMatchTheDiagram) {
  const std::string record = EncodeCommand(/*time_ms=*/0x0102030405060708, {"SET", ""});
  // type 1, time_ms LE, argc 2, "SET" with its length, "" with its length.
  const std::string body(
      "\x01"
      "\x08\x07\x06\x05\x04\x03\x02\x01"
      "\x02\x00\x00\x00"
      "\x03\x00\x00\x00SET"
      "\x00\x00\x00\x00",
      1 + 8 + 4 + 7 + 4);
  EXPECT_EQ(record, ExpectedFrame(body) + body);
  // The frame's first bytes are the marker, little-endian, and the length.
  EXPECT_EQ(record.substr(0, 6), std::string("\xa7\xb6\x18\x00\x00\x00", 6));
}

TEST(AppendLogFormat, FilterRecordBytesMatchTheDiagram) {
  FilterHeader header;
  header.kind = FilterKind::kCuckoo;
  header.bytes = "hdr";
  header.payload_bytes = 0x1122;
  std::string record;
  EncodeFilterRecord(/*time_ms=*/5, "k", header, /*payload_source=*/nullptr, &record);
  const std::string body(
      "\x02"
      "\x05\x00\x00\x00\x00\x00\x00\x00"
      "\x01\x00\x00\x00k"
      "\x03"
      "\x03\x00\x00\x00hdr"
      "\x22\x11\x00\x00\x00\x00\x00\x00"
      "\x00",
      1 + 8 + 5 + 1 + 7 + 8 + 1);
  EXPECT_EQ(record, ExpectedFrame(body) + body);
  EXPECT_EQ(FilterRecordBodyBytes("k", header, /*has_payload=*/false), body.size());
}

TEST(AppendLog, CommandRecordsRoundTripWithBinarySafeArgumentsAndTimes) {
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte.push_back(static_cast<char>(b));
  const std::vector<std::vector<std::string>> commands = {
      {"BF.ADD", "key", "item"},
      {"BF.MADD", "", "", std::string("a\0b", 3)},
      {"SET", "line\r\nbreak", "\r\n", "\n", "\r"},
      {std::string(1, '\0'), every_byte},
      {"PING"},
      {},
  };
  const std::vector<int64_t> times = {0, 1, 2, 1700000000123, INT64_MAX, INT64_MAX - 1};

  LogTempDir dir;
  auto writer = CreateWriter(DefaultFileSystem(), dir.path(), /*generation=*/1);
  ASSERT_NE(writer, nullptr);
  uint64_t sequence = 0;
  for (size_t i = 0; i < commands.size(); ++i) {
    sequence = writer->Append(EncodeCommand(times[i], commands[i]));
  }
  ASSERT_TRUE(writer->Flush(sequence, /*sync=*/true).ok());

  LogReadOutcome read = ReadLog(writer->path(), /*allow_torn_tail=*/false);
  ASSERT_TRUE(read.status.ok()) << read.status.message();
  EXPECT_FALSE(read.result.torn_tail);
  EXPECT_EQ(read.result.records, commands.size());
  EXPECT_EQ(read.result.valid_bytes, sequence);
  // The records' own bytes, what they took in the journal's stream.
  EXPECT_EQ(read.result.record_bytes, sequence - kHeaderBytes);
  ASSERT_EQ(read.records.size(), commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    EXPECT_EQ(read.records[i].type, LogRecordType::kCommand);
    EXPECT_EQ(read.records[i].time_ms, times[i]) << "record " << i;
    EXPECT_EQ(read.records[i].args, commands[i]) << "record " << i;
    EXPECT_TRUE(read.records[i].key.empty());
    EXPECT_FALSE(read.records[i].has_payload);
  }
}

// Replay runs a record's command at its time (EXPIRE adds it to a relative
// deadline: INT64_MAX - time overflowed for a time below 0), and a live
// server's wall clock never reads below 0: such a record is damage.
TEST(AppendLog, ARecordWithANegativeTimeIsRefusedAsMalformed) {
  for (int64_t time : {int64_t{-1}, int64_t{INT64_MIN}}) {
    LogTempDir dir;
    auto writer = CreateWriter(DefaultFileSystem(), dir.path(), /*generation=*/1);
    ASSERT_NE(writer, nullptr);
    writer->Append(EncodeCommand(1700000000000, {"BF.ADD", "k", "a"}));
    const uint64_t sequence = writer->Append(EncodeCommand(time, {"EXPIRE", "k", "10"}));
    ASSERT_TRUE(writer->Flush(sequence, /*sync=*/true).ok());
    LogReadOutcome read = ReadLog(writer->path(), /*allow_torn_tail=*/true);
    ASSERT_FALSE(read.status.ok()) << time;
    EXPECT_NE(read.status.message().find("record 1 at offset"), std::string::npos)
        << read.status.message();
    EXPECT_NE(read.status.message().find("malformed body: negative time_ms " +
                                         std::to_string(time)),
              std::string::npos)
        << read.status.message();
    EXPECT_EQ(read.records.size(), 1u);
  }
}

TEST(AppendLog, FilterRecordsRoundTripWithAndWithoutPayload) {
  std::unique_ptr<ScalableBloomFilter> bloom;
  ASSERT_EQ(ScalableBloomFilter::Create(ScalableBloomOptions{.error_rate = 0.01, .capacity = 200},
                                        FilterLimits{}, /*budget=*/nullptr, &bloom),
            FilterStatus::kOk);
  for (int i = 0; i < 500; ++i) {  // past the first layer, so two layers are logged
    bool added = false;
    ASSERT_EQ(bloom->Add(HashKey("item-" + std::to_string(i)), &added), FilterStatus::kOk);
  }
  const AnyFilter filter = std::move(bloom);
  const FilterHeader header = DescribeFilter(filter);
  ASSERT_GT(header.payload_bytes, 0u);
  std::string expected_payload(header.payload_bytes, '\0');
  CopyPayload(filter, header, /*offset=*/0, reinterpret_cast<uint8_t*>(expected_payload.data()),
              header.payload_bytes);

  LogTempDir dir;
  auto writer = CreateWriter(DefaultFileSystem(), dir.path(), /*generation=*/3);
  ASSERT_NE(writer, nullptr);
  std::string created;
  EncodeFilterRecord(/*time_ms=*/111, "created", header, /*payload_source=*/nullptr, &created);
  const std::string binary_key("bin\0key\r\n", 9);
  std::string loaded;
  EncodeFilterRecord(/*time_ms=*/222, binary_key, header, &filter, &loaded);
  EXPECT_EQ(loaded.size(), kFrameBytes + FilterRecordBodyBytes(binary_key, header, true));
  writer->Append(created);
  writer->Append(EncodeCommand(333, {"BF.ADD", "created", "x"}));
  ASSERT_TRUE(writer->Flush(writer->Append(loaded), /*sync=*/false).ok());

  LogReadOutcome read = ReadLog(writer->path(), /*allow_torn_tail=*/false);
  ASSERT_TRUE(read.status.ok()) << read.status.message();
  ASSERT_EQ(read.records.size(), 3u);

  const LogRecord& first = read.records[0];
  EXPECT_EQ(first.type, LogRecordType::kFilter);
  EXPECT_EQ(first.time_ms, 111);
  EXPECT_EQ(first.key, "created");
  EXPECT_EQ(first.header.kind, header.kind);
  EXPECT_EQ(first.header.bytes, header.bytes);
  EXPECT_EQ(first.header.payload_bytes, header.payload_bytes);
  EXPECT_FALSE(first.has_payload);
  EXPECT_TRUE(first.payload.empty());
  EXPECT_TRUE(first.args.empty());

  EXPECT_EQ(read.records[1].args, (std::vector<std::string>{"BF.ADD", "created", "x"}));

  const LogRecord& third = read.records[2];
  EXPECT_EQ(third.type, LogRecordType::kFilter);
  EXPECT_EQ(third.time_ms, 222);
  EXPECT_EQ(third.key, binary_key);
  EXPECT_EQ(third.header.bytes, header.bytes);
  EXPECT_EQ(third.header.payload_bytes, header.payload_bytes);
  EXPECT_TRUE(third.has_payload);
  EXPECT_TRUE(third.payload == expected_payload) << "payload differs";
}

TEST(AppendLog, EncodersAppendNothingForABodyOverTheFormatLimit) {
  FilterHeader header;
  header.bytes = "h";
  header.payload_bytes = uint64_t{5} << 30;  // 5 GiB > 4 GiB - 1
  EXPECT_GT(FilterRecordBodyBytes("k", header, /*has_payload=*/true), kMaxLogRecordBodyBytes);
  // Without a payload the same filter fits: a creation record is small.
  EXPECT_LT(FilterRecordBodyBytes("k", header, /*has_payload=*/false), 100u);

  // The size check comes before any payload is read, so an empty filter
  // variant is never touched.
  const AnyFilter never_read;
  std::string out = "before";
  EncodeFilterRecord(/*time_ms=*/1, "k", header, &never_read, &out);
  EXPECT_EQ(out, "before");

  header.payload_bytes = UINT64_MAX;  // the size saturates instead of wrapping
  EXPECT_EQ(FilterRecordBodyBytes("k", header, /*has_payload=*/true), UINT64_MAX);
}

TEST(AppendLog, ALogWithOnlyItsHeaderHasNoRecords) {
  LogTempDir dir;
  auto writer = CreateWriter(DefaultFileSystem(), dir.path(), /*generation=*/0);
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(writer->written_bytes(), kLogHeaderBytes);
  ASSERT_TRUE(writer->Close().ok());
  LogReadOutcome read = ReadLog(writer->path(), /*allow_torn_tail=*/false);
  ASSERT_TRUE(read.status.ok()) << read.status.message();
  EXPECT_EQ(read.result.records, 0u);
  EXPECT_EQ(read.result.valid_bytes, kLogHeaderBytes);
  EXPECT_FALSE(read.result.torn_tail);
}

TEST(AppendLog, AGenerationThatDisagreesWithTheFileNameFails) {
  LogTempDir dir;
  auto writer = CreateWriter(DefaultFileSystem(), dir.path(), /*generation=*/4);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->Close().ok());
  const std::string bytes = ReadFileBytes(writer->path());

  WriteFileBytes(dir.path() + "/appendonly.bglog.5", bytes);
  LogReadOutcome renamed = ReadLog(dir.path() + "/appendonly.bglog.5", /*allow_torn_tail=*/true);
  EXPECT_FALSE(renamed.status.ok());
  EXPECT_NE(renamed.status.message().find("generation 4"), std::string::npos)
      << renamed.status.message();

  // A name without a number (a copy, a temporary) skips the check.
  WriteFileBytes(dir.path() + "/copy.bglog", bytes);
  EXPECT_TRUE(ReadLog(dir.path() + "/copy.bglog", /*allow_torn_tail=*/false).status.ok());
  WriteFileBytes(dir.path() + "/appendonly.bglog.4.tmp", bytes);
  EXPECT_TRUE(ReadLog(dir.path() + "/appendonly.bglog.4.tmp", false).status.ok());
}

TEST(AppendLogWriter, SequenceIsTheFileOffsetJustPastTheRecord) {
  LogTempDir dir;
  auto writer = CreateWriter(DefaultFileSystem(), dir.path(), /*generation=*/1);
  ASSERT_NE(writer, nullptr);
  const std::string a = EncodeCommand(1, {"A"});
  const std::string b = EncodeCommand(2, {"BB", "b"});
  const uint64_t first = writer->Append(a);
  const uint64_t second = writer->Append(b);
  EXPECT_EQ(first, kLogHeaderBytes + a.size());
  EXPECT_EQ(second, first + b.size());
  // Queued is not written: written_bytes counts the file, not the queue.
  EXPECT_EQ(writer->written_bytes(), kLogHeaderBytes);

  ASSERT_TRUE(writer->Flush(first, /*sync=*/false).ok());
  // Group commit: the flusher took everything queued, not just `first`.
  EXPECT_EQ(writer->written_bytes(), second);
  EXPECT_EQ(ReadFileBytes(writer->path()).size(), second);
  // Flushing what is already written is free and fine.
  EXPECT_TRUE(writer->Flush(first, /*sync=*/false).ok());
  EXPECT_TRUE(writer->Sync().ok());
}

TEST(AppendLogWriter, EveryFlushedRecordIsReadableBeforeFlushReturns) {
  LogTempDir dir;
  auto writer = CreateWriter(DefaultFileSystem(), dir.path(), /*generation=*/1);
  ASSERT_NE(writer, nullptr);
  for (int i = 0; i < 20; ++i) {
    const uint64_t sequence = writer->Append(EncodeCommand(i, {"N", std::to_string(i)}));
    ASSERT_TRUE(writer->Flush(sequence, /*sync=*/i % 5 == 0).ok());
    LogReadOutcome read = ReadLog(writer->path(), /*allow_torn_tail=*/false);
    ASSERT_TRUE(read.status.ok()) << read.status.message();
    ASSERT_EQ(read.records.size(), static_cast<size_t>(i + 1));
    EXPECT_EQ(read.records.back().args[1], std::to_string(i));
  }
}

TEST(AppendLogWriter, CreateRefusesAGenerationThatExists) {
  LogTempDir dir;
  auto writer = CreateWriter(DefaultFileSystem(), dir.path(), /*generation=*/2);
  ASSERT_NE(writer, nullptr);
  std::unique_ptr<AppendLogWriter> second;
  Status status = AppendLogWriter::Create(DefaultFileSystem(), dir.path(), "appendonly.bglog", 2,
                                          /*now_ms=*/0, &second);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(second, nullptr);
  EXPECT_NE(status.message().find("appendonly.bglog.2"), std::string::npos) << status.message();
}

TEST(AppendLogWriter, CloseWritesWhatIsQueuedAndLaterFlushesFail) {
  LogTempDir dir;
  auto writer = CreateWriter(DefaultFileSystem(), dir.path(), /*generation=*/1);
  ASSERT_NE(writer, nullptr);
  const uint64_t queued = writer->Append(EncodeCommand(1, {"QUEUED"}));
  ASSERT_TRUE(writer->Close().ok());
  EXPECT_EQ(writer->written_bytes(), queued);
  EXPECT_TRUE(writer->Flush(queued, /*sync=*/true).ok()) << "already durable";
  EXPECT_TRUE(writer->Close().ok()) << "a second Close is harmless";

  const uint64_t late = writer->Append(EncodeCommand(2, {"LATE"}));
  EXPECT_FALSE(writer->Flush(late, /*sync=*/false).ok());
  LogReadOutcome read = ReadLog(writer->path(), /*allow_torn_tail=*/false);
  ASSERT_TRUE(read.status.ok()) << read.status.message();
  ASSERT_EQ(read.records.size(), 1u);
  EXPECT_EQ(read.records[0].args[0], "QUEUED");
}

// A flush that arrives while Close writes its final batch must wait for it
// (the batch covers it) instead of failing: a snapshot cut's Close raced
// connections flushing their replies' records, and the failure latched a log
// error that refused every later write with MISCONF. Close's fsync is held
// until the racing flush has had 200 ms to return; before the fix it
// returned "flush after close" at once.
TEST(AppendLogWriter, AFlushRacingCloseWaitsForItAndSucceeds) {
  LogTempDir dir;
  test_support::FaultFileSystem fs(DefaultFileSystem());
  auto writer = CreateWriter(&fs, dir.path(), /*generation=*/1);
  ASSERT_NE(writer, nullptr);
  const uint64_t queued = writer->Append(EncodeCommand(1, {"QUEUED"}));
  std::atomic<bool> returned{false};
  Status racing = Status::Ok();
  std::thread flusher;
  fs.BeforeNth(test_support::FaultOp::kSync, fs.calls(test_support::FaultOp::kSync) + 1, [&] {
    flusher = std::thread([&] {
      racing = writer->Flush(queued, /*sync=*/false);
      returned = true;
    });
    for (int i = 0; i < 200 && !returned; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  ASSERT_TRUE(writer->Close().ok());
  flusher.join();
  EXPECT_TRUE(racing.ok()) << racing.message();
}

// 4 threads x 2,000 records, every 250th flushed with sync: the file must
// hold all 8,000 intact, each thread's in the order it appended them.
TEST(AppendLogWriter, ConcurrentAppendersKeepEveryRecordIntactAndInOrder) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  LogTempDir dir;
  auto writer = CreateWriter(DefaultFileSystem(), dir.path(), /*generation=*/9);
  ASSERT_NE(writer, nullptr);

  std::vector<std::string> failures(kThreads);  // gtest asserts stay on the main thread
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Built once with append: GCC 12 warns falsely (-Wrestrict) on
      // "literal" + std::string inside this loop.
      std::string tag = "T";
      tag.append(std::to_string(t));
      uint64_t previous = 0;
      for (int i = 0; i < kPerThread; ++i) {
        // Records of varied sizes, so batches split records at odd places.
        const std::string padding(static_cast<size_t>((i * 7 + t) % 40), 'p');
        const uint64_t sequence = writer->Append(
            EncodeCommand(i, {tag, std::to_string(i), padding}));
        if (sequence <= previous) failures[t] += "sequence went backwards; ";
        previous = sequence;
        Status status = writer->Flush(sequence, /*sync=*/i % 250 == 0);
        if (!status.ok()) failures[t] += status.message() + "; ";
        if (i == kPerThread / 2) {
          // Flush returned, so this thread's record is in the file now. Other
          // threads may be mid-write, so the tail may legitimately be torn.
          LogReadOutcome read = ReadLog(writer->path(), /*allow_torn_tail=*/true);
          bool found = false;
          for (const LogRecord& record : read.records) {
            found |= record.args[0] == tag && record.args[1] == std::to_string(i);
          }
          if (!read.status.ok()) failures[t] += read.status.message() + "; ";
          if (!found) failures[t] += "flushed record not in the file; ";
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  ASSERT_TRUE(writer->Close().ok());

  LogReadOutcome read = ReadLog(writer->path(), /*allow_torn_tail=*/false);
  ASSERT_TRUE(read.status.ok()) << read.status.message();
  EXPECT_FALSE(read.result.torn_tail);
  ASSERT_EQ(read.records.size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(read.result.valid_bytes, writer->written_bytes());
  std::vector<int> next(kThreads, 0);
  for (const LogRecord& record : read.records) {
    ASSERT_EQ(record.args.size(), 3u);
    const int t = std::stoi(record.args[0].substr(1));
    ASSERT_GE(t, 0);
    ASSERT_LT(t, kThreads);
    ASSERT_EQ(record.args[1], std::to_string(next[t])) << "thread " << t << " out of order";
    ASSERT_EQ(record.time_ms, next[t]);
    ++next[t];
  }
}

// The real file system, with writes or syncs that fail on demand.
class FailingFileSystem : public FileSystem {
 public:
  bool fail_writes = false;
  bool fail_syncs = false;

  Status CreateNew(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    std::unique_ptr<WritableFile> real;
    Status status = DefaultFileSystem()->CreateNew(path, &real);
    if (status.ok()) *out = std::make_unique<File>(this, std::move(real));
    return status;
  }
  Status OpenForAppend(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    return DefaultFileSystem()->OpenForAppend(path, out);
  }
  Status OpenForRead(const std::string& path, std::unique_ptr<SequentialFile>* out) override {
    return DefaultFileSystem()->OpenForRead(path, out);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    return DefaultFileSystem()->Rename(from, to);
  }
  Status SyncDirectory(const std::string& dir) override {
    return DefaultFileSystem()->SyncDirectory(dir);
  }
  Status Remove(const std::string& path) override { return DefaultFileSystem()->Remove(path); }
  Status Truncate(const std::string& path, uint64_t size) override {
    return DefaultFileSystem()->Truncate(path, size);
  }
  Status FileSize(const std::string& path, uint64_t* size) override {
    return DefaultFileSystem()->FileSize(path, size);
  }
  bool Exists(const std::string& path) override { return DefaultFileSystem()->Exists(path); }
  Status ListDirectory(const std::string& dir, std::vector<std::string>* names) override {
    return DefaultFileSystem()->ListDirectory(dir, names);
  }

 private:
  class File : public WritableFile {
   public:
    File(FailingFileSystem* fs, std::unique_ptr<WritableFile> real)
        : fs_(fs), real_(std::move(real)) {}
    Status Append(std::string_view data) override {
      if (fs_->fail_writes) return Status::Error("write: No space left on device");
      return real_->Append(data);
    }
    Status Sync() override {
      if (fs_->fail_syncs) return Status::Error("fsync: Input/output error");
      return real_->Sync();
    }
    Status Close() override { return real_->Close(); }

   private:
    FailingFileSystem* fs_;
    std::unique_ptr<WritableFile> real_;
  };
};

TEST(AppendLogWriter, AFailedWriteIsReturnedByEveryLaterFlush) {
  LogTempDir dir;
  FailingFileSystem fs;
  auto writer = CreateWriter(&fs, dir.path(), /*generation=*/1);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->Flush(writer->Append(EncodeCommand(1, {"OK"})), false).ok());

  fs.fail_writes = true;
  const Status first = writer->Flush(writer->Append(EncodeCommand(2, {"LOST"})), false);
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.message().find("No space left"), std::string::npos) << first.message();

  fs.fail_writes = false;  // the disk has room again; the log must stay failed
  const Status later = writer->Flush(writer->Append(EncodeCommand(3, {"LATER"})), false);
  EXPECT_EQ(later.message(), first.message());
  EXPECT_EQ(writer->Sync().message(), first.message());
  EXPECT_EQ(writer->Close().message(), first.message());
  EXPECT_EQ(writer->written_bytes(), ReadFileBytes(writer->path()).size());

  LogReadOutcome read = ReadLog(writer->path(), /*allow_torn_tail=*/false);
  ASSERT_TRUE(read.status.ok()) << read.status.message();
  ASSERT_EQ(read.records.size(), 1u);
  EXPECT_EQ(read.records[0].args[0], "OK");
}

TEST(AppendLogWriter, AFailedSyncIsLatchedEvenForFlushesWithoutSync) {
  LogTempDir dir;
  FailingFileSystem fs;
  auto writer = CreateWriter(&fs, dir.path(), /*generation=*/1);
  ASSERT_NE(writer, nullptr);
  fs.fail_syncs = true;
  const uint64_t sequence = writer->Append(EncodeCommand(1, {"X"}));
  ASSERT_TRUE(writer->Flush(sequence, /*sync=*/false).ok()) << "no sync asked for";
  const Status failed = writer->Sync();
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("Input/output error"), std::string::npos);
  fs.fail_syncs = false;
  EXPECT_EQ(writer->Flush(sequence, /*sync=*/false).message(), failed.message());
  EXPECT_EQ(writer->Flush(writer->Append(EncodeCommand(2, {"Y"})), false).message(),
            failed.message());
}

TEST(AppendLogWriter, ACreateThatCannotWriteItsHeaderLeavesNoFile) {
  LogTempDir dir;
  FailingFileSystem fs;
  fs.fail_syncs = true;
  std::unique_ptr<AppendLogWriter> writer;
  Status status = AppendLogWriter::Create(&fs, dir.path(), "appendonly.bglog", 1, 0, &writer);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(writer, nullptr);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/appendonly.bglog.1"));
  fs.fail_syncs = false;
  EXPECT_TRUE(AppendLogWriter::Create(&fs, dir.path(), "appendonly.bglog", 1, 0, &writer).ok());
}

TEST(LogFileNames, NameIsBaseDotDecimalGeneration) {
  EXPECT_EQ(LogFileName("appendonly.bglog", 0), "appendonly.bglog.0");
  EXPECT_EQ(LogFileName("appendonly.bglog", 12), "appendonly.bglog.12");
  EXPECT_EQ(LogFileName("a", UINT64_MAX), "a.18446744073709551615");
}

TEST(LogFileNames, GenerationsAreListedNumericallyAndOtherNamesIgnored) {
  LogTempDir dir;
  for (const char* name :
       {"log.10", "log.2", "log.0", "log.18446744073709551615", "log.tmp", "log.12x", "log.",
        "log.007", "log.+3", "log.-3", "log.18446744073709551616", "log.1.tmp", "other.5",
        "xlog.4", "log", "log.3.4"}) {
    WriteFileBytes(dir.path() + "/" + name, "");
  }
  std::vector<uint64_t> generations = {99};
  ASSERT_TRUE(ListLogGenerations(*DefaultFileSystem(), dir.path(), "log", &generations).ok());
  EXPECT_EQ(generations, (std::vector<uint64_t>{0, 2, 10, UINT64_MAX}));

  EXPECT_FALSE(
      ListLogGenerations(*DefaultFileSystem(), dir.path() + "/missing", "log", &generations).ok());
}

// ---------------------------------------------------------------------------
// The golden logs: tests/data/appendlog-v<N>.golden holds the log that
// GoldenLogRecords makes, as format version N wrote it. The current
// version's must encode to the same bytes; every older one must still read
// (a log written by an older build must replay).

namespace golden {

constexpr int64_t kTime = 1'700'000'000'000;
constexpr uint64_t kGeneration = 3;

std::string Path(uint32_t version) {
  return std::string(BLOOMGATE_TEST_DATA_DIR) + "/appendlog-v" + std::to_string(version) +
         ".golden";
}

// A creation, a command and an effect-style command.
std::string Records() {
  std::string records;
  std::unique_ptr<ScalableBloomFilter> bloom;
  EXPECT_EQ(ScalableBloomFilter::Create(ScalableBloomOptions{.error_rate = 0.01, .capacity = 100,
                                                             .hash_seed = 42},
                                        FilterLimits{}, /*budget=*/nullptr, &bloom),
            FilterStatus::kOk);
  const AnyFilter any = std::move(bloom);
  EncodeFilterRecord(kTime, "golden-bf", DescribeFilter(any), nullptr, &records);
  const std::string_view add[] = {"BF.ADD", "golden-bf", "item"};
  EncodeCommandRecord(kTime + 1, add, &records);
  const std::string_view expire[] = {"PEXPIREAT", "golden-bf", "1800000000000"};
  EncodeCommandRecord(kTime + 2, expire, &records);
  return records;
}

void ExpectGoldenRecords(const std::vector<LogRecord>& records) {
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].type, LogRecordType::kFilter);
  EXPECT_EQ(records[0].key, "golden-bf");
  EXPECT_FALSE(records[0].has_payload);
  EXPECT_EQ(records[1].args, (std::vector<std::string>{"BF.ADD", "golden-bf", "item"}));
  EXPECT_EQ(records[1].time_ms, kTime + 1);
  EXPECT_EQ(records[2].args,
            (std::vector<std::string>{"PEXPIREAT", "golden-bf", "1800000000000"}));
}

}  // namespace golden

TEST(AppendLogGolden, FixedRecordsEncodeToTheGoldenBytes) {
  LogTempDir dir;
  std::unique_ptr<AppendLogWriter> writer;
  ASSERT_TRUE(AppendLogWriter::Create(DefaultFileSystem(), dir.path(), "appendonly.bglog",
                                      golden::kGeneration, golden::kTime, &writer)
                  .ok());
  const uint64_t sequence = writer->Append(golden::Records());
  ASSERT_TRUE(writer->Flush(sequence, /*sync=*/false).ok());
  ASSERT_TRUE(writer->Close().ok());
  const std::string encoded = ReadFileBytes(writer->path());
  const std::string path = golden::Path(kAppendLogFormatVersion);
  const char* regenerate = std::getenv("BLOOMGATE_REGENERATE_GOLDEN");
  if (regenerate != nullptr && std::string(regenerate) == "1") {
    WriteFileBytes(path, encoded);
    // Fails on purpose: a regeneration must never pass silently.
    FAIL() << "rewrote " << path << "; run again without BLOOMGATE_REGENERATE_GOLDEN";
  }
  EXPECT_TRUE(ReadFileBytes(path) == encoded)
      << "the log bytes changed: bump kAppendLogFormatVersion, keep the old golden file "
         "and regenerate this one";
}

TEST(AppendLogGolden, EveryVersionsGoldenLogStillReads) {
  for (uint32_t version = 1; version <= kAppendLogFormatVersion; ++version) {
    SCOPED_TRACE("format version " + std::to_string(version));
    LogTempDir dir;
    const std::string path =
        dir.path() + "/appendonly.bglog." + std::to_string(golden::kGeneration);
    const std::string bytes = ReadFileBytes(golden::Path(version));
    ASSERT_FALSE(bytes.empty()) << "missing " << golden::Path(version);
    WriteFileBytes(path, bytes);
    std::vector<LogRecord> records;
    LogReadResult result;
    Status status = ReadAppendLog(*DefaultFileSystem(), path, /*allow_torn_tail=*/false,
                                  [&records](const LogRecord& record) {
                                    records.push_back(record);
                                    return Status::Ok();
                                  },
                                  &result);
    ASSERT_TRUE(status.ok()) << status.message();
    golden::ExpectGoldenRecords(records);
  }
}


// ---------------------------------------------------------------------------
// Units: records that take effect together, in one record.

TEST(AppendLogUnit, AUnitRoundTripsWithItsMembersInOrder) {
  std::string members;
  const std::string_view first[] = {"CBF.ADD", "k", "a"};
  const std::string_view second[] = {"CBF.DEL", "k", "a"};
  EncodeCommandRecord(10, first, &members);
  EncodeCommandRecord(11, second, &members);
  std::string unit;
  EncodeUnitRecord(12, 2, members, &unit);
  ASSERT_EQ(unit.size(), FramedRecordBytes(UnitRecordBodyBytes(members.size())));
  LogRecord record;
  ASSERT_EQ(DecodeLogRecord(unit, &record), "");
  EXPECT_EQ(record.type, LogRecordType::kUnit);
  EXPECT_EQ(record.time_ms, 12);
  ASSERT_EQ(record.members.size(), 2u);
  EXPECT_EQ(record.members[0].args, (std::vector<std::string>{"CBF.ADD", "k", "a"}));
  EXPECT_EQ(record.members[0].time_ms, 10);
  EXPECT_EQ(record.members[1].args, (std::vector<std::string>{"CBF.DEL", "k", "a"}));
  EXPECT_EQ(SplitFramedRecords(members).size(), 2u);
}

TEST(AppendLogUnit, AUnitWhoseCountDisagreesWithItsMembersIsMalformed) {
  std::string members;
  const std::string_view args[] = {"DEL", "k"};
  EncodeCommandRecord(10, args, &members);
  EncodeCommandRecord(10, args, &members);
  std::string unit;
  EncodeUnitRecord(10, 3, members, &unit);
  LogRecord record;
  EXPECT_NE(DecodeLogRecord(unit, &record), "");
}

// Cut at every length inside the unit: the reader sees the record before it
// and a torn tail, never a part of the unit.
TEST(AppendLogUnit, ALogCutAnywhereInsideAUnitKeepsNoneOfIt) {
  std::string before;
  const std::string_view alone[] = {"CBF.RESERVE", "k", "0.01", "100"};
  EncodeCommandRecord(1, alone, &before);
  std::string members;
  const std::string_view add_a[] = {"CBF.ADD", "k", "a"};
  const std::string_view add_b[] = {"CBF.ADD", "k", "b"};
  EncodeCommandRecord(2, add_a, &members);
  EncodeCommandRecord(2, add_b, &members);
  std::string unit;
  EncodeUnitRecord(2, 2, members, &unit);
  LogTempDir dir;
  std::unique_ptr<AppendLogWriter> writer;
  ASSERT_TRUE(
      AppendLogWriter::Create(DefaultFileSystem(), dir.path(), "appendonly.bglog", 1, 0, &writer)
          .ok());
  const uint64_t sequence = writer->Append(before + unit);
  ASSERT_TRUE(writer->Flush(sequence, false).ok());
  ASSERT_TRUE(writer->Close().ok());
  const std::string whole = ReadFileBytes(writer->path());
  const size_t unit_start = whole.size() - unit.size();
  for (size_t cut = unit_start + 1; cut < whole.size(); ++cut) {
    WriteFileBytes(writer->path(), whole.substr(0, cut));
    std::vector<LogRecord> records;
    LogReadResult result;
    Status status = ReadAppendLog(*DefaultFileSystem(), writer->path(), true,
                                  [&records](const LogRecord& record) {
                                    records.push_back(record);
                                    return Status::Ok();
                                  },
                                  &result);
    ASSERT_TRUE(status.ok()) << "cut at " << cut << ": " << status.message();
    ASSERT_EQ(records.size(), 1u) << "cut at " << cut;
    EXPECT_EQ(records[0].type, LogRecordType::kCommand);
    EXPECT_TRUE(result.torn_tail);
    EXPECT_EQ(result.valid_bytes, unit_start);
  }
}

}  // namespace
}  // namespace bloomgate
