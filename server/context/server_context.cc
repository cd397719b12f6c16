#include "server/context/server_context.h"

#include "config/keyspace_events.h"
#include "server/base/memory_limit.h"
#include "server/replication/replication.h"

#include <chrono>
#include <algorithm>
#include <random>
#include <set>

namespace bloomgate {

namespace {

std::string RandomRunId() {
  std::random_device device;
  std::mt19937_64 rng(device());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(40, '0');
  for (char& c : id) c = kHex[rng() % 16];
  return id;
}

// maxmemory 0 means "3/4 of the memory this process may use" (RAM, or the
// cgroup's limit in a container; memory_limit.h): a default that stops a
// client from making the process swap or be OOM-killed, while leaving room
// for the kernel and the page cache.
uint64_t EffectiveMaxMemory(uint64_t configured) {
  return configured != 0 ? configured : DefaultMaxMemory();
}

}  // namespace

ServerContext::ServerContext(ServerConfig initial, size_t workers)
    : config(initial),
      budget(EffectiveMaxMemory(initial.maxmemory)),
      stats(workers, commands.all().size()),
      start_time_ms(NowMs()),
      startup_resident_bytes(ResidentBytes()),
      run_id(RandomRunId()) {
  UseFileSystem(DefaultFileSystem());
  ReplicationParts replication_parts;
  replication_parts.config = &config;
  replication_parts.keyspace = &keyspace;
  replication_parts.key_locks = &key_locks;
  replication_parts.budget = &budget;
  replication_parts.journal = &journal;
  replication_parts.durability = &durability;
  replication_parts.clients = &clients;
  replication_parts.pause = &pause;
  replication_parts.filter_limits = [this] { return filter_limits(); };
  replication_parts.own_port = [this] { return port; };
  replication = std::make_unique<Replication>(replication_parts);
  ApplyConfig(initial);
  keyspace.set_lazy_freer(&lazy_freer);
  // An expired key's removal is journaled as a DEL, as Redis propagates one,
  // so the log (and later a replica) holds it; replaying it deletes a key
  // that is already gone by its deadline, so replay comes out the same. No
  // reply waits for it: its log flush rides on the next write's, and losing
  // it in a crash loses nothing (the key's deadline is in the log too).
  keyspace.set_expiry_hook([this](const std::string& key, int64_t now_ms) {
    // On a replica only its primary's DEL removes an expired key, and the
    // primary's record is what this server passes on.
    if (!keyspace.expiry_held_as_replica()) {
      JournalSession unacknowledged;
      const std::string_view args[] = {"DEL", key};
      journal.RecordCommand(unacknowledged, now_ms, args);
    }
    NotifyKeyspaceEvent(kNotifyExpired, "expired", key);
  });
}

ServerContext::~ServerContext() = default;

void ServerContext::UseFileSystem(FileSystem* fs) {
  // The old one (if any) unsubscribes from the journal as it goes.
  durability.reset();
  DurabilityParts parts;
  parts.config = &config;
  parts.keyspace = &keyspace;
  parts.key_locks = &key_locks;
  parts.budget = &budget;
  parts.journal = &journal;
  durability = std::make_unique<Durability>(parts, fs);
}

std::optional<std::string> ServerContext::LoadConfiguredUsers(
    const std::vector<std::string>& lines) {
  std::set<std::string, std::less<>> seen;
  for (const std::string& line : lines) {
    std::vector<std::string_view> words;
    size_t at = 0;
    while (at < line.size()) {
      size_t start = line.find_first_not_of(" \t", at);
      if (start == std::string::npos) break;
      size_t end = std::min(line.find_first_of(" \t", start), line.size());
      words.push_back(std::string_view(line).substr(start, end - start));
      at = end;
    }
    if (words.empty()) return "an entry of 'users' is empty; each is '<name> <rule> ...'";
    std::string_view name = words.front();
    if (!ValidAclName(name)) return std::string("a user name in 'users' contains a NUL byte");
    if (!seen.emplace(name).second) {
      // Redis's text for a user defined twice in config files.
      return "user '" + std::string(name) +
             "': Duplicate user found. A user can only be defined once in config files";
    }
    std::vector<std::string_view> rules;
    // A configured user is defined from scratch, "default" included.
    if (acl.Find(name) != nullptr) rules.push_back("reset");
    rules.insert(rules.end(), words.begin() + 1, words.end());
    if (auto error = acl.SetUser(name, rules)) return "user '" + std::string(name) + "': " + *error;
  }
  return std::nullopt;
}

void ServerContext::PauseClients(PausePurpose purpose, PauseMode mode, int64_t end_ms,
                                 int64_t now_ms) {
  pause.Pause(purpose, mode, end_ms, now_ms);
  HoldExpiryForPauses();
}

void ServerContext::UnpauseClients(PausePurpose purpose) {
  pause.Unpause(purpose);
  HoldExpiryForPauses();
}

void ServerContext::HoldExpiryForPauses() {
  // A client's PAUSE and the failover's may change on two threads at once:
  // store until the end read back is still the pause's, so the last store
  // is never a stale end read before the other thread's change.
  int64_t end_ms = pause.end_ms();
  for (;;) {
    keyspace.HoldExpiry(end_ms);
    const int64_t now_end_ms = pause.end_ms();
    if (now_end_ms == end_ms) return;
    end_ms = now_end_ms;
  }
}

void ServerContext::ApplyConfig(const ServerConfig& current) {
  if (replication) replication->ApplyConfig(current);
  cluster.SetRequireFullCoverage(current.cluster_require_full_coverage);
  cluster.SetAllowReadsWhenDown(current.cluster_allow_reads_when_down);
  cluster.SetReplicaMigration(current.cluster_migration_barrier,
                              current.cluster_allow_replica_migration);
  acl.ApplyRequirepass(current.requirepass);
  acl.SetPubSubDefault(current.acl_pubsub_default_all_channels);
  acl_log.SetMaxEntries(current.acllog_max_len);
  budget.set_limit(EffectiveMaxMemory(current.maxmemory));
  max_filter_bytes_.store(current.max_filter_memory, std::memory_order_relaxed);
  // Relaxed: a standalone limit; a connection picks it up on its next batch.
  client_output_buffer_limit_.store(current.client_output_buffer_limit,
                                    std::memory_order_relaxed);
  notify_keyspace_events_.store(current.notify_keyspace_events, std::memory_order_relaxed);
  slowlog_threshold_us_.store(current.slowlog_log_slower_than, std::memory_order_relaxed);
  slowlog_max_len_.store(current.slowlog_max_len, std::memory_order_relaxed);
  slow_log.Trim(current.slowlog_max_len);
  latency_threshold_ms_.store(current.latency_monitor_threshold, std::memory_order_relaxed);
  stats.latency_tracking.store(current.latency_tracking, std::memory_order_relaxed);
  if (durability != nullptr) durability->ApplyConfig(current);
}

}  // namespace bloomgate
