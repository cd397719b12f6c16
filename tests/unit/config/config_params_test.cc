#include "config/bind_address.h"
#include "config/config_params.h"

#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>
#include <vector>

#include "config/server_config.h"

namespace bloomgate {
namespace {

// Sets `name` to `value` on a default config and expects success.
ServerConfig SetOnDefaults(std::string_view name, std::string_view value) {
  ServerConfig config;
  std::string error;
  EXPECT_TRUE(SetConfigValue(&config, name, value, &error))
      << name << " = '" << value << "': " << error;
  return config;
}

// Expects `value` to be refused for `name` with exactly `message`, and the
// config to come out unchanged.
void ExpectRejected(std::string_view name, std::string_view value,
                    const std::string& message) {
  ServerConfig config;
  const ServerConfig before = config;
  std::string error;
  EXPECT_FALSE(SetConfigValue(&config, name, value, &error))
      << name << " accepted '" << value << "'";
  EXPECT_EQ(error, message) << name << " = '" << value << "'";
  EXPECT_TRUE(config == before) << name << " changed on a refused value";
}

TEST(ServerConfig, DefaultsAreTheDocumentedValues) {
  const ServerConfig config;
  EXPECT_EQ(config.bind, std::vector<std::string>{"127.0.0.1"});
  EXPECT_EQ(config.port, 6379);
  EXPECT_EQ(config.threads, 0u);
  EXPECT_EQ(config.loglevel, "info");
  EXPECT_EQ(config.logfile, "");
  EXPECT_EQ(config.requirepass, "");
  EXPECT_EQ(config.maxclients, 10000u);
  EXPECT_EQ(config.maxmemory, 0u);
  EXPECT_EQ(config.max_filter_memory, 4ull << 30);
  EXPECT_EQ(config.proto_max_bulk_len, 512ull << 20);
  EXPECT_EQ(config.client_output_buffer_limit, 64ull << 20);
  EXPECT_EQ(config.timeout, 0u);
  EXPECT_EQ(config.bf_error_rate, 0.01);
  EXPECT_EQ(config.bf_initial_size, 100u);
  EXPECT_EQ(config.bf_expansion_factor, 2u);
  EXPECT_EQ(config.cbf_counter_bits, 4u);
  EXPECT_EQ(config.cf_bucket_size, 2u);
  EXPECT_EQ(config.cf_initial_size, 1024u);
  EXPECT_EQ(config.cf_max_iterations, 20u);
  EXPECT_EQ(config.cf_expansion_factor, 1u);
  EXPECT_EQ(config.cf_max_expansions, 32u);
}

TEST(ConfigParams, TableHasOneRowPerSettingWithRedisStyleNames) {
  std::vector<std::string_view> names;
  for (const ConfigParam& param : AllConfigParams()) {
    names.push_back(param.name);
  }
  EXPECT_EQ(names, (std::vector<std::string_view>{
                       "bind", "port", "databases", "threads", "io-backend", "loglevel", "logfile",
                       "requirepass", "acl-pubsub-default", "acllog-max-len", "enable-debug-command",
                       "protected-mode", "maxclients", "maxmemory",
                       "maxmemory-policy", "max-filter-memory", "proto-max-bulk-len",
                       "client-output-buffer-limit", "notify-keyspace-events", "timeout",
                       "slowlog-log-slower-than", "slowlog-max-len",
                       "latency-monitor-threshold", "latency-tracking",
                       "latency-tracking-info-percentiles", "bf-error-rate", "bf-initial-size",
                       "bf-expansion-factor", "cbf-counter-bits",
                       "cf-bucket-size", "cf-initial-size", "cf-max-iterations",
                       "cf-expansion-factor", "cf-max-expansions", "dir", "dbfilename",
                       "save", "appendonly", "appendfsync", "appendfilename",
                       "tls-port", "tls-cert-file", "tls-key-file", "tls-key-file-pass",
                       "tls-ca-cert-file", "tls-ca-cert-dir", "tls-auth-clients",
                       "tls-protocols", "tls-ciphers", "tls-ciphersuites",
                       "tls-prefer-server-ciphers", "tls-handshake-timeout",
                       "metrics-port", "metrics-top-filters", "replicaof", "masterauth",
                       "masteruser", "replica-read-only", "repl-backlog-size", "repl-timeout",
                       "repl-ping-replica-period",
                       "replica-priority", "replica-announce-ip", "replica-announce-port",
                       "replica-announced", "min-replicas-to-write", "min-replicas-max-lag",
                       "cluster-enabled", "cluster-config-file", "cluster-port", "cluster-node-timeout", "cluster-announce-ip",
                       "cluster-require-full-coverage", "cluster-replica-validity-factor",
                       "cluster-replica-no-failover", "cluster-allow-reads-when-down",
                       "cluster-migration-barrier", "cluster-allow-replica-migration"}));
}

TEST(ConfigParams, EveryRowHasADescriptionHintSetterAndGetter) {
  for (const ConfigParam& param : AllConfigParams()) {
    EXPECT_FALSE(param.description.empty()) << param.name;
    EXPECT_EQ(param.description.find('\n'), std::string_view::npos)
        << param.name << " description must be one line";
    EXPECT_FALSE(param.value_hint.empty()) << param.name;
    EXPECT_NE(param.set, nullptr) << param.name;
    EXPECT_NE(param.get, nullptr) << param.name;
  }
}

// The data directory and log base name are read once, at start-up: moving
// them under a running log would split its generations across two places.
TEST(ConfigParams, OnlyListenersThreadsLogfileAndDataFilesAreStartUpOnly) {
  std::set<std::string_view> start_up_only;
  for (const ConfigParam& param : AllConfigParams()) {
    if (!param.runtime_settable) start_up_only.insert(param.name);
  }
  // databases too: it has one value, and Redis's is start-up only; and
  // replicaof, which REPLICAOF changes at run time, as in Redis; and
  // enable-debug-command, immutable in Redis 7 too; and the cluster node's
  // identity and bus, read once when the node joins.
  EXPECT_EQ(start_up_only,
            (std::set<std::string_view>{"appendfilename", "bind", "cluster-announce-ip",
                                        "cluster-config-file", "cluster-enabled", "cluster-port",
                                        "databases", "dir", "enable-debug-command", "logfile",
                                        "metrics-port", "port", "replicaof", "threads",
                                        "io-backend"}));
}

TEST(ConfigParams, FindIgnoresCaseAndReturnsTheTableRow) {
  const ConfigParam* param = FindConfigParam("MaxMemory");
  ASSERT_NE(param, nullptr);
  EXPECT_EQ(param->name, "maxmemory");
  EXPECT_EQ(FindConfigParam("BF-ERROR-RATE"), FindConfigParam("bf-error-rate"));
  for (const ConfigParam& row : AllConfigParams()) {
    EXPECT_EQ(FindConfigParam(row.name), &row);
  }
}

TEST(ConfigParams, FindReturnsNullForUnknownAndUnderscoredNames) {
  EXPECT_EQ(FindConfigParam("frobnicate"), nullptr);
  EXPECT_EQ(FindConfigParam(""), nullptr);
  // The struct field name is not an alias: one spelling per setting.
  EXPECT_EQ(FindConfigParam("max_filter_memory"), nullptr);
}

TEST(ConfigParams, EveryDefaultRoundTripsThroughGetAndSet) {
  for (const ConfigParam& param : AllConfigParams()) {
    const ServerConfig defaults;
    ServerConfig config;
    std::string error;
    const std::string text = GetConfigValue(defaults, param.name);
    EXPECT_TRUE(SetConfigValue(&config, param.name, text, &error))
        << param.name << " refused its own default '" << text << "': " << error;
    EXPECT_TRUE(config == defaults) << param.name << " did not round-trip";
  }
}

TEST(ConfigParams, GetUsesRedisTextForms) {
  ServerConfig config;
  config.bind = {"127.0.0.1", "::1"};
  config.max_filter_memory = 1ull << 30;
  config.bf_error_rate = 0.001;
  EXPECT_EQ(GetConfigValue(config, "bind"), "127.0.0.1 ::1");
  EXPECT_EQ(GetConfigValue(config, "max-filter-memory"), "1073741824");
  EXPECT_EQ(GetConfigValue(config, "proto-max-bulk-len"), "536870912");
  EXPECT_EQ(GetConfigValue(config, "bf-error-rate"), "0.001");
  EXPECT_EQ(GetConfigValue(ServerConfig{}, "bf-error-rate"), "0.01");
  EXPECT_EQ(GetConfigValue(config, "port"), "6379");
  EXPECT_EQ(GetConfigValue(config, "PORT"), "6379");
  EXPECT_EQ(GetConfigValue(config, "no-such-thing"), "");
}

TEST(SetConfigValue, EachKeySetsItsField) {
  struct Case {
    std::string_view name;
    std::string_view value;
    std::string_view expected_get;
  };
  const std::vector<Case> cases = {
      {"bind", "0.0.0.0 ::", "0.0.0.0 ::"},
      {"port", "6380", "6380"},
      {"threads", "8", "8"},
      {"io-backend", "IO_URING", "io_uring"},
      {"loglevel", "debug", "debug"},
      {"logfile", "/var/log/bloomgate.log", "/var/log/bloomgate.log"},
      {"requirepass", "s3cret pass", "s3cret pass"},
      {"acl-pubsub-default", "AllChannels", "allchannels"},
      {"enable-debug-command", "LOCAL", "local"},
      {"protected-mode", "no", "no"},
      {"maxclients", "50", "50"},
      {"maxmemory", "2gb", "2147483648"},
      {"max-filter-memory", "100mb", "104857600"},
      {"proto-max-bulk-len", "2mb", "2097152"},
      {"client-output-buffer-limit", "1mb", "1048576"},
      {"notify-keyspace-events", "Egx", "gxE"},
      {"timeout", "300", "300"},
      {"slowlog-log-slower-than", "-1", "-1"},
      {"slowlog-max-len", "1000", "1000"},
      {"latency-monitor-threshold", "5", "5"},
      {"latency-tracking", "no", "no"},
      {"latency-tracking-info-percentiles", "50  99.99 0", "50 99.99 0"},
      {"bf-error-rate", "0.001", "0.001"},
      {"bf-initial-size", "1000", "1000"},
      {"bf-expansion-factor", "4", "4"},
      {"cbf-counter-bits", "8", "8"},
      {"cf-bucket-size", "4", "4"},
      {"cf-initial-size", "2048", "2048"},
      {"cf-max-iterations", "50", "50"},
      {"cf-expansion-factor", "2", "2"},
      {"cf-max-expansions", "8", "8"},
      {"dir", "/var/lib/bloomgate", "/var/lib/bloomgate"},
      {"dbfilename", "filters.bgs", "filters.bgs"},
      {"save", "900  1 60 5000", "900 1 60 5000"},
      {"appendonly", "NO", "no"},
      {"appendfsync", "always", "always"},
      {"appendfilename", "log.bglog", "log.bglog"},
      {"tls-port", "6380", "6380"},
      {"tls-cert-file", "/etc/tls/server.crt", "/etc/tls/server.crt"},
      {"tls-key-file", "/etc/tls/server.key", "/etc/tls/server.key"},
      {"tls-key-file-pass", "pass phrase", "pass phrase"},
      {"tls-ca-cert-file", "/etc/tls/ca.crt", "/etc/tls/ca.crt"},
      {"tls-ca-cert-dir", "/etc/tls/cas", "/etc/tls/cas"},
      {"tls-auth-clients", "OPTIONAL", "optional"},
      {"tls-protocols", "TLSv1.3", "TLSv1.3"},
      {"tls-ciphers", "HIGH:!aNULL", "HIGH:!aNULL"},
      {"tls-ciphersuites", "TLS_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384"},
      {"tls-prefer-server-ciphers", "yes", "yes"},
      {"tls-handshake-timeout", "500", "500"},
      {"metrics-port", "9121", "9121"},
      {"metrics-top-filters", "20", "20"},
      {"replicaof", "10.0.0.1 6379", "10.0.0.1 6379"},
      {"masterauth", "secret", "secret"},
      {"masteruser", "replicator", "replicator"},
      {"replica-read-only", "no", "no"},
      {"repl-backlog-size", "64mb", "67108864"},
      {"repl-timeout", "5", "5"},
      {"repl-ping-replica-period", "2", "2"},
      {"acllog-max-len", "16", "16"},
      {"replica-priority", "0", "0"},
      {"replica-announce-ip", "10.0.0.9", "10.0.0.9"},
      {"replica-announce-port", "7000", "7000"},
      {"replica-announced", "no", "no"},
      {"min-replicas-to-write", "1", "1"},
      {"min-replicas-max-lag", "3", "3"},
      {"cluster-enabled", "YES", "yes"},
      {"cluster-config-file", "nodes-7000.conf", "nodes-7000.conf"},
      {"cluster-port", "17000", "17000"},
      {"cluster-node-timeout", "5000", "5000"},
      {"cluster-announce-ip", "10.0.0.7", "10.0.0.7"},
      {"cluster-require-full-coverage", "no", "no"},
      {"cluster-replica-validity-factor", "0", "0"},
      {"cluster-replica-no-failover", "yes", "yes"},
      {"cluster-allow-reads-when-down", "yes", "yes"},
      {"cluster-migration-barrier", "3", "3"},
      {"cluster-allow-replica-migration", "no", "no"},
  };
  // Rows with one accepted value, the default: what a Redis client asks for,
  // answered (RowsWithOneValueRefuseEveryOther).
  const std::set<std::string_view> fixed = {"databases", "maxmemory-policy"};
  ASSERT_EQ(cases.size() + fixed.size(), AllConfigParams().size()) << "a row has no case";
  for (const Case& c : cases) {
    const ServerConfig config = SetOnDefaults(c.name, c.value);
    EXPECT_EQ(GetConfigValue(config, c.name), c.expected_get) << c.name;
    EXPECT_FALSE(config == ServerConfig{}) << c.name << " changed nothing";
  }
  EXPECT_EQ(SetOnDefaults("port", "6380").port, 6380);
  EXPECT_EQ(SetOnDefaults("maxmemory", "2gb").maxmemory, 2ull << 30);
  EXPECT_EQ(SetOnDefaults("bf-error-rate", "0.001").bf_error_rate, 0.001);
  EXPECT_EQ(SetOnDefaults("bind", "0.0.0.0 ::").bind,
            (std::vector<std::string>{"0.0.0.0", "::"}));
}

TEST(SetConfigValue, RowsWithOneValueRefuseEveryOther) {
  EXPECT_EQ(GetConfigValue(ServerConfig{}, "databases"), "1");
  EXPECT_EQ(GetConfigValue(ServerConfig{}, "maxmemory-policy"), "noeviction");
  EXPECT_TRUE(SetOnDefaults("databases", "1") == ServerConfig{});
  EXPECT_TRUE(SetOnDefaults("maxmemory-policy", "NoEviction") == ServerConfig{});
  ExpectRejected("databases", "16", "argument must be 1: Bloomgate serves database 0 only");
  ExpectRejected("maxmemory-policy", "allkeys-lru",
                 "argument must be 'noeviction': filters are never evicted, a write past "
                 "maxmemory is refused with -OOM");
}

TEST(SetConfigValue, PercentilesAreNumbersFromZeroToAHundred) {
  EXPECT_EQ(SetOnDefaults("latency-tracking-info-percentiles", "").latency_tracking_info_percentiles,
            std::vector<double>{});
  EXPECT_EQ(SetOnDefaults("latency-tracking-info-percentiles", "99.9 100 0")
                .latency_tracking_info_percentiles,
            (std::vector<double>{99.9, 100, 0}));
  for (std::string_view bad : {"101", "-1", "50,99", "p50", "nan", "1e2"}) {
    ExpectRejected("latency-tracking-info-percentiles", bad,
                   "argument must be percentiles between 0 and 100 separated by spaces");
  }
}

TEST(SetConfigValue, NameIsCaseInsensitive) {
  EXPECT_EQ(SetOnDefaults("MaxClients", "7").maxclients, 7u);
}

TEST(SetConfigValue, UnknownNameIsRefused) {
  ExpectRejected("frobnicate", "1", "unknown config parameter 'frobnicate'");
}

// Issue 10, bug 3: CONFIG SET dbfilename "dump.bgs\0x" was accepted.
TEST(SetConfigValue, PathSettingsRefuseControlBytes) {
  using namespace std::string_literals;
  for (const char* name : {"dbfilename", "appendfilename", "dir", "logfile", "tls-cert-file",
                           "tls-key-file", "tls-ca-cert-file", "tls-ca-cert-dir"}) {
    for (const std::string& value : {"dump.bgs\0x"s, "a\rb"s, "a\nb"s, "tab\there"s, "del\x7f"s}) {
      ExpectRejected(name, value, "path can't contain control characters");
    }
  }
}

// Port 0 means "no plain listener", as in Redis (a TLS-only server).
TEST(SetConfigValue, PortTakesZeroAndRefusesTooLargeAndText) {
  EXPECT_EQ(SetOnDefaults("port", "0").port, 0);
  ExpectRejected("port", "70000",
                 "argument must be between 0 and 65535 inclusive");
  ExpectRejected("port", "-1", "argument must be between 0 and 65535 inclusive");
  ExpectRejected("port", "99999999999999999999999",
                 "argument must be between 0 and 65535 inclusive");
  ExpectRejected("port", "abc",
                 "argument must be an integer between 0 and 65535 inclusive");
  ExpectRejected("port", "",
                 "argument must be an integer between 0 and 65535 inclusive");
  ExpectRejected("port", "63 79",
                 "argument must be an integer between 0 and 65535 inclusive");
  ExpectRejected("port", "+6379",
                 "argument must be an integer between 0 and 65535 inclusive");
  ExpectRejected("port", "6379.0",
                 "argument must be an integer between 0 and 65535 inclusive");
}

TEST(SetConfigValue, IntegerRangesHoldAtBothEnds) {
  struct Case {
    std::string_view name;
    uint64_t min;
    uint64_t max;
  };
  for (const Case& c : std::vector<Case>{{"port", 0, 65535},
                                         {"tls-port", 0, 65535},
                                         {"tls-handshake-timeout", 100, 600000},
                                         {"threads", 0, 1024},
                                         {"maxclients", 1, 1000000},
                                         {"timeout", 0, 2147483647},
                                         {"bf-initial-size", 1, 1073741824},
                                         {"bf-expansion-factor", 0, 32768}}) {
    const std::string range = "argument must be between " +
                              std::to_string(c.min) + " and " +
                              std::to_string(c.max) + " inclusive";
    EXPECT_EQ(GetConfigValue(SetOnDefaults(c.name, std::to_string(c.min)),
                             c.name),
              std::to_string(c.min));
    EXPECT_EQ(GetConfigValue(SetOnDefaults(c.name, std::to_string(c.max)),
                             c.name),
              std::to_string(c.max));
    ExpectRejected(c.name, std::to_string(c.max + 1), range);
    if (c.min > 0) ExpectRejected(c.name, std::to_string(c.min - 1), range);
  }
}

TEST(SetConfigValue, MemoryAcceptsRedisUnitsIgnoringCase) {
  EXPECT_EQ(SetOnDefaults("maxmemory", "12345").maxmemory, 12345u);
  EXPECT_EQ(SetOnDefaults("maxmemory", "100b").maxmemory, 100u);
  EXPECT_EQ(SetOnDefaults("maxmemory", "1k").maxmemory, 1000u);
  EXPECT_EQ(SetOnDefaults("maxmemory", "1kb").maxmemory, 1024u);
  EXPECT_EQ(SetOnDefaults("maxmemory", "3m").maxmemory, 3000000u);
  EXPECT_EQ(SetOnDefaults("maxmemory", "3mb").maxmemory, 3u << 20);
  EXPECT_EQ(SetOnDefaults("maxmemory", "5g").maxmemory, 5000000000u);
  EXPECT_EQ(SetOnDefaults("maxmemory", "5gb").maxmemory, 5ull << 30);
  EXPECT_EQ(SetOnDefaults("maxmemory", "5GB").maxmemory, 5ull << 30);
  EXPECT_EQ(SetOnDefaults("maxmemory", "5Gb").maxmemory, 5ull << 30);
  EXPECT_EQ(SetOnDefaults("maxmemory", "7K").maxmemory, 7000u);
  EXPECT_EQ(SetOnDefaults("maxmemory", "0").maxmemory, 0u);
}

TEST(SetConfigValue, MemoryRefusesNegativeFractionsAndUnknownUnits) {
  for (std::string_view bad :
       {"-1", "-1gb", "1.5gb", "", "gb", "1 gb", "1tb", "1kib", "abc", " 1",
        "18446744073709551616", "17179869184gb"}) {
    ExpectRejected("maxmemory", bad, "argument must be a memory value");
  }
}

TEST(SetConfigValue, BoundedMemoryNamesItsRange) {
  ExpectRejected("proto-max-bulk-len", "1000k",
                 "argument must be between 1048576 and 4294967296 inclusive");
  ExpectRejected("proto-max-bulk-len", "5gb",
                 "argument must be between 1048576 and 4294967296 inclusive");
  ExpectRejected("proto-max-bulk-len", "-5",
                 "argument must be a memory value between 1048576 and "
                 "4294967296 inclusive");
  EXPECT_EQ(SetOnDefaults("proto-max-bulk-len", "1mb").proto_max_bulk_len,
            1u << 20);
  EXPECT_EQ(SetOnDefaults("proto-max-bulk-len", "4gb").proto_max_bulk_len,
            4ull << 30);
  ExpectRejected("max-filter-memory", "1023",
                 "argument must be between 1024 and 1099511627776 inclusive");
  EXPECT_EQ(SetOnDefaults("max-filter-memory", "1kb").max_filter_memory, 1024u);
  ExpectRejected("client-output-buffer-limit", "0",
                 "argument must be between 1024 and 1099511627776 inclusive");
  ExpectRejected("notify-keyspace-events", "KEq",
                 "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.");
}

TEST(SetConfigValue, BfErrorRateRefusesZeroOneAndText) {
  ExpectRejected("bf-error-rate", "0",
                 "argument must be between 0 and 1 exclusive");
  ExpectRejected("bf-error-rate", "1",
                 "argument must be between 0 and 1 exclusive");
  ExpectRejected("bf-error-rate", "-0.5",
                 "argument must be between 0 and 1 exclusive");
  ExpectRejected("bf-error-rate", "nan",
                 "argument must be between 0 and 1 exclusive");
  ExpectRejected("bf-error-rate", "x",
                 "argument must be a number between 0 and 1 exclusive");
  ExpectRejected("bf-error-rate", "",
                 "argument must be a number between 0 and 1 exclusive");
  ExpectRejected("bf-error-rate", "0.01x",
                 "argument must be a number between 0 and 1 exclusive");
}

TEST(SetConfigValue, BfErrorRateAcceptsDecimalAndExponentForms) {
  EXPECT_EQ(SetOnDefaults("bf-error-rate", "1e-3").bf_error_rate, 0.001);
  EXPECT_EQ(SetOnDefaults("bf-error-rate", "0.25").bf_error_rate, 0.25);
  EXPECT_EQ(
      GetConfigValue(SetOnDefaults("bf-error-rate", "0.0001"), "bf-error-rate"),
      "0.0001");
}

TEST(ConfigParams, DoublesPrintInShortestFixedFormThatRoundTrips) {
  for (double rate : {0.01, 0.001, 0.0001, 1e-9, 0.123456789012345, 0.07 + 0.1,
                      5e-324}) {
    ServerConfig config;
    config.bf_error_rate = rate;
    const std::string text = GetConfigValue(config, "bf-error-rate");
    EXPECT_EQ(text.find('e'), std::string::npos) << text;
    ServerConfig back;
    std::string error;
    ASSERT_TRUE(SetConfigValue(&back, "bf-error-rate", text, &error)) << error;
    EXPECT_EQ(back.bf_error_rate, rate) << text;
  }
  ServerConfig config;
  config.bf_error_rate = 1e-9;
  EXPECT_EQ(GetConfigValue(config, "bf-error-rate"), "0.000000001");
}

TEST(SetConfigValue, BfErrorRateAboveAQuarterIsStoredAsAQuarterLikeRedis8) {
  const ServerConfig config = SetOnDefaults("bf-error-rate", "0.5");
  EXPECT_EQ(config.bf_error_rate, 0.25);
  EXPECT_EQ(GetConfigValue(config, "bf-error-rate"), "0.25");
  EXPECT_EQ(SetOnDefaults("bf-error-rate", "0.999").bf_error_rate, 0.25);
}

TEST(SetConfigValue, LoglevelRefusesUnknownLevelListingTheAllowedOnes) {
  ExpectRejected("loglevel", "loud",
                 "invalid loglevel 'loud': must be one of trace, debug, "
                 "info, warn, error, critical, off, verbose, notice, warning, nothing");
  ExpectRejected("loglevel", "",
                 "invalid loglevel '': must be one of trace, debug, info, "
                 "warn, error, critical, off, verbose, notice, warning, nothing");
}

TEST(SetConfigValue, LoglevelTakesRedisNamesAndMapsThemOntoSpdlogs) {
  EXPECT_EQ(SetOnDefaults("loglevel", "NOTICE").loglevel, "notice");
  EXPECT_EQ(LogLevelForSpdlog("debug"), "debug");
  EXPECT_EQ(LogLevelForSpdlog("verbose"), "debug");
  EXPECT_EQ(LogLevelForSpdlog("notice"), "info");
  EXPECT_EQ(LogLevelForSpdlog("warning"), "warn");
  EXPECT_EQ(LogLevelForSpdlog("nothing"), "off");
  EXPECT_EQ(LogLevelForSpdlog("error"), "error");
}

TEST(SetConfigValue, SlowlogThresholdTakesMinusOneAndRefusesLess) {
  EXPECT_EQ(SetOnDefaults("slowlog-log-slower-than", "-1").slowlog_log_slower_than, -1);
  EXPECT_EQ(SetOnDefaults("slowlog-log-slower-than", "0").slowlog_log_slower_than, 0);
  ExpectRejected("slowlog-log-slower-than", "-2",
                 "argument must be between -1 and 9223372036854775807 inclusive");
  ExpectRejected("slowlog-log-slower-than", "1x", "argument couldn't be parsed into an integer");
  EXPECT_EQ(SetOnDefaults("latency-monitor-threshold", "100").latency_monitor_threshold, 100u);
  EXPECT_EQ(SetOnDefaults("slowlog-max-len", "0").slowlog_max_len, 0u);
}

TEST(SetConfigValue, LoglevelIgnoresCaseAndIsStoredLowercase) {
  EXPECT_EQ(SetOnDefaults("loglevel", "WARN").loglevel, "warn");
  for (std::string_view level :
       {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
    EXPECT_EQ(SetOnDefaults("loglevel", level).loglevel, level);
  }
}

TEST(SetConfigValue, BindTakesSpacesCommasAndIpv6) {
  EXPECT_EQ(SetOnDefaults("bind", "127.0.0.1,::1").bind,
            (std::vector<std::string>{"127.0.0.1", "::1"}));
  EXPECT_EQ(SetOnDefaults("bind", " 10.0.0.1 , 10.0.0.2  ::1 ").bind,
            (std::vector<std::string>{"10.0.0.1", "10.0.0.2", "::1"}));
  EXPECT_EQ(SetOnDefaults("bind", "fe80::1:2").bind,
            (std::vector<std::string>{"fe80::1:2"}));
}

TEST(SetConfigValue, BindTakesWhatRedisConfTakes) {
  // redis.conf's default line and its other forms, kept as written.
  EXPECT_EQ(SetOnDefaults("bind", "127.0.0.1 -::1").bind,
            (std::vector<std::string>{"127.0.0.1", "-::1"}));
  EXPECT_EQ(SetOnDefaults("bind", "* -::*").bind, (std::vector<std::string>{"*", "-::*"}));
  EXPECT_EQ(SetOnDefaults("bind", "localhost").bind, (std::vector<std::string>{"localhost"}));
  EXPECT_EQ(SetOnDefaults("bind", "::*").bind, (std::vector<std::string>{"::*"}));
}

TEST(BindAddress, EachWordStandsForItsLiteralsAndTheDashMakesThemOptional) {
  using E = std::vector<BindEntry>;
  EXPECT_EQ(ExpandBindAddress("127.0.0.1"), (E{{"127.0.0.1", false}}));
  EXPECT_EQ(ExpandBindAddress("-::1"), (E{{"::1", true}}));
  EXPECT_EQ(ExpandBindAddress("*"), (E{{"0.0.0.0", false}}));
  EXPECT_EQ(ExpandBindAddress("-::*"), (E{{"::", true}}));
  // ::1 is optional even without a dash: a host without IPv6 still serves
  // localhost on 127.0.0.1.
  EXPECT_EQ(ExpandBindAddress("localhost"), (E{{"127.0.0.1", false}, {"::1", true}}));
  EXPECT_EQ(ExpandBindAddress("LocalHost"), (E{{"127.0.0.1", false}, {"::1", true}}));
  EXPECT_EQ(ExpandBindAddress("example.com"), std::nullopt);
  EXPECT_EQ(ExpandBindAddress("-"), std::nullopt);
  EXPECT_EQ(ExpandBindAddress("--::1"), std::nullopt);
  EXPECT_EQ(ExpandBindAddress("**"), std::nullopt);
}

TEST(SetConfigValue, BindRefusesEmptyHostNamesAndTooManyAddresses) {
  ExpectRejected("bind", "", "argument must list at least one address");
  ExpectRejected("bind", " , ", "argument must list at least one address");
  ExpectRejected("bind", "127.0.0.1 db.internal",
                 "invalid bind address 'db.internal': must be an IPv4 or IPv6 "
                 "address, *, ::* or localhost, optionally after a - (skipped where the "
                 "host lacks it)");
  ExpectRejected("bind", "256.0.0.1",
                 "invalid bind address '256.0.0.1': must be an IPv4 or IPv6 "
                 "address, *, ::* or localhost, optionally after a - (skipped where the "
                 "host lacks it)");
  std::string seventeen;
  for (int i = 1; i <= 17; ++i) seventeen += "10.0.0." + std::to_string(i) + " ";
  ExpectRejected("bind", seventeen, "argument must list at most 16 addresses");
}

TEST(SetConfigValue, StringsAreStoredVerbatimIncludingEmpty) {
  ServerConfig config;
  std::string error;
  ASSERT_TRUE(SetConfigValue(&config, "requirepass", "p@ss", &error));
  ASSERT_TRUE(SetConfigValue(&config, "requirepass", "", &error));
  EXPECT_EQ(config.requirepass, "");
  EXPECT_EQ(SetOnDefaults("logfile", " spaced name.log ").logfile,
            " spaced name.log ");
}

TEST(SetConfigValue, EveryRefusedValueLeavesTheWholeConfigUnchanged) {
  // Start from a non-default config so "unchanged" cannot mean "reset".
  ServerConfig config;
  std::string error;
  ASSERT_TRUE(SetConfigValue(&config, "port", "7000", &error));
  ASSERT_TRUE(SetConfigValue(&config, "bind", "10.1.1.1 ::1", &error));
  ASSERT_TRUE(SetConfigValue(&config, "loglevel", "error", &error));
  ASSERT_TRUE(SetConfigValue(&config, "bf-error-rate", "0.05", &error));
  const ServerConfig before = config;
  for (const ConfigParam& param : AllConfigParams()) {
    if (param.type == ConfigType::kString) continue;  // any text is valid
    error.clear();
    EXPECT_FALSE(SetConfigValue(&config, param.name, "not-a-value!", &error))
        << param.name;
    EXPECT_FALSE(error.empty()) << param.name;
    EXPECT_TRUE(config == before) << param.name;
  }
}

TEST(ParseMemoryValue, FollowsRedisUnitsAndRefusesOverflow) {
  EXPECT_EQ(ParseMemoryValue("0"), 0u);
  EXPECT_EQ(ParseMemoryValue("1kb"), 1024u);
  EXPECT_EQ(ParseMemoryValue("1KB"), 1024u);
  EXPECT_EQ(ParseMemoryValue("2M"), 2000000u);
  EXPECT_EQ(ParseMemoryValue("18446744073709551615"),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(ParseMemoryValue("17179869183gb"), 17179869183ull << 30);
  EXPECT_EQ(ParseMemoryValue("17179869184gb"), std::nullopt);
  EXPECT_EQ(ParseMemoryValue("18446744073709551616"), std::nullopt);
  EXPECT_EQ(ParseMemoryValue("-1"), std::nullopt);
  EXPECT_EQ(ParseMemoryValue("1 kb"), std::nullopt);
  EXPECT_EQ(ParseMemoryValue("kb"), std::nullopt);
}

}  // namespace
TEST(SetConfigValue, FilterDefaultsRefuseValuesOutsideRedisRanges) {
  struct Case {
    std::string_view name;
    std::string_view value;
  };
  for (const Case& c : std::vector<Case>{{"cbf-counter-bits", "5"},
                                         {"cbf-counter-bits", "16"},
                                         {"cf-bucket-size", "0"},
                                         {"cf-bucket-size", "256"},
                                         {"cf-initial-size", "1"},
                                         {"cf-max-iterations", "0"},
                                         {"cf-max-iterations", "65536"},
                                         {"cf-expansion-factor", "32769"},
                                         {"cf-max-expansions", "0"}}) {
    ServerConfig config;
    std::string error;
    EXPECT_FALSE(SetConfigValue(&config, c.name, c.value, &error)) << c.name << " " << c.value;
    EXPECT_FALSE(error.empty()) << c.name;
    EXPECT_EQ(config, ServerConfig{}) << c.name << " changed on a refused value";
  }
}

}  // namespace bloomgate

namespace bloomgate {
namespace {

TEST(SetConfigValue, TlsAuthClientsTakesYesNoOptional) {
  using A = ServerConfig::TlsAuthClients;
  EXPECT_EQ(ServerConfig{}.tls_auth_clients, A::kYes);  // Redis's default
  EXPECT_EQ(SetOnDefaults("tls-auth-clients", "no").tls_auth_clients, A::kNo);
  EXPECT_EQ(SetOnDefaults("tls-auth-clients", "Optional").tls_auth_clients, A::kOptional);
  ExpectRejected("tls-auth-clients", "maybe",
                 "argument(s) must be one of the following: no, yes, optional");
}

TEST(SetConfigValue, TlsProtocolsNamesVersionsAndDefaultsToTwelveAndThirteen) {
  EXPECT_EQ(ParseTlsProtocols(""), kTlsV1_2 | kTlsV1_3);
  EXPECT_EQ(ParseTlsProtocols("TLSv1.2"), kTlsV1_2);
  EXPECT_EQ(ParseTlsProtocols(" tlsv1.3  TLSv1.2 "), kTlsV1_2 | kTlsV1_3);
  EXPECT_EQ(ParseTlsProtocols("TLSv1 TLSv1.1"), kTlsV1 | kTlsV1_1);
  EXPECT_EQ(ParseTlsProtocols("SSLv3"), std::nullopt);
  EXPECT_EQ(ParseTlsProtocols("TLSv1.2,TLSv1.3"), std::nullopt);
  const std::string message =
      "argument must list protocols among TLSv1, TLSv1.1, TLSv1.2 and TLSv1.3";
  ExpectRejected("tls-protocols", "TLSv1.4", message);
  ExpectRejected("tls-protocols", "TLSv1.2 SSLv3", message);
}

}  // namespace
}  // namespace bloomgate
