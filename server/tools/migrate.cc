#include "server/tools/migrate.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "config/command_line.h"
#include "persistence/redisbloom_module_value.h"
#include "server/base/clock.h"
#include "server/tools/resp_client.h"

namespace bloomgate {
namespace {

constexpr std::string_view kMigrateHelp =
    "usage: bloomgate migrate --from HOST:PORT [--user U] [--password P] [--match PATTERN]\n"
    "                         [--to HOST:PORT] [--to-user U] [--to-password P] [--replace]\n"
    "                         [--count N] [--timeout SECONDS]\n"
    "Copies every filter key of a running Redis + RedisBloom, or Bloomgate, at --from\n"
    "into the running Bloomgate at --to (default 127.0.0.1:6379): SCAN (MATCH --match,\n"
    "COUNT --count, default 100), TYPE, PTTL, then for Bloom (MBbloom--), cuckoo\n"
    "(MBbloomCF) and counting Bloom (BGcountBF) keys BF/CF/CBF.SCANDUMP until iterator\n"
    "0, each chunk given to the family's LOADCHUNK on the target while the next is\n"
    "dumped, and PEXPIRE for a key with a TTL. RedisBloom's count-min sketch (CMSk-TYPE),\n"
    "top-k (TopK-TYPE) and t-digest (TDIS-TYPE), which have no SCANDUMP, and every other\n"
    "filter family of a Bloomgate source (count-min sketch, top-k, t-digest, windowed\n"
    "Bloom and windowed counting filters) are copied with DUMP and RESTORE, TTL included:\n"
    "Bloomgate's RESTORE reads RedisBloom's DUMP payloads of its five types.\n"
    "Only reading commands are sent to the source. Keys of other types (strings, hashes,\n"
    "...) are skipped; a key the target already has fails unless --replace (then it is\n"
    "loaded under a temporary name and RENAMEd over the old one, or RESTOREd with\n"
    "REPLACE). A key whose dump the target refuses as torn (written during the copy) is\n"
    "dumped again, up to 3 times in all. A source with no filter module (MODULE LIST\n"
    "names no 'bf' and it is not a Bloomgate) is said so plainly.\n"
    "Progress every 2 s and a summary go to stderr. Exit status: 0 if every filter key\n"
    "was copied, 1 if one was not (each is named with its reason) or the source has no\n"
    "filter module, 2 for bad usage, 3 if a server could not be reached or stopped\n"
    "answering.\n";

// A line every 2 s: a 1 GB filter copied at ~100 MB/s shows ~5 of them.
constexpr int64_t kProgressIntervalMs = 2000;
// Dumps of one key before it is reported as written throughout the copy.
constexpr int kDumpAttempts = 3;

bool IsHelpFlag(std::string_view arg) { return arg == "--help" || arg == "-h"; }

struct Options {
  std::string from;
  std::string user;
  std::string password;
  std::string to = "127.0.0.1:6379";
  std::string to_user;
  std::string to_password;
  std::string match = "*";
  std::string count = "100";
  int64_t timeout_ms = 30000;
  bool replace = false;
};

// A family SCANDUMP/LOADCHUNK can move, by its TYPE name: chunked, so a
// filter of gigabytes never travels as one reply.
struct Family {
  std::string_view type;
  std::string_view scandump;
  std::string_view loadchunk;
};
constexpr Family kFamilies[] = {
    {"MBbloom--", "BF.SCANDUMP", "BF.LOADCHUNK"},
    {"MBbloomCF", "CF.SCANDUMP", "CF.LOADCHUNK"},
    // Bloomgate's own counting Bloom filter: only a Bloomgate source has it.
    {"BGcountBF", "CBF.SCANDUMP", "CBF.LOADCHUNK"},
};

// The other filter types a source may hold, with what they are called in
// messages: copied with DUMP / RESTORE, which a Bloomgate answers for every
// family. From a RedisBloom source only the types whose DUMP payload our
// RESTORE decodes (persistence/redisbloom_module_value.h) go this way.
struct DumpedType {
  std::string_view type;
  std::string_view what;
};
constexpr DumpedType kDumpedTypes[] = {
    {"CMSk-TYPE", "count-min sketch"},
    {"TopK-TYPE", "top-k"},
    {"MBbloomW-", "windowed Bloom filter"},
    {"BGcountWB", "windowed counting Bloom filter"},
    {"TDIS-TYPE", "t-digest"},
};

const Family* FamilyOf(std::string_view type) {
  for (const Family& family : kFamilies) {
    if (family.type == type) return &family;
  }
  return nullptr;
}

const DumpedType* DumpedTypeOf(std::string_view type) {
  for (const DumpedType& dumped : kDumpedTypes) {
    if (dumped.type == type) return &dumped;
  }
  return nullptr;
}

// Why a key of a type that is no filter is not copied.
std::string SkipReason(std::string_view type) {
  if (type == "none") return "gone before it was copied";
  return "type " + std::string(type) + " is not a filter";
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

class Migration {
 public:
  explicit Migration(const Options& options) : options_(options) {}

  int Run() {
    start_ms_ = NowMs();
    last_progress_ms_ = start_ms_;
    if (!Open(options_.from, options_.user, options_.password, "source", &source_) ||
        !Open(options_.to, options_.to_user, options_.to_password, "target", &target_)) {
      return 3;
    }
    if (!ExamineSource()) return Fatal();
    if (!source_has_filters_) {
      std::fprintf(stderr,
                   "bloomgate migrate: the source %s has no filter module: it is not a "
                   "Bloomgate and %s, so it holds no filters to copy (is --from the right "
                   "server?)\n",
                   source_.endpoint().c_str(), module_findings_.c_str());
    }
    std::string cursor = "0";
    do {
      RespValue reply;
      if (!source_.Call({"SCAN", cursor, "MATCH", options_.match, "COUNT", options_.count},
                        &reply, &error_)) {
        return Fatal();
      }
      if (reply.is_error()) {
        error_ = source_.endpoint() + ": SCAN refused: " + reply.text;
        return Fatal();
      }
      if (reply.type != RespValue::Type::kArray || reply.elements.size() != 2 ||
          reply.elements[1].type != RespValue::Type::kArray) {
        error_ = source_.endpoint() + ": SCAN's reply is not [cursor, keys]";
        return Fatal();
      }
      cursor = reply.elements[0].text;
      // SCAN may return a key twice (the table rehashed meanwhile).
      std::vector<std::string> keys;
      for (RespValue& key : reply.elements[1].elements) {
        if (seen_.insert(key.text).second) keys.push_back(std::move(key.text));
      }
      if (!CopyBatch(keys)) return Fatal();
    } while (cursor != "0");
    Summary();
    return failed_.empty() && source_has_filters_ ? 0 : 1;
  }

 private:
  // What the source is: a Bloomgate (INFO server's bloomgate_version), a
  // Redis with RedisBloom (MODULE LIST names "bf") or neither. False only
  // when the connection is lost.
  bool ExamineSource() {
    RespValue info;
    if (!source_.Call({"INFO", "server"}, &info, &error_)) return false;
    source_is_bloomgate_ =
        !info.is_error() && info.text.find("\nbloomgate_version:") != std::string::npos;
    RespValue modules;
    if (!source_.Call({"MODULE", "LIST"}, &modules, &error_)) return false;
    bool has_bf = false;
    if (modules.is_error()) {
      module_findings_ = "MODULE LIST is refused (" + modules.text + ")";
    } else if (modules.elements.empty()) {
      module_findings_ = "MODULE LIST names no module (RedisBloom's is 'bf')";
    } else {
      std::string names;
      for (const RespValue& module : modules.elements) {
        for (size_t i = 0; i + 1 < module.elements.size(); i += 2) {
          if (module.elements[i].text != "name") continue;
          const std::string& name = module.elements[i + 1].text;
          names += (names.empty() ? "" : ", ") + name;
          if (name == "bf") has_bf = true;
        }
      }
      module_findings_ = "MODULE LIST names " + names + (has_bf ? "" : " (no RedisBloom 'bf')");
    }
    // A refused MODULE LIST (an ACL user without it) tells nothing: copy on.
    source_has_filters_ = source_is_bloomgate_ || has_bf || modules.is_error();
    return true;
  }

  bool Open(const std::string& where, const std::string& user, const std::string& password,
            const char* role, RespClient* client) {
    std::string host;
    uint16_t port = 0;
    if (!ParseEndpoint(where, &host, &port, &error_) ||
        !client->Connect(host, port, std::chrono::milliseconds(options_.timeout_ms), &error_) ||
        (!password.empty() && !client->Auth(user, password, &error_))) {
      std::fprintf(stderr, "bloomgate migrate: %s: %s\n", role, error_.c_str());
      return false;
    }
    RespValue pong;
    if (!client->Call({"PING"}, &pong, &error_)) {
      std::fprintf(stderr, "bloomgate migrate: %s: %s\n", role, error_.c_str());
      return false;
    }
    if (pong.is_error()) {
      std::fprintf(stderr, "bloomgate migrate: %s %s: %s%s\n", role, client->endpoint().c_str(),
                   pong.text.c_str(),
                   StartsWith(pong.text, "NOAUTH") ? " (give --password / --to-password)" : "");
      return false;
    }
    return true;
  }

  // TYPE for the whole batch in one pipeline, then each filter in turn.
  bool CopyBatch(const std::vector<std::string>& keys) {
    for (const std::string& key : keys) source_.Send({"TYPE", key});
    if (!source_.Flush(&error_)) return false;
    std::vector<RespValue> types(keys.size());
    for (RespValue& type : types) {
      if (!source_.Read(&type, &error_)) return false;
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      if (types[i].is_error()) {
        Fail(keys[i], "TYPE refused by the source: " + types[i].text);
        continue;
      }
      const std::string& type = types[i].text;
      if (const Family* family = FamilyOf(type)) {
        if (!CopyKey(keys[i], family, nullptr)) return false;
      } else if (const DumpedType* dumped = DumpedTypeOf(type)) {
        if (!source_is_bloomgate_ && !IsRedisBloomModuleType(type)) {
          Fail(keys[i], std::string(dumped->what) + " (" + type +
                            "): only a Bloomgate has this type, and the source is not one");
          continue;
        }
        if (!CopyKey(keys[i], nullptr, dumped)) return false;
      } else {
        Skip(keys[i], SkipReason(type));
        continue;
      }
      Progress();
    }
    return true;
  }

  // By SCANDUMP when `family` is set, else by DUMP / RESTORE. False only
  // when a connection is lost; a key's own failure is recorded and the
  // migration goes on.
  bool CopyKey(const std::string& key, const Family* family, const DumpedType* dumped) {
    RespValue reply;
    if (!options_.replace) {
      if (!target_.Call({"EXISTS", key}, &reply, &error_)) return false;
      if (reply.type == RespValue::Type::kInteger && reply.integer != 0) {
        Fail(key, "the target already has this key (--replace overwrites it)");
        return true;
      }
    }
    if (!source_.Call({"PTTL", key}, &reply, &error_)) return false;
    const int64_t ttl_read_ms = NowMs();
    if (reply.is_error()) {
      Fail(key, "PTTL refused by the source: " + reply.text);
      return true;
    }
    const int64_t ttl_ms = reply.integer;
    if (ttl_ms == -2) {
      Skip(key, "gone before it was copied");
      return true;
    }
    if (dumped != nullptr) return CopyByRestore(key, *dumped, ttl_ms, ttl_read_ms);
    // --replace loads beside the old key and RENAMEs over it: the old
    // filter answers until the new one is complete.
    const std::string load_name =
        options_.replace ? "bloomgate-migrate:" + std::to_string(getpid()) + ":" + key : key;
    std::string reason;
    bool copied = false;
    uint64_t bytes = 0;
    for (int attempt = 1; attempt <= kDumpAttempts && !copied; ++attempt) {
      bool torn = false;
      bytes = 0;
      if (!CopyDump(key, load_name, *family, &bytes, &torn, &reason)) return false;
      copied = reason.empty();
      if (!copied && !torn) break;
      if (!copied && attempt == kDumpAttempts) {
        reason = "written during every one of " + std::to_string(kDumpAttempts) +
                 " dumps (" + reason + ")";
      }
    }
    if (!copied) {
      Fail(key, reason);
      return true;
    }
    if (options_.replace) {
      if (!target_.Call({"RENAME", load_name, key}, &reply, &error_)) return false;
      if (reply.is_error()) {
        Fail(key, "RENAME on the target refused: " + reply.text);
        return true;
      }
    }
    if (ttl_ms > 0) {
      // The same moment of expiry: what was left when PTTL was read, less
      // the time the copy took.
      int64_t left = std::max<int64_t>(1, ttl_ms - (NowMs() - ttl_read_ms));
      std::string left_text = std::to_string(left);
      if (!target_.Call({"PEXPIRE", key, left_text}, &reply, &error_)) return false;
      if (reply.is_error()) {
        Fail(key, "PEXPIRE on the target refused: " + reply.text);
        return true;
      }
    }
    ++copied_;
    copied_bytes_ += bytes;
    return true;
  }

  // DUMP on the source, RESTORE (with REPLACE under --replace) on the
  // target: one reply, one command, the deadline given as the time left.
  bool CopyByRestore(const std::string& key, const DumpedType& dumped, int64_t ttl_ms,
                     int64_t ttl_read_ms) {
    RespValue payload;
    if (!source_.Call({"DUMP", key}, &payload, &error_)) return false;
    if (payload.is_error()) {
      Fail(key, std::string(dumped.what) + ": DUMP refused by the source: " + payload.text);
      return true;
    }
    if (payload.type != RespValue::Type::kBulk) {
      Skip(key, "gone before it was copied");
      return true;
    }
    AddBytes(payload.text.size());
    const int64_t left =
        ttl_ms > 0 ? std::max<int64_t>(1, ttl_ms - (NowMs() - ttl_read_ms)) : 0;
    const std::string left_text = std::to_string(left);
    std::vector<std::string_view> restore = {"RESTORE", key, left_text, payload.text};
    if (options_.replace) restore.push_back("REPLACE");
    RespValue reply;
    if (!target_.Call(restore, &reply, &error_)) return false;
    if (reply.is_error()) {
      Fail(key, std::string(dumped.what) + ": RESTORE on the target refused: " + reply.text);
      return true;
    }
    ++copied_;
    copied_bytes_ += payload.text.size();
    return true;
  }

  // One dump of `key` loaded as `load_name`. Pipelined: the chunk just
  // dumped is sent to the target, then the next SCANDUMP goes to the source,
  // and only then is the LOADCHUNK's reply read, so the target loads while
  // the source dumps. `*reason` stays empty on success; `*torn` says the
  // target saw the filter change between chunks (worth another dump).
  bool CopyDump(const std::string& key, const std::string& load_name, const Family& family,
                uint64_t* bytes, bool* torn, std::string* reason) {
    RespValue dump;
    if (!source_.Call({family.scandump, key, "0"}, &dump, &error_)) return false;
    while (true) {
      if (dump.is_error()) {
        *reason = std::string(family.scandump) + " refused by the source: " + dump.text;
        if (StartsWith(dump.text, "ERR unknown command")) *reason += "; " + module_findings_;
        return true;
      }
      if (dump.type != RespValue::Type::kArray || dump.elements.size() != 2 ||
          dump.elements[0].type != RespValue::Type::kInteger) {
        *reason = std::string(family.scandump) + "'s reply is not [iterator, chunk]";
        return true;
      }
      const int64_t iterator = dump.elements[0].integer;
      if (iterator == 0) return true;  // the end: the last LOADCHUNK published it
      std::string chunk = std::move(dump.elements[1].text);
      *bytes += chunk.size();
      AddBytes(chunk.size());
      std::string iterator_text = std::to_string(iterator);
      target_.Send({family.loadchunk, load_name, iterator_text, chunk});
      if (!target_.Flush(&error_)) return false;
      source_.Send({family.scandump, key, iterator_text});
      if (!source_.Flush(&error_) || !source_.Read(&dump, &error_)) return false;
      RespValue loaded;
      if (!target_.Read(&loaded, &error_)) return false;
      if (loaded.is_error()) {
        *torn = StartsWith(loaded.text, "ERR the filter changed");
        *reason = std::string(family.loadchunk) + " of chunk " + iterator_text +
                  " refused by the target: " + loaded.text;
        return true;
      }
      Progress();
    }
  }

  void AddBytes(uint64_t n) { seen_bytes_ += n; }

  void Skip(const std::string& key, const std::string& reason) {
    auto& keys = skipped_[reason];
    keys.push_back(key);
  }

  void Fail(const std::string& key, const std::string& reason) {
    std::fprintf(stderr, "bloomgate migrate: %s: failed: %s\n", key.c_str(), reason.c_str());
    failed_.emplace_back(key, reason);
  }

  double Seconds() const { return static_cast<double>(NowMs() - start_ms_) / 1000.0; }
  double MegabytesPerSecond() const {
    double seconds = Seconds();
    return seconds > 0 ? static_cast<double>(seen_bytes_) / 1e6 / seconds : 0;
  }

  void Progress() {
    int64_t now = NowMs();
    if (now - last_progress_ms_ < kProgressIntervalMs) return;
    last_progress_ms_ = now;
    std::fprintf(stderr,
                 "bloomgate migrate: %llu of %zu keys seen so far done, %llu bytes, %.1f MB/s\n",
                 static_cast<unsigned long long>(copied_ + failed_.size() + SkippedCount()),
                 seen_.size(), static_cast<unsigned long long>(seen_bytes_),
                 MegabytesPerSecond());
  }

  size_t SkippedCount() const {
    size_t n = 0;
    for (const auto& [reason, keys] : skipped_) n += keys.size();
    return n;
  }

  int Fatal() {
    std::fprintf(stderr, "bloomgate migrate: stopped: %s\n", error_.c_str());
    Summary();
    return 3;
  }

  void Summary() {
    std::fprintf(stderr,
                 "bloomgate migrate: %llu keys copied, %zu skipped, %zu failed; %llu bytes in "
                 "%.2f s, %.1f MB/s\n",
                 static_cast<unsigned long long>(copied_), SkippedCount(), failed_.size(),
                 static_cast<unsigned long long>(copied_bytes_), Seconds(),
                 MegabytesPerSecond());
    // Skipped keys by reason, the first few named: a keyspace of a million
    // strings beside its filters should not print a million lines.
    for (const auto& [reason, keys] : skipped_) {
      std::string names;
      for (size_t i = 0; i < keys.size() && i < 5; ++i) names += (i ? ", " : "") + keys[i];
      std::fprintf(stderr, "  skipped %zu: %s (%s%s)\n", keys.size(), reason.c_str(),
                   names.c_str(), keys.size() > 5 ? ", ..." : "");
    }
    for (const auto& [key, reason] : failed_) {
      std::fprintf(stderr, "  failed: %s: %s\n", key.c_str(), reason.c_str());
    }
  }

  const Options& options_;
  RespClient source_;
  RespClient target_;
  std::string error_;
  // What MODULE LIST said (ExamineSource).
  std::string module_findings_;
  bool source_is_bloomgate_ = false;
  bool source_has_filters_ = false;
  std::unordered_set<std::string> seen_;
  std::map<std::string, std::vector<std::string>> skipped_;
  std::vector<std::pair<std::string, std::string>> failed_;
  uint64_t copied_ = 0;
  uint64_t copied_bytes_ = 0;
  uint64_t seen_bytes_ = 0;
  int64_t start_ms_ = 0;
  int64_t last_progress_ms_ = 0;
};

bool ParsePositive(std::string_view text, int64_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && *out > 0;
}

}  // namespace

int RunMigrate(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    if (IsHelpFlag(argv[i])) {
      std::printf("%.*s", static_cast<int>(kMigrateHelp.size()), kMigrateHelp.data());
      return 0;
    }
  }
  static const std::vector<std::string_view> kFlags = {
      "--from",  "--user",        "--password", "--match",   "--to",      "--to-user",
      "--to-password", "--replace", "--count",  "--timeout", "--help"};
  Options options;
  for (int i = 2; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (std::find(kFlags.begin(), kFlags.end(), flag) == kFlags.end()) {
      std::string hint = SuggestClosest(flag, kFlags);
      std::fprintf(stderr,
                   "bloomgate migrate: unknown option %s%s%s (see bloomgate migrate --help)\n",
                   argv[i], hint.empty() ? "" : "; did you mean ",
                   hint.empty() ? "" : (hint + "?").c_str());
      return 2;
    }
    if (flag == "--replace") {
      options.replace = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bloomgate migrate: %s needs a value (see bloomgate migrate --help)\n",
                   argv[i]);
      return 2;
    }
    std::string value = argv[++i];
    int64_t number = 0;
    if (flag == "--from") {
      options.from = value;
    } else if (flag == "--user") {
      options.user = value;
    } else if (flag == "--password") {
      options.password = value;
    } else if (flag == "--match") {
      options.match = value;
    } else if (flag == "--to") {
      options.to = value;
    } else if (flag == "--to-user") {
      options.to_user = value;
    } else if (flag == "--to-password") {
      options.to_password = value;
    } else if (flag == "--count") {
      if (!ParsePositive(value, &number)) {
        std::fprintf(stderr, "bloomgate migrate: bad value for --count: %s\n", value.c_str());
        return 2;
      }
      options.count = value;
    } else {  // --timeout (kFlags above)
      if (!ParsePositive(value, &number) || number > 86400) {
        std::fprintf(stderr, "bloomgate migrate: bad value for --timeout: %s\n", value.c_str());
        return 2;
      }
      options.timeout_ms = number * 1000;
    }
  }
  if (options.from.empty()) {
    std::fprintf(stderr, "bloomgate migrate: --from is required\n%.*s",
                 static_cast<int>(kMigrateHelp.size()), kMigrateHelp.data());
    return 2;
  }
  return Migration(options).Run();
}

}  // namespace bloomgate
