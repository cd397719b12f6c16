#include "server/offline_tools.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "filters/key_hash.h"
#include "filters/limits.h"
#include "persistence/file_system.h"
#include "persistence/snapshot_file.h"
#include "server/context/family_registry.h"
#include "server/context/server_context.h"
#include "server/keyspace/keyspace.h"

namespace bloomgate {
namespace {

constexpr std::string_view kUsage =
    "usage: bloomgate check-snapshot FILE\n"
    "       bloomgate build --output FILE [--input FILE|-] [--key NAME]\n"
    "                       [--error-rate P] [--capacity N] [--expansion E]\n";

std::string TypeOf(const AnyFilter& filter) {
  return std::string(TypeName(KindOf(filter)));
}

// The family's own one-line summary (FilterFamily::describe).
std::string Describe(const AnyFilter& filter) {
  const FilterFamily* family = FindFamily(KindOf(filter));
  return family != nullptr ? family->describe(filter) : "unknown family";
}

int CheckSnapshot(int argc, char** argv) {
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
  std::printf("%s: format version %u, created %lld ms, continues log generation %llu, "
              "%llu keys, %llu bytes, all checksums good\n",
              path.c_str(), info.format_version, static_cast<long long>(info.meta.created_ms),
              static_cast<unsigned long long>(info.meta.log_generation),
              static_cast<unsigned long long>(info.records),
              static_cast<unsigned long long>(info.file_bytes));
  for (const LoadedRecord& record : records) {
    std::printf("  %s (%s) expire_at_ms=%lld: %s\n", record.name.c_str(),
                TypeOf(record.filter).c_str(), static_cast<long long>(record.expire_at_ms),
                Describe(record.filter).c_str());
  }
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
bool ReadItems(std::istream& in, const std::function<void(std::string_view)>& visit) {
  std::string line;
  while (std::getline(in, line)) {
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
  for (int i = 2; i < argc; ++i) {
    std::string_view flag = argv[i];
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
    } else if (flag == "--expansion") {
      uint64_t expansion = 0;
      ok = ParseNumber(value, &expansion) && expansion <= kMaxBloomExpansion;
      options.expansion = static_cast<uint32_t>(expansion);
    } else {
      std::fprintf(stderr, "bloomgate build: unknown option %s\n%.*s", argv[i - 1],
                   static_cast<int>(kUsage.size()), kUsage.data());
      return 2;
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
  if (!capacity_given) {
    uint64_t lines = 0;
    bool ok = input == "-" ? ReadItems(in, [&](std::string_view item) {
      buffered.emplace_back(item);
      ++lines;
    })
                           : ReadItems(in, [&](std::string_view) { ++lines; });
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
  std::unique_ptr<ScalableBloomFilter> filter;
  FilterStatus status = ScalableBloomFilter::Create(options, unlimited, nullptr, &filter);
  if (status != FilterStatus::kOk) {
    std::fprintf(stderr, "bloomgate build: cannot create the filter: %s\n",
                 std::string(ToString(status)).c_str());
    return 1;
  }
  uint64_t added = 0;
  FilterStatus failure = FilterStatus::kOk;
  auto add = [&](std::string_view item) {
    if (failure != FilterStatus::kOk) return;
    bool was_new = false;
    failure = filter->Add(filter->Hash(item), &was_new);
    ++added;
  };
  if (!buffered.empty() || (input == "-" && !capacity_given)) {
    for (const std::string& item : buffered) add(item);
  } else if (!ReadItems(in, add)) {
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
  std::string dir = ".";
  std::string name = output;
  size_t slash = output.rfind('/');
  if (slash != std::string::npos) {
    dir = slash == 0 ? "/" : output.substr(0, slash);
    name = output.substr(slash + 1);
  }
  uint64_t bytes = 0;
  Status written = WriteSnapshot(*DefaultFileSystem(), dir, name, meta, {&record, 1}, &bytes);
  if (!written.ok()) {
    std::fprintf(stderr, "bloomgate build: %s\n", written.message().c_str());
    return 1;
  }
  std::printf("%s: key '%s', %llu items read, %s, %llu bytes\n", output.c_str(), key.c_str(),
              static_cast<unsigned long long>(added), Describe(stored).c_str(),
              static_cast<unsigned long long>(bytes));
  return 0;
}

}  // namespace

bool IsOfflineMode(int argc, char** argv) {
  if (argc < 2) return false;
  std::string_view mode = argv[1];
  return mode == "check-snapshot" || mode == "build";
}

int RunOfflineMode(int argc, char** argv) {
  std::string_view mode = argv[1];
  return mode == "check-snapshot" ? CheckSnapshot(argc, argv) : Build(argc, argv);
}

}  // namespace bloomgate
