// BLOOMGATE.HEALTH and INFO filterhealth (filter_health_report.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server/base/log_limiter.h"
#include "server/catalogue/family_registry.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"
#include "server/commands/server/filter_health_report.h"
#include "server/context/server_context.h"

namespace bloomgate {
namespace {

// One line a second at most: a client can fill many filters in a loop.
LogLimiter fill_log(/*interval_ms=*/1000);

void ReplyLayer(ReplyBuilder& reply, const LayerHealth& layer) {
  reply.MapHeader(9);
  reply.SimpleString("Capacity");
  reply.Integer(static_cast<int64_t>(layer.capacity));
  reply.SimpleString("Items");
  reply.Integer(static_cast<int64_t>(layer.items));
  reply.SimpleString("Cells");
  reply.Integer(static_cast<int64_t>(layer.cells));
  reply.SimpleString("Cells set");
  reply.Integer(static_cast<int64_t>(layer.cells_set));
  reply.SimpleString("Fill ratio");
  reply.Double(layer.fill_ratio);
  reply.SimpleString("Error rate");
  reply.Double(layer.fp_rate_design);
  reply.SimpleString("Estimated error rate");
  reply.Double(layer.fp_rate_now);
  reply.SimpleString("Saturated counters");
  reply.Integer(static_cast<int64_t>(layer.saturated));
  reply.SimpleString("Sampled");
  reply.Integer(layer.sampled ? 1 : 0);
}

// BLOOMGATE.HEALTH key
void CmdHealth(CommandContext& ctx) {
  EntryPtr entry = ctx.server.keyspace.Find(ctx.Key(ctx.args[1]), ctx.now_ms);
  if (entry == nullptr) {
    ctx.Fail(errors::kNotFound);
    return;
  }
  const FilterFamily* family = FindFamily(KindOf(entry->filter()));
  if (family == nullptr || family->health == nullptr) {
    ctx.Fail(errors::kWrongType);
    return;
  }
  // Runs under the key's shared lock: adds may go on (relaxed reads of the
  // bits), no layer is freed meanwhile (the entry reference holds it).
  const FilterHealth health = family->health(entry->filter(), kDefaultHealthScanBytes);
  ReplyBuilder& reply = ctx.reply;
  reply.MapHeader(10);
  reply.SimpleString("Type");
  reply.SimpleString(family->type_name);
  reply.SimpleString("Capacity");
  reply.Integer(static_cast<int64_t>(health.capacity));
  reply.SimpleString("Items");
  reply.Integer(static_cast<int64_t>(health.items));
  reply.SimpleString("Scaling");
  reply.Integer(health.scaling ? 1 : 0);
  reply.SimpleString("Full");
  reply.Integer(health.full ? 1 : 0);
  reply.SimpleString("Error rate");
  reply.Double(health.fp_rate_design);
  reply.SimpleString("Estimated error rate");
  reply.Double(health.fp_rate_now);
  reply.SimpleString("Saturated counters");
  reply.Integer(static_cast<int64_t>(health.saturated));
  reply.SimpleString("Bytes scanned");
  reply.Integer(static_cast<int64_t>(health.bytes_scanned));
  reply.SimpleString("Layers");
  reply.ArrayHeader(health.layers.size());
  for (const LayerHealth& layer : health.layers) ReplyLayer(reply, layer);
}

}  // namespace

std::string FilterHealthSection(ServerContext& server) {
  uint64_t filters = 0, non_scaling = 0, full = 0, over = 0, saturated = 0;
  uint64_t items = 0, capacity = 0;
  double worst_load = 0;
  server.keyspace.ForEachKey("*", NowMs(), [&](const std::string&, const EntryPtr& entry) {
    const FilterFamily* family = FindFamily(KindOf(entry->filter()));
    if (family == nullptr || family->health == nullptr) return;
    const FilterHealth health = family->health(entry->filter(), /*max_scan_bytes=*/0);
    ++filters;
    non_scaling += health.scaling ? 0 : 1;
    full += health.full ? 1 : 0;
    over += health.over_capacity ? 1 : 0;
    saturated += health.saturated;
    items += health.items;
    capacity += health.capacity;
    if (health.capacity > 0) {
      worst_load = std::max(worst_load, static_cast<double>(health.items) /
                                            static_cast<double>(health.capacity));
    }
  });
  return fmt::format(
      "# Filterhealth\r\n"
      "filters:{}\r\nfilters_non_scaling:{}\r\nfilters_full:{}\r\nfilters_over_capacity:{}\r\n"
      "saturated_counters:{}\r\nitems:{}\r\ncapacity:{}\r\nmax_items_per_capacity:{:.4f}\r\n",
      filters, non_scaling, full, over, saturated, items, capacity, worst_load);
}

void NoteNonScalingFill(std::string_view command, std::string_view key, uint64_t items_before,
                        uint64_t items_after, uint64_t capacity) {
  if (items_before >= capacity || items_after < capacity) return;
  uint64_t suppressed = 0;
  if (!fill_log.Allow(NowMs(), &suppressed)) return;
  spdlog::warn("{}: the non-scaling filter '{}' reached its capacity of {} items; further adds "
               "are refused (BLOOMGATE.HEALTH shows its fill) ({} similar suppressed)",
               command, key, capacity, suppressed);
}

std::vector<CommandSpec> HealthCommands() {
  return {
      {.name = "bloomgate.health", .arity = 2, .flags = kCmdReadOnly, .first_key = 1,
       .last_key = 1, .key_step = 1, .handler = CmdHealth,
       .summary = "Returns the fill of each layer of a filter and the false-positive rate it "
                  "implies now",
       .group = "server", .since = "0.1.0"},
  };
}

}  // namespace bloomgate
