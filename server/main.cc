// bloomgate: argv, logging, configuration, then serve until stopped.
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "config/command_line.h"
#include "config/config_params.h"
#include "config/server_config.h"
#include "server/commands/journal_applier.h"
#include "server/context/server_context.h"
#include "server/net/server.h"
#include "server/offline_tools.h"

namespace {

bool SetUpLogging(const bloomgate::ServerConfig& config, std::string* error) {
  try {
    std::shared_ptr<spdlog::logger> logger;
    if (config.logfile.empty()) {
      logger = spdlog::stderr_color_mt("bloomgate");
    } else {
      logger = spdlog::basic_logger_mt("bloomgate", config.logfile);
    }
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::from_str(std::string(bloomgate::LogLevelForSpdlog(config.loglevel))));
    spdlog::flush_on(spdlog::level::info);
  } catch (const spdlog::spdlog_ex& e) {
    *error = std::string("cannot open log: ") + e.what();
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bloomgate;
  if (IsOfflineMode(argc, argv)) return RunOfflineMode(argc, argv);
  CommandLine command_line;
  std::vector<std::pair<std::string, std::string>> overrides;
  std::string error;
  if (!ParseCommandLine(argc, argv, &command_line, &overrides, &error)) {
    std::fprintf(stderr, "bloomgate: %s\n(try --help)\n", error.c_str());
    return 2;
  }
  if (command_line.show_help) {
    std::printf("%s", CommandLineHelp().c_str());
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
  if (!SetUpLogging(config, &error)) {
    std::fprintf(stderr, "bloomgate: %s\n", error.c_str());
    return 1;
  }
  size_t threads = config.threads != 0 ? config.threads
                                       : std::max(1u, std::thread::hardware_concurrency());

  ServerContext context(config, threads);
  context.config_file = command_line.config_path;
  context.executable = argv[0];
  context.worker_threads = threads;
  if (auto user_error = context.LoadConfiguredUsers(config.users)) {
    spdlog::error("config: {}", *user_error);
    std::fprintf(stderr, "bloomgate: config: %s\n", user_error->c_str());
    return 1;
  }
  // The data first, the port second: no client ever sees a half-loaded
  // keyspace, and a damaged file stops the server before it serves.
  Status loaded = LoadDurableState(context);
  if (!loaded.ok()) {
    spdlog::critical("cannot load the data in '{}': {}", config.dir, loaded.message());
    spdlog::critical("the files were left untouched; fix or move them and start again "
                     "(`bloomgate check-snapshot FILE` verifies a snapshot)");
    return 1;
  }
  // As Redis: port 0 turns the plain listener off, but one must remain.
  if (config.port == 0 && config.tls_port == 0) {
    spdlog::critical("port and tls-port are both 0: configured to listen nowhere");
    return 1;
  }
  Server server(context, threads);
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
  context.port = server.bound_port(Server::Transport::kTcp);
  context.tls_port = server.bound_port(Server::Transport::kTls);
  spdlog::info("bloomgate {} started: port {}, tls-port {}, {} worker threads, config {}, "
               "maxmemory {} bytes",
               kBloomgateVersion, context.port, context.tls_port, threads,
               command_line.config_path.empty() ? "(defaults)" : command_line.config_path,
               context.budget.limit());
  server.Run();
  // Parked writers' callbacks post to the event loops: done while they exist.
  context.snapshot_copier.Stop();
  context.durability->Shutdown(context.final_save.load());
  spdlog::info("bye");
  return 0;
}
