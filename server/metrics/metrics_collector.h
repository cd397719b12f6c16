// What GET /metrics shows: the server's figures under
// prometheus-redis-exporter's names (so dashboards built for it work), and
// per filter, for the largest `metrics-top-filters` by memory, what
// BLOOMGATE.HEALTH computes (filters/filter_health.h): items, capacity,
// fill, the false-positive rate that fill implies, memory, and for windowed
// filters each live generation's fill.
//
// Bounded work per scrape, measured (see metrics_collector_test and the
// README): the walk that ranks filters by memory looks at most
// kMaxKeysPerScrape keys (a keyspace larger than that is walked in slices,
// one per scrape, from where the last one stopped; each slice copies a
// shard's entries out under its lock and ranks them after), and the health
// of the chosen filters reads at most kScrapeScanBytes of cells in all,
// shared between them (sampled above that, as BLOOMGATE.HEALTH is), each
// under its key's shared lock.
#pragma once

#include <cstdint>
#include <string>

namespace bloomgate {

class ServerContext;

// 50,000 keys, ~40 ms of the loop's CPU: the walk costs ~0.75 us a key
// (100,002 keys: 75 ms of CPU a scrape with metrics-top-filters 0, 99 ms
// with 100 and two 18/90 MB filters; INFO filterhealth's walk of the same
// keys, 83 ms; 2 shared cores at load ~20).
inline constexpr uint64_t kMaxKeysPerScrape = 50'000;
// 16 MiB of cells over all reported filters: what one BLOOMGATE.HEALTH may
// read (kDefaultHealthScanBytes, ~10 ms of CPU).
inline constexpr uint64_t kScrapeScanBytes = 16ull << 20;

class MetricsCollector {
 public:
  explicit MetricsCollector(ServerContext& server) : server_(server) {}

  // The page, in the text exposition format 0.0.4. Not thread-safe: one
  // scrape at a time (the listener runs every scrape on one loop).
  std::string Collect(int64_t now_ms);

 private:
  ServerContext& server_;
  uint64_t cursor_ = 0;  // where the next slice of a large keyspace starts
};

}  // namespace bloomgate
