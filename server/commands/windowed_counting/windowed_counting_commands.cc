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
#include "server/commands/family_shared/windowed_info.h"

namespace bloomgate {

// CBF.INFO of a windowed filter (windowed_info.h), as BF.INFO of a
// windowed Bloom filter, its live generations judged as lookups judge them.
void ReplyWindowedCountingInfo(CommandContext& ctx, const KeyEntry& entry,
                               const WindowedCountingBloomFilter& filter) {
  const int64_t now = ctx.WindowNowMs();
  ReplyWindowInfo(ctx, entry, filter, now, filter.LookupAt(now));
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
