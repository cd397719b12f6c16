// Server administration: TIME, CONFIG GET / SET / REWRITE and SHUTDOWN.
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>

#include "config/config_params.h"
#include "config/config_rewrite.h"
#include "persistence/replace_file.h"
#include "server/base/glob.h"
#include "server/catalogue/command_table.h"
#include "server/commands/command_context.h"
#include "server/commands/server/container_help.h"
#include "server/commands/errors.h"

namespace bloomgate {
namespace {

void CmdTime(CommandContext& ctx) {
  auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  ctx.reply.ArrayHeader(2);
  ctx.reply.Bulk(std::to_string(now / 1000000));
  ctx.reply.Bulk(std::to_string(now % 1000000));
}

// CONFIG GET pattern [pattern ...]
void CmdConfigGet(CommandContext& ctx) {
  ServerConfig config = ctx.server.config.Get();
  std::vector<std::pair<std::string_view, std::string>> matches;
  for (const ConfigParam& param : AllConfigParams()) {
    for (std::string_view pattern : ctx.args.subspan(2)) {
      if (GlobMatch(pattern, param.name, /*nocase=*/true)) {
        // maxmemory 0 means "derived at start-up": show the limit in force,
        // the figure INFO's maxmemory reports, so the two always agree.
        matches.emplace_back(param.name, param.name == "maxmemory"
                                             ? std::to_string(ctx.server.budget.limit())
                                             : GetConfigValue(config, param.name));
        break;
      }
    }
  }
  ctx.reply.MapHeader(matches.size());
  for (const auto& [name, value] : matches) {
    ctx.reply.Bulk(name);
    ctx.reply.Bulk(value);
  }
}

// CONFIG SET parameter value [parameter value ...]: all or nothing.
void CmdConfigSet(CommandContext& ctx) {
  auto pairs_args = ctx.args.subspan(2);
  if (pairs_args.size() % 2 != 0) {
    ctx.Fail(errors::WrongArity(ctx.spec.full_name));
    return;
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t i = 0; i < pairs_args.size(); i += 2) {
    pairs.emplace_back(AsciiLower(pairs_args[i]), std::string(pairs_args[i + 1]));
  }
  std::string error;
  ServerConfig updated;
  if (!ctx.server.config.Set(pairs, &error, &updated, ctx.server.config_applier)) {
    ctx.Fail(errors::ConfigSetFailed(error));
    return;
  }
  ctx.server.ApplyConfig(updated);
  spdlog::set_level(spdlog::level::from_str(std::string(LogLevelForSpdlog(updated.loglevel))));
  ctx.reply.Ok();
}

// CONFIG REWRITE: the running settings back into the file the server
// started with (config/config_rewrite.h), replaced atomically. One at a
// time: two rewrites on two loops would each read the file the other is
// replacing.
void CmdConfigRewrite(CommandContext& ctx) {
  const std::string& path = ctx.server.config_file;
  if (path.empty()) {
    ctx.Fail(errors::kConfigRewriteNoFile);
    return;
  }
  static std::mutex rewriting;
  std::lock_guard lock(rewriting);
  std::ifstream in(path, std::ios::binary);
  std::string original{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (!in.is_open() || in.bad()) {
    ctx.Fail(errors::ConfigRewriteFailed(std::strerror(errno)));
    return;
  }
  std::string rewritten, error;
  if (!RewriteConfigText(original, ctx.server.config.Get(), &rewritten, &error)) {
    ctx.Fail(errors::ConfigRewriteFailed(error));
    return;
  }
  Status status = ReplaceFile(*DefaultFileSystem(), path, rewritten);
  if (!status.ok()) {
    spdlog::warn("CONFIG REWRITE failed: {}", status.message());
    ctx.Fail(errors::ConfigRewriteFailed(status.message()));
    return;
  }
  spdlog::info("CONFIG REWRITE executed with success.");
  ctx.reply.Ok();
}

// CONFIG RESETSTAT: INFO's counters start again from zero (see
// ServerContext::ResetStats for which).
void CmdConfigResetStat(CommandContext& ctx) {
  ctx.server.ResetStats();
  ctx.reply.Ok();
}

// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]: stops the server gracefully. As in
// Redis, a successful SHUTDOWN sends no reply: the connection just closes.
void CmdShutdown(CommandContext& ctx) {
  if (ctx.args.size() >= 2 && EqualsIgnoreCase(ctx.args.back(), "ABORT")) {
    // Redis aborts a shutdown that waits for replicas (shutdown-timeout);
    // ours never waits, so there is never one to abort. ABORT stands alone.
    ctx.Fail(ctx.args.size() == 2 ? errors::kNoShutdownInProgress : errors::kSyntax);
    return;
  }
  for (std::string_view option : ctx.args.subspan(1)) {
    if (!EqualsIgnoreCase(option, "NOSAVE") && !EqualsIgnoreCase(option, "SAVE") &&
        !EqualsIgnoreCase(option, "NOW") && !EqualsIgnoreCase(option, "FORCE")) {
      ctx.Fail(errors::kSyntax);
      return;
    }
  }
  for (std::string_view option : ctx.args.subspan(1)) {
    if (EqualsIgnoreCase(option, "NOSAVE")) ctx.server.final_save = Durability::FinalSave::kNoSave;
    if (EqualsIgnoreCase(option, "SAVE")) ctx.server.final_save = Durability::FinalSave::kSave;
  }
  spdlog::info("SHUTDOWN requested by client id={}",
               ctx.client.info ? ctx.client.info->id : 0);
  ctx.client.close_after_reply = true;
  if (ctx.server.request_shutdown) ctx.server.request_shutdown();
}

// SAVE: a snapshot written before the reply. Other clients are paused only
// for the cut (see durability.h); the snapshot is written without locks.
void CmdSave(CommandContext& ctx) {
  if (ctx.client.in_exec) {
    // EXEC holds key locks that the cut would wait for.
    ctx.Fail(errors::kSaveInsideExec);
    return;
  }
  Status status = ctx.server.durability->Save();
  if (!status.ok()) {
    ctx.FailWithErrPrefix(status.message());
    return;
  }
  ctx.reply.Ok();
}

// BGSAVE [SCHEDULE] / BGREWRITEAOF: the cut now, the snapshot on a
// background thread. A snapshot starts a new log generation, so it is also
// how the log is compacted: BGREWRITEAOF is the same operation.
void StartBackgroundSave(CommandContext& ctx, std::string_view started) {
  if (ctx.client.in_exec) {
    ctx.Fail(errors::kSaveInsideExec);
    return;
  }
  Status status = ctx.server.durability->StartBackgroundSave();
  if (!status.ok()) {
    ctx.FailWithErrPrefix(status.message());
    return;
  }
  ctx.reply.SimpleString(started);
}

// BGSAVE SCHEDULE and BGREWRITEAOF during a running save: scheduled, as
// in Redis; a plain BGSAVE then is refused ("already in progress").
void StartOrScheduleSave(CommandContext& ctx, std::string_view started,
                         std::string_view scheduled_text) {
  if (ctx.client.in_exec) {
    ctx.Fail(errors::kSaveInsideExec);
    return;
  }
  bool scheduled = false;
  Status status = ctx.server.durability->StartOrScheduleBackgroundSave(&scheduled);
  if (!status.ok()) {
    ctx.FailWithErrPrefix(status.message());
    return;
  }
  ctx.reply.SimpleString(scheduled ? scheduled_text : started);
}

void CmdBgSave(CommandContext& ctx) {
  if (ctx.args.size() == 2) {
    if (!EqualsIgnoreCase(ctx.args[1], "SCHEDULE")) {
      ctx.Fail(errors::kSyntax);
      return;
    }
    StartOrScheduleSave(ctx, "Background saving started", "Background saving scheduled");
    return;
  }
  StartBackgroundSave(ctx, "Background saving started");
}

void CmdBgRewriteAof(CommandContext& ctx) {
  StartOrScheduleSave(ctx, "Background append only file rewriting started",
                      "Background append only file rewriting scheduled");
}

void CmdLastSave(CommandContext& ctx) {
  ctx.reply.Integer(ctx.server.durability->last_save_time_s());
}

}  // namespace

std::vector<CommandSpec> ServerCommands() {
  constexpr uint32_t kAdmin = kCmdAdmin | kCmdNoScript | kCmdLoading | kCmdStale;
  return {
      {.name = "time", .arity = 1, .flags = kCmdLoading | kCmdStale | kCmdFast,
       .handler = CmdTime, .summary = "Returns the server time", .group = "server",
       .since = "2.6.0"},
      {.name = "config", .arity = -2, .summary = "A container for server configuration commands",
       .group = "server", .since = "2.0.0",
       .subcommands = {
           {.name = "get", .arity = -3, .flags = kAdmin, .handler = CmdConfigGet,
            .summary = "Returns the effective values of configuration parameters",
            .group = "server", .since = "2.0.0"},
           {.name = "set", .arity = -4, .flags = kAdmin, .handler = CmdConfigSet,
            .summary = "Sets configuration parameters in-flight", .group = "server",
            .since = "2.0.0"},
           {.name = "rewrite", .arity = 2, .flags = kAdmin, .handler = CmdConfigRewrite,
            .summary = "Persists the effective configuration to file", .group = "server",
            .since = "2.8.0"},
           {.name = "resetstat", .arity = 2, .flags = kAdmin, .handler = CmdConfigResetStat,
            .summary = "Resets the server's statistics", .group = "server", .since = "2.0.0"},
           HelpSubcommand("server", "5.0.0"),
       }},
      {.name = "save", .arity = 1, .flags = kCmdAdmin | kCmdNoScript, .handler = CmdSave,
       .summary = "Synchronously saves the database(s) to disk", .group = "server",
       .since = "1.0.0"},
      {.name = "bgsave", .arity = -1, .max_args = 2, .flags = kCmdAdmin | kCmdNoScript,
       .handler = CmdBgSave, .summary = "Asynchronously saves the database(s) to disk",
       .group = "server", .since = "1.0.0"},
      {.name = "bgrewriteaof", .arity = 1, .flags = kCmdAdmin | kCmdNoScript,
       .handler = CmdBgRewriteAof,
       .summary = "Asynchronously rewrites the append-only file to disk", .group = "server",
       .since = "1.0.0"},
      {.name = "lastsave", .arity = 1, .flags = kCmdLoading | kCmdStale | kCmdFast,
       .handler = CmdLastSave,
       .summary = "Returns the Unix timestamp of the last successful save to disk",
       .group = "server", .since = "1.0.0"},
      {.name = "shutdown", .arity = -1, .max_args = 4, .flags = kAdmin,
       .handler = CmdShutdown, .summary = "Stops the server gracefully", .group = "server",
       .since = "1.0.0"},
  };
}

}  // namespace bloomgate
