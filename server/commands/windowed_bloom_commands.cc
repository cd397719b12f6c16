// Windowed Bloom filters: BF.* serves them (bloom_commands.cc asks the entry
// which kind it holds); this file has what is theirs alone — BF.INFO's
// window fields, and the family's registration (TYPE name, check-snapshot
// summary, health) with no command rows of its own.
#include <cstdio>
#include <string>
#include <vector>

#include "filters/filter_health.h"
#include "filters/windowed_bloom_filter.h"
#include "server/base/clock.h"
#include "server/catalogue/filter_family.h"
#include "server/commands/command_context.h"
#include "server/commands/info_reply.h"

namespace bloomgate {

// BF.INFO of a windowed filter: RedisBloom's five fields first, with the
// same names and meanings over the live generations (a client parsing
// RedisBloom's reply by name keeps working), then the window's own.
void ReplyWindowedInfo(CommandContext& ctx, const KeyEntry& entry,
                       const WindowedBloomFilter& filter) {
  const int64_t now = WindowClockMs();
  const uint64_t at = std::max(filter.GenerationAt(now), filter.current_generation());
  struct Live {
    uint64_t generation, items, capacity;
    uint32_t layers;
  };
  // Newest first.
  std::vector<Live> live = filter.WithSlots([&](const std::vector<WindowSlotInfo>& slots) {
    std::vector<Live> out;
    for (uint64_t back = 0; back <= filter.generations() && back <= at; ++back) {
      const WindowSlotInfo& s = slots[(at - back) % slots.size()];
      if (!s.present || s.generation != at - back) continue;
      out.push_back({s.generation, s.filter->items(), s.filter->capacity(),
                     s.filter->num_layers()});
    }
    return out;
  });
  uint32_t layers = 0;
  for (const Live& l : live) layers += l.layers;
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
      {"WINDOW", "Window ms", integer(filter.window_ms())},
      {"GENERATIONS", "Generations", integer(filter.generations())},
      {"AGE", "Current generation age ms", integer(static_cast<uint64_t>(filter.GenerationAgeMs(now)))},
      // Per live generation, newest first: items added and capacity, the
      // generation's fill being their ratio.
      {"", "Generation items", list(&Live::items)},
      {"", "Generation capacity", list(&Live::capacity)},
  };
  std::optional<std::string_view> selector;
  if (ctx.args.size() == 3) selector = ctx.args[2];
  if (!ReplyInfoFields(ctx.reply, fields, selector)) ctx.failed = true;
}

namespace {

// BLOOMGATE.HEALTH: the generations live now, as BF.INFO / CBF.INFO count them.
FilterHealth Health(const WindowedBloomFilter& f, uint64_t max_scan_bytes) {
  return WindowedBloomHealth(f, NowMs(), max_scan_bytes);
}

// check-snapshot's summary line.
std::string Describe(const WindowedBloomFilter& f) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "windowed bloom: window %llu ms in %u generations, current %llu, capacity %llu, "
                "error %g, expansion %u, %llu bytes",
                static_cast<unsigned long long>(f.window_ms()), f.generations(),
                static_cast<unsigned long long>(f.current_generation()),
                static_cast<unsigned long long>(f.capacity()), f.error_rate(), f.expansion(),
                static_cast<unsigned long long>(f.memory_bytes()));
  return line;
}

}  // namespace

// The family's registration (server/commands/registry.cc registers it).
// No rows: BF.* (BloomFamily, the same group) serves it.
const FilterFamily& WindowedBloomFamily() {
  static const FilterFamily family{
      .kind = FilterKind::kWindowedBloom,
      .type_name = "MBbloomW-",  // ours; RedisBloom has no windowed filter
      .group = "bf",
      .acl_category = "@bloom",
      .writes = FamilyWrites::kCommute,
      .commands = nullptr,
      .describe = DescribeAs<WindowedBloomFilter, Describe>,
      .health = HealthAs<WindowedBloomFilter, Health>,
  };
  return family;
}

}  // namespace bloomgate
