// Damaged snapshot files: every flipped byte, every truncation, appended
// garbage, and files whose checksums are right but whose contents are not
// (built by "resealing": recomputing every checksum after an edit, with a
// parser of the layout in persistence/FORMAT.md written independently of the
// reader). Every such file must be refused with an error, leave no record
// loaded and no memory reserved, and never crash.

#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "filters/key_hash.h"
#include "persistence/byte_io.h"
#include "persistence/snapshot_file.h"
#include "tests/unit/config/temp_dir.h"

namespace bloomgate {
namespace {

using testutil::TempDir;

// --- the layout, as FORMAT.md draws it --------------------------------------

constexpr size_t kSnapshotHeaderBytes =
    44;  // magic 8, version 4, created 8, generation 8, count 8, xxh3 8
constexpr size_t kHeaderCountAt = 28;
constexpr size_t kHeaderChecksumAt = 36;
constexpr size_t kTrailerBytes = 24;  // magic 8, count 8, xxh3 8

struct RecordLayout {
  size_t start = 0;  // the kind byte
  size_t name_at = 0;
  uint32_t name_bytes = 0;
  size_t expire_at = 0;
  size_t filter_header_at = 0;
  uint32_t filter_header_bytes = 0;
  size_t payload_bytes_at = 0;
  size_t header_checksum_at = 0;
  size_t payload_at = 0;
  uint64_t payload_bytes = 0;
  size_t payload_checksum_at = 0;
};

struct FileLayout {
  std::vector<RecordLayout> records;
  size_t trailer_at = 0;
};

uint64_t U64At(const std::string& bytes, size_t at) {
  uint64_t v = 0;
  ByteReader(std::string_view(bytes).substr(at, 8)).GetU64(&v);
  return v;
}

uint32_t U32At(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  ByteReader(std::string_view(bytes).substr(at, 4)).GetU32(&v);
  return v;
}

void SetU64At(std::string* bytes, size_t at, uint64_t v) {
  std::string encoded;
  ByteWriter(&encoded).PutU64(v);
  bytes->replace(at, 8, encoded);
}

void SetU32At(std::string* bytes, size_t at, uint32_t v) {
  std::string encoded;
  ByteWriter(&encoded).PutU32(v);
  bytes->replace(at, 4, encoded);
}

// The layout of `bytes`, or nullopt if an edit made it unparsable.
std::optional<FileLayout> ParseLayout(const std::string& bytes) {
  if (bytes.size() < kSnapshotHeaderBytes + kTrailerBytes) return std::nullopt;
  FileLayout layout;
  const uint64_t count = U64At(bytes, kHeaderCountAt);
  size_t at = kSnapshotHeaderBytes;
  for (uint64_t i = 0; i < count; ++i) {
    RecordLayout r;
    r.start = at;
    if (bytes.size() - at < 5) return std::nullopt;
    r.name_bytes = U32At(bytes, at + 1);
    r.name_at = at + 5;
    if (bytes.size() - r.name_at < uint64_t{r.name_bytes} + 12) return std::nullopt;
    r.expire_at = r.name_at + r.name_bytes;
    r.filter_header_bytes = U32At(bytes, r.expire_at + 8);
    r.filter_header_at = r.expire_at + 12;
    if (bytes.size() - r.filter_header_at < uint64_t{r.filter_header_bytes} + 16) {
      return std::nullopt;
    }
    r.payload_bytes_at = r.filter_header_at + r.filter_header_bytes;
    r.payload_bytes = U64At(bytes, r.payload_bytes_at);
    r.header_checksum_at = r.payload_bytes_at + 8;
    r.payload_at = r.header_checksum_at + 8;
    if (bytes.size() - r.payload_at < r.payload_bytes + 8) return std::nullopt;
    r.payload_checksum_at = r.payload_at + r.payload_bytes;
    at = r.payload_checksum_at + 8;
    layout.records.push_back(r);
  }
  if (bytes.size() - at < kTrailerBytes) return std::nullopt;
  layout.trailer_at = at;
  return layout;
}

uint64_t Xxh3(const std::string& bytes, size_t from, size_t to) {
  return XXH3_64bits(bytes.data() + from, to - from);
}

// Recomputes every checksum, so that only the reader's other checks can
// refuse the edit. False if the edit broke the layout itself.
bool Reseal(std::string* bytes) {
  const std::optional<FileLayout> layout = ParseLayout(*bytes);
  if (!layout) return false;
  SetU64At(bytes, kHeaderChecksumAt, Xxh3(*bytes, 0, kHeaderChecksumAt));
  for (const RecordLayout& r : layout->records) {
    SetU64At(bytes, r.header_checksum_at, Xxh3(*bytes, r.start, r.header_checksum_at));
    SetU64At(bytes, r.payload_checksum_at, Xxh3(*bytes, r.payload_at, r.payload_checksum_at));
  }
  const size_t file_checksum_at = layout->trailer_at + 16;
  SetU64At(bytes, file_checksum_at, Xxh3(*bytes, 0, file_checksum_at));
  return true;
}

// --- a small snapshot and a loader of variants of it ------------------------

// Serves one file's bytes from memory: the damage loops load thousands of
// variants, and writing each to disk costs milliseconds where parsing costs
// microseconds. ReadSnapshot needs only FileSize and OpenForRead.
class MemorySnapshotFileSystem : public FileSystem {
 public:
  void SetFile(std::string bytes) { bytes_ = std::move(bytes); }

  Status FileSize(const std::string&, uint64_t* size) override {
    *size = bytes_.size();
    return Status::Ok();
  }
  Status OpenForRead(const std::string&, std::unique_ptr<SequentialFile>* out) override {
    *out = std::make_unique<Reader>(bytes_);
    return Status::Ok();
  }
  Status CreateNew(const std::string&, std::unique_ptr<WritableFile>*) override { return No(); }
  Status OpenForAppend(const std::string&, std::unique_ptr<WritableFile>*) override { return No(); }
  Status Rename(const std::string&, const std::string&) override { return No(); }
  Status SyncDirectory(const std::string&) override { return No(); }
  Status Remove(const std::string&) override { return No(); }
  Status Truncate(const std::string&, uint64_t) override { return No(); }
  bool Exists(const std::string&) override { return true; }
  Status ListDirectory(const std::string&, std::vector<std::string>*) override { return No(); }

 private:
  class Reader : public SequentialFile {
   public:
    explicit Reader(std::string_view bytes) : bytes_(bytes) {}
    Status Read(size_t n, std::string* out) override {
      out->assign(bytes_.substr(std::min(position_, bytes_.size()), n));
      position_ += out->size();
      return Status::Ok();
    }

   private:
    std::string_view bytes_;
    size_t position_ = 0;
  };

  static Status No() { return Status::Error("not supported by MemorySnapshotFileSystem"); }

  std::string bytes_;
};

std::string ReadBytesOf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class SnapshotDamage : public ::testing::Test {
 protected:
  // One tiny filter of each family, so that the file is a few hundred bytes
  // and every byte of it can be damaged in turn.
  void SetUp() override {
    std::unique_ptr<ScalableBloomFilter> bloom;
    ASSERT_EQ(ScalableBloomFilter::Create({.capacity = 4}, FilterLimits{}, nullptr, &bloom),
              FilterStatus::kOk);
    std::unique_ptr<CountingBloomFilter> counting;
    ASSERT_EQ(CountingBloomFilter::Create({.capacity = 4}, FilterLimits{}, nullptr, &counting),
              FilterStatus::kOk);
    std::unique_ptr<CuckooFilter> cuckoo;
    ASSERT_EQ(
        CuckooFilter::Create({.capacity = 4, .bucket_size = 2}, FilterLimits{}, nullptr, &cuckoo),
        FilterStatus::kOk);
    bool added = false;
    for (const char* item : {"x", "y", "z"}) {
      ASSERT_EQ(bloom->Add(HashKey(item), &added), FilterStatus::kOk);
      ASSERT_EQ(counting->Add(HashKey(item), &added), FilterStatus::kOk);
      ASSERT_EQ(cuckoo->Add(HashKey(item)), FilterStatus::kOk);
    }
    filters_.emplace_back(std::move(bloom));
    filters_.emplace_back(std::move(counting));
    filters_.emplace_back(std::move(cuckoo));
    const SnapshotRecordSource sources[] = {
        {"b", 0, &filters_[0]}, {"c", 1'800'000'000'000, &filters_[1]}, {"f", 0, &filters_[2]}};
    ASSERT_TRUE(WriteSnapshot(*DefaultFileSystem(), dir_.path().string(), "good.bgs",
                              {.created_ms = 1, .log_generation = 2}, sources, nullptr)
                    .ok());
    good_ = ReadBytesOf(JoinPath(dir_.path().string(), "good.bgs"));
    ASSERT_LT(good_.size(), 4096u) << "the damage loops want a small file";
    RecordProperty("snapshot_bytes", static_cast<int>(good_.size()));
    const std::optional<FileLayout> layout = ParseLayout(good_);
    ASSERT_TRUE(layout.has_value()) << "FORMAT.md and the writer disagree";
    ASSERT_EQ(layout->records.size(), 3u);
    ASSERT_EQ(layout->trailer_at + kTrailerBytes, good_.size());
    layout_ = *layout;
    ASSERT_TRUE(Load(good_).ok()) << Load(good_).message();
  }

  // Loads `bytes` as a file; on error checks that nothing stays loaded or
  // reserved, on success gives everything back before returning.
  Status Load(const std::string& bytes, const FilterLimits& limits = FilterLimits{}) {
    const std::string path = "/memory/variant.bgs";
    fs_.SetFile(bytes);
    MemoryBudget budget(/*limit_bytes=*/64 << 20);
    std::vector<LoadedRecord> records(1);  // not empty: an error must empty it
    SnapshotInfo info;
    Status status = ReadSnapshot(fs_, path, limits, &budget, &info, &records);
    if (!status.ok()) {
      EXPECT_TRUE(records.empty()) << status.message();
      EXPECT_EQ(budget.used(), 0u) << status.message();
      EXPECT_EQ(info.records, 0u);
      EXPECT_EQ(status.message().rfind("snapshot " + path + ": ", 0), 0u) << status.message();
    }
    records.clear();
    EXPECT_EQ(budget.used(), 0u);
    return status;
  }

  std::string Variant(size_t at, uint8_t value) const {
    std::string bytes = good_;
    bytes[at] = static_cast<char>(value);
    return bytes;
  }

  TempDir dir_;
  MemorySnapshotFileSystem fs_;
  std::vector<AnyFilter> filters_;
  std::string good_;
  FileLayout layout_;
};

TEST_F(SnapshotDamage, EveryFlippedByteIsRefused) {
  for (size_t at = 0; at < good_.size(); ++at) {
    const auto original = static_cast<uint8_t>(good_[at]);
    for (uint8_t damaged :
         {static_cast<uint8_t>(original ^ 0xff), static_cast<uint8_t>(original + 1)}) {
      Status status = Load(Variant(at, damaged));
      EXPECT_FALSE(status.ok()) << "byte " << at << " set to " << int{damaged} << " was accepted";
    }
  }
}

TEST_F(SnapshotDamage, EveryTruncationIsRefused) {
  for (size_t length = 0; length < good_.size(); ++length) {
    Status status = Load(good_.substr(0, length));
    EXPECT_FALSE(status.ok()) << "the first " << length << " bytes were accepted";
  }
}

TEST_F(SnapshotDamage, AppendedGarbageIsRefused) {
  const std::string trailer = good_.substr(layout_.trailer_at);
  for (const std::string& garbage :
       {std::string(1, '\0'), std::string("garbage!"), trailer, good_}) {
    Status status = Load(good_ + garbage);
    ASSERT_FALSE(status.ok()) << garbage.size() << " appended bytes were accepted";
    EXPECT_NE(status.message().find("trailing bytes"), std::string::npos) << status.message();
  }
}

TEST_F(SnapshotDamage, ErrorsNameTheRecordAndBothChecksums) {
  const RecordLayout& cuckoo = layout_.records[2];
  Status status =
      Load(Variant(cuckoo.payload_at, static_cast<uint8_t>(good_[cuckoo.payload_at]) ^ 1));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("record 2 (key 'f'): payload checksum mismatch: expected 0x"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find(" got 0x"), std::string::npos) << status.message();

  status = Load(Variant(layout_.records[1].expire_at, 0x55));
  EXPECT_NE(status.message().find("record 1 (key 'c'): record header checksum mismatch"),
            std::string::npos)
      << status.message();
  status = Load(Variant(kSnapshotHeaderBytes - 9, 0x55));  // the record count
  EXPECT_NE(status.message().find("file header checksum mismatch"), std::string::npos)
      << status.message();
  status = Load(Variant(good_.size() - 1, 0x55));
  EXPECT_NE(status.message().find("file checksum mismatch"), std::string::npos) << status.message();
  status = Load(Variant(0, 'B'));
  EXPECT_NE(status.message().find("bad magic"), std::string::npos) << status.message();
  status = Load(good_.substr(0, layout_.records[1].payload_at + 1));
  EXPECT_NE(status.message().find("record 1 (key 'c'): truncated"), std::string::npos)
      << status.message();
  status = Load("");
  EXPECT_NE(status.message().find("truncated"), std::string::npos) << status.message();
}

// --- right checksums, wrong contents ----------------------------------------

TEST_F(SnapshotDamage, UnknownVersionIsRefused) {
  std::string bytes = good_;
  SetU32At(&bytes, 8, kSnapshotFormatVersion + 1);
  ASSERT_TRUE(Reseal(&bytes));
  Status status = Load(bytes);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("unknown format version " +
                                  std::to_string(kSnapshotFormatVersion + 1)),
            std::string::npos)
      << status.message();
  SetU32At(&bytes, 8, 0);
  ASSERT_TRUE(Reseal(&bytes));
  status = Load(bytes);
  EXPECT_NE(status.message().find("unknown format version 0"), std::string::npos)
      << status.message();
}

TEST_F(SnapshotDamage, DuplicateKeyNamesAreRefused) {
  std::string bytes = good_;
  bytes[layout_.records[2].name_at] = 'b';
  ASSERT_TRUE(Reseal(&bytes));
  Status status = Load(bytes);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("record 2 (key 'b'): duplicate key name, first seen in record 0"),
            std::string::npos)
      << status.message();
}

TEST_F(SnapshotDamage, RecordCountsThatDisagreeAreRefused) {
  std::string bytes = good_;
  SetU64At(&bytes, layout_.trailer_at + 8, 4);
  ASSERT_TRUE(Reseal(&bytes));
  Status status = Load(bytes);
  EXPECT_NE(status.message().find("record count mismatch"), std::string::npos) << status.message();

  // The header claiming fewer records: the reader meets a record where the
  // trailer should be. (Resealed by hand: the layout now ends early.)
  bytes = good_;
  SetU64At(&bytes, kHeaderCountAt, 2);
  SetU64At(&bytes, kHeaderChecksumAt, Xxh3(bytes, 0, kHeaderChecksumAt));
  status = Load(bytes);
  EXPECT_NE(status.message().find("bad trailer magic"), std::string::npos) << status.message();

  // Claiming more: the trailer is read as a record.
  bytes = good_;
  SetU64At(&bytes, kHeaderCountAt, 4);
  SetU64At(&bytes, kHeaderChecksumAt, Xxh3(bytes, 0, kHeaderChecksumAt));
  EXPECT_FALSE(Load(bytes).ok());
}

TEST_F(SnapshotDamage, NegativeExpiryIsRefused) {
  std::string bytes = good_;
  SetU64At(&bytes, layout_.records[0].expire_at, static_cast<uint64_t>(int64_t{-5}));
  ASSERT_TRUE(Reseal(&bytes));
  Status status = Load(bytes);
  EXPECT_NE(status.message().find("negative expire_at_ms -5"), std::string::npos)
      << status.message();
}

TEST_F(SnapshotDamage, UnknownFilterKindIsRefused) {
  std::string bytes = good_;
  bytes[layout_.records[1].start] = 9;
  ASSERT_TRUE(Reseal(&bytes));
  Status status = Load(bytes);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("unknown kind 9"), std::string::npos) << status.message();
}

// FilterLoader::Begin checks that payload_bytes is what the header's shapes
// need; one byte more (with the byte really there) must be refused.
TEST_F(SnapshotDamage, PayloadOfTheWrongSizeIsRefusedByTheFilterLoader) {
  for (const RecordLayout& r : layout_.records) {
    std::string bytes = good_;
    bytes.insert(r.payload_checksum_at, 1, '\0');
    SetU64At(&bytes, r.payload_bytes_at, r.payload_bytes + 1);
    ASSERT_TRUE(Reseal(&bytes));
    EXPECT_FALSE(Load(bytes).ok()) << "record at " << r.start;
  }
}

// Declared sizes are checked before anything of that size is allocated:
// against the format's limits, then against what the file still holds.
TEST_F(SnapshotDamage, HugeDeclaredSizesAreRefusedBeforeAllocating) {
  const RecordLayout& r = layout_.records[0];
  std::string bytes = good_;
  SetU32At(&bytes, r.start + 1, 0xffffffff);
  Status status = Load(bytes);
  EXPECT_NE(status.message().find("record 0: key name length 4294967295 is over the limit"),
            std::string::npos)
      << status.message();

  bytes = good_;
  SetU32At(&bytes, r.start + 1, 100 << 20);  // allowed, but not in this file
  status = Load(bytes);
  EXPECT_NE(status.message().find("record 0: truncated: the key name needs 104857600 bytes"),
            std::string::npos)
      << status.message();

  bytes = good_;
  SetU32At(&bytes, r.expire_at + 8, 2 << 20);
  status = Load(bytes);
  EXPECT_NE(status.message().find("filter header length 2097152 is over the limit"),
            std::string::npos)
      << status.message();

  // A payload of 1 TiB with a valid header checksum: refused as truncated,
  // before FilterLoader::Begin could reserve or allocate it.
  bytes = good_;
  SetU64At(&bytes, r.payload_bytes_at, uint64_t{1} << 40);
  SetU64At(&bytes, r.header_checksum_at, Xxh3(bytes, r.start, r.header_checksum_at));
  status = Load(bytes);
  EXPECT_NE(status.message().find("truncated: the payload of 1099511627776 bytes"),
            std::string::npos)
      << status.message();
}

// Every byte of every filter header and payload (and the kind and expiry),
// changed with all checksums right: FilterLoader sees a well-framed but
// wrong filter. Each must load or be refused cleanly (Load checks that a
// refusal leaves nothing behind); ASan and UBSan check that none reads out
// of bounds or overflows. A 1 MiB filter cap keeps damaged sizes cheap.
TEST_F(SnapshotDamage, EveryResealedFilterByteLoadsOrIsRefusedCleanly) {
  const FilterLimits limits{.max_filter_bytes = 1 << 20};
  size_t refused = 0, loaded = 0;
  for (const RecordLayout& r : layout_.records) {
    std::vector<size_t> positions = {r.start};
    for (size_t at = r.expire_at; at < r.expire_at + 8; ++at) positions.push_back(at);
    for (size_t at = r.filter_header_at; at < r.payload_bytes_at; ++at) positions.push_back(at);
    for (size_t at = r.payload_at; at < r.payload_checksum_at; ++at) positions.push_back(at);
    for (size_t at : positions) {
      std::string bytes = Variant(at, static_cast<uint8_t>(good_[at]) ^ 0xff);
      ASSERT_TRUE(Reseal(&bytes)) << at;
      (Load(bytes, limits).ok() ? loaded : refused) += 1;
    }
  }
  // Payload bits are free to take any value, so some variants load.
  EXPECT_GT(loaded, 0u);
  EXPECT_GT(refused, 0u);
}

}  // namespace
}  // namespace bloomgate
