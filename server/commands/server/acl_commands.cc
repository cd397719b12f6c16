// ACL SETUSER / DELUSER / GETUSER / LIST / USERS / WHOAMI / LOG / CAT: Redis 7's
// ACL commands over the users in access/acl_store.h. The permission check
// itself is central, in the dispatcher; these only read and change users.
// Changes are not persisted: as in Redis without an ACL file, users come
// back from the config file's `users` at start-up.
#include <algorithm>

#include "server/access/acl_log.h"
#include "server/catalogue/acl_categories.h"
#include "server/catalogue/command_table.h"
#include "server/commands/arg_parser.h"
#include "server/commands/command_context.h"
#include "server/commands/server/container_help.h"
#include "server/commands/errors.h"

namespace bloomgate {
namespace {

// As Redis 7's ACLKillPubsubClientsIfNeeded: a connection of `name`
// subscribed to a channel or pattern its new rules no longer allow is
// closed (the caller after its reply), rather than left receiving what it
// may not.
void CloseSubscribersOutsideTheirChannels(CommandContext& ctx, std::string_view name) {
  std::shared_ptr<const AclUser> user = ctx.server.acl.Find(name);
  if (user == nullptr || user->all_channels) return;
  auto allowed = [&](std::string_view channel, bool is_pattern) {
    return AclChannelAllowed(*user, channel, is_pattern);
  };
  for (const auto& info : ctx.server.clients.Snapshot()) {
    if (info->user() != name) continue;
    std::shared_ptr<Subscriber> subscriber = info->subscriber();
    if (subscriber == nullptr || ctx.server.pubsub.EverySubscription(*subscriber, allowed)) {
      continue;
    }
    if (info == ctx.client.info) {
      ctx.client.close_after_reply = true;
    } else {
      info->RequestClose();
    }
  }
}

// ACL SETUSER username [rule ...]
void CmdAclSetUser(CommandContext& ctx) {
  std::string_view name = ctx.args[2];
  if (!ValidAclName(name)) {
    ctx.Fail(errors::kAclBadUsername);
    return;
  }
  if (auto error = ctx.server.acl.SetUser(name, ctx.args.subspan(3))) {
    ctx.Fail(*error);
    return;
  }
  CloseSubscribersOutsideTheirChannels(ctx, name);
  ctx.reply.Ok();
}

// ACL DELUSER username [username ...]: also closes every connection
// authenticated as a deleted user, as Redis does.
void CmdAclDelUser(CommandContext& ctx) {
  std::span<const std::string_view> names = ctx.args.subspan(2);
  if (std::find(names.begin(), names.end(), "default") != names.end()) {
    ctx.Fail(errors::kAclDefaultUserUndeletable);
    return;
  }
  std::vector<std::string> deleted = ctx.server.acl.DeleteUsers(names);
  auto was_deleted = [&](const std::string& user) {
    return std::find(deleted.begin(), deleted.end(), user) != deleted.end();
  };
  if (!deleted.empty()) {
    for (const auto& info : ctx.server.clients.Snapshot()) {
      if (info == ctx.client.info || !was_deleted(info->user())) continue;
      info->RequestClose();
    }
    // This connection gets its reply first, then closes.
    if (ctx.client.user != nullptr && was_deleted(ctx.client.user->name)) {
      ctx.client.close_after_reply = true;
    }
  }
  ctx.reply.Integer(static_cast<int64_t>(deleted.size()));
}

// ACL GETUSER username: Redis 7's fields; "selectors" is always empty (no
// selectors).
void CmdAclGetUser(CommandContext& ctx) {
  std::shared_ptr<const AclUser> user = ctx.server.acl.Find(ctx.args[2]);
  if (user == nullptr) {
    ctx.reply.Null();
    return;
  }
  ctx.reply.MapHeader(6);
  ctx.reply.Bulk("flags");
  ctx.reply.SetHeader(user->nopass ? 2 : 1);
  ctx.reply.Bulk(user->enabled ? "on" : "off");
  if (user->nopass) ctx.reply.Bulk("nopass");
  ctx.reply.Bulk("passwords");
  ctx.reply.ArrayHeader(user->password_hashes.size());
  for (const std::string& hash : user->password_hashes) ctx.reply.Bulk(hash);
  ctx.reply.Bulk("commands");
  ctx.reply.Bulk(DescribeAclCommands(*user));
  ctx.reply.Bulk("keys");
  std::string keys = user->all_keys ? "~*" : "";
  for (const std::string& pattern : user->key_patterns) {
    if (!keys.empty()) keys += ' ';
    keys += "~" + pattern;
  }
  ctx.reply.Bulk(keys);
  ctx.reply.Bulk("channels");
  ctx.reply.Bulk(DescribeAclChannels(*user));
  ctx.reply.Bulk("selectors");
  ctx.reply.ArrayHeader(0);
}

// ACL LOG [count | RESET]: the latest refusals, newest first (10 unless
// asked), with Redis 7.2's fields.
void CmdAclLog(CommandContext& ctx) {
  size_t count = 10;
  if (ctx.args.size() == 3) {
    if (EqualsIgnoreCase(ctx.args[2], "RESET")) {
      ctx.server.acl_log.Reset();
      ctx.reply.Ok();
      return;
    }
    ArgParser parser(ctx.args, 2);
    const int64_t asked = parser.NextInt64(errors::kSyntax, errors::kNotInteger);
    if (parser.failed()) {
      ctx.Fail(parser.error());
      return;
    }
    if (asked < 0) {
      ctx.Fail(errors::kValueMustBePositive);
      return;
    }
    count = static_cast<size_t>(asked);
  }
  const std::vector<AclLogEntry> entries = ctx.server.acl_log.Latest(count);
  ctx.reply.ArrayHeader(entries.size());
  for (const AclLogEntry& entry : entries) {
    ctx.reply.MapHeader(10);
    ctx.reply.Bulk("count");
    ctx.reply.Integer(static_cast<int64_t>(entry.count));
    ctx.reply.Bulk("reason");
    ctx.reply.Bulk(entry.reason);
    ctx.reply.Bulk("context");
    ctx.reply.Bulk(entry.context);
    ctx.reply.Bulk("object");
    ctx.reply.Bulk(entry.object);
    ctx.reply.Bulk("username");
    ctx.reply.Bulk(entry.username);
    ctx.reply.Bulk("age-seconds");
    ctx.reply.Double(static_cast<double>(ctx.now_ms - entry.updated_ms) / 1000.0);
    ctx.reply.Bulk("client-info");
    ctx.reply.Bulk(entry.client_info);
    ctx.reply.Bulk("entry-id");
    ctx.reply.Integer(static_cast<int64_t>(entry.entry_id));
    ctx.reply.Bulk("timestamp-created");
    ctx.reply.Integer(entry.created_ms);
    ctx.reply.Bulk("timestamp-last-updated");
    ctx.reply.Integer(entry.updated_ms);
  }
}

// ACL LIST: each user as the rules that recreate it.
void CmdAclList(CommandContext& ctx) {
  auto users = ctx.server.acl.All();
  ctx.reply.ArrayHeader(users.size());
  for (const auto& user : users) ctx.reply.Bulk("user " + user->name + " " + DescribeAclUser(*user));
}

void CmdAclUsers(CommandContext& ctx) {
  auto users = ctx.server.acl.All();
  ctx.reply.ArrayHeader(users.size());
  for (const auto& user : users) ctx.reply.Bulk(user->name);
}

void CmdAclWhoAmI(CommandContext& ctx) {
  ctx.reply.Bulk(ctx.client.user != nullptr ? ctx.client.user->name : "default");
}

// ACL CAT [category]: the categories (without '@'), or the commands in one.
void CmdAclCat(CommandContext& ctx) {
  if (ctx.args.size() == 2) {
    auto names = AclCategoryNames();
    ctx.reply.ArrayHeader(names.size());
    for (std::string_view name : names) ctx.reply.Bulk(name.substr(1));
    return;
  }
  auto index = FindAclCategory(ctx.args[2]);
  if (!index) {
    ctx.Fail(errors::UnknownAclCategory(ctx.args[2]));
    return;
  }
  std::vector<std::string_view> names;
  for (const CommandSpec* spec : ctx.server.commands.all()) {
    // A container without a handler of its own is not a command one runs.
    if (spec->handler == nullptr) continue;
    if (spec->acl_categories & (uint64_t{1} << *index)) names.push_back(spec->full_name);
  }
  ctx.reply.ArrayHeader(names.size());
  for (std::string_view name : names) ctx.reply.Bulk(name);
}

}  // namespace

std::vector<CommandSpec> AclCommands() {
  constexpr uint32_t kAclRead = kCmdNoScript | kCmdLoading | kCmdStale;
  constexpr uint32_t kAclAdmin = kAclRead | kCmdAdmin;
  auto sub = [](std::string_view name, int arity, int max_args, uint32_t flags,
                CommandHandler handler, std::string_view summary) {
    return CommandSpec{.name = name, .arity = arity, .max_args = max_args, .flags = flags,
                       .handler = handler, .summary = summary, .group = "server",
                       .since = "6.0.0"};
  };
  return {
      {.name = "acl", .arity = -2, .summary = "A container for Access List Control commands",
       .group = "server", .since = "6.0.0",
       .subcommands = {
           sub("setuser", -3, 0, kAclAdmin, CmdAclSetUser,
               "Creates and modifies an ACL user and its rules"),
           sub("deluser", -3, 0, kAclAdmin, CmdAclDelUser,
               "Deletes ACL users, and terminates their connections"),
           sub("getuser", 3, 0, kAclAdmin, CmdAclGetUser, "Lists the ACL rules of a user"),
           sub("list", 2, 0, kAclAdmin, CmdAclList, "Dumps the effective rules in ACL file format"),
           sub("users", 2, 0, kAclAdmin, CmdAclUsers, "Lists all ACL users"),
           sub("whoami", 2, 0, kAclRead, CmdAclWhoAmI,
               "Returns the authenticated username of the current connection"),
           sub("log", -2, 3, kAclAdmin, CmdAclLog,
               "Lists recent security events generated due to ACL rules"),
           sub("cat", -2, 3, kAclRead, CmdAclCat,
               "Lists the ACL categories, or the commands inside a category"),
           HelpSubcommand("server", "6.0.0"),
       }},
  };
}

}  // namespace bloomgate
