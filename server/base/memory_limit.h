// What maxmemory 0 means: 3/4 of the memory this process may use, which
// inside a container is its cgroup's limit, not the machine's RAM (a 2 GB
// container on a 25 GB host was otherwise given 18.9 GB and OOM-killed).
//
// The cgroup files are read through a root path (the seam: tests point it at
// a directory of fake files):
//   <proc_self_cgroup>                 "0::/path" (v2) or "N:memory:/path" (v1)
//   <cgroup_root>/<path>/memory.max              v2: bytes, or "max"
//   <cgroup_root>/memory/<path>/memory.limit_in_bytes   v1: bytes; "unlimited"
//                                                   is ~2^63 rounded to a page
// A limit can sit on any ancestor, so each level from <path> up to the root
// is read and the smallest limit wins.
#pragma once

#include <cstdint>
#include <string>

namespace bloomgate {

struct MemoryLimit {
  uint64_t bytes = 0;    // the memory the process may use; 0 = unknown
  std::string source;    // "cgroup v2 /sys/fs/cgroup/memory.max" or "physical memory"
};

struct MemoryLimitPaths {
  std::string proc_self_cgroup = "/proc/self/cgroup";
  std::string cgroup_root = "/sys/fs/cgroup";
};

// The smaller of physical memory (`physical_bytes`, 0 = unknown) and any
// cgroup limit found under `paths`.
MemoryLimit FindMemoryLimit(const MemoryLimitPaths& paths, uint64_t physical_bytes);
// The same for this process and machine (sysconf for physical memory).
MemoryLimit ProcessMemoryLimit();
// maxmemory's value when configured as 0: 3/4 of ProcessMemoryLimit(),
// leaving room for the kernel, the page cache and our own overhead.
uint64_t DefaultMaxMemory(MemoryLimit* used = nullptr);

// This process's resident set now (/proc/self/statm), 0 if unreadable:
// MEMORY STATS's startup figure and fragmentation.
uint64_t ResidentBytes();

}  // namespace bloomgate
