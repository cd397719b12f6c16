// What /proc/self/smaps says of the mapping that holds an address: tests
// check the kernel advice on filter arrays ("hg" in VmFlags: MADV_HUGEPAGE).
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace bloomgate::testing {

// The VmFlags line of the mapping holding `p`, or "" if smaps is unreadable.
inline std::string VmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= at && at < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

inline bool HasVmFlag(const std::string& vm_flags, const std::string& flag) {
  std::istringstream words(vm_flags);
  std::string word;
  while (words >> word) {
    if (word == flag) return true;
  }
  return false;
}

}  // namespace bloomgate::testing
