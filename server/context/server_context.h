// What every command handler can reach: the keyspace and everything shared
// by all worker threads. One instance lives as long as the server.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "config/keyspace_events.h"
#include "config/runtime_config.h"
#include "config/server_config.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "server/access/acl_log.h"
#include "server/access/acl_store.h"
#include "server/access/auth_throttle.h"
#include "server/base/clock.h"
#include "server/catalogue/command_table.h"
#include "server/clients/client_pause.h"
#include "server/clients/client_registry.h"
#include "server/clients/monitor_feed.h"
#include "server/cluster/cluster_state.h"
#include "server/durability/durability.h"
#include "server/durability/journal.h"
#include "server/keyspace/chunk_staging.h"
#include "server/keyspace/key_locks.h"
#include "server/keyspace/keyspace.h"
#include "server/keyspace/lazy_freer.h"
#include "server/keyspace/snapshot_copier.h"
#include "server/pubsub/keyspace_notifier.h"
#include "server/pubsub/pubsub_hub.h"
#include "server/stats/error_stats.h"
#include "server/stats/instantaneous_metrics.h"
#include "server/stats/latency_monitor.h"
#include "server/stats/server_stats.h"
#include "server/stats/slow_log.h"

namespace bloomgate {

inline constexpr std::string_view kBloomgateVersion = "0.1.0";
// The Redis release whose behaviour we follow (COMPAT.md: Redis 8 line), as
// reported in INFO and HELLO, and the RedisBloom module version libraries
// look for in INFO modules / MODULE LIST.
inline constexpr std::string_view kRedisVersion = "8.0.0";
inline constexpr int kBloomModuleVersion = 80000;

class Replication;  // server/replication/replication.h

class ServerContext {
 public:
  ServerContext(ServerConfig config, size_t workers);
  ~ServerContext();

  // Replaces `durability` with one over `fs` (the real file system at
  // construction; tests pass one that fails on demand). Only before serving.
  void UseFileSystem(FileSystem* fs);

  // The config file's `users` (ServerConfig::users): each line is
  // "<name> <rule> <rule> ...", applied as ACL SETUSER would, after the
  // user was reset if it exists ("default"), as Redis loads `user` lines. On
  // the first bad line returns a message naming it (without its rules,
  // which may hold a password) and leaves the users as they were.
  std::optional<std::string> LoadConfiguredUsers(const std::vector<std::string>& lines);

  // Re-derives the limits that hot paths read from the current config
  // (memory caps, the default user's requirepass); called at start-up and
  // after CONFIG SET.
  void ApplyConfig(const ServerConfig& config);
  // Pauses clients for `purpose` (CLIENT PAUSE, a manual failover) or ends
  // that purpose's pause only; either way expiry (a write) stays held until
  // the last pause in force ends, as Redis holds it.
  void PauseClients(PausePurpose purpose, PauseMode mode, int64_t end_ms, int64_t now_ms);
  void UnpauseClients(PausePurpose purpose);
  FilterLimits filter_limits() const {
    FilterLimits limits;
    limits.max_filter_bytes = max_filter_bytes_.load(std::memory_order_relaxed);
    return limits;
  }
  // client-output-buffer-limit, read by every connection once per batch.
  uint64_t client_output_buffer_limit() const {
    return client_output_buffer_limit_.load(std::memory_order_relaxed);
  }
  // slowlog-log-slower-than (us, -1 = off) and latency-monitor-threshold
  // (ms, 0 = off), read after every command.
  int64_t slowlog_threshold_us() const {
    return slowlog_threshold_us_.load(std::memory_order_relaxed);
  }
  // Whether notify-keyspace-events includes `event_class` now.
  bool NotifiesKeyspace(uint32_t event_class) const {
    return (notify_keyspace_events_.load(std::memory_order_relaxed) & event_class) != 0;
  }
  // A keyspace event of `event_class` on `key` (server/pubsub/keyspace_notifier.h):
  // one relaxed load when notify-keyspace-events leaves the class out.
  void NotifyKeyspaceEvent(uint32_t event_class, std::string_view event, std::string_view key) {
    const uint32_t configured = notify_keyspace_events_.load(std::memory_order_relaxed);
    if ((configured & event_class) == 0) return;
    PublishKeyspaceEvent(pubsub, configured, event_class, event, key,
                         client_output_buffer_limit());
  }
  uint64_t slowlog_max_len() const { return slowlog_max_len_.load(std::memory_order_relaxed); }
  uint64_t latency_threshold_ms() const {
    return latency_threshold_ms_.load(std::memory_order_relaxed);
  }
  // The largest used_memory seen: raised by the housekeeping tick (every
  // 100 ms) and by every INFO, so a peak between ticks may be missed.
  uint64_t NoteMemoryPeak() {
    uint64_t used = budget.used();
    uint64_t peak = used_memory_peak_.load(std::memory_order_relaxed);
    while (used > peak &&
           !used_memory_peak_.compare_exchange_weak(peak, used, std::memory_order_relaxed)) {
    }
    return std::max(used, peak);
  }
  // CONFIG RESETSTAT: the counters of INFO stats, commandstats, errorstats
  // and LATENCY HISTOGRAM, and the memory peak, as Redis resets them.
  void ResetStats() {
    stats.Reset();
    error_stats.Reset();
    used_memory_peak_.store(budget.used(), std::memory_order_relaxed);
  }

  RuntimeConfig config;
  MemoryBudget budget;
  // Frees removed big filters off the key locks (lazy_freer.h); declared
  // after `budget`, which the filters give their bytes back to, and before
  // `keyspace`, which hands them over.
  LazyFreer lazy_freer;
  Keyspace keyspace;
  // Makes the copies a snapshot owes itself off the event loops, charged to
  // `budget` (declared after it).
  SnapshotCopier snapshot_copier{&budget};
  KeyLocks key_locks;
  CommandTable commands;
  // ACL users (acl_store.h); built over `commands`, declared after it.
  AclStore acl{commands};
  // ACL LOG: the latest refusals (acl_log.h).
  AclLog acl_log;
  ServerStats stats;
  ClientRegistry clients;
  // The pauses (CLIENT PAUSE's, a manual failover's) and parked connections
  // (client_pause.h); set and ended through PauseClients / UnpauseClients.
  ClientPause pause;
  // MONITOR's connections (monitor_feed.h).
  MonitorFeed monitors;
  // Pub/sub channels and patterns, PUBLISH's delivery (pubsub_hub.h).
  PubSubHub pubsub;
  // Failed AUTH attempts per source address (auth_throttle.h).
  AuthThrottle auth_throttle;
  // SLOWLOG, LATENCY, INFO errorstats and the instantaneous rates.
  SlowLog slow_log;
  LatencyMonitor latency;
  ErrorStats error_stats;
  InstantaneousMetrics instantaneous;
  // LOADCHUNK sequences in progress, invisible until complete.
  ChunkStaging chunk_staging;
  // Every acknowledged write, for its subscribers (server/journal.h).
  // Declared before `durability`, which subscribes to it.
  Journal journal;
  // Snapshots and the append-only log (see UseFileSystem).
  std::unique_ptr<Durability> durability;
  // The primary's and the replica's side of replication (declared after
  // `journal` and `durability`, which it works on).
  std::unique_ptr<Replication> replication;
  // Redis Cluster: this node's view of the cluster (cluster/cluster_state.h);
  // off unless cluster-enabled (main.cc enables it before serving).
  ClusterState cluster;

  // Set by the server: asks it to stop gracefully (SHUTDOWN).
  std::function<void()> request_shutdown;
  // Set by the server: CONFIG SET's applier (reloads TLS; config/runtime_config.h).
  RuntimeConfig::Applier config_applier;
  // SHUTDOWN SAVE / NOSAVE: what the final snapshot does at exit.
  std::atomic<Durability::FinalSave> final_save{Durability::FinalSave::kDefault};

  int64_t start_time_ms = 0;
  // The resident set when the context was built, before any data loaded:
  // MEMORY STATS's startup.allocated.
  uint64_t startup_resident_bytes = 0;
  std::string run_id;
  std::string config_file;
  std::string executable;
  uint16_t port = 0;      // plain TCP port bound; 0 = none
  // TLS port bound; 0 = none. CONFIG SET tls-port moves it (Server::ChangeTlsPort).
  std::atomic<uint16_t> tls_port{0};
  size_t worker_threads = 0;

 private:
  // Keeps the keyspace's expiry hold at the end of the last pause in force.
  void HoldExpiryForPauses();
  std::atomic<uint64_t> max_filter_bytes_{0};
  std::atomic<uint64_t> client_output_buffer_limit_{0};
  std::atomic<uint32_t> notify_keyspace_events_{0};
  std::atomic<int64_t> slowlog_threshold_us_{0};
  std::atomic<uint64_t> slowlog_max_len_{0};
  std::atomic<uint64_t> latency_threshold_ms_{0};
  std::atomic<uint64_t> used_memory_peak_{0};
};

}  // namespace bloomgate
