// Connection commands: PING, ECHO, QUIT, SELECT, AUTH, HELLO, RESET, CLIENT and
// MONITOR.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "server/access/auth_throttle.h"
#include "server/base/log_limiter.h"
#include "server/catalogue/command_table.h"
#include "server/commands/arg_parser.h"
#include "server/commands/command_context.h"
#include "server/commands/command_dispatcher.h"
#include "server/commands/server/container_help.h"
#include "server/commands/errors.h"
#include "server/commands/server/module_info.h"
#include "server/commands/pubsub/pubsub_commands.h"
#include "server/replication/replication.h"

namespace bloomgate {
namespace {

LogLimiter failed_auth_log(/*interval_ms=*/1000);

// Checks a username/password pair against the ACL users (requirepass is the
// default user's password). An unknown user, a disabled one and a wrong
// password get the same reply, as in Redis, and all are throttled per
// connection and per source address (server/access/auth_throttle.h).
std::optional<std::string_view> Authenticate(CommandContext& ctx, std::string_view user,
                                             std::string_view password) {
  AuthThrottle& throttle = ctx.server.auth_throttle;
  const std::string_view address =
      ctx.client.info != nullptr ? PeerAddress(ctx.client.info->addr) : std::string_view();
  int64_t retry_after_ms = 0;
  if (!address.empty() && !throttle.Allowed(address, ctx.now_ms, &retry_after_ms)) {
    return errors::kAuthThrottled;
  }
  // Read before the user, so a change in between is seen at the next command.
  const uint64_t acl_version = ctx.server.acl.version();
  std::shared_ptr<const AclUser> found = ctx.server.acl.Find(user);
  if (found == nullptr || !AclPasswordMatches(*found, password)) {
    const uint32_t from_address = throttle.RecordFailure(address, ctx.now_ms);
    AclLogEntry entry{.reason = "auth", .context = "toplevel", .object = "AUTH",
                      .username = std::string(user)};
    if (ctx.client.info) {
      entry.client_info = ctx.client.info->Describe(ctx.now_ms, ctx.server.keyspace);
    }
    ctx.server.acl_log.Add(std::move(entry), ctx.now_ms);
    if (++ctx.client.auth_failures >= AuthThrottle::kFailuresPerConnection) {
      ctx.client.close_after_reply = true;
    }
    uint64_t suppressed = 0;
    if (failed_auth_log.Allow(ctx.now_ms, &suppressed)) {
      spdlog::warn("failed AUTH from {} ({} from this address recently{}; {} similar suppressed)",
                   address.empty() ? "an internal client" : address, from_address,
                   ctx.client.close_after_reply ? ", closing the connection" : "", suppressed);
    }
    return errors::kWrongPass;
  }
  ctx.client.auth_failures = 0;
  if (!address.empty()) throttle.RecordSuccess(address);
  ctx.client.authenticated = true;
  ctx.client.user = std::move(found);
  ctx.client.acl_version = acl_version;
  ctx.client.user_deleted = false;
  if (ctx.client.info) ctx.client.info->set_user(ctx.client.user->name);
  return std::nullopt;
}

// Client names and library names may not break CLIENT LIST's one-line format.
bool ValidClientName(std::string_view name) {
  return std::all_of(name.begin(), name.end(), [](char c) { return c > ' ' && c <= '~'; });
}

void CmdPing(CommandContext& ctx) {
  if (ctx.client.subscribed() && !ctx.client.resp3) {
    // Redis: a subscribed RESP2 client reads replies among its messages,
    // so PING answers in a message's shape, ["pong", message or ""].
    ctx.reply.ArrayHeader(2);
    ctx.reply.Bulk("pong");
    ctx.reply.Bulk(ctx.args.size() == 2 ? ctx.args[1] : std::string_view());
    return;
  }
  if (ctx.args.size() == 2) {
    ctx.reply.Bulk(ctx.args[1]);
  } else {
    ctx.reply.SimpleString("PONG");
  }
}

void CmdEcho(CommandContext& ctx) { ctx.reply.Bulk(ctx.args[1]); }

void CmdQuit(CommandContext& ctx) {
  ctx.client.close_after_reply = true;
  ctx.reply.Ok();
}

void CmdSelect(CommandContext& ctx) {
  int64_t db = 0;
  if (!ParseInt64(ctx.args[1], &db)) {
    ctx.Fail(errors::kNotInteger);
    return;
  }
  if (db != 0) {
    ctx.Fail(errors::kDbIndexOutOfRange);
    return;
  }
  ctx.reply.Ok();
}

// AUTH [username] password
void CmdAuth(CommandContext& ctx) {
  if (ctx.args.size() > 3) {
    ctx.Fail(errors::kSyntax);  // Redis's reply, not an arity error
    return;
  }
  if (ctx.args.size() == 2 && ctx.server.acl.DefaultUserNoPass()) {
    ctx.Fail(errors::kAuthNotConfigured);
    return;
  }
  std::string_view user = ctx.args.size() == 3 ? ctx.args[1] : "default";
  auto error = Authenticate(ctx, user, ctx.args.back());
  if (error) {
    ctx.Fail(*error);
    return;
  }
  ctx.reply.Ok();
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
void CmdHello(CommandContext& ctx) {
  ArgParser parser(ctx.args, 1);
  std::optional<int64_t> version;
  if (parser.HasNext()) {
    version = parser.NextInt64(errors::kSyntax,
                               errors::kHelloBadProtocol);
    if (!parser.failed() && *version != 2 && *version != 3) parser.Fail(errors::kNoProto);
  }
  std::optional<std::pair<std::string_view, std::string_view>> auth;
  std::optional<std::string_view> name;
  while (parser.HasNext() && !parser.failed()) {
    if (parser.Accept("AUTH")) {
      std::string_view user = parser.Next(errors::kSyntax);
      std::string_view password = parser.Next(errors::kSyntax);
      auth.emplace(user, password);
    } else if (parser.Accept("SETNAME")) {
      name = parser.Next(errors::kSyntax);
      if (!parser.failed() && !ValidClientName(*name)) parser.Fail(errors::kClientNameSpaces);
    } else {
      parser.Fail(errors::HelloSyntax(parser.Next("")));
    }
  }
  if (parser.failed()) {
    ctx.Fail(parser.error());
    return;
  }
  if (auth) {
    if (auto error = Authenticate(ctx, auth->first, auth->second)) {
      ctx.Fail(*error);
      return;
    }
  }
  if (!ctx.client.authenticated) {
    ctx.Fail(errors::kHelloNoAuth);
    return;
  }
  if (name && ctx.client.info) ctx.client.info->set_name(std::string(*name));
  if (version) {
    ctx.client.resp3 = *version == 3;
    ctx.reply.set_resp3(ctx.client.resp3);
    if (ctx.client.info) ctx.client.info->resp.store(static_cast<int>(*version));
  }
  ctx.reply.MapHeader(7);
  ctx.reply.Bulk("server");
  ctx.reply.Bulk("redis");
  ctx.reply.Bulk("version");
  ctx.reply.Bulk(kRedisVersion);
  ctx.reply.Bulk("proto");
  ctx.reply.Integer(ctx.client.resp3 ? 3 : 2);
  ctx.reply.Bulk("id");
  ctx.reply.Integer(ctx.client.info ? static_cast<int64_t>(ctx.client.info->id) : 0);
  ctx.reply.Bulk("mode");
  ctx.reply.Bulk("standalone");
  ctx.reply.Bulk("role");
  ctx.reply.Bulk(ctx.server.replication->is_replica() ? "replica" : "master");
  ctx.reply.Bulk("modules");
  ReplyModuleList(ctx.reply);
}

void CmdClientId(CommandContext& ctx) {
  ctx.reply.Integer(ctx.client.info ? static_cast<int64_t>(ctx.client.info->id) : 0);
}

void CmdClientSetName(CommandContext& ctx) {
  if (!ValidClientName(ctx.args[2])) {
    ctx.Fail(errors::kClientNameSpaces);
    return;
  }
  if (ctx.client.info) ctx.client.info->set_name(std::string(ctx.args[2]));
  ctx.reply.Ok();
}

void CmdClientGetName(CommandContext& ctx) {
  std::string name = ctx.client.info ? ctx.client.info->name() : "";
  if (name.empty()) {
    ctx.reply.Null();
  } else {
    ctx.reply.Bulk(name);
  }
}

// CLIENT SETINFO LIB-NAME name | LIB-VER version (redis-py 5 sends it on connect)
void CmdClientSetInfo(CommandContext& ctx) {
  bool lib_name = EqualsIgnoreCase(ctx.args[2], "LIB-NAME");
  if (!lib_name && !EqualsIgnoreCase(ctx.args[2], "LIB-VER")) {
    ctx.Fail(errors::UnrecognizedOption(ctx.args[2]));
    return;
  }
  if (!ValidClientName(ctx.args[3])) {
    ctx.Fail(errors::ClientLibInfoInvalid(lib_name));
    return;
  }
  if (ctx.client.info) {
    if (lib_name) {
      ctx.client.info->set_lib_name(std::string(ctx.args[3]));
    } else {
      ctx.client.info->set_lib_ver(std::string(ctx.args[3]));
    }
  }
  ctx.reply.Ok();
}

// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id [id ...]]
void CmdClientList(CommandContext& ctx) {
  ArgParser parser(ctx.args, 2);
  std::vector<uint64_t> ids;
  std::optional<ClientType> type_filter;
  while (parser.HasNext() && !parser.failed()) {
    if (parser.Accept("TYPE")) {
      std::string_view type = parser.Next(errors::kSyntax);
      if (parser.failed()) break;
      type_filter = ParseClientType(type);
      if (!type_filter) parser.Fail(errors::UnknownClientType(type));
    } else if (parser.Accept("ID")) {
      if (!parser.HasNext()) parser.Fail(errors::kSyntax);
      while (parser.HasNext() && !parser.failed()) {
        ids.push_back(parser.NextUint64(errors::kSyntax, errors::kInvalidClientId));
      }
    } else {
      parser.Fail(errors::kSyntax);
    }
  }
  if (parser.failed()) {
    ctx.Fail(parser.error());
    return;
  }
  std::string text;
  for (const auto& info : ctx.server.clients.Snapshot()) {
    if (!ids.empty() && std::find(ids.begin(), ids.end(), info->id) == ids.end()) continue;
    if (type_filter && info->type() != *type_filter) continue;
    text += info->Describe(ctx.now_ms, ctx.server.keyspace);
    text += '\n';
  }
  ctx.reply.Verbatim(text);
}

// CLIENT KILL ip:port (the old form: +OK or "No such client"), or
// CLIENT KILL <filter value> ... with Redis's filters, ANDed: ID, TYPE
// normal|master|replica|slave|pubsub, USER, ADDR, LADDR, SKIPME yes|no,
// MAXAGE seconds; replies how many clients were killed. TYPE is Redis's
// client type (ClientInfo::type): TYPE normal spares subscribers and
// replication links, as Sentinel's reconfiguration relies on; USER is an ACL user's name, and an
// unknown one is an error, as in Redis. The close goes through the same
// per-client hook as ACL DELUSER's (ClientInfo::RequestClose).
void CmdClientKill(CommandContext& ctx) {
  const uint64_t self_id = ctx.client.info ? ctx.client.info->id : 0;
  if (ctx.args.size() == 3) {
    for (const auto& info : ctx.server.clients.Snapshot()) {
      if (info->addr != ctx.args[2]) continue;
      if (info->id == self_id) {
        ctx.client.close_after_reply = true;  // after the +OK, as Redis
        ctx.reply.Ok();
        return;
      }
      if (info->RequestClose()) {
        ctx.reply.Ok();
        return;
      }
    }
    ctx.Fail(errors::kNoSuchClient);
    return;
  }
  std::optional<uint64_t> id;
  std::optional<std::string_view> addr, laddr;
  std::optional<int64_t> max_age_s;
  std::optional<std::string> user_filter;
  bool skip_me = true;
  std::optional<ClientType> type_filter;
  ArgParser parser(ctx.args, 2);
  while (parser.HasNext() && !parser.failed()) {
    if (parser.Accept("ID")) {
      int64_t value = parser.NextInt64(errors::kSyntax, errors::kClientIdNotPositive);
      if (!parser.failed() && value <= 0) parser.Fail(errors::kClientIdNotPositive);
      id = static_cast<uint64_t>(value);
    } else if (parser.Accept("TYPE")) {
      std::string_view type = parser.Next(errors::kSyntax);
      if (parser.failed()) break;
      type_filter = ParseClientType(type);
      if (!type_filter) parser.Fail(errors::UnknownClientType(type));
    } else if (parser.Accept("USER")) {
      std::string_view user = parser.Next(errors::kSyntax);
      if (parser.failed()) break;
      if (ctx.server.acl.Find(user) == nullptr) {
        parser.Fail(errors::NoSuchUser(user));
      } else {
        user_filter = std::string(user);
      }
    } else if (parser.Accept("ADDR")) {
      addr = parser.Next(errors::kSyntax);
    } else if (parser.Accept("LADDR")) {
      laddr = parser.Next(errors::kSyntax);
    } else if (parser.Accept("SKIPME")) {
      std::string_view value = parser.Next(errors::kSyntax);
      if (EqualsIgnoreCase(value, "yes")) {
        skip_me = true;
      } else if (EqualsIgnoreCase(value, "no")) {
        skip_me = false;
      } else {
        parser.Fail(errors::kSyntax);
      }
    } else if (parser.Accept("MAXAGE")) {
      max_age_s = parser.NextInt64(errors::kSyntax, errors::kNotInteger);
    } else {
      parser.Fail(errors::kSyntax);
    }
  }
  if (parser.failed()) {
    ctx.Fail(parser.error());
    return;
  }
  int64_t killed = 0;
  for (const auto& info : ctx.server.clients.Snapshot()) {
    if (type_filter && info->type() != *type_filter) continue;
    if (id && info->id != *id) continue;
    if (addr && info->addr != *addr) continue;
    if (laddr && info->laddr != *laddr) continue;
    if (user_filter && info->user() != *user_filter) continue;
    if (skip_me && info->id == self_id) continue;
    // MAXAGE n: clients older than n seconds, as Redis (>= since 7.4).
    if (max_age_s && (ctx.now_ms - info->created_ms) / 1000 < *max_age_s) continue;
    if (info->id == self_id) {
      // SKIPME no: as Redis, the caller gets its reply (inside EXEC, every
      // reply of the transaction) and closes after it.
      ctx.client.close_after_reply = true;
      ++killed;
      continue;
    }
    if (info->RequestClose()) ++killed;
  }
  ctx.reply.Integer(killed);
}

// CLIENT NO-EVICT on|off
void CmdClientNoEvict(CommandContext& ctx) {
  const bool on = EqualsIgnoreCase(ctx.args[2], "on");
  if (!on && !EqualsIgnoreCase(ctx.args[2], "off")) {
    ctx.Fail(errors::kSyntax);
    return;
  }
  if (ctx.client.info) ctx.client.info->no_evict.store(on, std::memory_order_relaxed);
  ctx.reply.Ok();
}

// RESET: the connection as if new: no transaction or watches, RESP2, no
// name, no-evict off, and back to the default ACL user, authenticated only
// if that user is on and has nopass (Redis's clientSetDefaultAuth); out of
// MONITOR mode. The connection then sets its parser limits from the new
// authentication state (the small ones of an unauthenticated client when
// the default user needs a password).
void CmdReset(CommandContext& ctx) {
  // RESET needs no AUTH, so the ACL check did not run: a connection whose
  // user was deleted must not come back as "default" before ACL DELUSER's
  // close reaches it. It gets its reply and closes.
  if (CurrentAclUser(ctx.server, ctx.client) == nullptr && ctx.client.user_deleted) {
    ctx.client.close_after_reply = true;
  }
  ctx.client.ResetTransaction();
  ctx.client.monitor = false;  // out of MONITOR mode, as Redis's RESET
  ctx.client.cluster_asking = false;  // and out of ASKING and READONLY
  ctx.client.cluster_readonly = false;
  ctx.client.restore_chunk.reset();  // and a RESTORE-CHUNK staging is dropped
  LeavePubSub(ctx.server, ctx.client);  // off every channel and pattern, unconfirmed
  ctx.client.resp3 = false;
  ctx.reply.set_resp3(false);
  // Read before the user, so a change in between is seen at the next command.
  ctx.client.acl_version = ctx.server.acl.version();
  ctx.client.user = ctx.server.acl.Find("default");
  ctx.client.user_deleted = false;
  ctx.client.authenticated =
      ctx.client.user != nullptr && ctx.client.user->enabled && ctx.client.user->nopass;
  if (ctx.client.info) {
    ctx.client.info->set_user("default");
    ctx.client.info->set_name("");
    ctx.client.info->resp.store(2, std::memory_order_relaxed);
    ctx.client.info->no_evict.store(false, std::memory_order_relaxed);
    ctx.client.info->monitor.store(false, std::memory_order_relaxed);
  }
  ctx.reply.SimpleString("RESET");
}

// CLIENT PAUSE timeout [WRITE|ALL]: the mode is checked first, then the
// timeout (ms), as Redis does; ALL by default. The pause (and Redis's hold on
// expiry) lasts until now + timeout, or longer if one in force ends later.
void CmdClientPause(CommandContext& ctx) {
  PauseMode mode = PauseMode::kAll;
  if (ctx.args.size() == 4) {
    if (EqualsIgnoreCase(ctx.args[3], "write")) {
      mode = PauseMode::kWrite;
    } else if (!EqualsIgnoreCase(ctx.args[3], "all")) {
      ctx.Fail(errors::kPauseMode);
      return;
    }
  }
  int64_t timeout_ms = 0;
  if (!ParseInt64(ctx.args[2], &timeout_ms)) {
    ctx.Fail(errors::kTimeoutNotInteger);
    return;
  }
  if (timeout_ms < 0) {
    ctx.Fail(errors::kTimeoutNegative);
    return;
  }
  if (timeout_ms > INT64_MAX - ctx.now_ms) {
    ctx.Fail(errors::kTimeoutOutOfRange);
    return;
  }
  ctx.server.PauseClients(PausePurpose::kClientCommand, mode, ctx.now_ms + timeout_ms, ctx.now_ms);
  ctx.reply.Ok();
}

// CLIENT UNPAUSE: ends the clients' pause at once and wakes the parked
// clients; a manual failover's pause stays (it guards against lost writes).
void CmdClientUnpause(CommandContext& ctx) {
  ctx.server.UnpauseClients(PausePurpose::kClientCommand);
  ctx.reply.Ok();
}

// MONITOR: from now on the connection receives a line for every command any
// client runs (the connection subscribes once it sees `client.monitor`,
// after this reply). Again from a monitor: ignored with no reply, as Redis.
void CmdMonitor(CommandContext& ctx) {
  if (ctx.client.monitor) return;
  if (ctx.client.in_exec) {
    ctx.Fail(errors::kMonitorDenyBlocking);
    return;
  }
  ctx.client.monitor = true;
  if (ctx.client.info) ctx.client.info->monitor.store(true, std::memory_order_relaxed);
  ctx.reply.Ok();
}

void CmdClientInfo(CommandContext& ctx) {
  ctx.reply.Verbatim(
      ctx.client.info ? ctx.client.info->Describe(ctx.now_ms, ctx.server.keyspace) + "\n" : "");
}

}  // namespace

std::vector<CommandSpec> ConnectionCommands() {
  constexpr uint32_t kConn = kCmdFast | kCmdLoading | kCmdStale | kCmdNoScript;
  auto sub = [](std::string_view name, int arity, int max_args, CommandHandler handler,
                std::string_view summary, std::string_view since) {
    return CommandSpec{.name = name, .arity = arity, .max_args = max_args,
                       .flags = kCmdNoScript | kCmdLoading | kCmdStale, .handler = handler,
                       .summary = summary, .group = "connection", .since = since};
  };
  return {
      {.name = "ping", .arity = -1, .max_args = 2, .flags = kCmdFast, .handler = CmdPing,
       .summary = "Returns the server's liveliness response", .group = "connection",
       .since = "1.0.0"},
      {.name = "echo", .arity = 2, .flags = kCmdFast, .handler = CmdEcho,
       .summary = "Returns the given string", .group = "connection", .since = "1.0.0"},
      // QUIT runs at once even inside MULTI, as in Redis.
      {.name = "quit", .arity = -1, .flags = kConn | kCmdNoAuth | kCmdNoMulti,
       .handler = CmdQuit,
       .summary = "Closes the connection", .group = "connection", .since = "1.0.0"},
      {.name = "select", .arity = 2, .flags = kConn, .handler = CmdSelect,
       .summary = "Changes the selected database (only database 0 exists)",
       .group = "connection", .since = "1.0.0"},
      {.name = "auth", .arity = -2, .flags = kConn | kCmdNoAuth | kCmdRedactArgs,
       .handler = CmdAuth, .summary = "Authenticates the connection", .group = "connection",
       .since = "1.0.0"},
      {.name = "hello", .arity = -1, .max_args = 7, .flags = kConn | kCmdNoAuth | kCmdRedactArgs,
       .handler = CmdHello, .summary = "Handshakes with the server", .group = "connection",
       .since = "6.0.0"},
      // RESET runs at once inside MULTI (it discards it), as in Redis.
      {.name = "reset", .arity = 1, .flags = kConn | kCmdNoAuth | kCmdNoMulti,
       .handler = CmdReset, .summary = "Resets the connection", .group = "connection",
       .since = "6.2.0"},
      {.name = "monitor", .arity = 1, .flags = kCmdAdmin | kCmdNoScript | kCmdLoading | kCmdStale,
       .handler = CmdMonitor,
       .summary = "Listens for all requests received by the server in real-time",
       .group = "server", .since = "1.0.0"},
      {.name = "client", .arity = -2, .summary = "A container for client connection commands",
       .group = "connection", .since = "2.4.0",
       .subcommands = {
           sub("id", 2, 0, CmdClientId, "Returns the unique client ID of the connection",
               "5.0.0"),
           sub("setname", 3, 0, CmdClientSetName, "Sets the connection name", "2.6.9"),
           sub("getname", 2, 0, CmdClientGetName, "Returns the name of the connection",
               "2.6.9"),
           sub("setinfo", 4, 0, CmdClientSetInfo,
               "Sets information specific to the client or connection", "7.2.0"),
           sub("list", -2, 0, CmdClientList, "Lists open connections", "2.4.0"),
           sub("info", 2, 0, CmdClientInfo, "Returns information about the connection",
               "6.2.0"),
           {.name = "kill", .arity = -3, .flags = kCmdAdmin | kCmdNoScript | kCmdLoading |
                                                 kCmdStale,
            .handler = CmdClientKill, .summary = "Terminates open connections",
            .group = "connection", .since = "2.4.0"},
           {.name = "pause", .arity = -3, .max_args = 4,
            .flags = kCmdAdmin | kCmdNoScript | kCmdLoading | kCmdStale,
            .handler = CmdClientPause,
            .summary = "Suspends commands processing", .group = "connection",
            .since = "3.0.0"},
           {.name = "unpause", .arity = 2,
            .flags = kCmdAdmin | kCmdNoScript | kCmdLoading | kCmdStale,
            .handler = CmdClientUnpause,
            .summary = "Resumes processing commands from paused clients",
            .group = "connection", .since = "6.2.0"},
           {.name = "no-evict", .arity = 3, .flags = kCmdAdmin | kCmdNoScript | kCmdLoading |
                                                     kCmdStale,
            .handler = CmdClientNoEvict,
            .summary = "Set client eviction mode for the current connection",
            .group = "connection", .since = "7.0.0"},
           HelpSubcommand("connection", "5.0.0"),
       }},
  };
}

}  // namespace bloomgate
