// Commands that describe the server: COMMAND (and its subcommands), INFO and
// MODULE LIST. Client libraries route and feature-detect with these, so
// their formats follow Redis 7+/8 field by field.
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fmt/format.h>
#include <set>

#include "server/base/glob.h"
#include "server/base/memory_limit.h"
#include "server/catalogue/acl_categories.h"
#include "server/catalogue/command_table.h"
#include "server/catalogue/family_registry.h"
#include "server/commands/arg_parser.h"
#include "server/commands/command_context.h"
#include "server/commands/server/container_help.h"
#include "server/commands/errors.h"
#include "server/commands/server/filter_health_report.h"
#include "server/commands/server/module_info.h"
#include "server/replication/replication.h"

namespace bloomgate {
namespace {

// ------------------------------------------------------------- COMMAND ---

std::vector<std::string_view> FlagNames(const CommandSpec& spec) {
  static constexpr std::pair<uint32_t, std::string_view> kNames[] = {
      {kCmdWrite, "write"},     {kCmdReadOnly, "readonly"}, {kCmdDenyOom, "denyoom"},
      {kCmdAdmin, "admin"},     {kCmdNoScript, "noscript"}, {kCmdLoading, "loading"},
      {kCmdStale, "stale"},     {kCmdFast, "fast"},         {kCmdNoAuth, "no_auth"},
      {kCmdNoMulti, "no_multi"},
  };
  std::vector<std::string_view> names;
  for (const auto& [flag, name] : kNames) {
    if (spec.flags & flag) names.push_back(name);
  }
  return names;
}

// The filter families, which Redis lists as the "bf" module's commands.
bool IsFilterCommand(const CommandSpec& spec) { return FamilyOfGroup(spec.group) != nullptr; }

// Derived from the row once, by the command table (catalogue/acl_categories.h).
std::vector<std::string_view> AclCategories(const CommandSpec& spec) {
  return AclCategoryList(spec.acl_categories);
}

// One COMMAND INFO entry, Redis 7's ten fields.
void ReplyCommandInfo(ReplyBuilder& reply, const CommandSpec& spec) {
  reply.ArrayHeader(10);
  reply.Bulk(spec.full_name);
  reply.Integer(spec.arity);
  auto flags = FlagNames(spec);
  reply.SetHeader(flags.size());
  for (std::string_view flag : flags) reply.SimpleString(flag);
  reply.Integer(spec.first_key);
  reply.Integer(spec.last_key);
  reply.Integer(spec.key_step);
  auto categories = AclCategories(spec);
  reply.SetHeader(categories.size());
  for (std::string_view category : categories) reply.SimpleString(category);
  reply.SetHeader(0);  // tips
  // Key specs: one "index + range" spec describing first/last/step, and
  // for keys named by a count (CMS.MERGE's sources) a "keynum" spec. Redis 7
  // replies a set of them, and a set for no subcommands but an array of
  // them (addReplyCommandKeySpecs, addReplyCommandSubCommands): in RESP3
  // the types differ ("~" against "*"), in RESP2 both are arrays.
  if (spec.first_key > 0) {
    reply.SetHeader(CommandTable::KeySpecCount(spec));
    reply.MapHeader(3);
    reply.Bulk("flags");
    reply.SetHeader(1);
    reply.SimpleString(spec.flags & kCmdWrite ? "RW" : "RO");
    reply.Bulk("begin_search");
    reply.MapHeader(2);
    reply.Bulk("type");
    reply.Bulk("index");
    reply.Bulk("spec");
    reply.MapHeader(1);
    reply.Bulk("index");
    reply.Integer(spec.first_key);
    reply.Bulk("find_keys");
    reply.MapHeader(2);
    reply.Bulk("type");
    reply.Bulk("range");
    reply.Bulk("spec");
    reply.MapHeader(3);
    reply.Bulk("lastkey");
    reply.Integer(spec.last_key < 0 ? spec.last_key : spec.last_key - spec.first_key);
    reply.Bulk("keystep");
    reply.Integer(spec.key_step);
    reply.Bulk("limit");
    reply.Integer(0);
    if (spec.numkeys_index > 0) {
      // Redis's form: the count at numkeys_index, the keys right after it.
      reply.MapHeader(3);
      reply.Bulk("flags");
      reply.SetHeader(1);
      reply.SimpleString(spec.flags & kCmdWrite ? "RW" : "RO");
      reply.Bulk("begin_search");
      reply.MapHeader(2);
      reply.Bulk("type");
      reply.Bulk("index");
      reply.Bulk("spec");
      reply.MapHeader(1);
      reply.Bulk("index");
      reply.Integer(spec.numkeys_index);
      reply.Bulk("find_keys");
      reply.MapHeader(2);
      reply.Bulk("type");
      reply.Bulk("keynum");
      reply.Bulk("spec");
      reply.MapHeader(3);
      reply.Bulk("keynumidx");
      reply.Integer(0);
      reply.Bulk("firstkey");
      reply.Integer(1);
      reply.Bulk("keystep");
      reply.Integer(1);
    }
  } else {
    reply.SetHeader(0);
  }
  if (spec.subcommands.empty()) {
    reply.SetHeader(0);
    return;
  }
  reply.ArrayHeader(spec.subcommands.size());
  for (const CommandSpec& sub : spec.subcommands) ReplyCommandInfo(reply, sub);
}

// One argument in Redis 7's COMMAND DOCS schema (server.c
// addReplyCommandArgList): name, type, key_spec_index, token, flags (a set
// of simple strings: redis-cli asserts they are), the members of a oneof or
// block, and display_text for the others.
void ReplyCommandArguments(ReplyBuilder& reply, const std::vector<CommandArgument>& arguments) {
  reply.ArrayHeader(arguments.size());
  for (const CommandArgument& arg : arguments) {
    const bool group = arg.type == ArgType::kOneOf || arg.type == ArgType::kBlock;
    std::vector<std::string_view> flags;
    if (arg.optional) flags.push_back("optional");
    if (arg.multiple) flags.push_back("multiple");
    if (arg.multiple_token) flags.push_back("multiple_token");
    reply.MapHeader(2 + (arg.key_spec_index >= 0) + !arg.token.empty() + !flags.empty() + 1);
    reply.Bulk("name");
    reply.Bulk(arg.name);
    reply.Bulk("type");
    reply.Bulk(ArgTypeName(arg.type));
    if (arg.key_spec_index >= 0) {
      reply.Bulk("key_spec_index");
      reply.Integer(arg.key_spec_index);
    }
    if (!arg.token.empty()) {
      reply.Bulk("token");
      reply.Bulk(arg.token);
    }
    if (!flags.empty()) {
      reply.Bulk("flags");
      reply.SetHeader(flags.size());
      for (std::string_view flag : flags) reply.SimpleString(flag);
    }
    if (group) {
      reply.Bulk("arguments");
      ReplyCommandArguments(reply, arg.children);
    } else {
      reply.Bulk("display_text");
      reply.Bulk(arg.name);
    }
  }
}

void ReplyCommandDocs(ReplyBuilder& reply, const CommandSpec& spec) {
  const bool has_arguments = spec.arguments != nullptr && !spec.arguments->empty();
  reply.MapHeader(3 + has_arguments + !spec.subcommands.empty());
  reply.Bulk("summary");
  reply.Bulk(spec.summary);
  reply.Bulk("since");
  reply.Bulk(spec.since);
  reply.Bulk("group");
  reply.Bulk(IsFilterCommand(spec) ? "module" : spec.group);
  if (has_arguments) {
    reply.Bulk("arguments");
    ReplyCommandArguments(reply, *spec.arguments);
  }
  if (!spec.subcommands.empty()) {
    reply.Bulk("subcommands");
    reply.MapHeader(spec.subcommands.size());
    for (const CommandSpec& sub : spec.subcommands) {
      reply.Bulk(sub.full_name);
      ReplyCommandDocs(reply, sub);
    }
  }
}

// Resolves "client|list" or a top-level name.
const CommandSpec* FindByFullName(const CommandTable& table, std::string_view name) {
  size_t bar = name.find('|');
  const CommandSpec* spec = table.Find(name.substr(0, bar));
  if (spec == nullptr || bar == std::string_view::npos) return spec;
  return CommandTable::FindSubcommand(*spec, name.substr(bar + 1));
}

void CmdCommand(CommandContext& ctx) {
  const auto& commands = ctx.server.commands.commands();
  ctx.reply.ArrayHeader(commands.size());
  for (const CommandSpec& spec : commands) ReplyCommandInfo(ctx.reply, spec);
}

void CmdCommandCount(CommandContext& ctx) {
  ctx.reply.Integer(static_cast<int64_t>(ctx.server.commands.commands().size()));
}

void CmdCommandInfo(CommandContext& ctx) {
  if (ctx.args.size() == 2) {
    CmdCommand(ctx);
    return;
  }
  ctx.reply.ArrayHeader(ctx.args.size() - 2);
  for (std::string_view name : ctx.args.subspan(2)) {
    const CommandSpec* spec = FindByFullName(ctx.server.commands, name);
    if (spec == nullptr) {
      ctx.reply.NullArray();
    } else {
      ReplyCommandInfo(ctx.reply, *spec);
    }
  }
}

void CmdCommandDocs(CommandContext& ctx) {
  std::vector<const CommandSpec*> specs;
  if (ctx.args.size() == 2) {
    for (const CommandSpec& spec : ctx.server.commands.commands()) specs.push_back(&spec);
  } else {
    for (std::string_view name : ctx.args.subspan(2)) {
      if (const CommandSpec* spec = FindByFullName(ctx.server.commands, name)) {
        specs.push_back(spec);
      }
    }
  }
  ctx.reply.MapHeader(specs.size());
  for (const CommandSpec* spec : specs) {
    ctx.reply.Bulk(spec->full_name);
    ReplyCommandDocs(ctx.reply, *spec);
  }
}

// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]
void CmdCommandList(CommandContext& ctx) {
  std::string_view filter, value;
  if (ctx.args.size() == 5 && EqualsIgnoreCase(ctx.args[2], "FILTERBY")) {
    filter = ctx.args[3];
    value = ctx.args[4];
  } else if (ctx.args.size() != 2) {
    ctx.Fail(errors::kSyntax);
    return;
  }
  std::vector<std::string_view> names;
  for (const CommandSpec* spec : ctx.server.commands.all()) {
    bool keep = true;
    if (EqualsIgnoreCase(filter, "MODULE")) {
      keep = EqualsIgnoreCase(value, "bf") && IsFilterCommand(*spec);
    } else if (EqualsIgnoreCase(filter, "ACLCAT")) {
      auto categories = AclCategories(*spec);
      keep = std::any_of(categories.begin(), categories.end(), [&](std::string_view c) {
        return EqualsIgnoreCase(c.substr(1), value);
      });
    } else if (EqualsIgnoreCase(filter, "PATTERN")) {
      keep = GlobMatch(value, spec->full_name, /*nocase=*/true);
    } else if (!filter.empty()) {
      ctx.Fail(errors::kSyntax);
      return;
    }
    if (keep) names.push_back(spec->full_name);
  }
  ctx.reply.ArrayHeader(names.size());
  for (std::string_view name : names) ctx.reply.Bulk(name);
}

// COMMAND GETKEYS command [arg ...]
void CmdCommandGetKeys(CommandContext& ctx) {
  auto target = ctx.args.subspan(2);
  const CommandSpec* spec = ctx.server.commands.Find(target[0]);
  if (spec == nullptr) {
    ctx.Fail(errors::kInvalidCommandSpecified);
    return;
  }
  if (!spec->subcommands.empty() && target.size() >= 2) {
    spec = CommandTable::FindSubcommand(*spec, target[1]);
    if (spec == nullptr) {
      ctx.Fail(errors::kInvalidCommandSpecified);
      return;
    }
  }
  if (!CommandTable::ArityMatches(*spec, target.size())) {
    ctx.Fail(errors::kGetKeysBadArity);
    return;
  }
  std::vector<size_t> indices;
  CommandTable::KeyIndices(*spec, target, &indices);
  if (indices.empty()) {
    ctx.Fail(errors::kGetKeysNoKeys);
    return;
  }
  ctx.reply.ArrayHeader(indices.size());
  for (size_t index : indices) ctx.reply.Bulk(target[index]);
}

// ---------------------------------------------------------------- INFO ---

std::string HumanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "K", "M", "G", "T", "P"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{}B", bytes) : fmt::format("{:.2f}{}", value, kUnits[unit]);
}

// Redis 7.2+'s listener lines: one per open transport, with every bound
// address, e.g. "listener1:name=tls,bind=127.0.0.1,port=6380".
std::string ListenerLines(const ServerContext& server, const ServerConfig& config) {
  std::string lines;
  int index = 0;
  for (auto [name, port] : {std::pair<std::string_view, uint16_t>{"tcp", server.port},
                            std::pair<std::string_view, uint16_t>{"tls", server.tls_port.load()}}) {
    if (port == 0) continue;
    lines += fmt::format("listener{}:name={}", index++, name);
    for (const std::string& address : config.bind) lines += ",bind=" + address;
    lines += fmt::format(",port={}\r\n", port);
  }
  return lines;
}

std::string ServerSection(CommandContext& ctx) {
  utsname name{};
  uname(&name);
  int64_t uptime = (ctx.now_ms - ctx.server.start_time_ms) / 1000;
  ServerConfig config = ctx.server.config.Get();
  return fmt::format(
      "# Server\r\nredis_version:{}\r\nbloomgate_version:{}\r\nredis_mode:{}\r\n"
      "os:{} {} {}\r\narch_bits:{}\r\nmultiplexing_api:epoll\r\nprocess_id:{}\r\n"
      "run_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\n"
      "uptime_in_days:{}\r\nexecutable:{}\r\nconfig_file:{}\r\nio_threads_active:0\r\n"
      "worker_threads:{}\r\n",
      kRedisVersion, kBloomgateVersion,
      ctx.server.cluster.enabled() ? "cluster" : "standalone", name.sysname, name.release, name.machine,
      sizeof(void*) * 8, getpid(), ctx.server.run_id, ctx.server.port, ctx.now_ms * 1000,
      uptime, uptime / 86400, ctx.server.executable, ctx.server.config_file,
      ctx.server.worker_threads) + ListenerLines(ctx.server, config);
}

std::string ClientsSection(CommandContext& ctx) {
  return fmt::format(
      "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:{}\r\n"
      "tracking_clients:0\r\n",
      ctx.server.clients.count(), ctx.server.config.Get().maxclients,
      // Clients CLIENT PAUSE holds, as Redis 7 counts them (its only pause
      // field), and clients in WAIT.
      ctx.server.pause.waiting() + ctx.server.replication->waiting_clients());
}

std::string MemorySection(CommandContext& ctx) {
  uint64_t used = ctx.server.budget.used();
  uint64_t peak = ctx.server.NoteMemoryPeak();
  uint64_t limit = ctx.server.budget.limit();
  uint64_t rss = ResidentBytes();
  // used_memory counts filter bytes only (Redis counts every allocation), so
  // the ratio is rss over the filters' bytes; 0 while no filter holds any.
  double fragmentation = used == 0 ? 0.0 : static_cast<double>(rss) / static_cast<double>(used);
  return fmt::format(
      "# Memory\r\nused_memory:{}\r\nused_memory_human:{}\r\nused_memory_rss:{}\r\n"
      "used_memory_rss_human:{}\r\nused_memory_peak:{}\r\nused_memory_peak_human:{}\r\n"
      "maxmemory:{}\r\nmaxmemory_human:{}\r\n"
      "maxmemory_policy:noeviction\r\nmem_fragmentation_ratio:{:.2f}\r\n"
      "lazyfree_pending_objects:{}\r\nlazyfreed_objects:{}\r\nmax_filter_memory:{}\r\n",
      used, HumanBytes(used), rss, HumanBytes(rss), peak, HumanBytes(peak), limit,
      HumanBytes(limit), fragmentation, ctx.server.lazy_freer.pending(),
      ctx.server.lazy_freer.freed(), ctx.server.filter_limits().max_filter_bytes);
}

std::string PersistenceSection(CommandContext& ctx) {
  // Ours: writers that waited for a snapshot's copy of their filter (parked,
  // their event loop going on), and the copies made for them off the loops.
  const SnapshotCopier& copier = ctx.server.snapshot_copier;
  return "# Persistence\r\n" + ctx.server.durability->InfoFields() +
         "snapshot_copy_waits:" + std::to_string(copier.requests()) + "\r\n" +
         "snapshot_copies_off_loop:" + std::to_string(copier.copies_made()) + "\r\n";
}

std::string StatsSection(CommandContext& ctx) {
  const ServerStats& stats = ctx.server.stats;
  return fmt::format(
      "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n"
      "total_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\nrejected_connections:{}\r\n"
      "expired_keys:{}\r\nevicted_keys:0\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\n"
      "pubsub_channels:{}\r\npubsub_patterns:{}\r\n"
      "total_error_replies:{}\r\nacl_access_denied_auth:{}\r\nacl_access_denied_cmd:{}\r\n"
      "acl_access_denied_key:{}\r\nacl_access_denied_channel:{}\r\n"
      "auth_throttled_attempts:{}\r\n"
      "instantaneous_ops_per_sec:{:.0f}\r\ninstantaneous_input_kbps:{:.2f}\r\n"
      "instantaneous_output_kbps:{:.2f}\r\n",
      stats.Sum(&WorkerCounters::connections_received),
      stats.Sum(&WorkerCounters::commands_processed),
      stats.Sum(&WorkerCounters::net_input_bytes), stats.Sum(&WorkerCounters::net_output_bytes),
      stats.rejected_connections.load(std::memory_order_relaxed),
      ctx.server.keyspace.expired_keys(), stats.Sum(&WorkerCounters::keyspace_hits),
      stats.Sum(&WorkerCounters::keyspace_misses), ctx.server.pubsub.channel_count(),
      ctx.server.pubsub.pattern_count(), stats.Sum(&WorkerCounters::error_replies),
      ctx.server.auth_throttle.failures(), stats.Sum(&WorkerCounters::acl_denied_commands),
      stats.Sum(&WorkerCounters::acl_denied_keys),
      stats.Sum(&WorkerCounters::acl_denied_channels), ctx.server.auth_throttle.refused(),
      ctx.server.instantaneous.PerSecond(InstantaneousMetrics::kOps),
      ctx.server.instantaneous.PerSecond(InstantaneousMetrics::kNetInput) / 1024,
      ctx.server.instantaneous.PerSecond(InstantaneousMetrics::kNetOutput) / 1024) +
         fmt::format("sync_full:{}\r\nsync_partial_ok:{}\r\nsync_partial_err:{}\r\n",
                     ctx.server.replication->sync_full(),
                     ctx.server.replication->sync_partial_ok(),
                     ctx.server.replication->sync_partial_err());
}

std::string ReplicationSection(CommandContext& ctx) {
  return "# Replication\r\n" + ctx.server.replication->InfoFields() +
         fmt::format("replica_full_sync_needed:{}\r\nreplica_unapplied_records:{}\r\n",
                     ctx.server.journal.needs_full_sync() ? 1 : 0,
                     ctx.server.journal.unapplied_records());
}

std::string CpuSection(CommandContext&) {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
  return fmt::format("# CPU\r\nused_cpu_sys:{:.6f}\r\nused_cpu_user:{:.6f}\r\n",
                     seconds(usage.ru_stime), seconds(usage.ru_utime));
}

std::string ClusterSection(CommandContext& ctx) {
  return ctx.server.cluster.enabled() ? "# Cluster\r\ncluster_enabled:1\r\n"
                                      : "# Cluster\r\ncluster_enabled:0\r\n";
}

std::string ModulesSection(CommandContext&) {
  return fmt::format(
      "# Modules\r\nmodule:name=bf,ver={},api=1,filters=0,usedby=[],using=[],options=[]\r\n",
      kBloomModuleVersion);
}

std::string CommandStatsSection(CommandContext& ctx) {
  std::string text = "# Commandstats\r\n";
  const ServerStats& stats = ctx.server.stats;
  for (const CommandSpec* spec : ctx.server.commands.all()) {
    const ServerStats::CommandTotals totals = stats.Command(spec->id);
    const uint64_t calls = totals.calls, usec = totals.usec, failed = totals.failed_calls,
                   rejected = totals.rejected_calls;
    if (calls == 0 && rejected == 0) continue;
    text += fmt::format(
        "cmdstat_{}:calls={},usec={},usec_per_call={:.2f},rejected_calls={},failed_calls={}\r\n",
        spec->full_name, calls, usec, calls == 0 ? 0.0 : static_cast<double>(usec) / calls,
        rejected, failed);
  }
  return text;
}

// Redis 7's "latency_percentiles_usec_<command>:p50=1.003,p99=2.007,p99.9=2.007":
// per command called since the last RESETSTAT, the percentiles of
// latency-tracking-info-percentiles in microseconds with three decimals,
// each the top of its histogram bucket (stats/latency_histogram.h).
// Empty while latency-tracking is off, as in Redis.
std::string LatencyStatsSection(CommandContext& ctx) {
  std::string text = "# Latencystats\r\n";
  const ServerConfig config = ctx.server.config.Get();
  if (!config.latency_tracking) return text;
  const ServerStats& stats = ctx.server.stats;
  for (const CommandSpec* spec : ctx.server.commands.all()) {
    const LatencyCounts counts = stats.CommandLatency(spec->id);
    if (counts.total == 0) continue;
    text += "latency_percentiles_usec_" + spec->full_name + ":";
    bool first = true;
    for (double percentile : config.latency_tracking_info_percentiles) {
      if (!first) text += ',';
      first = false;
      text += fmt::format("p{}={:.3f}", percentile,
                          static_cast<double>(counts.ValueAtPercentile(percentile)) / 1000.0);
    }
    text += "\r\n";
  }
  return text;
}

// errorstat_<code>:count=N per error code replied (stats/error_stats.h).
std::string ErrorStatsSection(CommandContext& ctx) {
  std::string text = "# Errorstats\r\n";
  for (const auto& [code, count] : ctx.server.error_stats.Counts()) {
    text += fmt::format("errorstat_{}:count={}\r\n", code, count);
  }
  return text;
}

std::string KeyspaceSection(CommandContext& ctx) {
  size_t keys = ctx.server.keyspace.Size();
  std::string text = "# Keyspace\r\n";
  if (keys > 0) {
    text += fmt::format("db0:keys={},expires={},avg_ttl=0,subexpiry=0\r\n", keys,
                        ctx.server.keyspace.VolatileCount());
  }
  return text;
}

struct InfoSection {
  std::string_view name;
  std::string (*render)(CommandContext&);
  bool in_default;
};

constexpr InfoSection kInfoSections[] = {
    {"server", ServerSection, true},          {"clients", ClientsSection, true},
    {"memory", MemorySection, true},          {"persistence", PersistenceSection, true},
    {"stats", StatsSection, true},            {"replication", ReplicationSection, true},
    {"cpu", CpuSection, true},                {"modules", ModulesSection, true},
    {"cluster", ClusterSection, true},
    {"commandstats", CommandStatsSection, false}, {"errorstats", ErrorStatsSection, true},
    {"latencystats", LatencyStatsSection, false},
    {"keyspace", KeyspaceSection, true},
    {"filterhealth", [](CommandContext& ctx) { return FilterHealthSection(ctx.server); }, false},
};

// INFO [section [section ...]]: "default", "all", "everything" or names.
void CmdInfo(CommandContext& ctx) {
  std::set<std::string_view> wanted;
  bool everything = false, defaults = ctx.args.size() == 1;
  for (std::string_view arg : ctx.args.subspan(1)) {
    if (EqualsIgnoreCase(arg, "all") || EqualsIgnoreCase(arg, "everything")) {
      everything = true;
    } else if (EqualsIgnoreCase(arg, "default")) {
      defaults = true;
    } else {
      for (const InfoSection& section : kInfoSections) {
        if (EqualsIgnoreCase(arg, section.name)) wanted.insert(section.name);
      }
    }
  }
  std::string text;
  for (const InfoSection& section : kInfoSections) {
    if (everything || (defaults && section.in_default) || wanted.count(section.name)) {
      if (!text.empty()) text += "\r\n";
      text += section.render(ctx);
    }
  }
  ctx.reply.Verbatim(text);
}

// MODULE LIST
void CmdModuleList(CommandContext& ctx) { ReplyModuleList(ctx.reply); }

}  // namespace

std::vector<CommandSpec> IntrospectionCommands() {
  constexpr uint32_t kIntro = kCmdLoading | kCmdStale;
  auto sub = [](std::string_view name, int arity, CommandHandler handler,
                std::string_view summary, std::string_view since) {
    return CommandSpec{.name = name, .arity = arity, .flags = kIntro, .handler = handler,
                       .summary = summary, .group = "server", .since = since};
  };
  return {
      {.name = "command", .arity = -1, .flags = kIntro, .handler = CmdCommand,
       .summary = "Returns detailed information about all commands", .group = "server",
       .since = "2.8.13",
       .subcommands = {
           sub("count", 2, CmdCommandCount, "Returns a count of commands", "2.8.13"),
           sub("info", -2, CmdCommandInfo, "Returns information about one, multiple or all "
               "commands", "2.8.13"),
           sub("docs", -2, CmdCommandDocs, "Returns documentary information about one, "
               "multiple or all commands", "7.0.0"),
           sub("list", -2, CmdCommandList, "Returns a list of command names", "7.0.0"),
           sub("getkeys", -3, CmdCommandGetKeys, "Extracts the key names from an arbitrary "
               "command", "2.8.13"),
           HelpSubcommand("server", "5.0.0"),
       }},
      {.name = "info", .arity = -1, .flags = kIntro | kCmdDangerous, .handler = CmdInfo,
       .summary = "Returns information and statistics about the server", .group = "server",
       .since = "1.0.0"},
      {.name = "module", .arity = -2, .summary = "A container for module commands",
       .group = "server", .since = "4.0.0",
       .subcommands = {{.name = "list", .arity = 2, .flags = kCmdAdmin | kCmdNoScript,
                        .handler = CmdModuleList, .summary = "Returns all loaded modules",
                        .group = "server", .since = "4.0.0"},
                       HelpSubcommand("server", "5.0.0")}},
  };
}

}  // namespace bloomgate
