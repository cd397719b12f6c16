// ServerConfig: every setting of the server in one plain struct, with the
// defaults written on the fields. The textual form of each setting (its YAML
// key, CONFIG GET/SET name and --flag, its validation and formatting) lives in
// config_params.h; this header only adds the YAML file loader, because this is
// the one place in the project that sees YAML.

#ifndef BLOOMGATE_CONFIG_SERVER_CONFIG_H_
#define BLOOMGATE_CONFIG_SERVER_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

namespace bloomgate {

struct ServerConfig {
  // Addresses to listen on: IPv4 or IPv6 literals. In YAML either one string
  // of space- (or comma-) separated addresses, as in redis.conf, or a list.
  std::vector<std::string> bind = {"127.0.0.1"};
  // Plain TCP port; 0 = no plain listener (TLS only, as in Redis: tls-port
  // must then be set).
  uint16_t port = 6379;
  // I/O threads, one io_context each; 0 = one per core.
  uint32_t threads = 0;
  // How the event loops do socket I/O: epoll (Boost.Asio's reactor) or
  // io_uring for plain-TCP clients; auto = io_uring when the kernel and
  // seccomp allow it, else epoll. Start-up only.
  enum class IoBackend { kAuto, kEpoll, kIoUring };
  IoBackend io_backend = IoBackend::kAuto;
  // spdlog level name: trace|debug|info|warn|error|critical|off, or Redis's
  // debug|verbose|notice|warning|nothing (LogLevelForSpdlog maps them).
  std::string loglevel = "info";
  // Empty = stderr.
  std::string logfile;
  // Empty = no AUTH needed.
  std::string requirepass;
  // acl-pubsub-default: whether a new ACL user may use every pub/sub
  // channel (allchannels) or none until given &patterns (resetchannels,
  // Redis 7's default).
  bool acl_pubsub_default_all_channels = false;
  // ACL LOG keeps at most this many entries (Redis's acllog-max-len).
  uint32_t acllog_max_len = 128;
  // Who may run DEBUG: "no" (nobody, Redis 7's default), "local" (clients on
  // 127.0.0.1 or ::1) or "yes".
  std::string enable_debug_command = "no";
  // Redis's protected mode: while on and requirepass is empty, only clients
  // connecting from 127.0.0.1 or ::1 are served; others get -DENIED and are
  // closed.
  bool protected_mode = true;
  // Connected clients beyond this are refused; range [1, 1000000].
  uint32_t maxclients = 10000;
  // Total bytes of all filters; 0 = 3/4 of physical RAM, which the server
  // works out at start-up (the config never looks at the machine).
  uint64_t maxmemory = 0;
  // Bytes one filter may grow to, all layers included ("max-filter-memory").
  uint64_t max_filter_memory = 4ull << 30;
  // Largest bulk string a client may send ("proto-max-bulk-len"); Redis's
  // default and lower bound, capped at 4 GB (see config_params.cc).
  uint64_t proto_max_bulk_len = 512ull << 20;
  // Pending reply bytes after which the server stops reading from a client
  // until its replies drain ("client-output-buffer-limit").
  uint64_t client_output_buffer_limit = 64ull << 20;
  // Keyspace notifications ("notify-keyspace-events"): the classes of
  // config/keyspace_events.h; 0 (Redis's "") publishes none.
  uint32_t notify_keyspace_events = 0;
  // Idle client timeout in seconds; 0 = never.
  uint32_t timeout = 0;
  // SLOWLOG: commands taking at least this many microseconds are logged
  // (-1 = none, 0 = every command), the newest slowlog_max_len kept.
  // Redis's defaults: 10 ms and 128 entries.
  int64_t slowlog_log_slower_than = 10000;
  uint64_t slowlog_max_len = 128;
  // LATENCY: events taking at least this many milliseconds are sampled;
  // 0 = the monitor is off (Redis's default).
  uint64_t latency_monitor_threshold = 0;
  // INFO latencystats: whether each command's call durations are kept in a
  // histogram, and which percentiles INFO shows; Redis 7's defaults.
  bool latency_tracking = true;
  std::vector<double> latency_tracking_info_percentiles = {50.0, 99.0, 99.9};
  // Defaults for BF.ADD/BF.INSERT on a missing key, named and bounded as in
  // Redis 8. "bf-error-rate" is in (0, 1) and a value above 0.25 is stored as
  // 0.25, as Redis 8 does.
  double bf_error_rate = 0.01;
  uint64_t bf_initial_size = 100;
  // 0 = non-scaling filters.
  uint32_t bf_expansion_factor = 2;
  // Counter width of counting Bloom filters created implicitly (CBF.ADD on
  // a missing key): 4 or 8 bits. The other CBF defaults are the bf-* ones.
  uint32_t cbf_counter_bits = 4;
  // Defaults for cuckoo filters created implicitly (CF.ADD on a missing key),
  // named, bounded and defaulted as in Redis 8 (COMPAT.md §1.2).
  uint32_t cf_bucket_size = 2;
  uint64_t cf_initial_size = 1024;
  uint32_t cf_max_iterations = 20;
  uint32_t cf_expansion_factor = 1;  // 0 = non-scaling
  uint32_t cf_max_expansions = 32;

  // --- Persistence, named and defaulted as in Redis -------------------------
  // Directory of the snapshot and the append-only log; relative paths are
  // taken from the server's working directory (Redis's `dir ./`).
  std::string dir = "./";
  // Snapshot file name inside `dir`.
  std::string dbfilename = "dump.bgs";
  // Snapshot schedule: save after `seconds` if at least `changes` writes
  // happened, for any of the pairs; empty = no automatic snapshots. Redis 7's
  // default "3600 1 300 100 60 10000".
  struct SavePoint {
    uint64_t seconds = 0;
    uint64_t changes = 0;
    bool operator==(const SavePoint&) const = default;
  };
  std::vector<SavePoint> save = {{3600, 1}, {300, 100}, {60, 10000}};
  // Log every acknowledged write before replying ("appendonly yes").
  bool appendonly = true;
  // When the log is fsynced: "always" before every reply, "everysec" once a
  // second (a crash of the machine loses at most ~1 s of writes; a crash of
  // the process loses none), "no" when the OS decides.
  enum class AppendFsync { kAlways, kEverySec, kNo };
  AppendFsync appendfsync = AppendFsync::kEverySec;
  // Base name of the log files in `dir`: <appendfilename>.<generation>.
  std::string appendfilename = "appendonly.bglog";

  // --- TLS, named and defaulted as in Redis ---------------------------------
  // Port of the TLS listener on the `bind` addresses; 0 = no TLS.
  uint16_t tls_port = 0;
  // PEM files: the server's certificate chain and its private key (with the
  // key's passphrase, if it has one), and the CAs that client certificates
  // must chain to (a file, a c_rehash'ed directory, or both).
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_key_file_pass;
  std::string tls_ca_cert_file;
  std::string tls_ca_cert_dir;
  // Whether clients must present a certificate signed by a configured CA:
  // yes (required), optional (checked if presented), no (not asked for).
  enum class TlsAuthClients { kNo, kYes, kOptional };
  TlsAuthClients tls_auth_clients = TlsAuthClients::kYes;
  // Space-separated subset of "TLSv1 TLSv1.1 TLSv1.2 TLSv1.3"; empty = Redis's
  // default, TLSv1.2 and TLSv1.3.
  std::string tls_protocols;
  // OpenSSL cipher list for TLSv1.2 and below, and ciphersuites for TLSv1.3;
  // empty = OpenSSL's defaults.
  std::string tls_ciphers;
  std::string tls_ciphersuites;
  // Choose the cipher by the server's order of preference, not the client's.
  bool tls_prefer_server_ciphers = false;
  // A connection that has not finished its TLS handshake after this many
  // milliseconds is closed (Bloomgate's own setting; Redis has none).
  uint32_t tls_handshake_timeout_ms = 10'000;

  // --- Prometheus metrics (server/metrics/) ----------------------------------
  // Port of the HTTP listener serving GET /metrics on the `bind` addresses,
  // under the same protected mode and passwords as the RESP port (HTTP Basic
  // auth with an ACL user's name and password); 0 = off. Start-up only.
  uint16_t metrics_port = 0;
  // How many filters, the largest by memory, get per-filter series: each
  // filter is ~10 series, so 100 filters keep a scrape near 1,000 lines.
  uint32_t metrics_top_filters = 100;

  // Replication (Redis's names, defaults and units). `replicaof` is
  // "<host> <port>" or "" (a primary); set at start-up only, REPLICAOF
  // changes the role at run time.
  std::string replicaof;
  std::string masterauth;
  std::string masteruser;
  bool replica_read_only = true;
  // Redis's default backlog: 1 MB; its floor 16 KB.
  uint64_t repl_backlog_size = 1ull << 20;
  // Seconds a link may stay silent before it is dropped.
  uint32_t repl_timeout = 60;
  // Seconds between the PINGs a primary sends its replicas, so a replica
  // hears from it within repl_timeout even without writes.
  uint32_t repl_ping_replica_period = 10;
  uint32_t replica_priority = 100;
  std::string replica_announce_ip;
  uint16_t replica_announce_port = 0;
  bool replica_announced = true;
  // Writes are refused with -NOREPLICAS unless this many replicas acked
  // within min_replicas_max_lag seconds; 0 = off.
  uint32_t min_replicas_to_write = 0;
  uint32_t min_replicas_max_lag = 10;

  // Redis Cluster (server/cluster/), Redis's names and defaults. Start-up
  // only, but for the node timeout and the coverage rule.
  bool cluster_enabled = false;
  // This node's id and view of the cluster, inside `dir` (Redis's nodes.conf).
  std::string cluster_config_file = "nodes.conf";
  // Cluster bus port; 0 = port + 10000, as Redis.
  uint16_t cluster_port = 0;
  // Milliseconds a node may not answer before it is suspected failing.
  uint64_t cluster_node_timeout = 15000;
  // The address this node tells the cluster; "" = the one its peers see.
  std::string cluster_announce_ip;
  // Whether keys are refused (-CLUSTERDOWN) while some slot has no owner.
  bool cluster_require_full_coverage = true;
  // A replica whose link to its failed master has been down longer than
  // repl_ping_replica_period s + cluster_node_timeout x this (beyond the
  // node timeout itself) does not fail over; 0 = whatever its data's age.
  uint32_t cluster_replica_validity_factor = 10;
  // This replica never fails its master over by itself (CLUSTER FAILOVER
  // still may); the cluster sees it flagged nofailover.
  bool cluster_replica_no_failover = false;
  // Whether keys of read-only commands are still served while the cluster
  // state is fail (writes get -CLUSTERDOWN ... only accepts read commands).
  bool cluster_allow_reads_when_down = false;
  // The replicas a master keeps before one of them may migrate to a master
  // left without a working replica.
  uint32_t cluster_migration_barrier = 1;
  // Whether replicas migrate to orphaned masters, and a master that lost its
  // last slot becomes a replica of the node that took it.
  bool cluster_allow_replica_migration = true;

  // ACL users, one "<name> <rule> <rule> ..." per entry in Redis's `user`
  // line syntax without the word `user` ("edge on #<sha256> ~edge:*
  // +bf.add"). Only the YAML file sets them (key `users`, a list); the server
  // checks the rules at start-up (ServerContext::LoadConfiguredUsers). Not a
  // CONFIG GET/SET parameter, as in Redis, so no password is ever shown.
  std::vector<std::string> users;

  // For tests and for "did anything change" checks after CONFIG SET.
  bool operator==(const ServerConfig&) const = default;
};

// Reads a YAML map of `key: value` (keys as in AllConfigParams(), any case)
// into *config. Every key must be known, appear once and hold a scalar (only
// `bind` may also hold a list). On any problem returns false, sets *error to
// a message starting "config file <path>: " (with line and column for YAML
// syntax errors, with the key for bad values) and leaves *config unchanged:
// nothing is applied unless the whole file is valid. An empty file is valid
// and changes nothing. One key is not a parameter: `users`, a list of ACL
// user lines (ServerConfig::users).
bool LoadConfigFile(const std::string& path, ServerConfig* config,
                    std::string* error);

}  // namespace bloomgate

#endif  // BLOOMGATE_CONFIG_SERVER_CONFIG_H_
