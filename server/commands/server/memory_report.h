// MEMORY STATS, MEMORY DOCTOR and MEMORY HELP (the MEMORY container's rows
// are in keyspace_commands.cc beside MEMORY USAGE).
//
// What we account, and so what these report: the filters' bytes (INFO's
// used_memory, reserved in the memory budget), an estimate of each key's
// bookkeeping (its name, entry and index nodes), the replies queued for
// clients, and the resident set the process had before it loaded anything
// (startup.allocated). Redis counts every allocation through its allocator;
// we have no allocator statistics, so MEMORY STATS leaves out Redis's
// allocator.* and rss-overhead.* fields.
#pragma once

#include <cstdint>
#include <string>

namespace bloomgate {

struct CommandContext;
class ServerContext;

// MEMORY STATS's figures, in Redis's order.
struct MemoryStats {
  uint64_t peak_allocated = 0;
  uint64_t total_allocated = 0;
  uint64_t startup_allocated = 0;
  uint64_t clients_normal = 0;
  uint64_t hashtable_main = 0;     // db.0 overhead.hashtable.main
  uint64_t hashtable_expires = 0;  // db.0 overhead.hashtable.expires
  uint64_t overhead_total = 0;
  uint64_t keys_count = 0;
  uint64_t bytes_per_key = 0;
  uint64_t dataset_bytes = 0;
  double dataset_percentage = 0;
  double peak_percentage = 0;
  uint64_t resident = 0;
  double fragmentation = 0;
  int64_t fragmentation_bytes = 0;
};

MemoryStats CollectMemoryStats(ServerContext& server, int64_t now_ms);

// MEMORY DOCTOR's text: one line per finding, or that there is none.
std::string MemoryDoctorReport(ServerContext& server, int64_t now_ms);

void CmdMemoryStats(CommandContext& ctx);
void CmdMemoryDoctor(CommandContext& ctx);
void CmdMemoryHelp(CommandContext& ctx);

}  // namespace bloomgate
