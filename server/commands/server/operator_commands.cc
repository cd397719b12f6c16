// What an operator watches a running server with: SLOWLOG and LATENCY,
// with Redis's subcommands, reply shapes and error texts.
#include <algorithm>
#include <bit>
#include <initializer_list>

#include "server/catalogue/command_table.h"
#include "server/commands/arg_parser.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"

namespace bloomgate {
namespace {

void ReplyHelp(ReplyBuilder& reply, std::initializer_list<std::string_view> lines) {
  reply.ArrayHeader(lines.size());
  for (std::string_view line : lines) reply.SimpleString(line);
}

// ------------------------------------------------------------- SLOWLOG ---

// SLOWLOG GET [count]: the newest `count` entries (10 by default, -1 all),
// newest first, each [id, unix time, microseconds, [args], addr, name].
void CmdSlowlogGet(CommandContext& ctx) {
  int64_t count = 10;
  if (ctx.args.size() == 3) {
    if (!ParseInt64(ctx.args[2], &count)) {
      ctx.Fail(errors::kNotInteger);
      return;
    }
    if (count < -1) {
      ctx.Fail(errors::kSlowlogCount);
      return;
    }
  }
  auto entries = ctx.server.slow_log.Newest(count == -1 ? SIZE_MAX : static_cast<size_t>(count));
  ctx.reply.ArrayHeader(entries.size());
  for (const SlowLogEntry& entry : entries) {
    ctx.reply.ArrayHeader(6);
    ctx.reply.Integer(static_cast<int64_t>(entry.id));
    ctx.reply.Integer(entry.time_s);
    ctx.reply.Integer(entry.duration_us);
    ctx.reply.ArrayHeader(entry.args.size());
    for (const std::string& arg : entry.args) ctx.reply.Bulk(arg);
    ctx.reply.Bulk(entry.client_addr);
    ctx.reply.Bulk(entry.client_name);
  }
}

void CmdSlowlogLen(CommandContext& ctx) {
  ctx.reply.Integer(static_cast<int64_t>(ctx.server.slow_log.size()));
}

void CmdSlowlogReset(CommandContext& ctx) {
  ctx.server.slow_log.Reset();
  ctx.reply.Ok();
}

void CmdSlowlogHelp(CommandContext& ctx) {
  ReplyHelp(ctx.reply,
            {"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
             "GET [<count>]",
             "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
             "    Entries are made of:",
             "    id, timestamp, time in microseconds, arguments array, client IP and port,",
             "    client name",
             "LEN",
             "    Return the length of the slowlog.",
             "RESET",
             "    Reset the slowlog.",
             "HELP",
             "    Print this help."});
}

// ------------------------------------------------------------- LATENCY ---

// LATENCY LATEST: [event, time of the latest sample, its ms, max ms] each.
void CmdLatencyLatest(CommandContext& ctx) {
  auto events = ctx.server.latency.Latest();
  ctx.reply.ArrayHeader(events.size());
  for (const LatencyEventSummary& event : events) {
    ctx.reply.ArrayHeader(4);
    ctx.reply.Bulk(event.name);
    ctx.reply.Integer(event.time_s);
    ctx.reply.Integer(static_cast<int64_t>(event.latest_ms));
    ctx.reply.Integer(static_cast<int64_t>(event.max_ms));
  }
}

// LATENCY HISTORY event: [time, ms] per sample, oldest first.
void CmdLatencyHistory(CommandContext& ctx) {
  auto samples = ctx.server.latency.History(ctx.args[2]);
  ctx.reply.ArrayHeader(samples.size());
  for (const LatencySample& sample : samples) {
    ctx.reply.ArrayHeader(2);
    ctx.reply.Integer(sample.time_s);
    ctx.reply.Integer(static_cast<int64_t>(sample.latency_ms));
  }
}

// LATENCY RESET [event ...]: how many events were forgotten.
void CmdLatencyReset(CommandContext& ctx) {
  std::vector<std::string> events(ctx.args.begin() + 2, ctx.args.end());
  ctx.reply.Integer(static_cast<int64_t>(ctx.server.latency.Reset(events)));
}

// One command's entry: {calls, histogram_usec: {2^k: calls under 2^k us}},
// cumulative as Redis's, up to the first bound that holds every call.
void ReplyHistogram(CommandContext& ctx, const CommandSpec& spec,
                    const ServerStats::CommandTotals& totals) {
  ctx.reply.Bulk(spec.full_name);
  ctx.reply.MapHeader(2);
  ctx.reply.Bulk("calls");
  ctx.reply.Integer(static_cast<int64_t>(totals.calls));
  ctx.reply.Bulk("histogram_usec");
  // Bucket b holds durations of bit width b, i.e. below 2^b us.
  std::vector<std::pair<uint64_t, uint64_t>> points;
  uint64_t below = 0;
  for (size_t b = 0; b < CommandCounters::kBuckets && below < totals.calls; ++b) {
    below += totals.usec_buckets[b];
    if (totals.usec_buckets[b] != 0 || (b > 0 && below > 0)) {
      points.emplace_back(uint64_t{1} << b, below);
    }
  }
  ctx.reply.MapHeader(points.size());
  for (const auto& [bound, calls] : points) {
    ctx.reply.Integer(static_cast<int64_t>(bound));
    ctx.reply.Integer(static_cast<int64_t>(calls));
  }
}

// LATENCY HISTOGRAM [command ...]: every command called so far, or the
// named ones ("client|list" names a subcommand; a container names all of
// its subcommands); unknown names are skipped, as in Redis.
void CmdLatencyHistogram(CommandContext& ctx) {
  const CommandTable& table = ctx.server.commands;
  std::vector<const CommandSpec*> specs;
  auto add = [&](const CommandSpec* spec) {
    if (spec->handler == nullptr) return;  // a container itself has no calls
    if (std::find(specs.begin(), specs.end(), spec) == specs.end()) specs.push_back(spec);
  };
  if (ctx.args.size() == 2) {
    for (const CommandSpec* spec : table.all()) add(spec);
  } else {
    for (std::string_view name : ctx.args.subspan(2)) {
      size_t bar = name.find('|');
      const CommandSpec* spec = table.Find(name.substr(0, bar));
      if (spec != nullptr && bar != std::string_view::npos) {
        spec = CommandTable::FindSubcommand(*spec, name.substr(bar + 1));
      }
      if (spec == nullptr) continue;
      add(spec);
      if (bar == std::string_view::npos) {
        for (const CommandSpec& sub : spec->subcommands) add(&sub);
      }
    }
  }
  std::vector<std::pair<const CommandSpec*, ServerStats::CommandTotals>> rows;
  for (const CommandSpec* spec : specs) {
    ServerStats::CommandTotals totals = ctx.server.stats.Command(spec->id);
    if (totals.calls > 0) rows.emplace_back(spec, totals);
  }
  ctx.reply.MapHeader(rows.size());
  for (const auto& [spec, totals] : rows) ReplyHistogram(ctx, *spec, totals);
}

void CmdLatencyHelp(CommandContext& ctx) {
  ReplyHelp(ctx.reply,
            {"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
             "HISTORY <event>",
             "    Return time-latency samples for the <event> class.",
             "LATEST",
             "    Return the latest latency samples for all events.",
             "RESET [<event> ...]",
             "    Reset latency data of one or more <event> classes.",
             "    (default: reset all data for all event classes)",
             "HISTOGRAM [COMMAND ...]",
             "    Return a cumulative distribution of latencies in the format of a histogram",
             "    for the specified command names.",
             "    If no commands are specified then all histograms are replied.",
             "Events recorded: command, fast-command (see latency-monitor-threshold).",
             "HELP",
             "    Print this help."});
}

}  // namespace

std::vector<CommandSpec> OperatorCommands() {
  constexpr uint32_t kAdmin = kCmdAdmin | kCmdNoScript | kCmdLoading | kCmdStale;
  auto sub = [](std::string_view name, int arity, int max_args, uint32_t flags,
                CommandHandler handler, std::string_view summary, std::string_view since) {
    return CommandSpec{.name = name, .arity = arity, .max_args = max_args, .flags = flags,
                       .handler = handler, .summary = summary, .group = "server",
                       .since = since};
  };
  return {
      {.name = "slowlog", .arity = -2, .summary = "A container for slow log commands",
       .group = "server", .since = "2.2.12",
       .subcommands = {
           sub("get", -2, 3, kAdmin, CmdSlowlogGet, "Returns the slow log's entries",
               "2.2.12"),
           sub("len", 2, 0, kAdmin, CmdSlowlogLen,
               "Returns the number of entries in the slow log", "2.2.12"),
           sub("reset", 2, 0, kAdmin, CmdSlowlogReset, "Clears all entries from the slow log",
               "2.2.12"),
           sub("help", 2, 0, kCmdLoading | kCmdStale, CmdSlowlogHelp,
               "Show helpful text about the different subcommands", "6.2.0"),
       }},
      {.name = "latency", .arity = -2, .summary = "A container for latency diagnostics commands",
       .group = "server", .since = "2.8.13",
       .subcommands = {
           sub("latest", 2, 0, kAdmin, CmdLatencyLatest,
               "Returns the latest latency samples for all events", "2.8.13"),
           sub("history", 3, 0, kAdmin, CmdLatencyHistory,
               "Returns timestamp-latency samples for an event", "2.8.13"),
           sub("reset", -2, 0, kAdmin, CmdLatencyReset,
               "Resets the latency data for one or more events", "2.8.13"),
           sub("histogram", -2, 0, kAdmin, CmdLatencyHistogram,
               "Returns the cumulative distribution of latencies of a subset or all "
               "commands", "7.0.0"),
           sub("help", 2, 0, kCmdLoading | kCmdStale, CmdLatencyHelp,
               "Returns helpful text about the different subcommands", "2.8.13"),
       }},
  };
}

}  // namespace bloomgate
