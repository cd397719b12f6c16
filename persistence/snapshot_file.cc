#include "persistence/snapshot_file.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>

// XXH3_state_t by value: a hashing state on the stack cannot fail to
// allocate. The layout comes from the same package as the library we link.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "persistence/byte_io.h"
#include "persistence/codec/codec_registry.h"
#include "persistence/replace_file.h"

namespace bloomgate {
namespace {

// The byte layout below is drawn in persistence/FORMAT.md; keep the two in
// step, and bump kSnapshotFormatVersion (and the golden file) with any change.

// PNG's trick: a first byte with the high bit set catches a 7-bit transfer,
// and the trailing "\n" a line-ending conversion; "BGSNAP" reads in a hex dump.
constexpr std::string_view kFileMagic("\211BGSNAP\n", 8);  // \211 = 0x89
// Distinct from kFileMagic so that a file cut at a record boundary and then
// followed by a second file's header is not taken for a trailer.
constexpr std::string_view kTrailerMagic("\211BGSEND\n", 8);

// magic 8 + version 4: the part every version keeps, read before the rest.
constexpr size_t kFileIdentBytes = 12;
// created_ms 8 + log_generation 8 + record count 8 + header checksum 8.
constexpr size_t kFileHeaderRestBytes = 32;
// kind u8 + name length u32, the part of a record header before the name.
constexpr size_t kRecordPrefixBytes = 5;
// expire_at_ms i64 + filter header length u32, between name and filter header.
constexpr size_t kRecordMiddleBytes = 12;
constexpr size_t kChecksumBytes = 8;

// Writes and reads go through one buffer of this size. 4 MiB makes the
// per-call cost (a system call, ~1-5 us) negligible next to moving the bytes
// (~1 ms at 4 GB/s), and is small next to any filter worth saving; a 1 GB
// filter therefore crosses it 256 times and is never held whole in memory.
constexpr size_t kIoChunkBytes = size_t{4} << 20;
// The smallest read: a tiny file is not worth zero-filling 4 MiB for.
constexpr size_t kMinReadBytes = size_t{4} << 10;

// Temporary names: <filename>.tmp.<pid>.<counter> (persistence/replace_file.h).
constexpr std::string_view kTempInfix = kReplaceTempInfix;

// Streaming XXH3-64, for everything that is hashed in pieces.
class Xxh3Stream {
 public:
  Xxh3Stream() { XXH3_64bits_reset(&state_); }
  void Update(const void* data, size_t len) { XXH3_64bits_update(&state_, data, len); }
  void Update(std::string_view bytes) { Update(bytes.data(), bytes.size()); }
  uint64_t Digest() const { return XXH3_64bits_digest(&state_); }

 private:
  XXH3_state_t state_;
};

std::string Hex64(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%016" PRIx64, v);
  return text;
}

// "89 42 47 ..." for a magic that did not match.
std::string HexBytes(std::string_view bytes) {
  std::string out;
  for (char c : bytes) {
    char text[4];
    std::snprintf(text, sizeof(text), "%s%02x", out.empty() ? "" : " ", static_cast<uint8_t>(c));
    out += text;
  }
  return out;
}

std::string ChecksumMismatch(std::string_view what, uint64_t stored, uint64_t computed) {
  return std::string(what) + " checksum mismatch: expected " + Hex64(stored) + " got " +
         Hex64(computed);
}

// A key for an error message: printable ASCII as is, anything else (CR and
// LF included, so the text is safe in a RESP error line) as \xNN, and at most
// 64 bytes of it: key names may be long and binary.
std::string QuoteKey(std::string_view key) {
  constexpr size_t kShownBytes = 64;
  std::string out = "'";
  for (size_t i = 0; i < std::min(key.size(), kShownBytes); ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
      out += escaped;
    }
  }
  out += "'";
  if (key.size() > kShownBytes) out += "... (" + std::to_string(key.size()) + " bytes)";
  return out;
}

std::string RecordLabel(uint64_t index) { return "record " + std::to_string(index); }

std::string RecordLabel(uint64_t index, std::string_view key) {
  return RecordLabel(index) + " (key " + QuoteKey(key) + ")";
}

std::string KindText(uint8_t kind) {
  if (IsKnownFilterKind(kind)) return std::string(ToString(static_cast<FilterKind>(kind)));
  return "unknown kind " + std::to_string(kind);
}

bool HoldsFilter(const AnyFilter* filter) {
  return filter != nullptr &&
         std::visit([](const auto& pointer) { return pointer != nullptr; }, *filter);
}

// ---------------------------------------------------------------------------
// Writing

// Gathers the file's bytes into kIoChunkBytes writes and hashes every byte
// it passes on, for the trailer's whole-file checksum.
class SnapshotOutput {
 public:
  explicit SnapshotOutput(WritableFile* file) : file_(file) {}

  Status Put(std::string_view bytes) {
    file_hash_.Update(bytes);
    buffer_.append(bytes);
    size_ += bytes.size();
    return buffer_.size() >= kIoChunkBytes ? Flush() : Status::Ok();
  }

  // Copies the filter's payload straight into the buffer, a piece at a time,
  // so no more than one buffer of it is ever in memory.
  Status PutPayload(const AnyFilter& filter, const FilterHeader& header, Xxh3Stream* hash) {
    uint64_t offset = 0;
    while (offset < header.payload_bytes) {
      if (buffer_.size() >= kIoChunkBytes) {
        Status flushed = Flush();
        if (!flushed.ok()) return flushed;
      }
      const size_t len = static_cast<size_t>(
          std::min<uint64_t>(header.payload_bytes - offset, kIoChunkBytes - buffer_.size()));
      const size_t start = buffer_.size();
      buffer_.resize(start + len);
      auto* piece = reinterpret_cast<uint8_t*>(buffer_.data() + start);
      CopyPayload(filter, header, offset, piece, len);
      hash->Update(piece, len);
      file_hash_.Update(piece, len);
      offset += len;
      size_ += len;
    }
    return Status::Ok();
  }

  Status Flush() {
    if (buffer_.empty()) return Status::Ok();
    Status appended = file_->Append(buffer_);
    buffer_.clear();  // keeps the capacity for the next chunk
    return appended;
  }

  uint64_t FileDigest() const { return file_hash_.Digest(); }
  uint64_t size() const { return size_; }

 private:
  WritableFile* file_;
  std::string buffer_;
  Xxh3Stream file_hash_;
  uint64_t size_ = 0;
};

// A failed step while writing: which one ("write", "fsync", ...) and why.
struct StepFailure {
  std::string step;
  Status status;
};

std::string EncodeU64(uint64_t v) {
  std::string out;
  ByteWriter(&out).PutU64(v);
  return out;
}

// Refuses what ReadSnapshot would refuse, before any file is created.
Status CheckSources(std::span<const SnapshotRecordSource> records) {
  std::unordered_set<std::string_view> names;
  names.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const SnapshotRecordSource& record = records[i];
    if (record.name.size() > kMaxSnapshotKeyBytes) {
      return Status::Error(RecordLabel(i) + ": key name of " + std::to_string(record.name.size()) +
                           " bytes is longer than the limit of " +
                           std::to_string(kMaxSnapshotKeyBytes));
    }
    if (!HoldsFilter(record.filter)) {
      return Status::Error(RecordLabel(i, record.name) + ": no filter");
    }
    if (record.expire_at_ms < 0) {
      return Status::Error(RecordLabel(i, record.name) + ": negative expire_at_ms " +
                           std::to_string(record.expire_at_ms));
    }
    if (!names.insert(record.name).second) {
      return Status::Error(RecordLabel(i, record.name) + ": key name given twice");
    }
  }
  return Status::Ok();
}

StepFailure WriteRecord(SnapshotOutput& out, size_t index, const SnapshotRecordSource& record) {
  const FilterHeader header = record.header ? *record.header : DescribeFilter(*record.filter);
  if (header.bytes.size() > kMaxSnapshotFilterHeaderBytes) {
    return {"encode", Status::Error(RecordLabel(index, record.name) + ": filter header of " +
                                    std::to_string(header.bytes.size()) +
                                    " bytes is longer than the limit of " +
                                    std::to_string(kMaxSnapshotFilterHeaderBytes))};
  }
  // The record header goes out in three pieces so that a long name is never
  // copied into a second string; its checksum is streamed over the same pieces.
  std::string prefix;
  ByteWriter prefix_writer(&prefix);
  prefix_writer.PutU8(static_cast<uint8_t>(header.kind));
  prefix_writer.PutU32(static_cast<uint32_t>(record.name.size()));
  std::string suffix;
  ByteWriter suffix_writer(&suffix);
  suffix_writer.PutI64(record.expire_at_ms);
  suffix_writer.PutString(header.bytes);
  suffix_writer.PutU64(header.payload_bytes);

  Xxh3Stream header_hash;
  header_hash.Update(prefix);
  header_hash.Update(record.name);
  header_hash.Update(suffix);
  const std::string header_checksum = EncodeU64(header_hash.Digest());

  for (std::string_view piece : {std::string_view(prefix), std::string_view(record.name),
                                 std::string_view(suffix), std::string_view(header_checksum)}) {
    Status put = out.Put(piece);
    if (!put.ok()) return {"write", put};
  }
  Xxh3Stream payload_hash;
  Status put = out.PutPayload(*record.filter, header, &payload_hash);
  if (!put.ok()) return {"write", put};
  put = out.Put(EncodeU64(payload_hash.Digest()));
  if (!put.ok()) return {"write", put};
  return {"", Status::Ok()};
}

// Everything from the file header to the trailer, then flushed.
StepFailure WriteContents(WritableFile& file, const SnapshotMeta& meta,
                          std::span<const SnapshotRecordSource> records, uint64_t* size) {
  SnapshotOutput out(&file);
  std::string header;
  ByteWriter header_writer(&header);
  header_writer.PutBytes(kFileMagic);
  header_writer.PutU32(kSnapshotFormatVersion);
  header_writer.PutI64(meta.created_ms);
  header_writer.PutU64(meta.log_generation);
  header_writer.PutU64(records.size());
  header_writer.PutU64(XXH3_64bits(header.data(), header.size()));
  Status put = out.Put(header);
  if (!put.ok()) return {"write", put};

  for (size_t i = 0; i < records.size(); ++i) {
    StepFailure failure = WriteRecord(out, i, records[i]);
    if (!failure.status.ok()) return failure;
  }

  std::string trailer;
  ByteWriter trailer_writer(&trailer);
  trailer_writer.PutBytes(kTrailerMagic);
  trailer_writer.PutU64(records.size());
  put = out.Put(trailer);
  if (!put.ok()) return {"write", put};
  put = out.Put(EncodeU64(out.FileDigest()));
  if (put.ok()) put = out.Flush();
  if (!put.ok()) return {"write", put};
  *size = out.size();
  return {"", Status::Ok()};
}

// ---------------------------------------------------------------------------
// Reading

// Reads the file through one buffer, never past what FileSize reported
// without noticing, and hashes every byte it hands out for the trailer.
class SnapshotInput {
 public:
  SnapshotInput(SequentialFile* file, uint64_t file_size) : file_(file), file_size_(file_size) {}

  // Bytes the file still holds by its size (0 once past it).
  uint64_t remaining() const { return file_size_ > offset_ ? file_size_ - offset_ : 0; }
  uint64_t offset() const { return offset_; }
  uint64_t FileDigest() const { return file_hash_.Digest(); }

  // Exactly `n` bytes of `what` into *out (replacing it). Refuses, before
  // allocating, an `n` the file cannot hold.
  Status ReadExact(uint64_t n, std::string_view what, std::string* out) {
    out->clear();
    if (n > remaining()) return Truncated(what, n);
    out->reserve(static_cast<size_t>(n));
    while (out->size() < n) {
      std::string_view piece;
      Status read = ReadPiece(n - out->size(), what, n, &piece);
      if (!read.ok()) return read;
      out->append(piece);
    }
    return Status::Ok();
  }

  // Up to `max` (> 0) bytes, viewed in the buffer until the next call; at
  // least one unless the file ends, which is an error: `what` (of `needed`
  // bytes in all) is cut short.
  Status ReadPiece(uint64_t max, std::string_view what, uint64_t needed, std::string_view* piece) {
    if (pos_ == buffer_.size()) {
      Status filled = Fill();
      if (!filled.ok()) return filled;
      if (buffer_.empty()) return Truncated(what, needed);
    }
    const size_t len = static_cast<size_t>(std::min<uint64_t>(max, buffer_.size() - pos_));
    *piece = std::string_view(buffer_).substr(pos_, len);
    pos_ += len;
    offset_ += len;
    file_hash_.Update(*piece);
    return Status::Ok();
  }

  // An error if anything follows the bytes read so far.
  Status ExpectEnd() {
    uint64_t extra = buffer_.size() - pos_;
    if (extra == 0) {
      Status filled = Fill();
      if (!filled.ok()) return filled;
      extra = buffer_.size();
    }
    if (extra == 0) return Status::Ok();
    return Status::Error("trailing bytes after the trailer at offset " + std::to_string(offset_) +
                         " (the file is " + std::to_string(std::max(file_size_, offset_ + extra)) +
                         " bytes)");
  }

 private:
  Status Fill() {
    pos_ = 0;
    const size_t want =
        static_cast<size_t>(std::clamp<uint64_t>(remaining(), kMinReadBytes, kIoChunkBytes));
    return file_->Read(want, &buffer_);
  }

  Status Truncated(std::string_view what, uint64_t needed) const {
    return Status::Error("truncated: " + std::string(what) + " needs " + std::to_string(needed) +
                         " bytes at offset " + std::to_string(offset_) + ", but the file ends " +
                         std::to_string(remaining()) + " bytes later (it is " +
                         std::to_string(file_size_) + " bytes)");
  }

  SequentialFile* file_;
  const uint64_t file_size_;
  std::string buffer_;
  size_t pos_ = 0;       // next unread byte of buffer_
  uint64_t offset_ = 0;  // of buffer_[pos_] in the file
  Xxh3Stream file_hash_;
};

uint64_t DecodeU64(std::string_view bytes) {
  uint64_t v = 0;
  ByteReader(bytes).GetU64(&v);  // callers pass exactly 8 bytes
  return v;
}

// One pass over one file: header, records, trailer.
class SnapshotReader {
 public:
  SnapshotReader(SequentialFile* file, uint64_t file_size, const FilterLimits& limits,
                 MemoryBudget* budget)
      : in_(file, file_size), limits_(limits), budget_(budget) {}

  Status Run(SnapshotInfo* info, std::vector<LoadedRecord>* records) {
    uint64_t count = 0;
    Status status = ReadFileHeader(info, &count);
    if (!status.ok()) return status;
    for (uint64_t i = 0; i < count; ++i) {
      LoadedRecord record;
      status = ReadRecord(i, &record);
      if (!status.ok()) return status;
      records->push_back(std::move(record));
    }
    status = ReadTrailer(count);
    if (!status.ok()) return status;
    info->records = count;
    info->file_bytes = in_.offset();
    return Status::Ok();
  }

 private:
  Status ReadFileHeader(SnapshotInfo* info, uint64_t* count) {
    // The magic alone first, so that any short non-snapshot file is named as
    // such rather than as a truncated snapshot.
    std::string magic;
    Status read = in_.ReadExact(kFileMagic.size(), "the file header", &magic);
    if (!read.ok()) return read;
    if (magic != kFileMagic) {
      return Status::Error("not a Bloomgate snapshot: bad magic " + HexBytes(magic) +
                           " (expected " + HexBytes(kFileMagic) + ")");
    }
    std::string version_bytes;
    read = in_.ReadExact(kFileIdentBytes - kFileMagic.size(), "the file header", &version_bytes);
    if (!read.ok()) return read;
    uint32_t version = 0;
    ByteReader(version_bytes).GetU32(&version);
    // Checked before the header checksum: another version may lay out (and
    // checksum) the rest of its header differently.
    if (version < kOldestSnapshotFormatVersion || version > kSnapshotFormatVersion) {
      return Status::Error("unknown format version " + std::to_string(version) +
                           " (this build reads versions " +
                           std::to_string(kOldestSnapshotFormatVersion) + " to " +
                           std::to_string(kSnapshotFormatVersion) + ")");
    }
    std::string rest;
    read = in_.ReadExact(kFileHeaderRestBytes, "the file header", &rest);
    if (!read.ok()) return read;
    Xxh3Stream hash;
    hash.Update(magic);
    hash.Update(version_bytes);
    hash.Update(rest.data(), kFileHeaderRestBytes - kChecksumBytes);
    ByteReader reader(rest);
    uint64_t stored = 0;
    reader.GetI64(&info->meta.created_ms);
    reader.GetU64(&info->meta.log_generation);
    reader.GetU64(count);
    reader.GetU64(&stored);
    if (stored != hash.Digest()) {
      return Status::Error(ChecksumMismatch("file header", stored, hash.Digest()));
    }
    info->format_version = version;
    return Status::Ok();
  }

  Status ReadRecord(uint64_t index, LoadedRecord* record) {
    // Until the name is read, errors can only name the index.
    Status status = ReadRecordFields(index, record);
    return status.WithContext(name_read_ ? RecordLabel(index, record->name) + ": "
                                         : RecordLabel(index) + ": ");
  }

  Status ReadRecordFields(uint64_t index, LoadedRecord* record) {
    name_read_ = false;
    Xxh3Stream header_hash;
    std::string bytes;
    Status status = in_.ReadExact(kRecordPrefixBytes, "the record header", &bytes);
    if (!status.ok()) return status;
    header_hash.Update(bytes);
    ByteReader prefix(bytes);
    uint8_t kind = 0;
    uint32_t name_bytes = 0;
    prefix.GetU8(&kind);
    prefix.GetU32(&name_bytes);
    if (name_bytes > kMaxSnapshotKeyBytes) {
      return Status::Error("key name length " + std::to_string(name_bytes) +
                           " is over the limit of " + std::to_string(kMaxSnapshotKeyBytes));
    }
    status = in_.ReadExact(name_bytes, "the key name", &record->name);
    if (!status.ok()) return status;
    name_read_ = true;
    header_hash.Update(record->name);

    status = in_.ReadExact(kRecordMiddleBytes, "the record header", &bytes);
    if (!status.ok()) return status;
    header_hash.Update(bytes);
    ByteReader middle(bytes);
    uint32_t filter_header_bytes = 0;
    middle.GetI64(&record->expire_at_ms);
    middle.GetU32(&filter_header_bytes);
    if (filter_header_bytes > kMaxSnapshotFilterHeaderBytes) {
      return Status::Error("filter header length " + std::to_string(filter_header_bytes) +
                           " is over the limit of " +
                           std::to_string(kMaxSnapshotFilterHeaderBytes));
    }
    std::string filter_header;
    status = in_.ReadExact(filter_header_bytes, "the filter header", &filter_header);
    if (!status.ok()) return status;
    header_hash.Update(filter_header);
    status = in_.ReadExact(8, "the record header", &bytes);
    if (!status.ok()) return status;
    header_hash.Update(bytes);
    const uint64_t payload_bytes = DecodeU64(bytes);
    status = in_.ReadExact(kChecksumBytes, "the record header checksum", &bytes);
    if (!status.ok()) return status;
    const uint64_t stored = DecodeU64(bytes);
    if (stored != header_hash.Digest()) {
      return Status::Error(ChecksumMismatch("record header", stored, header_hash.Digest()));
    }

    // The header is what the writer wrote; now whether it makes sense.
    if (record->expire_at_ms < 0) {
      return Status::Error("negative expire_at_ms " + std::to_string(record->expire_at_ms));
    }
    auto [first, inserted] = seen_.emplace(record->name, index);
    if (!inserted) {
      return Status::Error("duplicate key name, first seen in record " +
                           std::to_string(first->second));
    }
    // Before FilterLoader::Begin allocates anything for the payload.
    if (payload_bytes > in_.remaining() || in_.remaining() - payload_bytes < kChecksumBytes) {
      return Status::Error("truncated: the payload of " + std::to_string(payload_bytes) +
                           " bytes and its checksum need more than the " +
                           std::to_string(in_.remaining()) + " bytes left at offset " +
                           std::to_string(in_.offset()));
    }
    std::unique_ptr<FilterLoader> loader;
    status = FilterLoader::Begin(static_cast<FilterKind>(kind), filter_header, payload_bytes,
                                 limits_, budget_, &loader);
    if (!status.ok()) return status.WithContext(KindText(kind) + " filter: ");

    Xxh3Stream payload_hash;
    uint64_t offset = 0;
    while (offset < payload_bytes) {
      std::string_view piece;
      status = in_.ReadPiece(payload_bytes - offset, "the payload", payload_bytes, &piece);
      if (!status.ok()) return status;
      payload_hash.Update(piece);
      status = loader->Write(offset, reinterpret_cast<const uint8_t*>(piece.data()), piece.size());
      if (!status.ok()) return status.WithContext(KindText(kind) + " filter: ");
      offset += piece.size();
    }
    status = in_.ReadExact(kChecksumBytes, "the payload checksum", &bytes);
    if (!status.ok()) return status;
    if (DecodeU64(bytes) != payload_hash.Digest()) {
      return Status::Error(ChecksumMismatch("payload", DecodeU64(bytes), payload_hash.Digest()));
    }
    status = loader->Finish(&record->filter);
    if (!status.ok()) return status.WithContext(KindText(kind) + " filter: ");
    return Status::Ok();
  }

  Status ReadTrailer(uint64_t count) {
    std::string bytes;
    Status status = in_.ReadExact(kTrailerMagic.size(), "the trailer", &bytes);
    if (!status.ok()) return status;
    if (bytes != kTrailerMagic) {
      return Status::Error("bad trailer magic " + HexBytes(bytes) + " after " +
                           std::to_string(count) +
                           " records (the file holds more records than its header says, or is "
                           "damaged)");
    }
    status = in_.ReadExact(8, "the trailer", &bytes);
    if (!status.ok()) return status;
    const uint64_t trailer_count = DecodeU64(bytes);
    if (trailer_count != count) {
      return Status::Error("record count mismatch: the header says " + std::to_string(count) +
                           ", the trailer " + std::to_string(trailer_count));
    }
    const uint64_t computed = in_.FileDigest();  // every byte before the checksum
    status = in_.ReadExact(kChecksumBytes, "the file checksum", &bytes);
    if (!status.ok()) return status;
    if (DecodeU64(bytes) != computed) {
      return Status::Error(ChecksumMismatch("file", DecodeU64(bytes), computed));
    }
    return in_.ExpectEnd();
  }

  SnapshotInput in_;
  const FilterLimits& limits_;
  MemoryBudget* const budget_;
  std::unordered_map<std::string, uint64_t> seen_;  // key name -> first record index
  bool name_read_ = false;                          // whether the current record's name is known
};

}  // namespace

Status WriteSnapshot(FileSystem& fs, const std::string& dir, const std::string& filename,
                     const SnapshotMeta& meta, std::span<const SnapshotRecordSource> records,
                     uint64_t* bytes_written) {
  if (bytes_written != nullptr) *bytes_written = 0;
  const std::string final_path = JoinPath(dir, filename);
  const std::string context = "saving snapshot " + final_path;
  Status checked = CheckSources(records);
  if (!checked.ok()) return checked.WithContext(context + ": ");

  uint64_t size = 0;
  Status replaced = ReplaceFileWith(
      fs, dir, filename, context, [&](WritableFile& file, std::string* failed_step) {
        StepFailure failure = WriteContents(file, meta, records, &size);
        *failed_step = failure.step;
        return failure.status;
      });
  if (!replaced.ok()) return replaced;
  if (bytes_written != nullptr) *bytes_written = size;
  return Status::Ok();
}

Status ReadSnapshot(FileSystem& fs, const std::string& path, const FilterLimits& limits,
                    MemoryBudget* budget, SnapshotInfo* info, std::vector<LoadedRecord>* records) {
  records->clear();
  if (info != nullptr) *info = SnapshotInfo{};
  const std::string context = "snapshot " + path + ": ";
  uint64_t file_size = 0;
  Status status = fs.FileSize(path, &file_size);
  if (!status.ok()) return status.WithContext(context);
  std::unique_ptr<SequentialFile> file;
  status = fs.OpenForRead(path, &file);
  if (!status.ok()) return status.WithContext(context);

  // Built aside and handed over only whole: on any error `loaded` goes out of
  // scope here, freeing every filter built so far and its budget.
  SnapshotInfo loaded_info;
  std::vector<LoadedRecord> loaded;
  status = SnapshotReader(file.get(), file_size, limits, budget).Run(&loaded_info, &loaded);
  if (!status.ok()) return status.WithContext(context);
  if (info != nullptr) *info = loaded_info;
  records->swap(loaded);
  return Status::Ok();
}

bool IsSnapshotTempFile(std::string_view filename, std::string_view name) {
  if (name.size() <= filename.size() + kTempInfix.size()) return false;
  if (name.substr(0, filename.size()) != filename) return false;
  name.remove_prefix(filename.size());
  if (name.substr(0, kTempInfix.size()) != kTempInfix) return false;
  name.remove_prefix(kTempInfix.size());
  // <pid>.<counter>: two runs of digits joined by one dot.
  const size_t dot = name.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == name.size()) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= '0' && c <= '9') || c == '.'; }) &&
         name.find('.', dot + 1) == std::string_view::npos;
}

}  // namespace bloomgate
