// BF.INFO and CBF.INFO of a windowed filter, one reply over either inner
// filter: the inner family's fields first, with the same names and meanings
// over the live generations (a client parsing RedisBloom's reply by name
// keeps working), then the window's own.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "server/commands/command_context.h"
#include "server/commands/family_shared/info_reply.h"
#include "server/keyspace/keyspace.h"

namespace bloomgate {

// A live generation as INFO reports it.
struct LiveGeneration {
  uint64_t generation, items, capacity, saturated;
  uint32_t layers;
};

// fn(generation, its filter) for each generation live at generation `at`,
// newest first, under the filter's slot lock.
template <typename W, typename Fn>
void ForEachLiveGeneration(const W& filter, uint64_t at, Fn&& fn) {
  filter.WithSlots([&](const auto& slots) {
    for (uint64_t back = 0; back <= filter.generations() && back <= at; ++back) {
      const auto& s = slots[(at - back) % slots.size()];
      if (!s.present || s.generation != at - back) continue;
      fn(s.generation, *s.filter);
    }
    return 0;
  });
}

// The generations live at generation `at`, newest first.
template <typename W>
std::vector<LiveGeneration> LiveGenerations(const W& filter, uint64_t at) {
  std::vector<LiveGeneration> out;
  ForEachLiveGeneration(filter, at, [&out](uint64_t generation, const auto& inner) {
    LiveGeneration g{generation, inner.items(), inner.capacity(), 0, inner.num_layers()};
    if constexpr (requires { inner.saturated_counters(); }) {
      g.saturated = inner.saturated_counters();
    }
    out.push_back(g);
  });
  return out;
}

// The reply, for `filter` under `entry` at window clock `now`, its live
// generations judged at `at`. Counting filters add COUNTERBITS and SATURATED
// after EXPANSION, as CBF.INFO of a plain one.
template <typename W>
void ReplyWindowInfo(CommandContext& ctx, const KeyEntry& entry, const W& filter, int64_t now,
                     uint64_t at) {
  const std::vector<LiveGeneration> live = LiveGenerations(filter, at);
  uint64_t layers = 0, saturated = 0;
  for (const LiveGeneration& l : live) {
    layers += l.layers;
    saturated += l.saturated;
  }
  auto integer = [](uint64_t value) {
    return [value](ReplyBuilder& reply) { reply.Integer(static_cast<int64_t>(value)); };
  };
  auto list = [&live](uint64_t LiveGeneration::*field) {
    return [&live, field](ReplyBuilder& reply) {
      reply.ArrayHeader(live.size());
      for (const LiveGeneration& l : live) reply.Integer(static_cast<int64_t>(l.*field));
    };
  };
  std::vector<InfoField> fields = {
      {"CAPACITY", "Capacity", integer(filter.capacity())},
      {"SIZE", "Size", integer(entry.MemoryUsage())},
      {"FILTERS", "Number of filters", integer(layers)},
      {"ITEMS", "Number of items inserted", integer(filter.ItemsAt(now))},
      {"EXPANSION", "Expansion rate", integer(filter.expansion())},
  };
  if constexpr (requires { filter.counter_bits(); }) {
    fields.push_back({"COUNTERBITS", "Counter bits", integer(filter.counter_bits())});
    fields.push_back({"SATURATED", "Saturated counters", integer(saturated)});
  }
  fields.push_back({"WINDOW", "Window ms", integer(filter.window_ms())});
  fields.push_back({"GENERATIONS", "Generations", integer(filter.generations())});
  fields.push_back({"AGE", "Current generation age ms",
                    integer(static_cast<uint64_t>(filter.GenerationAgeMs(now)))});
  // Per live generation, newest first: items added (a counting filter's
  // occurrences) and capacity, the generation's fill being their ratio.
  fields.push_back({"", "Generation items", list(&LiveGeneration::items)});
  fields.push_back({"", "Generation capacity", list(&LiveGeneration::capacity)});
  std::optional<std::string_view> selector;
  if (ctx.args.size() == 3) selector = ctx.args[2];
  if (!ReplyInfoFields(ctx.reply, fields, selector)) ctx.failed = true;
}

}  // namespace bloomgate
