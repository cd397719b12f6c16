// Windowed Bloom filters: BF.* serves them (bloom_commands.cc asks the entry
// which kind it holds); this file has what is theirs alone — BF.INFO's
// window fields, BF.DEBUG's generations, and the family's registration
// (TYPE name, check-snapshot summary, health) with no command rows of its own.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "filters/filter_health.h"
#include "filters/windowed_bloom_filter.h"
#include "server/base/clock.h"
#include "server/catalogue/filter_family.h"
#include "server/commands/bloom/bloom_options.h"
#include "server/commands/command_context.h"
#include "server/commands/family_shared/windowed_info.h"

namespace bloomgate {

// BF.INFO of a windowed filter (windowed_info.h), its live generations
// judged at the newer of the clock's generation and the current one.
void ReplyWindowedInfo(CommandContext& ctx, const KeyEntry& entry,
                       const WindowedBloomFilter& filter) {
  const int64_t now = ctx.WindowNowMs();
  ReplyWindowInfo(ctx, entry, filter, now,
                  std::max(filter.GenerationAt(now), filter.current_generation()));
}

// BF.DEBUG of a windowed filter: "size:" and the items live now, then one
// line per layer of each live generation, newest first, RedisBloom's layer
// line after "generation:<g> ".
void ReplyWindowedDebug(CommandContext& ctx, const WindowedBloomFilter& filter) {
  const int64_t now = ctx.WindowNowMs();
  std::vector<std::string> lines;
  ForEachLiveGeneration(filter, std::max(filter.GenerationAt(now), filter.current_generation()),
                        [&lines](uint64_t generation, const ScalableBloomFilter& inner) {
                          for (const BloomLayerInfo& layer : inner.Layers()) {
                            lines.push_back("generation:" + std::to_string(generation) + " " +
                                            BloomDebugLine(layer));
                          }
                        });
  ctx.reply.ArrayHeader(1 + lines.size());
  ctx.reply.Bulk("size:" + std::to_string(filter.ItemsAt(now)));
  for (const std::string& line : lines) ctx.reply.Bulk(line);
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
