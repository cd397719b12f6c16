#include "server/commands/command_events.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "server/catalogue/command_table.h"
#include "server/durability/journal.h"

namespace bloomgate {

struct CommandEvents {
  std::string_view command;  // the row's full name
  bool reserves;             // always creates (or fails)
  bool may_create;           // creates a missing key on the way
  bool adds;                 // puts items in
};

namespace {

constexpr std::array<CommandEvents, 4> kCommandEvents = {{
    {"bf.reserve", /*reserves=*/true, /*may_create=*/false, /*adds=*/false},
    {"bf.add", false, true, true},
    {"bf.madd", false, true, true},
    {"bf.insert", false, true, true},
}};

constexpr std::string_view kReserveEvent = "bloom.reserve";
constexpr std::string_view kAddEvent = "bloom.add";

// Whether the add put at least one new item in. A Bloom add journals as
// kBloomAddedEffect, key, then one '1' per item counted as new; a command
// that journaled otherwise (a windowed filter's add) is taken as having
// added, its write having succeeded.
bool AddedAny(const CommandContext& ctx) {
  if (ctx.effect.size() >= 3 && ctx.effect[0] == kBloomAddedEffect) {
    return ctx.effect[2].find('1') != std::string_view::npos;
  }
  return true;
}

}  // namespace

const CommandEvents* EventsOf(ServerContext& server, const CommandSpec& spec) {
  if (!server.NotifiesKeyspace(kNotifyGeneric)) return nullptr;
  for (const CommandEvents& events : kCommandEvents) {
    if (events.command == spec.full_name) return &events;
  }
  return nullptr;
}

bool KeyExistedBefore(ServerContext& server, std::span<const KeyRef> keys, int64_t now_ms) {
  return !keys.empty() && server.keyspace.Peek(keys.front(), now_ms) != nullptr;
}

void PublishCommandEvents(CommandContext& ctx, const CommandEvents& events, bool existed) {
  if (ctx.args.size() < 2) return;
  const std::string_view key = ctx.args[1];
  bool created = events.reserves;
  if (events.may_create && !existed) {
    created = KeyExistedBefore(ctx.server, ctx.keys, ctx.now_ms);
  }
  if (created) ctx.server.NotifyKeyspaceEvent(kNotifyGeneric, kReserveEvent, key);
  if (events.adds && AddedAny(ctx)) ctx.server.NotifyKeyspaceEvent(kNotifyGeneric, kAddEvent, key);
}

}  // namespace bloomgate
