#include "server/tools/import_rdb.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "persistence/dump_payload.h"
#include "persistence/file_system.h"
#include "persistence/rdb_file.h"
#include "persistence/snapshot_file.h"
#include "server/base/clock.h"
#include "server/tools/resp_client.h"

namespace bloomgate {
namespace {

constexpr std::string_view kImportRdbHelp =
    "usage: bloomgate import-rdb FILE (--to HOST:PORT [--user U] [--password P] | --output "
    "SNAPSHOT)\n"
    "                            [--db N] [--replace] [--force] [--timeout SECONDS]\n"
    "Reads the Redis RDB file FILE (RDB versions 9-12: Redis 6.0-7.4; a RedisBloom server's\n"
    "dump.rdb, or what `redis-cli --rdb FILE` fetches) and loads its RedisBloom keys\n"
    "(MBbloom--, MBbloomCF, CMSk-TYPE, TopK-TYPE, TDIS-TYPE) of database --db (default 0)\n"
    "with their TTLs:\n"
    "  --to HOST:PORT     into a running Bloomgate, each key with RESTORE key deadline\n"
    "                     payload ABSTTL [REPLACE] (a key the target has fails unless\n"
    "                     --replace)\n"
    "  --output SNAPSHOT  into a new Bloomgate snapshot file (refused if it exists, unless\n"
    "                     --force): put it in a stopped server's dir as its dbfilename\n"
    "The file's CRC-64 is checked before anything is loaded: a damaged or cut file is\n"
    "refused whole. Keys of other types (strings, hashes, other modules...) and keys of\n"
    "other databases are listed (the first 1,000) and skipped; keys whose TTL has passed are not loaded, as\n"
    "Redis would not load them. Progress every 2 s and a summary go to stderr. Exit status:\n"
    "0 if every RedisBloom key of the database was loaded, 1 if one was not (each named\n"
    "with its reason) or the file was refused, 2 for bad usage, 3 if the server could not\n"
    "be reached or stopped answering.\n";

constexpr int64_t kProgressIntervalMs = 2000;
// RESTOREs in flight before their replies are read: one round trip per
// key held a file of 100,000 small keys to 6.5 MB/s on loopback. The bytes
// bound keeps the queued payloads' copy small beside the filters.
constexpr size_t kMaxPipelinedKeys = 128;
constexpr size_t kMaxPipelinedBytes = 16u << 20;
// Skipped keys named one per line up to this many (a cache's RDB can hold
// millions of plain keys); the summary counts them all.
constexpr size_t kMaxListedSkips = 1000;

struct Options {
  std::string file;
  std::string to;
  std::string user;
  std::string password;
  std::string output;
  uint64_t db = 0;
  bool replace = false;
  bool force = false;
  int64_t timeout_ms = 30000;
};

bool ParseUnsigned(std::string_view text, uint64_t* out) {
  if (text.empty() || text.size() > 18) return false;
  uint64_t v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

// 2 for bad usage (with the reason on stderr), else 0.
int ParseOptions(int argc, char** argv, Options* o) {
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    uint64_t n = 0;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kImportRdbHelp.data(), stdout);
      return -1;
    } else if (arg == "--to" && has_value) {
      o->to = argv[++i];
    } else if (arg == "--user" && has_value) {
      o->user = argv[++i];
    } else if (arg == "--password" && has_value) {
      o->password = argv[++i];
    } else if (arg == "--output" && has_value) {
      o->output = argv[++i];
    } else if (arg == "--db" && has_value && ParseUnsigned(argv[i + 1], &n)) {
      o->db = n;
      ++i;
    } else if (arg == "--timeout" && has_value && ParseUnsigned(argv[i + 1], &n) && n > 0) {
      o->timeout_ms = static_cast<int64_t>(n) * 1000;
      ++i;
    } else if (arg == "--replace") {
      o->replace = true;
    } else if (arg == "--force") {
      o->force = true;
    } else if (!arg.starts_with("-") && o->file.empty()) {
      o->file = std::string(arg);
    } else {
      std::fprintf(stderr, "bloomgate import-rdb: unknown or incomplete option '%s'\n%s",
                   argv[i], kImportRdbHelp.data());
      return 2;
    }
  }
  if (o->file.empty() || o->to.empty() == o->output.empty()) {
    std::fprintf(stderr, "bloomgate import-rdb: give FILE and one of --to or --output\n%s",
                 kImportRdbHelp.data());
    return 2;
  }
  return 0;
}

// The file, mapped read-only: an RDB file of gigabytes is read once, front
// to back, without a copy.
class MappedFile {
 public:
  ~MappedFile() {
    if (data_ != nullptr) munmap(data_, size_);
  }
  bool Open(const std::string& path, std::string* error) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      *error = "cannot open " + path + ": " + std::strerror(errno);
      return false;
    }
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      *error = "cannot stat " + path + ": " + std::strerror(errno);
      close(fd);
      return false;
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        *error = "cannot map " + path + ": " + std::strerror(errno);
        close(fd);
        return false;
      }
      data_ = p;
      madvise(data_, size_, MADV_SEQUENTIAL);
    }
    close(fd);
    return true;
  }
  std::string_view bytes() const {
    return data_ == nullptr ? std::string_view() : std::string_view(static_cast<char*>(data_), size_);
  }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

class Import {
 public:
  explicit Import(const Options& options) : options_(options) {}

  int Run() {
    start_ms_ = NowMs();
    last_progress_ms_ = start_ms_;
    std::string error;
    if (!file_.Open(options_.file, &error)) {
      std::fprintf(stderr, "bloomgate import-rdb: %s\n", error.c_str());
      return 1;
    }
    if (Status s = RdbFile::Open(file_.bytes(), &rdb_); !s.ok()) {
      std::fprintf(stderr, "bloomgate import-rdb: %s: refused: %s; nothing was loaded\n",
                   options_.file.c_str(), s.message().c_str());
      return 1;
    }
    if (!options_.output.empty() && !options_.force &&
        std::filesystem::exists(options_.output)) {
      std::fprintf(stderr, "bloomgate import-rdb: %s exists; give --force to replace it\n",
                   options_.output.c_str());
      return 1;
    }
    if (!options_.to.empty() && !Connect()) return 3;
    std::fprintf(stderr, "bloomgate import-rdb: %s: RDB version %d, %zu bytes\n",
                 options_.file.c_str(), rdb_.version(), file_.bytes().size());
    // The decoded filters are not kept in any server: no memory budget, and
    // no per-filter cap beyond what the target applies when it loads them.
    FilterLimits limits;
    limits.max_filter_bytes = 0;
    for (;;) {
      RdbKey key;
      AnyFilter filter;
      Status status = Status::Ok();
      if (!rdb_.Next(limits, /*budget=*/nullptr, &key, &filter, &status)) {
        if (!status.ok()) {
          if (!options_.to.empty()) (void)Drain();  // what was read before the damage
          std::fprintf(stderr, "bloomgate import-rdb: %s: damaged: %s; %s\n",
                       options_.file.c_str(), status.message().c_str(),
                       options_.output.empty() ? "keys before it were loaded"
                                               : "no snapshot was written");
          return 1;
        }
        break;
      }
      if (!Handle(key, std::move(filter))) return 3;
      Progress(false);
    }
    if (!options_.to.empty() && !Drain()) return 3;
    if (!options_.output.empty() && !WriteOutput()) return 1;
    Progress(true);
    return Summary();
  }

 private:
  bool Connect() {
    std::string host, error;
    uint16_t port = 0;
    if (!ParseEndpoint(options_.to, &host, &port, &error) ||
        !client_.Connect(host, port, std::chrono::milliseconds(options_.timeout_ms), &error) ||
        (!options_.password.empty() && !client_.Auth(options_.user, options_.password, &error))) {
      std::fprintf(stderr, "bloomgate import-rdb: target: %s\n", error.c_str());
      return false;
    }
    RespValue pong;
    if (!client_.Call({"PING"}, &pong, &error) || pong.is_error()) {
      std::fprintf(stderr, "bloomgate import-rdb: target %s: %s\n", options_.to.c_str(),
                   pong.is_error() ? pong.text.c_str() : error.c_str());
      return false;
    }
    return true;
  }

  // False only when the target stopped answering.
  bool Handle(const RdbKey& key, AnyFilter filter) {
    if (!key.redisbloom) {
      if (++skipped_ <= kMaxListedSkips) {
        std::fprintf(stderr, "  skipped %s (%s%s)\n", Quoted(key.name).c_str(), key.type.c_str(),
                     key.db != options_.db ? (", database " + std::to_string(key.db)).c_str()
                                           : "");
      } else if (skipped_ == kMaxListedSkips + 1) {
        std::fprintf(stderr, "  (more skipped keys are counted, not listed)\n");
      }
      return true;
    }
    if (key.db != options_.db) {
      Fail(key, "in database " + std::to_string(key.db) + ", not --db " +
                    std::to_string(options_.db) + " (Bloomgate has one keyspace)");
      return true;
    }
    if (key.decode_error != DumpPayloadError::kNone) {
      Fail(key, "its value is refused: " + key.why);
      return true;
    }
    if (key.expire_at_ms != 0 && key.expire_at_ms <= NowMs()) {
      ++expired_;
      std::fprintf(stderr, "  not loaded %s (%s): its TTL has passed\n", Quoted(key.name).c_str(),
                   key.type.c_str());
      return true;
    }
    if (!options_.output.empty()) {
      Keep(key, std::move(filter));
      return true;
    }
    const std::string payload = EncodeDumpPayload(filter);
    const std::string deadline = std::to_string(key.expire_at_ms);
    std::vector<std::string_view> argv = {"RESTORE", key.name, deadline, payload, "ABSTTL"};
    if (options_.replace) argv.push_back("REPLACE");
    client_.Send(argv);
    in_flight_.push_back(key);
    in_flight_bytes_ += payload.size();
    if (in_flight_.size() >= kMaxPipelinedKeys || in_flight_bytes_ >= kMaxPipelinedBytes) {
      return Drain();
    }
    return true;
  }

  // Sends the queued RESTOREs and reads their replies; false when the target
  // stopped answering.
  bool Drain() {
    std::string error;
    if (!client_.Flush(&error)) {
      std::fprintf(stderr, "bloomgate import-rdb: target: %s\n", error.c_str());
      return false;
    }
    for (const RdbKey& key : in_flight_) {
      RespValue reply;
      if (!client_.Read(&reply, &error)) {
        std::fprintf(stderr, "bloomgate import-rdb: target: %s\n", error.c_str());
        return false;
      }
      if (reply.is_error()) {
        Fail(key, "the target refused it: " + reply.text +
                      (reply.text.starts_with("BUSYKEY") ? " (give --replace)" : ""));
      } else {
        Loaded(key);
      }
    }
    in_flight_.clear();
    in_flight_bytes_ = 0;
    return true;
  }

  void Keep(const RdbKey& key, AnyFilter filter) {
    if (!kept_names_.emplace(key.name, kept_.size()).second) {
      Fail(key, "given twice in the file");
      return;
    }
    kept_.push_back({key.name, key.expire_at_ms, std::move(filter)});
    Loaded(key);
  }

  bool WriteOutput() {
    std::vector<SnapshotRecordSource> records;
    records.reserve(kept_.size());
    for (const LoadedRecord& kept : kept_) {
      SnapshotRecordSource& record = records.emplace_back();
      record.name = kept.name;
      record.expire_at_ms = kept.expire_at_ms;
      record.filter = &kept.filter;
    }
    const std::filesystem::path path(options_.output);
    const std::string dir = path.has_parent_path() ? path.parent_path().string() : ".";
    SnapshotMeta meta;
    meta.created_ms = NowMs();
    // Above any log generation a server has used, as `bloomgate build`.
    meta.log_generation = static_cast<uint64_t>(meta.created_ms);
    uint64_t bytes = 0;
    if (Status s = WriteSnapshot(*DefaultFileSystem(), dir, path.filename().string(), meta,
                                 records, &bytes);
        !s.ok()) {
      std::fprintf(stderr, "bloomgate import-rdb: writing %s: %s\n", options_.output.c_str(),
                   s.message().c_str());
      return false;
    }
    std::fprintf(stderr, "bloomgate import-rdb: wrote %s: %zu keys, %" PRIu64 " bytes\n",
                 options_.output.c_str(), records.size(), bytes);
    return true;
  }

  void Loaded(const RdbKey& key) { ++loaded_[key.type]; }

  void Fail(const RdbKey& key, const std::string& why) {
    failed_.push_back(Quoted(key.name) + " (" + key.type + "): " + why);
    std::fprintf(stderr, "  FAILED %s\n", failed_.back().c_str());
  }

  static std::string Quoted(const std::string& name) {
    std::string out = "'";
    for (const char c : name) {
      if (static_cast<unsigned char>(c) < 0x20 || c == '\'' || c == '\\' ||
          static_cast<unsigned char>(c) >= 0x7f) {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "\\x%02x", static_cast<unsigned char>(c));
        out += hex;
      } else {
        out += c;
      }
    }
    return out + "'";
  }

  void Progress(bool final) {
    const int64_t now = NowMs();
    if (!final && now - last_progress_ms_ < kProgressIntervalMs) return;
    last_progress_ms_ = now;
    const double seconds = std::max<int64_t>(now - start_ms_, 1) / 1000.0;
    const double mb = static_cast<double>(rdb_.offset()) / 1e6;
    std::fprintf(stderr,
                 "bloomgate import-rdb: %s%.2f of %.2f MB read (%.0f%%), %.2f MB/s, %zu keys "
                 "loaded\n",
                 final ? "done: " : "", mb, static_cast<double>(rdb_.size()) / 1e6,
                 rdb_.size() == 0 ? 100.0 : 100.0 * static_cast<double>(rdb_.offset()) /
                                                static_cast<double>(rdb_.size()),
                 mb / seconds, LoadedCount());
  }

  size_t LoadedCount() const {
    size_t n = 0;
    for (const auto& [type, count] : loaded_) n += count;
    return n;
  }

  int Summary() {
    std::string by_type;
    for (const auto& [type, count] : loaded_) {
      by_type += (by_type.empty() ? "" : ", ") + std::to_string(count) + " " + type;
    }
    std::fprintf(stderr,
                 "bloomgate import-rdb: summary: %zu RedisBloom keys loaded%s%s%s, %zu expired "
                 "(not loaded), %zu keys of other types skipped, %zu failed\n",
                 LoadedCount(), by_type.empty() ? "" : " (", by_type.c_str(),
                 by_type.empty() ? "" : ")", expired_, skipped_, failed_.size());
    for (const std::string& failure : failed_) {
      std::fprintf(stderr, "  not loaded: %s\n", failure.c_str());
    }
    return failed_.empty() ? 0 : 1;
  }

  const Options& options_;
  MappedFile file_;
  RdbFile rdb_;
  RespClient client_;
  int64_t start_ms_ = 0;
  int64_t last_progress_ms_ = 0;
  std::map<std::string, size_t> loaded_;
  size_t skipped_ = 0;
  size_t expired_ = 0;
  std::vector<std::string> failed_;
  std::vector<LoadedRecord> kept_;
  std::vector<RdbKey> in_flight_;
  size_t in_flight_bytes_ = 0;
  std::map<std::string, size_t> kept_names_;
};

}  // namespace

int RunImportRdb(int argc, char** argv) {
  Options options;
  const int parsed = ParseOptions(argc, argv, &options);
  if (parsed != 0) return parsed < 0 ? 0 : parsed;
  return Import(options).Run();
}

}  // namespace bloomgate
