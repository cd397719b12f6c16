#include "server/commands/command_events.h"

#include <algorithm>
#include <array>
#include <string>

#include "server/catalogue/command_table.h"
#include "server/durability/journal.h"

namespace bloomgate {

// What a row's success means, and under which family's name.
enum class ItemEffect {
  kNone,          // creates only
  kAdds,          // puts items in whenever it succeeds
  kAddsIfAnyOne,  // puts items in if its reply holds a 1 (a 0 per refused item)
  kDeletesIfAnyOne,
};

struct CommandEvents {
  std::string_view command;  // the row's full name
  std::string_view family;   // the events' prefix
  bool reserves;             // always creates (or fails)
  bool may_create;           // creates a missing key on the way
  ItemEffect items;
  // A command that neither creates nor takes items (it rewrites a filter
  // whole): "<family>.<verb>" on every success.
  std::string_view verb = {};
};

namespace {

using enum ItemEffect;

constexpr std::array kCommandEvents = {
    CommandEvents{"bf.reserve", "bloom", true, false, kNone},
    CommandEvents{"bf.add", "bloom", false, true, kAdds},
    CommandEvents{"bf.madd", "bloom", false, true, kAdds},
    CommandEvents{"bf.insert", "bloom", false, true, kAdds},
    CommandEvents{"bf.merge", "bloom", false, true, kAdds},
    CommandEvents{"cbf.reserve", "cbf", true, false, kNone},
    CommandEvents{"cbf.add", "cbf", false, true, kAdds},
    CommandEvents{"cbf.madd", "cbf", false, true, kAdds},
    CommandEvents{"cbf.insert", "cbf", false, true, kAdds},
    CommandEvents{"cbf.incr", "cbf", false, true, kAdds},
    CommandEvents{"cbf.merge", "cbf", false, true, kAdds},
    CommandEvents{"cbf.del", "cbf", false, false, kDeletesIfAnyOne},
    CommandEvents{"cbf.mdel", "cbf", false, false, kDeletesIfAnyOne},
    CommandEvents{"cf.reserve", "cuckoo", true, false, kNone},
    CommandEvents{"cf.add", "cuckoo", false, true, kAdds},
    CommandEvents{"cf.addnx", "cuckoo", false, true, kAddsIfAnyOne},
    CommandEvents{"cf.insert", "cuckoo", false, true, kAdds},
    CommandEvents{"cf.insertnx", "cuckoo", false, true, kAddsIfAnyOne},
    CommandEvents{"cf.del", "cuckoo", false, false, kDeletesIfAnyOne},
    CommandEvents{"cms.initbydim", "cms", true, false, kNone},
    CommandEvents{"cms.initbyprob", "cms", true, false, kNone},
    CommandEvents{"cms.incrby", "cms", false, false, kAdds},
    CommandEvents{"cms.merge", "cms", false, false, kAdds},
    CommandEvents{"topk.reserve", "topk", true, false, kNone},
    CommandEvents{"topk.add", "topk", false, false, kAdds},
    CommandEvents{"topk.incrby", "topk", false, false, kAdds},
    CommandEvents{"tdigest.create", "tdigest", true, false, kNone},
    CommandEvents{"tdigest.add", "tdigest", false, false, kAdds},
    CommandEvents{"tdigest.merge", "tdigest", false, true, kAdds},
    CommandEvents{"cf.compact", "cuckoo", false, false, kNone, "compact"},
    CommandEvents{"tdigest.reset", "tdigest", false, false, kNone, "reset"},
    CommandEvents{"bf.loadchunk", "bloom", false, false, kNone, "loadchunk"},
    CommandEvents{"cf.loadchunk", "cuckoo", false, false, kNone, "loadchunk"},
    CommandEvents{"cbf.loadchunk", "cbf", false, false, kNone, "loadchunk"},
    CommandEvents{"cms.loadchunk", "cms", false, false, kNone, "loadchunk"},
    CommandEvents{"topk.loadchunk", "topk", false, false, kNone, "loadchunk"},
};

// Whether a Bloom add put at least one new item in. It journals as
// kBloomAddedEffect, key, then one '1' per item counted as new; one that
// journaled otherwise (a windowed filter's add) is taken as having added,
// its write having succeeded.
bool BloomAddedAny(const CommandContext& ctx) {
  if (ctx.effect.size() >= 3 && ctx.effect[0] == kBloomAddedEffect) {
    return ctx.effect[2].find('1') != std::string_view::npos;
  }
  return true;
}

// A reply of 0/1 integers or booleans, alone or in an array: whether one is 1.
bool ReplyHoldsAOne(std::string_view reply) {
  return reply.find(":1\r\n") != std::string_view::npos ||
         reply.find("#t\r\n") != std::string_view::npos;
}

bool TookItems(const CommandContext& ctx, const CommandEvents& events, std::string_view reply) {
  switch (events.items) {
    case kNone: return false;
    case kAdds: return events.family != "bloom" || BloomAddedAny(ctx);
    case kAddsIfAnyOne:
    case kDeletesIfAnyOne: return ReplyHoldsAOne(reply);
  }
  return false;
}

void PublishFamilyEvent(CommandContext& ctx, std::string_view family, std::string_view verb,
             std::string_view key) {
  std::string event;
  event.reserve(family.size() + 1 + verb.size());
  event.append(family).append(".").append(verb);
  ctx.server.NotifyKeyspaceEvent(kNotifyModule, event, key);
}

}  // namespace

const CommandEvents* EventsOf(ServerContext& server, const CommandSpec& spec) {
  if (!server.NotifiesKeyspace(kNotifyModule)) return nullptr;
  auto row = std::find_if(kCommandEvents.begin(), kCommandEvents.end(),
                          [&](const CommandEvents& events) {
                            return events.command == spec.full_name;
                          });
  return row == kCommandEvents.end() ? nullptr : &*row;
}

bool KeyExistedBefore(ServerContext& server, std::span<const KeyRef> keys, int64_t now_ms) {
  return !keys.empty() && server.keyspace.Peek(keys.front(), now_ms) != nullptr;
}

void PublishCommandEvents(CommandContext& ctx, const CommandEvents& events, bool existed,
                          std::string_view reply) {
  if (ctx.args.size() < 2) return;
  const std::string_view key = ctx.args[1];
  bool created = events.reserves;
  if (events.may_create && !existed) {
    created = KeyExistedBefore(ctx.server, ctx.keys, ctx.now_ms);
  }
  if (created) PublishFamilyEvent(ctx, events.family, "reserve", key);
  if (!events.verb.empty()) PublishFamilyEvent(ctx, events.family, events.verb, key);
  if (!TookItems(ctx, events, reply)) return;
  PublishFamilyEvent(ctx, events.family,
                     events.items == ItemEffect::kDeletesIfAnyOne ? "del" : "add", key);
}

}  // namespace bloomgate
