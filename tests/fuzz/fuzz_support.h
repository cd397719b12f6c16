// Shared pieces of the libFuzzer targets in tests/fuzz/: a failed invariant
// aborts (libFuzzer records the input as a crash), an in-memory FileSystem
// so the persistence readers run without disk I/O, the checksum fix-ups that
// let mutated bytes get past the checksums to the decoders behind them, and
// the "whatever loads can be saved and loaded back" round trip.
#pragma once

#include <xxhash.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "filters/any_filter.h"
#include "filters/key_hash.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "persistence/file_system.h"
#include "persistence/filter_codec.h"
#include "persistence/snapshot_file.h"
#include "persistence/status.h"

namespace bloomgate::fuzz {

// Aborts with a message when an invariant fails; libFuzzer keeps the input.
#define FUZZ_CHECK(condition, ...)                                              \
  do {                                                                          \
    if (!(condition)) {                                                         \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s\n  ", __FILE__,      \
                   __LINE__, #condition);                                       \
      std::fprintf(stderr, __VA_ARGS__);                                        \
      std::fprintf(stderr, "\n");                                               \
      std::abort();                                                             \
    }                                                                           \
  } while (0)

// What the loaders may build: 16 MiB per filter, 64 MiB in all, far under
// libFuzzer's default -rss_limit_mb=2048 even with ASan's shadow and
// quarantine, and enough for every seed.
inline constexpr uint64_t kFuzzMaxFilterBytes = uint64_t{16} << 20;
inline constexpr uint64_t kFuzzBudgetBytes = uint64_t{64} << 20;

inline FilterLimits FuzzLimits() {
  FilterLimits limits;
  limits.max_filter_bytes = kFuzzMaxFilterBytes;
  return limits;
}

// Files as strings in a map: enough of a FileSystem for WriteSnapshot,
// ReadSnapshot and ReadAppendLog. Not thread-safe beyond one mutex per call.
class MemoryFileSystem final : public FileSystem {
 public:
  void Put(const std::string& path, std::string bytes) { files_[path] = std::move(bytes); }
  const std::string* Get(const std::string& path) const {
    auto it = files_.find(path);
    return it == files_.end() ? nullptr : &it->second;
  }

  Status CreateNew(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    if (files_.count(path) != 0) return Status::Error("create " + path + ": File exists");
    files_[path];
    *out = std::make_unique<File>(this, path);
    return Status::Ok();
  }
  Status OpenForAppend(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    if (files_.count(path) == 0) return Status::Error("open " + path + ": No such file");
    *out = std::make_unique<File>(this, path);
    return Status::Ok();
  }
  Status OpenForRead(const std::string& path, std::unique_ptr<SequentialFile>* out) override {
    auto it = files_.find(path);
    if (it == files_.end()) return Status::Error("open " + path + ": No such file");
    *out = std::make_unique<Reader>(it->second);
    return Status::Ok();
  }
  Status Rename(const std::string& from, const std::string& to) override {
    auto it = files_.find(from);
    if (it == files_.end()) return Status::Error("rename " + from + ": No such file");
    std::string bytes = std::move(it->second);
    files_.erase(it);
    files_[to] = std::move(bytes);
    return Status::Ok();
  }
  Status SyncDirectory(const std::string&) override { return Status::Ok(); }
  Status Remove(const std::string& path) override {
    files_.erase(path);
    return Status::Ok();
  }
  Status Truncate(const std::string& path, uint64_t size) override {
    auto it = files_.find(path);
    if (it == files_.end()) return Status::Error("truncate " + path + ": No such file");
    if (size < it->second.size()) it->second.resize(size);
    return Status::Ok();
  }
  Status FileSize(const std::string& path, uint64_t* size) override {
    auto it = files_.find(path);
    if (it == files_.end()) return Status::Error("stat " + path + ": No such file");
    *size = it->second.size();
    return Status::Ok();
  }
  bool Exists(const std::string& path) override { return files_.count(path) != 0; }
  Status ListDirectory(const std::string& dir, std::vector<std::string>* names) override {
    names->clear();
    const std::string prefix = dir.empty() || dir.back() == '/' ? dir : dir + "/";
    for (const auto& [path, bytes] : files_) {
      if (path.compare(0, prefix.size(), prefix) == 0 &&
          path.find('/', prefix.size()) == std::string::npos) {
        names->push_back(path.substr(prefix.size()));
      }
    }
    return Status::Ok();
  }

 private:
  class File final : public WritableFile {
   public:
    File(MemoryFileSystem* fs, std::string path) : fs_(fs), path_(std::move(path)) {}
    Status Append(std::string_view data) override {
      if (closed_) return Status::Error("write " + path_ + ": closed");
      fs_->files_[path_].append(data);
      return Status::Ok();
    }
    Status Sync() override { return Status::Ok(); }
    Status Close() override {
      closed_ = true;
      return Status::Ok();
    }

   private:
    MemoryFileSystem* fs_;
    std::string path_;
    bool closed_ = false;
  };
  class Reader final : public SequentialFile {
   public:
    explicit Reader(std::string_view bytes) : bytes_(bytes) {}
    Status Read(size_t n, std::string* out) override {
      const size_t take = std::min(n, bytes_.size() - pos_);
      out->assign(bytes_.substr(pos_, take));
      pos_ += take;
      return Status::Ok();
    }

   private:
    std::string_view bytes_;
    size_t pos_ = 0;
  };

  std::map<std::string, std::string> files_;
};

// --- little-endian fields and checksums, as persistence/byte_io.h ---

inline uint64_t GetLe(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[at + i]);
  return v;
}
inline void PutLe(std::string* s, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) (*s)[at + i] = static_cast<char>(v >> (8 * i));
}
inline uint64_t Xxh3(const std::string& s, size_t at, size_t len) {
  return XXH3_64bits(s.data() + at, len);
}
// True if [at, at + len) lies inside s, without overflowing.
inline bool Fits(const std::string& s, uint64_t at, uint64_t len) {
  return at <= s.size() && len <= s.size() - at;
}

// Rewrites every checksum of a snapshot file (FORMAT.md) that its framing
// lets us find, so mutated fields reach the record and filter decoders.
inline void FixSnapshotChecksums(std::string* file) {
  std::string& s = *file;
  if (s.size() < 44) return;
  PutLe(&s, 36, Xxh3(s, 0, 36), 8);
  const uint64_t count = GetLe(s, 28, 8);
  uint64_t pos = 44;
  for (uint64_t i = 0; i < count && i < 4096; ++i) {
    if (!Fits(s, pos, 5)) break;
    const uint64_t n = GetLe(s, pos + 1, 4);
    if (!Fits(s, pos + 5, n + 12)) break;
    const uint64_t h = GetLe(s, pos + 13 + n, 4);
    if (!Fits(s, pos + 17 + n, h + 16)) break;
    const uint64_t p = GetLe(s, pos + 17 + n + h, 8);
    PutLe(&s, pos + 25 + n + h, Xxh3(s, pos, 25 + n + h), 8);
    const uint64_t payload = pos + 33 + n + h;
    if (p > s.size() || !Fits(s, payload, p + 8)) break;
    PutLe(&s, payload + p, Xxh3(s, payload, p), 8);
    pos = payload + p + 8;
  }
  // The file checksum is the last 8 bytes of a well-formed file.
  if (s.size() >= 44 + 24) PutLe(&s, s.size() - 8, Xxh3(s, 0, s.size() - 8), 8);
}

// Rewrites the file header checksum and every record's body and frame
// checksums of an append-only log (the layout at the top of append_log.cc).
inline void FixAppendLogChecksums(std::string* file) {
  std::string& s = *file;
  if (s.size() < 36) return;
  PutLe(&s, 28, Xxh3(s, 0, 28), 8);
  uint64_t pos = 36;
  while (Fits(s, pos, 18)) {
    const uint64_t len = GetLe(s, pos + 2, 4);
    if (!Fits(s, pos + 18, len)) break;
    PutLe(&s, pos + 6, Xxh3(s, pos + 18, len), 8);
    PutLe(&s, pos + 14, Xxh3(s, pos, 14) & 0xffffffffu, 4);
    pos += 18 + len;
  }
}

// Rewrites a SCANDUMP chunk's header id (from the header chunk's
// FilterHeader bytes, remembered in *header_id for the payload chunks after
// it) and its trailing checksum (persistence/dump_chunk.h).
inline void FixChunkChecksums(std::string* chunk, uint64_t* header_id) {
  std::string& s = *chunk;
  if (s.size() < 15 + 8 || s.compare(0, 4, "BGDC") != 0) return;
  if (s[5] == 1 && s.size() >= 27) {
    const uint64_t h = GetLe(s, 23, 4);
    if (Fits(s, 27, h)) *header_id = Xxh3(s, 27, h);
  }
  PutLe(&s, 7, *header_id, 8);
  PutLe(&s, s.size() - 8, Xxh3(s, 0, s.size() - 8), 8);
}

// Splits `data` into pieces, each a u32 little-endian length and that many
// bytes (the last piece takes whatever is left if its length runs past the
// end): how the chunk target and the seed generator frame several chunks.
inline std::vector<std::string> SplitPieces(std::string_view data) {
  std::vector<std::string> pieces;
  while (data.size() >= 4) {
    uint64_t len = 0;
    for (int i = 3; i >= 0; --i) len = (len << 8) | static_cast<uint8_t>(data[i]);
    data.remove_prefix(4);
    len = std::min<uint64_t>(len, data.size());
    pieces.emplace_back(data.substr(0, len));
    data.remove_prefix(len);
  }
  return pieces;
}
inline void AppendPiece(std::string* out, std::string_view piece) {
  const uint32_t len = static_cast<uint32_t>(piece.size());
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(len >> (8 * i)));
  out->append(piece);
}

// The filter's payload, as every persistent form stores it.
inline std::string PayloadOf(const AnyFilter& filter, const FilterHeader& header) {
  std::string payload(header.payload_bytes, '\0');
  CopyPayload(filter, header, 0, reinterpret_cast<uint8_t*>(payload.data()), payload.size());
  return payload;
}

// Runs what a client can run on a loaded filter, so that undefined
// behaviour a decoded field sets up for later (an origin that overflows a
// clock difference, a count that wraps on the next add) is reached here and
// not first in production: an info (the INFO/CARD figures), an exists and an
// add of one item, each of a windowed filter at the window clock's present
// and at both ends of int64_t. The filter changes (one add); a failed add
// (full, over the limits) is an answer, not a finding.
inline void ExerciseFilter(AnyFilter* filter) {
  constexpr int64_t kNowMs = 1'800'000'000'000;  // 2027, in the window clock's Unix ms
  constexpr int64_t kClocks[] = {kNowMs, INT64_MIN, INT64_MAX};
  const std::string_view item = "fuzz-item";
  uint64_t sink = 0;  // keeps the reads from being optimised away
  std::visit(
      [&](auto& f) {
        using F = std::decay_t<decltype(*f)>;
        if (f == nullptr) return;
        sink += f->memory_bytes();
        if constexpr (std::is_same_v<F, ScalableBloomFilter>) {
          sink += f->items() + f->Layers().size();
          const KeyHash h = f->Hash(item);
          sink += f->MayContain(h);
          bool added = false;
          (void)f->Add(h, &added);
        } else if constexpr (std::is_same_v<F, CountingBloomFilter>) {
          sink += f->items() + f->saturated_counters() + f->Layers().size();
          const KeyHash h = HashKey(item, f->hash_seed());
          sink += f->MayContain(h) + f->Count(h);
          bool was_new = false;
          if (f->Add(h, &was_new) == FilterStatus::kOk) sink += f->Remove(h);
        } else if constexpr (std::is_same_v<F, CuckooFilter>) {
          const CuckooFilterInfo info = f->Info();
          sink += info.size + f->SubFilters().size();
          const KeyHash h = f->Hash(item);
          sink += f->MayContain(h) + f->Count(h);
          if (f->Add(h) == FilterStatus::kOk) sink += f->Remove(h);
        } else if constexpr (std::is_same_v<F, CountMinSketch>) {
          const KeyHash h = HashKey(item, CountMinSketch::hash_seed());
          sink += f->total() + f->Query(h) + f->IncrBy(h, 1);
        } else if constexpr (std::is_same_v<F, TopK>) {
          const KeyHash h = HashKey(item);
          sink += f->List().size() + f->Query(h, item) + f->Count(h, item);
          std::string expelled;
          sink += f->Add(h, item, 1, &expelled);
        } else if constexpr (std::is_same_v<F, TDigest>) {
          // The answers compress first (any loaded unmerged values), then an add.
          const double quantiles[] = {0, 0.001, 0.5, 0.999, 1};
          double values[5];
          f->Quantiles(quantiles, values);
          for (double v : values) sink += std::isnan(v);
          sink += std::isnan(f->Quantile(0.3)) + std::isnan(f->Cdf(1.5)) +
                  std::isnan(f->TrimmedMean(0.1, 0.9)) + f->nodes();
          sink += f->Add(2.5) == TDigest::AddStatus::kOk;
        } else if constexpr (std::is_same_v<F, WindowedBloomFilter>) {
          const KeyHash h = f->Hash(item);
          for (int64_t now : kClocks) {
            sink += f->GenerationAt(now) + f->ItemsAt(now) +
                    static_cast<uint64_t>(f->GenerationAgeMs(now)) + f->MayContain(h, now);
            bool seen = false, added = false;
            uint64_t generation = 0;
            (void)f->Add(h, now, &seen, &generation, &added);
          }
        } else if constexpr (std::is_same_v<F, WindowedCountingBloomFilter>) {
          const KeyHash h = f->Hash(item);
          for (int64_t now : kClocks) {
            sink += f->GenerationAt(now) + f->ItemsAt(now) + f->LookupAt(now) +
                    static_cast<uint64_t>(f->GenerationAgeMs(now)) + f->MayContain(h, now) +
                    f->Count(h, now);
            bool was_new = false;
            uint64_t count = 0, generation = 0;
            if (f->Add(h, now, &was_new, &count, &generation) == FilterStatus::kOk) {
              sink += f->Remove(h, now, &generation);
            }
          }
        }
      },
      *filter);
  // An empty asm the compiler cannot see through: the sink is "used".
  asm volatile("" : : "r"(sink) : "memory");
}

// The invariant behind every loader: a filter that was accepted can be saved
// in a snapshot and that snapshot loads back, byte for byte the same filter.
// A refusal or a difference aborts.
inline void CheckSnapshotRoundTrip(const AnyFilter& filter, int64_t expire_at_ms = 0) {
  MemoryFileSystem fs;
  const FilterHeader header = DescribeFilter(filter);
  SnapshotRecordSource source{.name = "key", .expire_at_ms = expire_at_ms, .filter = &filter};
  uint64_t bytes = 0;
  Status written = WriteSnapshot(fs, "/s", "dump.bgs", SnapshotMeta{}, {&source, 1}, &bytes);
  FUZZ_CHECK(written.ok(), "WriteSnapshot refused an accepted filter: %s",
             written.message().c_str());
  MemoryBudget budget(kFuzzBudgetBytes);
  std::vector<LoadedRecord> records;
  Status read = ReadSnapshot(fs, "/s/dump.bgs", FuzzLimits(), &budget, nullptr, &records);
  FUZZ_CHECK(read.ok(), "ReadSnapshot refused the snapshot of an accepted filter: %s",
             read.message().c_str());
  FUZZ_CHECK(records.size() == 1, "%zu records", records.size());
  const FilterHeader again = DescribeFilter(records[0].filter);
  FUZZ_CHECK(again.kind == header.kind && again.bytes == header.bytes &&
                 again.payload_bytes == header.payload_bytes,
             "the reloaded filter's header differs");
  FUZZ_CHECK(PayloadOf(records[0].filter, again) == PayloadOf(filter, header),
             "the reloaded filter's payload differs");
}

}  // namespace bloomgate::fuzz
