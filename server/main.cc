// bloomgate: argv, configuration, the data directory's lock, the port,
// logging, then load the data while answering -LOADING, and serve until
// stopped.
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "config/command_line.h"
#include "config/config_params.h"
#include "config/server_config.h"
#include "filters/deferred_free.h"
#include "filters/generation_preparer.h"
#include "server/base/clock.h"
#include "server/base/memory_limit.h"
#include "server/cluster/cluster_startup.h"
#include "server/cluster_bus/cluster_bus.h"
#include "server/commands/journal_applier.h"
#include "server/commands/registry.h"
#include "server/context/server_context.h"
#include "server/data_dir.h"
#include "server/keyspace/filter_maker.h"
#include "server/keyspace/transfer_workers.h"
#include "server/metrics/metrics_listener.h"
#include "server/net/server.h"
#include "server/offline_tools.h"
#include "server/replication/replication.h"

namespace {

// Start-up logs to stderr until the port is bound: a server that cannot
// start (dir in use, port taken) creates no file, and says why on the
// terminal or to the service manager.
void SetUpStartupLogging(const bloomgate::ServerConfig& config) {
  auto logger = spdlog::stderr_color_mt("bloomgate");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(std::string(bloomgate::LogLevelForSpdlog(config.loglevel))));
  spdlog::flush_on(spdlog::level::info);
}

// Then the configured logfile, if any.
bool SetUpFileLogging(const bloomgate::ServerConfig& config, std::string* error) {
  if (config.logfile.empty()) return true;
  try {
    auto logger = std::make_shared<spdlog::logger>(
        "bloomgate", std::make_shared<spdlog::sinks::basic_file_sink_mt>(config.logfile));
    logger->set_level(spdlog::level::from_str(std::string(bloomgate::LogLevelForSpdlog(config.loglevel))));
    logger->flush_on(spdlog::level::info);
    spdlog::drop("bloomgate");
    spdlog::set_default_logger(logger);
  } catch (const spdlog::spdlog_ex& e) {
    *error = std::string("cannot open log: ") + e.what();
    return false;
  }
  return true;
}

// BLOOMGATE_TEST_LOAD_BYTES_PER_SEC: the test hook that slows start-up
// loading (Durability::set_load_rate_limit); unset in production.
uint64_t TestLoadRateLimit() {
  const char* text = std::getenv("BLOOMGATE_TEST_LOAD_BYTES_PER_SEC");
  if (text == nullptr) return 0;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  return end != text && *end == '\0' ? value : 0;
}

// What an operator checks first after a restart, one line each: where and
// how the data is kept, who may connect, and how the last run ended.
void LogStartupSettings(const bloomgate::ServerConfig& config,
                        const bloomgate::ServerContext& context,
                        const bloomgate::DataDirLock& dir_lock) {
  using bloomgate::GetConfigValue;
  const std::string save = GetConfigValue(config, "save");
  spdlog::info("persistence: dir {}, dbfilename {}, save \"{}\"{}, appendonly {}{}", config.dir,
               config.dbfilename, save, save.empty() ? " (no scheduled snapshots)" : "",
               config.appendonly ? "yes" : "no",
               config.appendonly ? " (appendfsync " + GetConfigValue(config, "appendfsync") + ")"
                                 : std::string(" (writes since the last snapshot are lost "
                                               "in a crash)"));
  spdlog::info("protected-mode {}{}; TLS {}", config.protected_mode ? "yes" : "no",
               config.protected_mode && config.requirepass.empty() && config.users.empty()
                   ? " (no password: only loopback clients are served)"
                   : "",
               context.tls_port.load() != 0
                   ? "on port " + std::to_string(context.tls_port.load()) + " (certificate " +
                         config.tls_cert_file + ", client certificates " +
                         GetConfigValue(config, "tls-auth-clients") + ")"
                   : std::string("off"));
  if (dir_lock.found_stale()) {
    spdlog::warn("previous shutdown was not clean: the {} of {} was left behind (killed, "
                 "crashed or the machine went down) and no final save was made; {}",
                 bloomgate::kDataDirLockName,
                 dir_lock.stale_pid().empty() ? "an unknown pid" : "pid " + dir_lock.stale_pid(),
                 config.appendonly
                     ? "the snapshot and the append-only log are loaded as it left them"
                     : "appendonly is off: writes after the last snapshot are lost");
  } else {
    spdlog::info("previous shutdown was clean (or this data directory is new)");
  }
}

}  // namespace

namespace {

// Installs the server's LazyFreer as the filters' deferred freer
// (filters/deferred_free.h) for as long as it lives.
class DeferredFreerScope final : public bloomgate::DeferredFreer {
 public:
  explicit DeferredFreerScope(bloomgate::LazyFreer* freer) : freer_(freer) {
    bloomgate::SetDeferredFreer(this);
  }
  ~DeferredFreerScope() override { bloomgate::ClearDeferredFreer(this); }
  void Free(std::shared_ptr<void> doomed) override { freer_->Free(std::move(doomed)); }

 private:
  bloomgate::LazyFreer* const freer_;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace bloomgate;
  RegisterAllCommands();
  if (IsOfflineMode(argc, argv)) return RunOfflineMode(argc, argv);
  CommandLine command_line;
  std::vector<std::pair<std::string, std::string>> overrides;
  std::string error;
  if (!ParseCommandLine(argc, argv, &command_line, &overrides, &error)) {
    std::fprintf(stderr, "bloomgate: %s\n", error.c_str());
    return 2;
  }
  if (command_line.show_help) {
    std::printf("%s", CommandLineHelp(OfflineModesUsage()).c_str());
    return 0;
  }
  if (command_line.show_version) {
    std::printf("bloomgate %s (Redis %s protocol, RedisBloom-compatible BF.*)\n",
                std::string(kBloomgateVersion).c_str(), std::string(kRedisVersion).c_str());
    return 0;
  }
  ServerConfig config;
  if (!ResolveConfig(command_line, overrides, &config, &error)) {
    std::fprintf(stderr, "bloomgate: %s\n", error.c_str());
    return 1;
  }
  // The data directory as an absolute path, as Redis reports it in CONFIG
  // GET dir: logs and INFO then name files unambiguously.
  std::error_code dir_error;
  std::filesystem::path data_dir = std::filesystem::absolute(config.dir, dir_error);
  if (!dir_error) config.dir = data_dir.lexically_normal().string();
  // The directory first, once, in plain words: everything below would only
  // fail on it later with a less telling message.
  std::string dir_problem = CheckDataDir(config.dir);
  if (!dir_problem.empty()) {
    std::fprintf(stderr, "bloomgate: %s\n", dir_problem.c_str());
    return 1;
  }
  // Then the lock, before anything is opened there (data_dir.h).
  DataDirLock dir_lock;
  if (!dir_lock.Acquire(config.dir, &error)) {
    std::fprintf(stderr, "bloomgate: %s\n", error.c_str());
    return 1;
  }
  SetUpStartupLogging(config);
  size_t threads = config.threads != 0 ? config.threads
                                       : std::max(1u, std::thread::hardware_concurrency());
  // maxclients must fit the fd limit, or accepts fail with EMFILE; said once
  // the log file is open (below).
  std::string fd_warning;
  std::string fd_notice;
  if (!AdjustOpenFilesLimit(&config, ReservedFileDescriptors(config, threads), &fd_warning,
                            &fd_notice)) {
    spdlog::critical("{}", fd_warning);
    return 1;
  }

  ServerContext context(config, threads);
  // A windowed filter's aged-out generations are freed on the lazy freer's
  // thread, not on the event loop whose add turned them over.
  DeferredFreerScope deferred_freer(&context.lazy_freer);
  // Builds windowed filters' next generations ahead (filters/generation_preparer.h).
  // Declared after the context: stopped and joined before the budget its jobs
  // charge is gone.
  GenerationPreparer generation_preparer;
  SetGenerationPreparer(&generation_preparer);
  context.config_file = command_line.config_path;
  context.executable = argv[0];
  context.worker_threads = threads;
  context.durability->set_load_rate_limit(TestLoadRateLimit());
  if (auto user_error = context.LoadConfiguredUsers(config.users)) {
    spdlog::error("config: {}", *user_error);
    std::fprintf(stderr, "bloomgate: config: %s\n", user_error->c_str());
    return 1;
  }
  // Redis Cluster: the node's id and view, before any port opens; a corrupt
  // cluster-config-file refuses the start, as Redis does, rather than
  // coming back as a new node.
  if (!StartCluster(config, *DefaultFileSystem(), &context.cluster, &error)) {
    spdlog::critical("{}", error);
    std::fprintf(stderr, "bloomgate: %s\n", error.c_str());
    return 1;
  }
  // The per-slot key index costs ~44 bytes a key: kept only in cluster mode,
  // where CLUSTER COUNTKEYSINSLOT / GETKEYSINSLOT and resharding read it.
  if (config.cluster_enabled) context.keyspace.EnableSlotIndex();
  // As Redis: port 0 turns the plain listener off, but one must remain.
  if (config.port == 0 && config.tls_port == 0) {
    spdlog::critical("port and tls-port are both 0: configured to listen nowhere");
    return 1;
  }
  // The port first, the data second: clients get -LOADING (and INFO the
  // progress) instead of "connection refused" during a long load, and a
  // server that cannot bind has written nothing. No command but the
  // loading-flagged ones sees the keyspace before it is complete. Both
  // transports (TCP and TLS) are bound before the load starts.
  Server server(context, threads);
  if (!server.SetUpIoBackend(config, &error)) {
    spdlog::critical("{}", error);
    return 1;
  }
  // Builds big filters off the event loops (server/keyspace/filter_maker.h).
  // Declared after the server: stopped and joined before the io_contexts
  // its callbacks post to are gone.
  FilterMaker filter_maker;
  SetFilterMaker(&filter_maker);
  // MIGRATE's transfers (server/keyspace/transfer_workers.h), stopped when
  // the server's stop begins: a transfer waiting on a dead target is
  // cancelled rather than waited out.
  TransferWorkers transfer_workers;
  SetTransferWorkers(&transfer_workers);
  server.AddStopHandler([&transfer_workers] { transfer_workers.Stop(); });
  if (config.tls_port != 0 && !server.EnableTls(config, &error)) {
    spdlog::critical("cannot set up TLS: {}", error);
    return 1;
  }
  if ((config.port != 0 &&
       !server.Listen(config.bind, config.port, Server::Transport::kTcp, &error)) ||
      (config.tls_port != 0 &&
       !server.Listen(config.bind, config.tls_port, Server::Transport::kTls, &error))) {
    spdlog::critical("{}", error);
    return 1;
  }
  // The Prometheus endpoint (server/metrics/): on the same addresses, on
  // worker 0's loop, closed with the other listeners.
  std::unique_ptr<MetricsListener> metrics;
  if (config.metrics_port != 0) {
    std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
    uint16_t metrics_port = 0;
    if (!server.Bind(config.bind, config.metrics_port, " (metrics)", &acceptors, &metrics_port,
                     &error)) {
      spdlog::critical("{}", error);
      return 1;
    }
    metrics = std::make_unique<MetricsListener>(context, server.worker_context(0),
                                                std::move(acceptors));
    metrics->Start();
    server.AddStopHandler([listener = metrics.get()] { listener->Stop(); });
  }
  // The cluster bus (server/cluster_bus/): on cluster-port, its own thread.
  // Declared after the context, whose cluster view it changes: stopped first.
  std::atomic<bool> replication_started{false};  // read by the bus's cron: outlives it
  std::unique_ptr<ClusterBus> cluster_bus;
  if (config.cluster_enabled) {
    ClusterBusOptions bus_options;
    bus_options.bind = config.bind;
    bus_options.cport = ClusterBusPort(config);
    bus_options.node_timeout_ms = static_cast<int64_t>(config.cluster_node_timeout);
    bus_options.announce_ip = config.cluster_announce_ip;
    bus_options.repl_offset = [&context] { return context.replication->master_repl_offset(); };
    // A replica's link starts once replication has its applier and has
    // started (below); until then the bus's cron asks again.
    bus_options.follow_master = [&context, &replication_started](const std::string& host,
                                                                 uint16_t port) {
      if (!replication_started.load(std::memory_order_acquire)) return false;
      context.replication->Follow(host, port);
      return true;
    };
    // A won election: REPLICAOF NO ONE's path, so the old master's other
    // replicas continue from this node with PSYNC.
    bus_options.promote = [&context] { context.replication->Unfollow(); };
    bus_options.election_settings = [&context] {
      const ServerConfig current = context.config.Get();
      ElectionSettings settings;
      settings.validity_factor = current.cluster_replica_validity_factor;
      settings.no_failover = current.cluster_replica_no_failover;
      settings.repl_ping_period_ms = int64_t{current.repl_ping_replica_period} * 1000;
      settings.data_age_ms = context.replication->DataAgeMs(NowMs());
      return settings;
    };
    // The failover's own pause (Redis's PAUSE_DURING_FAILOVER): its end
    // leaves a client's CLIENT PAUSE in place, and CLIENT UNPAUSE leaves it.
    bus_options.pause_writes = [&context](int64_t end_ms) {
      context.PauseClients(PausePurpose::kFailover, PauseMode::kWrite, end_ms, NowMs());
    };
    bus_options.unpause_writes = [&context] {
      context.UnpauseClients(PausePurpose::kFailover);
    };
    cluster_bus = std::make_unique<ClusterBus>(&context.cluster, std::move(bus_options));
    if (!cluster_bus->Start(&error)) {
      spdlog::critical("{}", error);
      return 1;
    }
    SetClusterBus(cluster_bus.get());
  }
  context.port = server.bound_port(Server::Transport::kTcp);
  context.tls_port = server.bound_port(Server::Transport::kTls);
  if (!SetUpFileLogging(config, &error)) {
    spdlog::critical("{}", error);
    return 1;
  }
  spdlog::info("bloomgate {} started: port {}, tls-port {}, {} worker threads, config {}, "
               "maxmemory {} bytes",
               kBloomgateVersion, context.port, context.tls_port.load(), threads,
               command_line.config_path.empty() ? "(defaults)" : command_line.config_path,
               context.budget.limit());
  LogStartupSettings(config, context, dir_lock);
  if (!fd_notice.empty()) spdlog::info("{}", fd_notice);
  if (!fd_warning.empty()) spdlog::warn("{}", fd_warning);
  if (config.maxmemory == 0) {
    MemoryLimit limit;
    uint64_t derived = DefaultMaxMemory(&limit);
    spdlog::info("maxmemory not set: using 3/4 of {} ({} bytes) = {} bytes", limit.source,
                 limit.bytes, derived);
  }
  // A replica applies its primary's stream through the one replay path,
  // as a journaled origin (its log and its own replicas get the records).
  // Set before the port serves: a REPLICAOF sent the moment loading ends
  // starts a link thread that calls it at once.
  JournalApplier stream_applier(context, JournalOrigin::kReplication);
  context.replication->set_applier(
      [&stream_applier](std::string_view framed) { return stream_applier.ApplyFramed(framed); });
  // The link to a primary is a client of this server: closed when the stop
  // begins, or the stop would wait its whole grace period for it.
  server.AddStopHandler([&context] { context.replication->RequestStop(); });
  context.durability->BeginLoading();
  server.Start();
  Status loaded = LoadDurableState(context);
  if (!loaded.ok()) {
    if (context.durability->load_cancelled()) {
      spdlog::info("stopped while loading ({}); nothing was saved and the files are as they were",
                   loaded.message());
      server.Wait();
      context.snapshot_copier.Stop();
      return 0;
    }
    spdlog::critical("cannot load the data in '{}': {}", config.dir, loaded.message());
    spdlog::critical("the files were left untouched; fix or move them and start again "
                     "(`bloomgate check-snapshot FILE` verifies a snapshot)");
    server.Stop();
    server.Wait();
    context.snapshot_copier.Stop();
    return 1;
  }
  spdlog::info("ready to accept commands");
  context.replication->Start();
  replication_started.store(true, std::memory_order_release);
  server.Wait();
  if (cluster_bus) cluster_bus->Stop();
  // Before the final save: a full sync holds the saves' lock while it streams.
  context.replication->Stop();
  // Parked writers' callbacks post to the event loops: done while they exist.
  context.snapshot_copier.Stop();
  context.durability->Shutdown(context.final_save.load());
  spdlog::info("bye");
  return 0;
}
