// Windowed counting Bloom filters: CBF.* serves them (counting_bloom_commands.cc
// asks the entry which kind it holds); this file has what is theirs alone —
// CBF.INFO's window fields, and the family's registration (TYPE name,
// check-snapshot summary, health) with no command rows of its own.
#include <cstdio>
#include <string>
#include <vector>

#include "filters/filter_health.h"
#include "filters/windowed_counting_bloom_filter.h"
#include "server/base/clock.h"
#include "server/catalogue/filter_family.h"
#include "server/commands/command_context.h"
#include "server/commands/info_reply.h"

namespace bloomgate {

// CBF.INFO of a windowed filter: the counting filter's fields first, with
// the same names and meanings over the live generations, then the window's
// own (as BF.INFO of a windowed Bloom filter).
void ReplyWindowedCountingInfo(CommandContext& ctx, const KeyEntry& entry,
                               const WindowedCountingBloomFilter& filter) {
  const int64_t now = WindowClockMs();
  const uint64_t at = filter.LookupAt(now);
  struct Live {
    uint64_t generation, items, capacity, saturated;
    uint32_t layers;
  };
  // Newest first.
  std::vector<Live> live = filter.WithSlots([&](const std::vector<WindowCountingSlotInfo>& slots) {
    std::vector<Live> out;
    for (uint64_t back = 0; back <= filter.generations() && back <= at; ++back) {
      const WindowCountingSlotInfo& s = slots[(at - back) % slots.size()];
      if (!s.present || s.generation != at - back) continue;
      out.push_back({s.generation, s.filter->items(), s.filter->capacity(),
                     s.filter->saturated_counters(), s.filter->num_layers()});
    }
    return out;
  });
  uint32_t layers = 0;
  uint64_t saturated = 0;
  for (const Live& l : live) {
    layers += l.layers;
    saturated += l.saturated;
  }
  auto integer = [](uint64_t value) {
    return [value](ReplyBuilder& reply) { reply.Integer(static_cast<int64_t>(value)); };
  };
  auto list = [&live](uint64_t Live::*field) {
    return [&live, field](ReplyBuilder& reply) {
      reply.ArrayHeader(live.size());
      for (const Live& l : live) reply.Integer(static_cast<int64_t>(l.*field));
    };
  };
  const InfoField fields[] = {
      {"CAPACITY", "Capacity", integer(filter.capacity())},
      {"SIZE", "Size", integer(entry.MemoryUsage())},
      {"FILTERS", "Number of filters", integer(layers)},
      {"ITEMS", "Number of items inserted", integer(filter.ItemsAt(now))},
      {"EXPANSION", "Expansion rate", integer(filter.expansion())},
      {"COUNTERBITS", "Counter bits", integer(filter.counter_bits())},
      {"SATURATED", "Saturated counters", integer(saturated)},
      {"WINDOW", "Window ms", integer(filter.window_ms())},
      {"GENERATIONS", "Generations", integer(filter.generations())},
      {"AGE", "Current generation age ms",
       integer(static_cast<uint64_t>(filter.GenerationAgeMs(now)))},
      // Per live generation, newest first: occurrences and capacity.
      {"", "Generation items", list(&Live::items)},
      {"", "Generation capacity", list(&Live::capacity)},
  };
  std::optional<std::string_view> selector;
  if (ctx.args.size() == 3) selector = ctx.args[2];
  if (!ReplyInfoFields(ctx.reply, fields, selector)) ctx.failed = true;
}

namespace {

// BLOOMGATE.HEALTH: the generations live now, as BF.INFO / CBF.INFO count them.
FilterHealth Health(const WindowedCountingBloomFilter& f, uint64_t max_scan_bytes) {
  return WindowedCountingBloomHealth(f, NowMs(), max_scan_bytes);
}

// check-snapshot's summary line.
std::string Describe(const WindowedCountingBloomFilter& f) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "windowed counting bloom: window %llu ms in %u generations, current %llu, "
                "capacity %llu, error %g, expansion %u, %u-bit counters, %llu bytes",
                static_cast<unsigned long long>(f.window_ms()), f.generations(),
                static_cast<unsigned long long>(f.current_generation()),
                static_cast<unsigned long long>(f.capacity()), f.error_rate(), f.expansion(),
                f.counter_bits(), static_cast<unsigned long long>(f.memory_bytes()));
  return line;
}

}  // namespace

// The family's registration (server/commands/registry.cc registers it).
// No rows: CBF.* (CountingBloomFamily, the same group) serves it.
const FilterFamily& WindowedCountingBloomFamily() {
  static const FilterFamily family{
      .kind = FilterKind::kWindowedCountingBloom,
      .type_name = "BGcountWB",  // ours, beside BGcountBF
      .group = "cbf",
      .acl_category = "@bloom",
      .writes = FamilyWrites::kExclusive,
      .commands = nullptr,
      .describe = DescribeAs<WindowedCountingBloomFilter, Describe>,
      .health = HealthAs<WindowedCountingBloomFilter, Health>,
  };
  return family;
}

}  // namespace bloomgate
