#include "server/base/memory_limit.h"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

namespace bloomgate {
namespace {

bool ReadFirstLine(const std::string& path, std::string* line) {
  std::ifstream in(path);
  if (!in) return false;
  std::getline(in, *line);
  while (!line->empty() && (line->back() == '\n' || line->back() == ' ')) line->pop_back();
  return true;
}

bool ParseBytes(std::string_view text, uint64_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// "/a/b" -> {"/a/b", "/a", ""}: the cgroup and each ancestor up to the root.
std::vector<std::string> Levels(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path == "/") path.clear();
  std::vector<std::string> levels;
  while (true) {
    levels.push_back(path);
    if (path.empty()) break;
    size_t slash = path.rfind('/');
    path = slash == std::string::npos ? "" : path.substr(0, slash);
  }
  return levels;
}

}  // namespace

MemoryLimit FindMemoryLimit(const MemoryLimitPaths& paths, uint64_t physical_bytes) {
  MemoryLimit best;
  best.bytes = physical_bytes;
  best.source = "physical memory";
  std::ifstream in(paths.proc_self_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    // hierarchy-id:controllers:path
    size_t first = line.find(':');
    size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    std::string_view controllers = std::string_view(line).substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    std::string dir;
    std::string file;
    std::string version;
    if (line.compare(0, first, "0") == 0 && controllers.empty()) {
      dir = paths.cgroup_root;
      file = "memory.max";
      version = "cgroup v2";
    } else {
      bool memory = false;
      std::stringstream list{std::string(controllers)};
      std::string name;
      while (std::getline(list, name, ',')) memory = memory || name == "memory";
      if (!memory) continue;
      dir = paths.cgroup_root + "/memory";
      file = "memory.limit_in_bytes";
      version = "cgroup v1";
    }
    for (const std::string& level : Levels(path)) {
      std::string limit_path = dir + level + "/" + file;
      std::string text;
      uint64_t bytes = 0;
      if (!ReadFirstLine(limit_path, &text) || !ParseBytes(text, &bytes) || bytes == 0) {
        continue;  // missing, "max", or not a number: no limit at this level
      }
      // v1's "unlimited" (~2^63) and any limit above RAM lose to RAM.
      if (best.bytes == 0 || bytes < best.bytes) {
        best.bytes = bytes;
        best.source = version + " " + limit_path;
      }
    }
  }
  return best;
}

MemoryLimit ProcessMemoryLimit() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  uint64_t physical = pages > 0 && page_size > 0
                          ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)
                          : 0;
  return FindMemoryLimit(MemoryLimitPaths{}, physical);
}

uint64_t DefaultMaxMemory(MemoryLimit* used) {
  MemoryLimit limit = ProcessMemoryLimit();
  if (used != nullptr) *used = limit;
  return limit.bytes / 4 * 3;
}

uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
}

}  // namespace bloomgate
