#include "server/metrics/metrics_collector.h"

#include <sys/resource.h>

#include <algorithm>
#include <map>
#include <vector>

#include "filters/filter_health.h"
#include "server/base/memory_limit.h"
#include "server/catalogue/family_registry.h"
#include "server/context/server_context.h"
#include "server/metrics/exposition_writer.h"

namespace bloomgate {
namespace {

constexpr MetricType kGauge = MetricType::kGauge;
constexpr MetricType kCounter = MetricType::kCounter;

struct Candidate {
  uint64_t bytes = 0;
  std::string name;
  EntryPtr entry;
  const FilterFamily* family = nullptr;
};

// Smallest first at the heap's top, so the largest N stay.
bool LargerFirst(const Candidate& a, const Candidate& b) {
  return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name;
}

double Ratio(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

// The server's figures: prometheus-redis-exporter's names, types and HELP
// texts (read from its /metrics against this server, 1.45.0), from the
// counters INFO reads.
void WriteServerMetrics(ServerContext& server, int64_t now_ms, ExpositionWriter* w) {
  const ServerStats& stats = server.stats;
  const ServerConfig config = server.config.Get();
  w->Single("redis_up", kGauge, "Information about the Redis instance", uint64_t{1});
  w->Single("redis_start_time_seconds", kGauge,
            "Start time of the Redis instance since unix epoch in seconds.",
            static_cast<uint64_t>(server.start_time_ms / 1000));
  w->Single("redis_uptime_in_seconds", kGauge, "uptime_in_seconds metric",
            static_cast<uint64_t>(std::max<int64_t>(0, (now_ms - server.start_time_ms) / 1000)));
  w->Single("redis_connected_clients", kGauge, "connected_clients metric",
            static_cast<uint64_t>(server.clients.count()));
  w->Single("redis_blocked_clients", kGauge, "blocked_clients metric",
            static_cast<uint64_t>(server.pause.waiting()));
  w->Single("redis_config_maxclients", kGauge, "config_maxclients metric",
            static_cast<uint64_t>(config.maxclients));
  w->Single("redis_memory_used_bytes", kGauge, "memory_used_bytes metric", server.budget.used());
  w->Single("redis_memory_used_peak_bytes", kGauge, "memory_used_peak_bytes metric",
            server.NoteMemoryPeak());
  w->Single("redis_memory_used_rss_bytes", kGauge, "memory_used_rss_bytes metric",
            ResidentBytes());
  w->Single("redis_memory_max_bytes", kGauge, "memory_max_bytes metric", server.budget.limit());
  w->Single("redis_connections_received_total", kCounter, "connections_received_total metric",
            stats.Sum(&WorkerCounters::connections_received));
  w->Single("redis_commands_processed_total", kCounter, "commands_processed_total metric",
            stats.Sum(&WorkerCounters::commands_processed));
  w->Single("redis_net_input_bytes_total", kCounter, "net_input_bytes_total metric",
            stats.Sum(&WorkerCounters::net_input_bytes));
  w->Single("redis_net_output_bytes_total", kCounter, "net_output_bytes_total metric",
            stats.Sum(&WorkerCounters::net_output_bytes));
  w->Single("redis_rejected_connections_total", kCounter, "rejected_connections_total metric",
            stats.rejected_connections.load(std::memory_order_relaxed));
  w->Single("redis_expired_keys_total", kCounter, "expired_keys_total metric",
            server.keyspace.expired_keys());
  w->Single("redis_evicted_keys_total", kCounter, "evicted_keys_total metric", uint64_t{0});
  w->Single("redis_keyspace_hits_total", kCounter, "keyspace_hits_total metric",
            stats.Sum(&WorkerCounters::keyspace_hits));
  w->Single("redis_keyspace_misses_total", kCounter, "keyspace_misses_total metric",
            stats.Sum(&WorkerCounters::keyspace_misses));
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  w->Single("redis_cpu_sys_seconds_total", kCounter, "cpu_sys_seconds_total metric",
            seconds(usage.ru_stime));
  w->Single("redis_cpu_user_seconds_total", kCounter, "cpu_user_seconds_total metric",
            seconds(usage.ru_utime));
  w->Family("redis_db_keys", kGauge, "Total number of keys by DB");
  w->Sample("redis_db_keys", static_cast<uint64_t>(server.keyspace.Size()), {{"db", "db0"}});
  w->Family("redis_db_keys_expiring", kGauge, "Total number of expiring keys by DB");
  w->Sample("redis_db_keys_expiring", static_cast<uint64_t>(server.keyspace.VolatileCount()),
            {{"db", "db0"}});

  // Per command, as INFO commandstats: the rows that ran at least once.
  struct Row {
    std::string_view cmd;
    ServerStats::CommandTotals totals;
  };
  std::vector<Row> rows;
  for (const CommandSpec* spec : server.commands.all()) {
    const ServerStats::CommandTotals totals = stats.Command(spec->id);
    if (totals.calls == 0 && totals.rejected_calls == 0) continue;
    rows.push_back({spec->full_name, totals});
  }
  w->Family("redis_commands_total", kCounter, "Total number of calls per command");
  for (const Row& row : rows) w->Sample("redis_commands_total", row.totals.calls, {{"cmd", row.cmd}});
  w->Family("redis_commands_duration_seconds_total", kCounter,
            "Total amount of time in seconds spent per command");
  for (const Row& row : rows) {
    w->Sample("redis_commands_duration_seconds_total",
              static_cast<double>(row.totals.usec) / 1e6, {{"cmd", row.cmd}});
  }
  w->Family("redis_commands_failed_calls_total", kCounter,
            "Total number of errors prior command execution per command");
  for (const Row& row : rows) {
    w->Sample("redis_commands_failed_calls_total", row.totals.failed_calls, {{"cmd", row.cmd}});
  }
  w->Family("redis_commands_rejected_calls_total", kCounter,
            "Total number of errors within command execution per command");
  for (const Row& row : rows) {
    w->Sample("redis_commands_rejected_calls_total", row.totals.rejected_calls,
              {{"cmd", row.cmd}});
  }
}

}  // namespace

std::string MetricsCollector::Collect(int64_t now_ms) {
  ExpositionWriter w;
  WriteServerMetrics(server_, now_ms, &w);

  // Rank filters by memory: a min-heap of the largest `top` seen.
  const uint64_t top = server_.config.Get().metrics_top_filters;
  std::vector<Candidate> heap;
  uint64_t looked_at = 0, filters = 0, filter_bytes = 0;
  uint64_t cursor = cursor_;
  const bool from_start = cursor == 0;
  do {
    cursor = server_.keyspace.Scan(
        cursor, kMaxKeysPerScrape - looked_at, now_ms,
        [&](const std::string& name, const EntryPtr& entry) {
          ++looked_at;
          const FilterFamily* family = FindFamily(KindOf(entry->filter()));
          if (family == nullptr || family->health == nullptr) return;
          const uint64_t bytes = entry->MemoryUsage();
          ++filters;
          filter_bytes += bytes;
          if (top == 0) return;
          // Most keys lose to the smallest kept one on their size alone,
          // before their name is copied.
          if (heap.size() >= top && bytes < heap.front().bytes) return;
          Candidate c{bytes, name, entry, family};
          if (heap.size() < top) {
            heap.push_back(std::move(c));
            std::push_heap(heap.begin(), heap.end(), LargerFirst);
          } else if (LargerFirst(c, heap.front())) {
            std::pop_heap(heap.begin(), heap.end(), LargerFirst);
            heap.back() = std::move(c);
            std::push_heap(heap.begin(), heap.end(), LargerFirst);
          }
        });
  } while (cursor != 0 && looked_at < kMaxKeysPerScrape);
  // A slice that reached the end leaves the next scrape to start again.
  const bool complete = from_start && cursor == 0;
  cursor_ = cursor;
  std::sort(heap.begin(), heap.end(), LargerFirst);

  w.Single("bloomgate_metrics_keys_scanned", kGauge,
           "Keys this scrape looked at to rank filters by memory", looked_at);
  w.Single("bloomgate_metrics_scan_complete", kGauge,
           "1 if this scrape ranked every key, 0 if the keyspace was too large and one slice was",
           uint64_t{complete ? 1u : 0u});
  w.Single("bloomgate_filters", kGauge, "Filters among the keys scanned", filters);
  w.Single("bloomgate_filters_memory_bytes", kGauge,
           "Memory of the filters among the keys scanned", filter_bytes);
  w.Single("bloomgate_filters_reported", kGauge,
           "Filters with per-filter series on this page (metrics-top-filters, largest first)",
           static_cast<uint64_t>(heap.size()));

  struct Report {
    const Candidate* candidate;
    FilterHealth health;
    uint64_t cells = 0, cells_set = 0;
  };
  std::vector<Report> reports;
  reports.reserve(heap.size());
  // The cell budget shared evenly; at least one 4 KiB run each.
  const uint64_t share =
      heap.empty() ? 0 : std::max<uint64_t>(4096, kScrapeScanBytes / heap.size());
  for (const Candidate& c : heap) {
    Report r{&c, {}};
    {
      // As BLOOMGATE.HEALTH: under the key's shared lock (counting and
      // cuckoo writers hold it exclusively), the entry held by reference.
      KeyLocks::Guard guard =
          server_.key_locks.Lock({KeyLocks::StripeOf(c.name)}, /*exclusive=*/false);
      r.health = c.family->health(c.entry->filter(), share);
    }
    for (const LayerHealth& layer : r.health.layers) {
      r.cells += layer.cells;
      r.cells_set += layer.cells_set;
    }
    reports.push_back(std::move(r));
  }

  auto labels = [](const Report& r) -> MetricLabels {
    return {{"key", r.candidate->name}, {"type", r.candidate->family->type_name}};
  };
  w.Family("bloomgate_filter_memory_bytes", kGauge, "Memory the filter uses (MEMORY USAGE)");
  for (const Report& r : reports) w.Sample("bloomgate_filter_memory_bytes", r.candidate->bytes, labels(r));
  w.Family("bloomgate_filter_items", kGauge,
           "Items in the filter (windowed: over its live generations)");
  for (const Report& r : reports) w.Sample("bloomgate_filter_items", r.health.items, labels(r));
  w.Family("bloomgate_filter_capacity", kGauge,
           "Items the filter holds at its error rate (cuckoo: slots)");
  for (const Report& r : reports) w.Sample("bloomgate_filter_capacity", r.health.capacity, labels(r));
  w.Family("bloomgate_filter_fill_ratio", kGauge,
           "Cells set over cells, over all layers (estimated from a sample on large filters)");
  for (const Report& r : reports) {
    w.Sample("bloomgate_filter_fill_ratio", Ratio(r.cells_set, r.cells), labels(r));
  }
  w.Family("bloomgate_filter_error_rate", kGauge, "False-positive rate the filter was made for");
  for (const Report& r : reports) w.Sample("bloomgate_filter_error_rate", r.health.fp_rate_design, labels(r));
  w.Family("bloomgate_filter_estimated_error_rate", kGauge,
           "False-positive rate the filter's fill implies now (BLOOMGATE.HEALTH)");
  for (const Report& r : reports) {
    w.Sample("bloomgate_filter_estimated_error_rate", r.health.fp_rate_now, labels(r));
  }
  w.Family("bloomgate_filter_layers", kGauge, "Layers (sub-filters) of the filter");
  for (const Report& r : reports) {
    w.Sample("bloomgate_filter_layers", static_cast<uint64_t>(r.health.layers.size()), labels(r));
  }
  w.Family("bloomgate_filter_full", kGauge, "1 if the filter is non-scaling and refuses adds");
  for (const Report& r : reports) w.Sample("bloomgate_filter_full", uint64_t{r.health.full ? 1u : 0u}, labels(r));

  // Windowed filters: each live generation's fill and items.
  struct Generation {
    uint64_t items = 0, cells = 0, cells_set = 0;
  };
  std::vector<std::pair<const Report*, std::map<uint64_t, Generation>>> windowed;
  for (const Report& r : reports) {
    if (!r.health.windowed) continue;
    std::map<uint64_t, Generation> generations;
    for (const LayerHealth& layer : r.health.layers) {
      Generation& g = generations[layer.generation];
      g.items += layer.items;
      g.cells += layer.cells;
      g.cells_set += layer.cells_set;
    }
    windowed.emplace_back(&r, std::move(generations));
  }
  auto per_generation = [&](std::string_view metric, std::string_view help, auto value) {
    w.Family(metric, kGauge, help);
    for (const auto& [r, generations] : windowed) {
      for (const auto& [number, g] : generations) {
        const std::string generation = std::to_string(number);
        MetricLabels l = labels(*r);
        l.emplace_back("generation", generation);
        w.Sample(metric, value(g), l);
      }
    }
  };
  per_generation("bloomgate_filter_generation_fill_ratio",
                 "Windowed filters: cells set over cells of each live generation",
                 [](const Generation& g) { return Ratio(g.cells_set, g.cells); });
  per_generation("bloomgate_filter_generation_items",
                 "Windowed filters: items in each live generation",
                 [](const Generation& g) { return g.items; });
  return w.Take();
}

}  // namespace bloomgate
