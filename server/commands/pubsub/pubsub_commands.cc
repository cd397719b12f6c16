// Pub/sub: Redis 7.0's pubsub.c replies. Each (un)subscription is confirmed
// with its own [kind, name, count] frame (a push in RESP3), where count is
// the client's channels plus patterns after that step; UNSUBSCRIBE and
// PUNSUBSCRIBE with no names leave every one, and confirm once with a null
// name when there was none. Channel permissions are checked centrally, with
// the other ACL rules (access/acl_user.h, the rows' channel_args).
#include "server/commands/pubsub/pubsub_commands.h"

#include <optional>

#include "server/catalogue/command_table.h"
#include "server/commands/command_context.h"
#include "server/commands/server/container_help.h"

namespace bloomgate {
namespace {

Subscriber& SubscriberOf(ClientState& client) {
  if (client.subscriber == nullptr) {
    client.subscriber = std::make_shared<Subscriber>(client.wake_subscriber);
    client.subscriber->set_resp3(client.resp3);
    if (client.info) client.info->set_subscriber(client.subscriber);
  }
  return *client.subscriber;
}

// CLIENT LIST's sub= / psub= and the client's type follow its subscriptions.
void PublishCounts(ClientState& client) {
  if (client.info == nullptr || client.subscriber == nullptr) return;
  client.info->sub.store(client.subscriber->channels().size(), std::memory_order_relaxed);
  client.info->psub.store(client.subscriber->patterns().size(), std::memory_order_relaxed);
}

void Confirm(ReplyBuilder& reply, std::string_view kind, const std::string_view* name,
             size_t count) {
  reply.PushHeader(3);
  reply.Bulk(kind);
  if (name != nullptr) {
    reply.Bulk(*name);
  } else {
    reply.Null();
  }
  reply.Integer(static_cast<int64_t>(count));
}

template <bool kPattern>
void SubscribeCommand(CommandContext& ctx) {
  Subscriber& subscriber = SubscriberOf(ctx.client);
  for (size_t i = 1; i < ctx.args.size(); ++i) {
    const std::string_view name = ctx.args[i];
    if constexpr (kPattern) {
      ctx.server.pubsub.SubscribePattern(ctx.client.subscriber, name);
    } else {
      ctx.server.pubsub.Subscribe(ctx.client.subscriber, name);
    }
    Confirm(ctx.reply, kPattern ? "psubscribe" : "subscribe", &name, subscriber.count());
  }
  PublishCounts(ctx.client);
}

template <bool kPattern>
void UnsubscribeCommand(CommandContext& ctx) {
  Subscriber& subscriber = SubscriberOf(ctx.client);
  PubSubHub& hub = ctx.server.pubsub;
  const std::string_view kind = kPattern ? "punsubscribe" : "unsubscribe";
  if (ctx.args.size() == 1) {
    // Each confirmation counts what is left after that one went.
    const std::set<std::string, std::less<>>& own =
        kPattern ? subscriber.patterns() : subscriber.channels();
    if (own.empty()) Confirm(ctx.reply, kind, nullptr, subscriber.count());
    while (!own.empty()) {
      const std::string name = *own.begin();
      kPattern ? hub.UnsubscribePattern(subscriber, name) : hub.Unsubscribe(subscriber, name);
      const std::string_view view = name;
      Confirm(ctx.reply, kind, &view, subscriber.count());
    }
  } else {
    for (size_t i = 1; i < ctx.args.size(); ++i) {
      const std::string_view name = ctx.args[i];
      kPattern ? hub.UnsubscribePattern(subscriber, name) : hub.Unsubscribe(subscriber, name);
      Confirm(ctx.reply, kind, &name, subscriber.count());
    }
  }
  PublishCounts(ctx.client);
}

// PUBLISH channel message: the number of clients that received it.
void CmdPublish(CommandContext& ctx) {
  ctx.reply.Integer(
      ctx.server.pubsub.Publish(ctx.args[1], ctx.args[2], ctx.server.client_output_buffer_limit()));
}

// PUBSUB CHANNELS [pattern]
void CmdPubSubChannels(CommandContext& ctx) {
  std::optional<std::string_view> pattern;
  if (ctx.args.size() == 3) pattern = ctx.args[2];
  const std::vector<std::string> names = ctx.server.pubsub.Channels(pattern);
  ctx.reply.ArrayHeader(names.size());
  for (const std::string& name : names) ctx.reply.Bulk(name);
}

// PUBSUB NUMSUB [channel ...]: channel, count, ... as one flat array in
// both protocols, as Redis 7.0 replies.
void CmdPubSubNumSub(CommandContext& ctx) {
  ctx.reply.ArrayHeader((ctx.args.size() - 2) * 2);
  for (size_t i = 2; i < ctx.args.size(); ++i) {
    ctx.reply.Bulk(ctx.args[i]);
    ctx.reply.Integer(static_cast<int64_t>(ctx.server.pubsub.NumSub(ctx.args[i])));
  }
}

// PUBSUB NUMPAT: distinct patterns with a subscriber.
void CmdPubSubNumPat(CommandContext& ctx) {
  ctx.reply.Integer(static_cast<int64_t>(ctx.server.pubsub.pattern_count()));
}

}  // namespace

void LeavePubSub(ServerContext& server, ClientState& client) {
  if (client.subscriber == nullptr) return;
  server.pubsub.UnsubscribeAll(*client.subscriber);
  server.pubsub.UnsubscribeAllPatterns(*client.subscriber);
  PublishCounts(client);
}

std::vector<CommandSpec> PubSubCommands() {
  // Redis 7.0's flags: every one runs while loading and on a stale replica;
  // PUBLISH is fast and, like every pub/sub command, allowed on a read-only
  // replica (it is no write: Sentinel publishes its hellos to replicas).
  constexpr uint32_t kPubSub = kCmdLoading | kCmdStale | kCmdNoScript;
  auto sub = [](std::string_view name, int arity, int max_args, CommandHandler handler,
                std::string_view summary) {
    return CommandSpec{.name = name, .arity = arity, .max_args = max_args,
                       .flags = kCmdLoading | kCmdStale, .handler = handler,
                       .summary = summary, .group = "pubsub", .since = "2.8.0"};
  };
  return {
      {.name = "subscribe", .arity = -2, .flags = kPubSub,
       .channel_args = ChannelArgs::kAll, .handler = SubscribeCommand<false>,
       .summary = "Listens for messages published to channels", .group = "pubsub",
       .since = "2.0.0"},
      {.name = "unsubscribe", .arity = -1, .flags = kPubSub,
       .handler = UnsubscribeCommand<false>,
       .summary = "Stops listening to messages posted to channels", .group = "pubsub",
       .since = "2.0.0"},
      {.name = "psubscribe", .arity = -2, .flags = kPubSub,
       .channel_args = ChannelArgs::kAllPatterns, .handler = SubscribeCommand<true>,
       .summary = "Listens for messages published to channels that match one or more patterns",
       .group = "pubsub", .since = "2.0.0"},
      {.name = "punsubscribe", .arity = -1, .flags = kPubSub,
       .handler = UnsubscribeCommand<true>,
       .summary = "Stops listening to messages published to channels that match one or more "
                  "patterns",
       .group = "pubsub", .since = "2.0.0"},
      {.name = "publish", .arity = 3, .flags = kCmdLoading | kCmdStale | kCmdFast,
       .channel_args = ChannelArgs::kFirst, .handler = CmdPublish, .summary = "Posts a message to a channel", .group = "pubsub",
       .since = "2.0.0"},
      {.name = "pubsub", .arity = -2, .summary = "A container for Pub/Sub commands",
       .group = "pubsub", .since = "2.8.0",
       .subcommands = {
           sub("channels", -2, 3, CmdPubSubChannels, "Returns the active channels"),
           sub("numsub", -2, 0, CmdPubSubNumSub, "Returns a count of subscribers to channels"),
           sub("numpat", 2, 0, CmdPubSubNumPat, "Returns a count of unique pattern subscriptions"),
           HelpSubcommand("pubsub", "6.2.0"),
       }},
  };
}

}  // namespace bloomgate
