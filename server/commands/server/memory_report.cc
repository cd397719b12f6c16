#include "server/commands/server/memory_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "server/base/memory_limit.h"
#include "server/catalogue/family_registry.h"
#include "server/commands/command_context.h"
#include "server/context/server_context.h"

namespace bloomgate {
namespace {

// A key's bookkeeping besides its filter, estimated from the structures in
// keyspace.h (64-bit libstdc++): the map node (StoredKey's 32-byte string
// and 8-byte hash, the EntryPtr, the bucket link: 64), the shared_ptr's
// control block (16), the SCAN-order set node (32 of tree links and colour
// + 16 of pair: 48), and the KeyEntry itself. A name past the string's
// 15-byte inline buffer adds its own bytes.
constexpr uint64_t kKeyNodeBytes = 64 + 16 + 48 + sizeof(KeyEntry);
// A key with a deadline also has a node in its shard's deadline set: tree
// links (32) and the pair of deadline and name string (40).
constexpr uint64_t kDeadlineNodeBytes = 72;
constexpr size_t kInlineNameBytes = 15;

uint64_t NameBytes(const std::string& name) {
  return name.size() > kInlineNameBytes ? name.size() + 1 : 0;
}

// MEMORY DOCTOR's thresholds. Fragmentation as Redis's doctor judges it
// (ratio over 1.4 and more than 10 MB), a filters' peak 1.5 times what the
// filters use now and at least 1 MiB above it (less is not worth a line),
// and a budget 90% spent.
constexpr double kFragmentationRatio = 1.4;
constexpr int64_t kFragmentationBytes = 10 << 20;
constexpr double kPeakRatio = 1.5;
constexpr uint64_t kPeakBytes = 1 << 20;
constexpr double kBudgetFull = 0.9;
// A filter is reported when the FP rate its fill implies is over the rate it
// was created for by more than a quarter: an estimate from a sample is not
// exact, and a filter at exactly its capacity sits at its design rate.
constexpr double kFpRateSlack = 1.25;
// Each filter's bits are sampled with at most this much reading (evenly
// spaced 4 KiB runs past it, filters/filter_health.h), and at most
// kFiltersScanned filters are sampled, so a DOCTOR on a big keyspace reads
// at most 16 MiB (~10 ms).
constexpr uint64_t kDoctorScanBytes = 16 << 10;
constexpr uint64_t kFiltersScanned = 1024;

std::string Bytes(uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  if (n < (1 << 20)) return fmt::format("{:.1f} KiB", static_cast<double>(n) / 1024);
  if (n < (1ull << 30)) return fmt::format("{:.1f} MiB", static_cast<double>(n) / (1 << 20));
  return fmt::format("{:.2f} GiB", static_cast<double>(n) / (1ull << 30));
}

}  // namespace

MemoryStats CollectMemoryStats(ServerContext& server, int64_t now_ms) {
  MemoryStats s;
  server.keyspace.ForEachKey("*", now_ms, [&](const std::string& name, const EntryPtr& entry) {
    ++s.keys_count;
    s.hashtable_main += kKeyNodeBytes + NameBytes(name);
    if (entry->expire_at_ms() != 0) s.hashtable_expires += kDeadlineNodeBytes + NameBytes(name);
  });
  for (const auto& client : server.clients.Snapshot()) {
    s.clients_normal += client->output_bytes.load(std::memory_order_relaxed);
  }
  s.startup_allocated = server.startup_resident_bytes;
  s.overhead_total = s.startup_allocated + s.clients_normal + s.hashtable_main + s.hashtable_expires;
  s.dataset_bytes = server.budget.used();
  s.total_allocated = s.overhead_total + s.dataset_bytes;
  // The filters' peak (INFO used_memory_peak) on top of today's overhead.
  s.peak_allocated = std::max(s.total_allocated, s.overhead_total + server.NoteMemoryPeak());
  const uint64_t net = s.total_allocated - s.startup_allocated;
  s.bytes_per_key = s.keys_count == 0 ? 0 : net / s.keys_count;
  s.dataset_percentage = net == 0 ? 0 : 100.0 * static_cast<double>(s.dataset_bytes) /
                                            static_cast<double>(net);
  s.peak_percentage = 100.0 * static_cast<double>(s.total_allocated) /
                      static_cast<double>(std::max<uint64_t>(1, s.peak_allocated));
  s.resident = ResidentBytes();
  s.fragmentation = static_cast<double>(s.resident) /
                    static_cast<double>(std::max<uint64_t>(1, s.total_allocated));
  s.fragmentation_bytes = static_cast<int64_t>(s.resident) - static_cast<int64_t>(s.total_allocated);
  return s;
}

std::string MemoryDoctorReport(ServerContext& server, int64_t now_ms) {
  const MemoryStats s = CollectMemoryStats(server, now_ms);
  std::vector<std::string> findings;
  // Filters whose fill implies more false positives than they were made for.
  uint64_t scanned = 0, over_rate = 0, over_capacity = 0, saturated_filters = 0;
  std::string worst_key;
  double worst_now = 0, worst_design = 0, worst_ratio = 0;
  server.keyspace.ForEachKey("*", now_ms, [&](const std::string& name, const EntryPtr& entry) {
    const FilterFamily* family = FindFamily(KindOf(entry->filter()));
    if (family == nullptr || family->health == nullptr) return;
    const bool sample = scanned < kFiltersScanned;
    scanned += sample ? 1 : 0;
    const FilterHealth h = family->health(entry->filter(), sample ? kDoctorScanBytes : 0);
    over_capacity += h.over_capacity ? 1 : 0;
    saturated_filters += h.saturated > 0 ? 1 : 0;
    if (!sample || h.fp_rate_design <= 0) return;
    const double ratio = h.fp_rate_now / h.fp_rate_design;
    if (ratio <= kFpRateSlack) return;
    ++over_rate;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst_key = name;
      worst_now = h.fp_rate_now;
      worst_design = h.fp_rate_design;
    }
  });
  if (over_rate > 0) {
    findings.push_back(fmt::format(
        "* {} filter(s) answer with more false positives than they were created for: the "
        "worst, '{}', has an estimated false-positive rate of {:.4g} against its {:.4g}. "
        "Rebuild it with a larger capacity (BLOOMGATE.HEALTH shows each layer).",
        over_rate, worst_key, worst_now, worst_design));
  }
  if (over_capacity > 0) {
    findings.push_back(fmt::format(
        "* {} non-scaling filter(s) hold more items than their capacity.", over_capacity));
  }
  if (saturated_filters > 0) {
    findings.push_back(fmt::format(
        "* {} counting filter(s) have saturated counters: deleting their items can leave "
        "false positives behind (COUNTERBITS 8 saturates later).",
        saturated_filters));
  }
  // The peak check compares the filters' peak with the filters' bytes now.
  // peak_allocated and total_allocated both carry the start-up resident set
  // (~8 MB) and the other overheads, which dilute the ratio: filters that
  // went from 3 MiB to none read as 11 MiB against 8 MiB, 1.4 times.
  const uint64_t filters_peak = std::max(s.dataset_bytes, server.NoteMemoryPeak());
  if (static_cast<double>(filters_peak) > kPeakRatio * static_cast<double>(s.dataset_bytes) &&
      filters_peak - s.dataset_bytes >= kPeakBytes) {
    findings.push_back(
        s.dataset_bytes == 0
            ? fmt::format("* Peak memory: the filters' peak was {} and they hold none now; the "
                          "process may not have returned that memory to the system (see "
                          "fragmentation).",
                          Bytes(filters_peak))
            : fmt::format("* Peak memory: the filters' peak ({}) was {:.1f} times what they use "
                          "now ({}); the process may not have returned that memory to the "
                          "system (see fragmentation).",
                          Bytes(filters_peak),
                          static_cast<double>(filters_peak) /
                              static_cast<double>(s.dataset_bytes),
                          Bytes(s.dataset_bytes)));
  }
  if (s.fragmentation > kFragmentationRatio && s.fragmentation_bytes > kFragmentationBytes) {
    findings.push_back(fmt::format(
        "* Fragmentation: the resident set ({}) is {:.2f} times what we account ({}).",
        Bytes(s.resident), s.fragmentation, Bytes(s.total_allocated)));
  }
  const uint64_t limit = server.budget.limit();
  if (limit != 0 && static_cast<double>(s.dataset_bytes) > kBudgetFull * static_cast<double>(limit)) {
    findings.push_back(fmt::format(
        "* maxmemory: the filters use {} of {} ({:.0f}%); new filters and growth will soon be "
        "refused with -OOM.",
        Bytes(s.dataset_bytes), Bytes(limit),
        100.0 * static_cast<double>(s.dataset_bytes) / static_cast<double>(limit)));
  }
  if (findings.empty()) {
    return fmt::format(
        "No memory problem found: {} key(s), {} in filters (their peak {}), fragmentation "
        "{:.2f}, and every filter sampled is within its false-positive target.\n",
        s.keys_count, Bytes(s.dataset_bytes), Bytes(filters_peak), s.fragmentation);
  }
  std::string text = "Memory report, " + std::to_string(findings.size()) + " finding(s):\n\n";
  for (const std::string& finding : findings) text += finding + "\n\n";
  return text;
}

// MEMORY STATS: a map (a flat array in RESP2) of Redis's fields in Redis's
// order; replication.backlog, clients.slaves, cluster.links, aof.buffer,
// lua.caches and functions.caches are 0 because we have none of them (the
// log's pending bytes are written out every event-loop pass).
void CmdMemoryStats(CommandContext& ctx) {
  const MemoryStats s = CollectMemoryStats(ctx.server, ctx.now_ms);
  ReplyBuilder& r = ctx.reply;
  auto integer = [&r](std::string_view name, uint64_t value) {
    r.Bulk(name);
    r.Integer(static_cast<int64_t>(value));
  };
  r.MapHeader(19);
  integer("peak.allocated", s.peak_allocated);
  integer("total.allocated", s.total_allocated);
  integer("startup.allocated", s.startup_allocated);
  integer("replication.backlog", 0);
  integer("clients.slaves", 0);
  integer("clients.normal", s.clients_normal);
  integer("cluster.links", 0);
  integer("aof.buffer", 0);
  integer("lua.caches", 0);
  integer("functions.caches", 0);
  r.Bulk("db.0");
  r.MapHeader(2);
  integer("overhead.hashtable.main", s.hashtable_main);
  integer("overhead.hashtable.expires", s.hashtable_expires);
  integer("overhead.total", s.overhead_total);
  integer("keys.count", s.keys_count);
  integer("keys.bytes-per-key", s.bytes_per_key);
  integer("dataset.bytes", s.dataset_bytes);
  r.Bulk("dataset.percentage");
  r.Double(s.dataset_percentage);
  r.Bulk("peak.percentage");
  r.Double(s.peak_percentage);
  r.Bulk("fragmentation");
  r.Double(s.fragmentation);
  r.Bulk("fragmentation.bytes");
  r.Integer(s.fragmentation_bytes);
}

// MEMORY DOCTOR: a verbatim text in RESP3, a bulk string in RESP2, as Redis.
void CmdMemoryDoctor(CommandContext& ctx) {
  ctx.reply.Verbatim(MemoryDoctorReport(ctx.server, ctx.now_ms));
}

void CmdMemoryHelp(CommandContext& ctx) {
  static constexpr std::string_view kLines[] = {
      "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "DOCTOR",
      "    Return memory problems reports: filters over their false-positive target,",
      "    peak and fragmentation.",
      "STATS",
      "    Return information about the memory usage of the server.",
      "USAGE <key> [SAMPLES <count>]",
      "    Return memory in bytes used by <key> and its value (exact: SAMPLES is",
      "    accepted and not needed).",
      "HELP",
      "    Print this help.",
  };
  ctx.reply.ArrayHeader(std::size(kLines));
  for (std::string_view line : kLines) ctx.reply.SimpleString(line);
}

}  // namespace bloomgate
