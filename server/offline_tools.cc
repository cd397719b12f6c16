#include "server/offline_tools.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <ctime>
#include <map>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "config/command_line.h"
#include "filters/key_hash.h"
#include "filters/limits.h"
#include "persistence/append_log.h"
#include "persistence/file_system.h"
#include "persistence/snapshot_file.h"
#include "server/catalogue/family_registry.h"
#include "server/context/server_context.h"
#include "server/data_dir.h"
#include "server/durability/progress.h"
#include "server/keyspace/keyspace.h"
#include "server/tools/import_rdb.h"
#include "server/tools/migrate.h"

namespace bloomgate {
namespace {

constexpr std::string_view kUsage =
    "usage: bloomgate check-snapshot FILE\n"
    "       bloomgate check-log FILE\n"
    "       bloomgate build --output FILE [--input FILE|-] [--key NAME]\n"
    "                       [--error-rate P] [--capacity N] [--expansion E] [--force]\n";

constexpr std::string_view kCheckSnapshotHelp =
    "usage: bloomgate check-snapshot FILE\n"
    "Verifies every checksum and parameter of the snapshot FILE without a server and\n"
    "prints a summary of its keys (times in UTC, ISO-8601, beside the raw Unix ms).\n"
    "Exit status 0 if a server would load it, 1 if not.\n";

constexpr std::string_view kCheckLogHelp =
    "usage: bloomgate check-log FILE\n"
    "Reads the append-only log FILE (appendonly.bglog.N) without a server, verifying\n"
    "every record's checksum, and prints how many records it holds, how many of each\n"
    "command and filter type, the times of the first and the last (UTC, ISO-8601, and\n"
    "Unix ms), and where it is damaged if it is. Exit status 0 if every record is good,\n"
    "1 if the file is damaged or unreadable; a torn final record (a crash during its\n"
    "write) is reported and exits 0: a server cuts it off when this is its newest log.\n";

constexpr std::string_view kBuildHelp =
    "usage: bloomgate build --output FILE [--input FILE|-] [--key NAME]\n"
    "                       [--error-rate P] [--capacity N] [--expansion E] [--force]\n"
    "Reads items, one per line (a trailing CR is dropped), from --input (default -,\n"
    "stdin) and writes a snapshot holding one scalable Bloom filter under --key\n"
    "(default 'filter'). Without --capacity the filter is sized for the input.\n"
    "--error-rate defaults to 0.01, --expansion to 2 (0 = non-scaling). Put FILE in\n"
    "a stopped server's dir as its dbfilename to serve it: the server then drops the\n"
    "append-only logs there, and with them every write not in FILE. Progress goes to\n"
    "stderr. An existing FILE, or a directory a running server holds (its\n"
    "bloomgate.lock), is refused unless --force. The summary gives the items read\n"
    "and the items counted: the difference is lines the filter already answered yes\n"
    "for, repeated lines or false positives.\n";

// A Unix time in ms as UTC ISO-8601 with milliseconds: 2026-12-04T19:56:10.123Z.
std::string FormatUtcMs(int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  std::tm utc {};
  if (gmtime_r(&seconds, &utc) == nullptr) return "?";
  char text[40];
  const size_t n = std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(text + n, sizeof(text) - n, ".%03dZ",
                static_cast<int>(ms - static_cast<int64_t>(seconds) * 1000));
  return text;
}

// "2026-12-04T19:56:10.123Z (1764878170123 ms)".
std::string DescribeTime(int64_t ms) {
  return FormatUtcMs(ms) + " (" + std::to_string(ms) + " ms)";
}

bool IsHelpFlag(std::string_view arg) { return arg == "--help" || arg == "-h"; }

void PrintTo(FILE* out, std::string_view text) {
  std::fprintf(out, "%.*s", static_cast<int>(text.size()), text.data());
}

std::string TypeOf(const AnyFilter& filter) {
  return std::string(TypeName(KindOf(filter)));
}

// The family's own one-line summary (FilterFamily::describe).
std::string Describe(const AnyFilter& filter) {
  const FilterFamily* family = FindFamily(KindOf(filter));
  return family != nullptr ? family->describe(filter) : "unknown family";
}

int CheckSnapshot(int argc, char** argv) {
  if (argc == 3 && IsHelpFlag(argv[2])) {
    PrintTo(stdout, kCheckSnapshotHelp);
    return 0;
  }
  if (argc != 3) {
    std::fprintf(stderr, "%.*s", static_cast<int>(kUsage.size()), kUsage.data());
    return 2;
  }
  std::string path = argv[2];
  SnapshotInfo info;
  std::vector<LoadedRecord> records;
  FilterLimits unlimited;
  unlimited.max_filter_bytes = 0;
  Status status = ReadSnapshot(*DefaultFileSystem(), path, unlimited, /*budget=*/nullptr, &info,
                               &records);
  if (!status.ok()) {
    std::fprintf(stderr, "bloomgate: %s\n", status.message().c_str());
    return 1;
  }
  std::printf("%s: format version %u, created %s, continues log generation %llu, "
              "%llu keys, %llu bytes, all checksums good\n",
              path.c_str(), info.format_version, DescribeTime(info.meta.created_ms).c_str(),
              static_cast<unsigned long long>(info.meta.log_generation),
              static_cast<unsigned long long>(info.records),
              static_cast<unsigned long long>(info.file_bytes));
  for (const LoadedRecord& record : records) {
    const std::string expiry = record.expire_at_ms == 0
                                   ? std::string("no expiry")
                                   : "expires " + DescribeTime(record.expire_at_ms);
    std::printf("  %s (%s) %s: %s\n", record.name.c_str(), TypeOf(record.filter).c_str(),
                expiry.c_str(), Describe(record.filter).c_str());
  }
  return 0;
}

// What one log record is, for check-log's counts: a command by its name
// (upper case, as COMMAND shows them), a stored filter by its type.
std::string RecordKind(const LogRecord& record) {
  if (record.type == LogRecordType::kFilter) {
    return std::string("filter ") + std::string(TypeName(record.header.kind)) +
           (record.has_payload ? " (loaded whole)" : " (created)");
  }
  if (record.type == LogRecordType::kUnit) return "transaction (one unit)";
  if (record.args.empty()) return "(empty command)";
  std::string name = record.args[0];
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return name;
}

int CheckLog(int argc, char** argv) {
  if (argc == 3 && IsHelpFlag(argv[2])) {
    PrintTo(stdout, kCheckLogHelp);
    return 0;
  }
  if (argc != 3) {
    PrintTo(stderr, kUsage);
    return 2;
  }
  const std::string path = argv[2];
  std::map<std::string, uint64_t> kinds;
  int64_t first_ms = 0;
  int64_t last_ms = 0;
  uint64_t records = 0;
  auto visit = [&](const LogRecord& record) {
    if (records == 0) first_ms = record.time_ms;
    last_ms = record.time_ms;
    ++records;
    ++kinds[RecordKind(record)];
    return Status::Ok();
  };
  LogReadResult result;
  Status status =
      ReadAppendLog(*DefaultFileSystem(), path, /*allow_torn_tail=*/true, visit, &result);
  uint64_t file_bytes = 0;
  (void)DefaultFileSystem()->FileSize(path, &file_bytes);
  std::printf("%s: %llu records in %llu bytes", path.c_str(),
              static_cast<unsigned long long>(records),
              static_cast<unsigned long long>(file_bytes));
  if (records > 0) {
    std::printf(", first %s, last %s", DescribeTime(first_ms).c_str(),
                DescribeTime(last_ms).c_str());
  }
  std::printf("\n");
  for (const auto& [kind, count] : kinds) {
    std::printf("  %s: %llu\n", kind.c_str(), static_cast<unsigned long long>(count));
  }
  if (!status.ok()) {
    std::printf("damaged after record %llu: %s\n", static_cast<unsigned long long>(records),
                status.message().c_str());
    std::fprintf(stderr, "bloomgate: %s\n", status.message().c_str());
    return 1;
  }
  if (result.torn_tail) {
    std::printf("the final record is torn at byte %llu (%llu bytes after it; a crash during "
                "its write): a server cuts it off there when this is its newest log, and "
                "refuses to start when it is not\n",
                static_cast<unsigned long long>(result.valid_bytes),
                static_cast<unsigned long long>(file_bytes - result.valid_bytes));
    return 0;
  }
  std::printf("all checksums good\n");
  return 0;
}

bool ParseNumber(std::string_view text, double* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool ParseNumber(std::string_view text, uint64_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// Items are lines; a trailing "\r" is dropped too, so files written on
// Windows give the same filter.
// Items are lines; a trailing "\r" is dropped too, so files written on
// Windows give the same filter. A line on stderr every few seconds says how
// far the pass (`step`) has come: an input of many GB takes minutes.
bool ReadItems(std::istream& in, uint64_t total_bytes, const char* step,
               const std::function<void(std::string_view)>& visit) {
  ByteProgress progress;
  progress.Begin(total_bytes, NowMs());
  std::string line;
  uint64_t lines = 0;
  while (std::getline(in, line)) {
    progress.Add(line.size() + 1);
    // The clock every 4096 lines: ~1 us of a pass that adds ~4096 items.
    if ((++lines & 4095) == 0) {
      int64_t now = NowMs();
      if (progress.LogDue(now)) {
        std::fprintf(stderr, "bloomgate build: %s: %llu lines, %s\n", step,
                     static_cast<unsigned long long>(lines),
                     ByteProgress::Describe(progress.Read(now)).c_str());
      }
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    visit(line);
  }
  return !in.bad();
}

int Build(int argc, char** argv) {
  std::string output;
  std::string input = "-";
  std::string key = "filter";
  ScalableBloomOptions options;
  bool capacity_given = false;
  bool force = false;
  for (int i = 2; i < argc; ++i) {
    if (IsHelpFlag(argv[i])) {
      PrintTo(stdout, kBuildHelp);
      return 0;
    }
  }
  static const std::vector<std::string_view> kFlags = {
      "--output", "--input",     "--key",   "--error-rate",
      "--capacity", "--expansion", "--force", "--help"};
  for (int i = 2; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (std::find(kFlags.begin(), kFlags.end(), flag) == kFlags.end()) {
      std::string hint = SuggestClosest(flag, kFlags);
      std::fprintf(stderr, "bloomgate build: unknown option %s%s%s (see bloomgate build --help)\n",
                   argv[i], hint.empty() ? "" : "; did you mean ",
                   hint.empty() ? "" : (hint + "?").c_str());
      return 2;
    }
    if (flag == "--force") {
      force = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bloomgate build: %s needs a value\n%.*s", argv[i],
                   static_cast<int>(kUsage.size()), kUsage.data());
      return 2;
    }
    std::string_view value = argv[++i];
    bool ok = true;
    if (flag == "--output") {
      output = value;
    } else if (flag == "--input") {
      input = value;
    } else if (flag == "--key") {
      key = value;
    } else if (flag == "--error-rate") {
      ok = ParseNumber(value, &options.error_rate) && options.error_rate > 0 &&
           options.error_rate < 1;
    } else if (flag == "--capacity") {
      ok = ParseNumber(value, &options.capacity) && options.capacity >= 1;
      capacity_given = true;
    } else {  // --expansion (kFlags above)
      uint64_t expansion = 0;
      ok = ParseNumber(value, &expansion) && expansion <= kMaxBloomExpansion;
      options.expansion = static_cast<uint32_t>(expansion);
    }
    if (!ok) {
      std::fprintf(stderr, "bloomgate build: bad value for %.*s: %.*s\n",
                   static_cast<int>(flag.size()), flag.data(), static_cast<int>(value.size()),
                   value.data());
      return 2;
    }
  }
  if (output.empty()) {
    std::fprintf(stderr, "bloomgate build: --output is required\n%.*s",
                 static_cast<int>(kUsage.size()), kUsage.data());
    return 2;
  }
  std::string dir = ".";
  std::string name = output;
  size_t slash = output.rfind('/');
  if (slash != std::string::npos) {
    dir = slash == 0 ? "/" : output.substr(0, slash);
    name = output.substr(slash + 1);
  }
  // Checked before the input is read: a build of many GB should not end in
  // a refusal. A server that holds the directory replaces the file with its
  // next save, or after its next start takes it for its snapshot and drops
  // its append-only logs as older: every write since its last save is lost.
  std::string holder;
  if (!force && DataDirHeld(dir, &holder)) {
    std::fprintf(stderr,
                 "bloomgate build: the directory '%s' is in use by a running bloomgate (%s): "
                 "a snapshot written there is overwritten by its next save, or at its next "
                 "start replaces its data and drops its append-only logs with every write "
                 "since its last save; write FILE elsewhere and stop the server before moving "
                 "it in, or give --force\n",
                 dir.c_str(), holder.c_str());
    return 1;
  }
  std::error_code exists_error;
  if (!force && std::filesystem::exists(output, exists_error)) {
    std::fprintf(stderr, "bloomgate build: %s exists; give --force to replace it\n",
                 output.c_str());
    return 1;
  }
  // Without --capacity the filter is sized for the input: a file is read
  // twice (count, then add); stdin is held in memory.
  std::vector<std::string> buffered;
  std::ifstream file;
  if (input != "-") {
    file.open(input, std::ios::binary);
    if (!file) {
      std::fprintf(stderr, "bloomgate build: cannot open %s: %s\n", input.c_str(),
                   std::strerror(errno));
      return 1;
    }
  }
  std::istream& in = input == "-" ? std::cin : file;
  std::error_code size_error;
  const uint64_t input_bytes =
      input == "-" ? 0 : static_cast<uint64_t>(std::filesystem::file_size(input, size_error));
  if (!capacity_given) {
    uint64_t lines = 0;
    bool ok = input == "-" ? ReadItems(in, 0, "reading", [&](std::string_view item) {
      buffered.emplace_back(item);
      ++lines;
    })
                           : ReadItems(in, size_error ? 0 : input_bytes, "counting",
                                       [&](std::string_view) { ++lines; });
    if (!ok) {
      std::fprintf(stderr, "bloomgate build: reading %s failed\n", input.c_str());
      return 1;
    }
    options.capacity = std::max<uint64_t>(lines, 1);
    if (input != "-") {
      file.clear();
      file.seekg(0);
    }
  }
  FilterLimits unlimited;
  unlimited.max_filter_bytes = 0;
  // The layout BF.RESERVE would give the same filter.
  options.layout = PreferredBloomLayout(options.error_rate, options.expansion);
  std::unique_ptr<ScalableBloomFilter> filter;
  FilterStatus status = ScalableBloomFilter::Create(options, unlimited, nullptr, &filter);
  if (status != FilterStatus::kOk) {
    std::fprintf(stderr, "bloomgate build: cannot create the filter: %s\n",
                 std::string(ToString(status)).c_str());
    return 1;
  }
  uint64_t added = 0;
  uint64_t counted = 0;
  FilterStatus failure = FilterStatus::kOk;
  auto add = [&](std::string_view item) {
    if (failure != FilterStatus::kOk) return;
    bool was_new = false;
    failure = filter->Add(filter->Hash(item), &was_new);
    ++added;
    if (was_new) ++counted;
  };
  if (!buffered.empty() || (input == "-" && !capacity_given)) {
    for (const std::string& item : buffered) add(item);
  } else if (!ReadItems(in, size_error ? 0 : input_bytes, "adding", add)) {
    std::fprintf(stderr, "bloomgate build: reading %s failed\n", input.c_str());
    return 1;
  }
  if (failure != FilterStatus::kOk) {
    std::fprintf(stderr, "bloomgate build: adding item %llu failed: %s\n",
                 static_cast<unsigned long long>(added), std::string(ToString(failure)).c_str());
    return 1;
  }
  AnyFilter stored = std::move(filter);
  SnapshotRecordSource record;
  record.name = key;
  record.filter = &stored;
  SnapshotMeta meta;
  meta.created_ms = NowMs();
  // The built snapshot supersedes whatever logs sit in the directory it is
  // dropped into: it names a log generation above any a server has used
  // (generations count up from 1 by one per snapshot).
  meta.log_generation = static_cast<uint64_t>(meta.created_ms);
  uint64_t bytes = 0;
  Status written = WriteSnapshot(*DefaultFileSystem(), dir, name, meta, {&record, 1}, &bytes);
  if (!written.ok()) {
    std::fprintf(stderr, "bloomgate build: %s\n", written.message().c_str());
    return 1;
  }
  std::printf("%s: key '%s', %llu items read, %llu counted, %s, %llu bytes\n", output.c_str(),
              key.c_str(), static_cast<unsigned long long>(added),
              static_cast<unsigned long long>(counted), Describe(stored).c_str(),
              static_cast<unsigned long long>(bytes));
  if (counted < added) {
    // BF.ADD's rule: an item the filter already answers yes for sets no
    // bit and is not counted.
    std::printf("  %llu of the items read were not counted: the filter already answered yes "
                "for them, as repeated lines or false positives (at most the error rate, "
                "%g, of the distinct items)\n",
                static_cast<unsigned long long>(added - counted), options.error_rate);
  }
  return 0;
}

}  // namespace

std::string_view OfflineModesUsage() {
  return "       bloomgate check-snapshot FILE     verify a snapshot offline (see check-snapshot "
         "--help)\n"
         "       bloomgate check-log FILE          verify an append-only log offline (see "
         "check-log --help)\n"
         "       bloomgate build --output FILE ... build a Bloom snapshot from items (see build "
         "--help)\n"
         "       bloomgate migrate --from HOST:PORT ... copy a running RedisBloom's filters into a "
         "running Bloomgate (see migrate --help)\n"
         "       bloomgate import-rdb FILE --to HOST:PORT | --output SNAPSHOT  load a Redis RDB "
         "file's RedisBloom keys (see import-rdb --help)\n";
}

bool IsOfflineMode(int argc, char** argv) {
  if (argc < 2) return false;
  std::string_view mode = argv[1];
  return mode == "check-snapshot" || mode == "check-log" || mode == "build" ||
         mode == "migrate" || mode == "import-rdb";
}

int RunOfflineMode(int argc, char** argv) {
  std::string_view mode = argv[1];
  if (mode == "migrate") return RunMigrate(argc, argv);
  if (mode == "import-rdb") return RunImportRdb(argc, argv);
  if (mode == "check-log") return CheckLog(argc, argv);
  return mode == "check-snapshot" ? CheckSnapshot(argc, argv) : Build(argc, argv);
}

}  // namespace bloomgate
