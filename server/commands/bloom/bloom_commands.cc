// BF.*: RedisBloom-compatible scalable Bloom filter commands.
//
// The ops (create, find, add) are in bloom_ops.h and return values; the
// handlers here parse arguments, call them and write the reply. Reply shapes and error
// texts follow RedisBloom (Redis 8), see shared COMPAT.md §1.4-1.5; where
// RedisBloom silently misreads input (options matched by first letter or
// searched across the whole argument list) we refuse it instead.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

#include "filters/key_hash.h"
#include "server/catalogue/command_table.h"
#include "server/catalogue/filter_family.h"
#include "server/commands/bloom/bloom_merge.h"
#include "server/commands/bloom/bloom_ops.h"
#include "server/commands/family_shared/chunk_transfer.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"
#include "server/commands/family_shared/family_rows.h"
#include "server/commands/server/filter_health_report.h"
#include "server/commands/family_shared/filter_lookup.h"
#include "server/commands/family_shared/info_reply.h"
#include "server/commands/windowed_bloom/windowed_bloom_ops.h"

namespace bloomgate {

void ReplyBoolsThenError(ReplyBuilder& reply, const std::vector<bool>& results,
                         std::optional<std::string_view> error) {
  reply.ArrayHeader(results.size() + (error ? 1 : 0));
  reply.Bools(results);
  if (error) reply.Error(*error);
}

const FilterFamily& BloomFamily();  // the record, at the end of this file

// windowed_bloom_commands.cc: BF.INFO's reply for a windowed filter.
void ReplyWindowedInfo(CommandContext& ctx, const KeyEntry& entry,
                       const WindowedBloomFilter& filter);
// ... and BF.DEBUG's.
void ReplyWindowedDebug(CommandContext& ctx, const WindowedBloomFilter& filter);

std::string BloomDebugLine(const BloomLayerInfo& layer) {
  char line[256];
  // %g for the ratio, as RedisBloom prints it (0.005, 1.25e-05).
  std::snprintf(line, sizeof(line),
                "bytes:%llu bits:%llu hashes:%u hashwidth:64 capacity:%llu size:%llu ratio:%g",
                static_cast<unsigned long long>(layer.bytes),
                static_cast<unsigned long long>(layer.bits), layer.probes,
                static_cast<unsigned long long>(layer.capacity),
                static_cast<unsigned long long>(layer.items), layer.error_rate);
  return line;
}

namespace {

// ---------------------------------------------------------------- cmds ---
// Each parses, calls the ops of bloom_ops.h, maps a status to its text with
// BloomStatusText and replies.

// A failed status as the command's reply; a memory refusal says its limit.
void Fail(CommandContext& ctx, BloomStatus status, const MemoryRefusal& refusal = {}) {
  ctx.Fail(BloomFailureText(status, refusal));
}

// The error that stopped a multi-item add, inside its array reply.
std::optional<std::string> StoppedBy(const BloomAddResult& result) {
  if (result.status == BloomStatus::kOk) return std::nullopt;
  return BloomFailureText(result.status, result.refusal);
}

// Has the journal record the adds that took effect rather than the command:
// replaying BF.MADD would judge capacity and limits again, in whatever order
// concurrent adds reach the log, and could refuse what was acknowledged here.
void JournalAdds(CommandContext& ctx, std::string_view key,
                 std::span<const std::string_view> items, const BloomAddResult& result) {
  BloomAddedEffect(key, items, result.added, &ctx.effect_bytes, ctx.ReusedEffect());
  // Nothing took effect: nothing to record (a creation journals itself).
  if (ctx.effect.empty()) ctx.skip_journal = true;
}

// The adding commands' common tail: find or create, add, journal.
BloomAddResult FindAndAdd(CommandContext& ctx, const CreateRule& rule,
                          std::span<const std::string_view> items, bool* found) {
  FilterStore store = StoreFor(ctx);
  EntryPtr entry;
  BloomAddResult result;
  result.status = FindOrCreateBloom(store, ctx.Key(ctx.args[1]), rule, &entry);
  *found = result.status == BloomStatus::kOk;
  if (!*found) {
    result.refusal = store.refusal;
    return result;
  }
  if (entry->get<WindowedBloomFilter>() != nullptr) {
    WindowAddResult added = AddWindowedItems(*entry, items, store.window_now_ms);
    WindowAddedEffect(ctx.args[1], items, added, &ctx.effect_bytes, &ctx.effect);
    if (ctx.effect.empty()) ctx.skip_journal = true;
    result.status = added.status;
    result.refusal = added.refusal;
    result.added = std::move(added.added);
    return result;
  }
  // Non-scaling fill warning (filter_health_report.h), here rather than in
  // the ops so they stay free of the command's name and the log.
  const ScalableBloomFilter& filter = *entry->bloom();
  const uint64_t items_before = filter.scaling() ? 0 : filter.items();
  result = AddBloomItems(*entry, items);
  if (!filter.scaling() &&
      std::find(result.added.begin(), result.added.end(), true) != result.added.end()) {
    NoteNonScalingFill(ctx.spec.full_name, ctx.args[1], items_before, filter.items(),
                       filter.capacity());
  }
  JournalAdds(ctx, ctx.args[1], items, result);
  return result;
}

// BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING] [SEED seed]
void CmdReserve(CommandContext& ctx) {
  ArgParser parser(ctx.args, 2);
  BloomParams params = DefaultBloomParams(ctx.server.config);
  ParseReserveArgs(parser, /*counting=*/false, &params);
  if (parser.failed()) {
    ctx.Fail(parser.error());
    return;
  }
  FilterStore store = StoreFor(ctx);
  const KeyRef key = ctx.Key(ctx.args[1]);
  const uint64_t bytes = BloomBytesEstimate(params);
  if (params.window_ms == 0 && params.error_rate >= kMinBloomErrorRate &&
      bytes >= FilterMaker::kInlineBytes) {
    // Big enough to build off the loop (FilterMaker), as TOPK.RESERVE: the
    // key is checked first, the build stored as ReserveBloom would store it.
    if (const Lookup conflict = ReserveConflict<ScalableBloomFilter>(store, key);
        conflict != Lookup::kMissing) {
      Fail(ctx, conflict == Lookup::kFound ? BloomStatus::kItemExists : BloomStatus::kWrongType);
      return;
    }
    std::unique_ptr<ScalableBloomFilter> filter;
    FilterStatus created = FilterStatus::kOk;
    MemoryRefusal refusal;
    if (!ctx.MakeFilter(bytes,
                        [options = BloomOptionsOf(params), limits = store.limits,
                         budget = store.budget](std::unique_ptr<ScalableBloomFilter>* out,
                                                MemoryRefusal* refused) {
                          return ScalableBloomFilter::Create(options, limits, budget, out,
                                                             refused);
                        },
                        &created, &filter, &refusal)) {
      return;  // parked: runs again once the filter is made off the loop
    }
    if (created != FilterStatus::kOk) {
      Fail(ctx, BloomCreateStatus(created, refusal), refusal);
      return;
    }
    EntryPtr entry;
    if (StoreNewFilter(store, key, std::move(filter), /*fail_if_exists=*/true, &entry) !=
        StoreOutcome::kStored) {
      Fail(ctx, BloomStatus::kItemExists);  // under this command's key lock: only a bug
      return;
    }
  } else if (BloomStatus status = ReserveBloom(store, key, params); status != BloomStatus::kOk) {
    Fail(ctx, status, store.refusal);
    return;
  }
  ctx.skip_journal = true;  // the creation record in the log says it all
  ctx.reply.Ok();
}

// BF.ADD key item
void CmdAdd(CommandContext& ctx) {
  bool found = false;
  BloomAddResult result = FindAndAdd(ctx, CreateRule{}, ctx.args.subspan(2, 1), &found);
  if (result.status != BloomStatus::kOk) {
    Fail(ctx, result.status, result.refusal);
    return;
  }
  ctx.reply.Bool(result.added[0]);
}

// BF.MADD key item [item ...]
void CmdMAdd(CommandContext& ctx) {
  bool found = false;
  BloomAddResult result = FindAndAdd(ctx, CreateRule{}, ctx.args.subspan(2), &found);
  if (!found) {
    Fail(ctx, result.status, result.refusal);
    return;
  }
  ReplyBoolsThenError(ctx.reply, result.added, StoppedBy(result));
}

// BF.INSERT key [CAPACITY capacity] [ERROR error] [EXPANSION expansion]
//           [NOCREATE] [NONSCALING] [SEED seed] [TIGHTENING ratio]
//           [VALIDATESCALETO count] ITEMS item [item ...]
void CmdInsert(CommandContext& ctx) {
  ArgParser parser(ctx.args, 2);
  CreateRule rule;
  ParseInsertArgs(parser, "bf.insert", /*counting=*/false, &rule);
  if (parser.failed()) {
    ctx.Fail(parser.error());
    return;
  }
  // valkey-bloom judges the command's parameters (with the defaults), before
  // and whatever the key holds; a replay never asks again (the adds are
  // journaled as their effect).
  if (rule.validate_scale_to) {
    const FilterStore store = StoreFor(ctx);
    if (BloomStatus status =
            CheckScaleTo(rule.Resolve(ctx.server.config), store.limits, *rule.validate_scale_to);
        status != BloomStatus::kOk) {
      Fail(ctx, status);
      return;
    }
  }
  bool found = false;
  BloomAddResult result = FindAndAdd(ctx, rule, parser.Rest(), &found);
  if (!found) {
    Fail(ctx, result.status, result.refusal);
    return;
  }
  ReplyBoolsThenError(ctx.reply, result.added, StoppedBy(result));
}

// The filter a read command works on: null for a missing key; false (and
// WRONGTYPE replied) for a key of another family.
bool FindForRead(CommandContext& ctx, EntryPtr* entry) {
  FilterStore store = StoreFor(ctx);
  switch (FindFilter<ScalableBloomFilter>(store, ctx.Key(ctx.args[1]), entry)) {
    case Lookup::kWrongType:
      Fail(ctx, BloomStatus::kWrongType);
      return false;
    case Lookup::kOutOfMemory:  // a write (CF.DEL, CBF.DEL...) whose snapshot copy does not fit
      Fail(ctx, BloomStatus::kSnapshotCopyOom);
      return false;
    case Lookup::kFound:
    case Lookup::kMissing:
      break;
  }
  return true;
}

// Whether the filter under `entry` (plain or windowed; null: none) may
// hold the item; a windowed one asks every generation live `now_ms`.
bool MayContain(const EntryPtr& entry, std::string_view item, int64_t now_ms) {
  if (entry == nullptr) return false;
  if (const WindowedBloomFilter* windowed = entry->get<WindowedBloomFilter>()) {
    return windowed->MayContain(windowed->Hash(item), now_ms);
  }
  return entry->bloom()->MayContain(entry->bloom()->Hash(item));
}

// BF.EXISTS key item
void CmdExists(CommandContext& ctx) {
  EntryPtr entry;
  if (!FindForRead(ctx, &entry)) return;
  ctx.reply.Bool(MayContain(entry, ctx.args[2], ctx.WindowNowMs()));
}

// BF.MEXISTS key item [item ...]
void CmdMExists(CommandContext& ctx) {
  EntryPtr entry;
  if (!FindForRead(ctx, &entry)) return;
  auto items = ctx.args.subspan(2);
  ctx.reply.ArrayHeader(items.size());
  if (entry != nullptr && entry->get<WindowedBloomFilter>() == nullptr) {
    bool found[kBloomBatchItems];
    for (size_t start = 0; start < items.size(); start += kBloomBatchItems) {
      const auto chunk = items.subspan(start, std::min(kBloomBatchItems, items.size() - start));
      MayContainBloomChunk(*entry->bloom(), chunk, found);
      for (size_t i = 0; i < chunk.size(); ++i) ctx.reply.Bool(found[i]);
    }
    return;
  }
  const int64_t now = ctx.WindowNowMs();
  for (std::string_view item : items) ctx.reply.Bool(MayContain(entry, item, now));
}

// BF.CARD key: for a windowed filter, the adds new to the window among the
// live generations (an item seen again in a later generation counts once).
void CmdCard(CommandContext& ctx) {
  EntryPtr entry;
  if (!FindForRead(ctx, &entry)) return;
  int64_t card = 0;
  if (entry == nullptr) {
    card = 0;
  } else if (const WindowedBloomFilter* windowed = entry->get<WindowedBloomFilter>()) {
    card = static_cast<int64_t>(windowed->ItemsAt(ctx.WindowNowMs()));
  } else {
    card = static_cast<int64_t>(entry->bloom()->items());
  }
  ctx.reply.Integer(card);
}

// BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION | ERROR |
//              TIGHTENING | MAXSCALEDCAPACITY]: RedisBloom's five fields,
// and valkey-bloom's three, which are only asked for by name (RedisBloom's
// full reply has five; client libraries read it whole). TIGHTENING and
// MAXSCALEDCAPACITY exist for a scaling filter only, as in valkey-bloom.
void CmdInfo(CommandContext& ctx) {
  EntryPtr entry;
  if (!FindForRead(ctx, &entry)) return;
  if (entry == nullptr) {
    Fail(ctx, BloomStatus::kNotFound);
    return;
  }
  if (const WindowedBloomFilter* windowed = entry->get<WindowedBloomFilter>()) {
    ReplyWindowedInfo(ctx, *entry, *windowed);
    return;
  }
  const ScalableBloomFilter& filter = *entry->bloom();
  auto integer = [](uint64_t value) {
    return [value](ReplyBuilder& reply) { reply.Integer(static_cast<int64_t>(value)); };
  };
  // A filter imported from RedisBloom reports the Size RedisBloom computes
  // for it (its structs and bit arrays), so INFO reads as before the move;
  // MEMORY USAGE still says what this process holds.
  uint64_t size = entry->MemoryUsage();
  if (filter.layout() == BloomLayout::kRedisBloom) {
    uint64_t bytes = 0;
    for (const BloomLayerInfo& layer : filter.Layers()) bytes += layer.bytes;
    size = RedisBloomInfoSize(filter.num_layers(), bytes);
  }
  // RedisBloom's order and names; client libraries read them by name.
  const InfoField fields[] = {
      {"CAPACITY", "Capacity", integer(filter.capacity())},
      {"SIZE", "Size", integer(size)},
      {"FILTERS", "Number of filters", integer(filter.num_layers())},
      {"ITEMS", "Number of items inserted", integer(filter.items())},
      {"EXPANSION", "Expansion rate",
       [&filter](ReplyBuilder& reply) {
         // nil for a non-scaling filter, as RedisBloom.
         if (filter.scaling()) {
           reply.Integer(filter.expansion());
         } else {
           reply.Null();
         }
       }},
      {"ERROR", "Error rate",
       [&filter](ReplyBuilder& reply) { reply.Double(filter.error_rate()); }, /*listed=*/false},
      {filter.scaling() ? "TIGHTENING" : "", "Tightening ratio",
       [&filter](ReplyBuilder& reply) { reply.Double(filter.tightening()); }, /*listed=*/false},
      {filter.scaling() ? "MAXSCALEDCAPACITY" : "", "Max scaled capacity",
       [&filter](ReplyBuilder& reply) {  // computed only when asked: up to 64 shapes
         reply.Integer(static_cast<int64_t>(std::min<uint64_t>(filter.MaxScaledCapacity(), INT64_MAX)));
       },
       /*listed=*/false},
  };
  std::optional<std::string_view> selector;
  if (ctx.args.size() == 3) selector = ctx.args[2];
  if (!ReplyInfoFields(ctx.reply, fields, selector)) ctx.failed = true;
}

// BF.DEBUG key: RedisBloom's format, field by field (rebloom.c
// BFDebug_RedisCommand): "size:<items>", then one line per layer, oldest
// first, with our layers' true figures. hashwidth is 64: every probe comes
// from a 64-bit hash (RedisBloom prints 64 for its FORCE64 filters).
void CmdDebug(CommandContext& ctx) {
  EntryPtr entry;
  if (!FindForRead(ctx, &entry)) return;
  if (entry == nullptr) {
    Fail(ctx, BloomStatus::kNotFound);
    return;
  }
  if (const WindowedBloomFilter* windowed = entry->get<WindowedBloomFilter>()) {
    ReplyWindowedDebug(ctx, *windowed);
    return;
  }
  const ScalableBloomFilter& filter = *entry->bloom();
  const std::vector<BloomLayerInfo> layers = filter.Layers();
  ctx.reply.ArrayHeader(1 + layers.size());
  ctx.reply.Bulk("size:" + std::to_string(filter.items()));
  for (const BloomLayerInfo& layer : layers) ctx.reply.Bulk(BloomDebugLine(layer));
}

// BF.MERGE dest src [src ...]: the row lists every argument as a key, so
// all are locked exclusively (no add runs beside the OR) and seen by
// WATCH and ACLs. Journaled as the command: it runs at one point of every
// key's record order, so replay finds the same inputs and computes the
// same bits and counts (bloom_merge.h); a dest it creates is journaled
// first by its creation record.
void CmdMerge(CommandContext& ctx) {
  std::vector<KeyRef> keys;
  keys.reserve(ctx.args.size() - 1);
  for (size_t i = 1; i < ctx.args.size(); ++i) keys.push_back(ctx.Key(ctx.args[i]));
  FilterStore store = StoreFor(ctx);
  MergeResult result =
      MergeBloom(store, keys[0], std::span<const KeyRef>(keys).subspan(1), &ctx);
  if (result.parked) return;  // runs again once its new dest is built
  if (result.status != BloomStatus::kOk) {
    ctx.Fail(MergeFailureText("BF.MERGE", result));
    return;
  }
  if (result.journaled) ctx.skip_journal = true;  // a windowed merge logged its result
  ctx.reply.Ok();
}

constexpr ChunkCommandTexts kChunkTexts = {errors::kScanDumpBadIterator,
                                           errors::kLoadChunkBadIterator,
                                           errors::kReceivedBadData};

std::vector<CommandSpec> BloomCommands() {
  const FamilyRows rows(BloomFamily(), /*since=*/"1.0.0");
  constexpr uint32_t kWriteOom = FamilyRows::kWriteOom;
  constexpr uint32_t kReadFast = FamilyRows::kReadFast;
  std::vector<CommandSpec> list = {
      // 13: key error_rate capacity EXPANSION n NONSCALING WINDOW s GENERATIONS n
      // SEED s.
      rows.Row("bf.reserve", -4, 13, kWriteOom, CmdReserve, "Creates a new Bloom filter"),
      rows.Row("bf.add", 3, 0, kWriteOom | kCmdOrderFree, CmdAdd,
               "Adds an item to a Bloom filter"),
      rows.Row("bf.madd", -3, 0, kWriteOom | kCmdOrderFree, CmdMAdd,
               "Adds one or more items to a Bloom filter. A filter will be created if it does "
               "not exist"),
      rows.Row("bf.insert", -4, 0, kWriteOom | kCmdOrderFree, CmdInsert,
               "Adds one or more items to a Bloom filter. A filter will be created if it does "
               "not exist"),
      rows.Row("bf.exists", 3, 0, kReadFast, CmdExists,
               "Checks whether an item exists in a Bloom filter"),
      rows.Row("bf.mexists", -3, 0, kReadFast, CmdMExists,
               "Checks whether one or more items exist in a Bloom filter"),
      rows.Row("bf.card", 2, 0, kReadFast, CmdCard, "Returns the cardinality of a Bloom filter",
               "2.4.4"),
      rows.Row("bf.info", -2, 3, kReadFast, CmdInfo, "Returns information about a Bloom filter"),
      rows.Row("bf.debug", 2, 0, kReadFast, CmdDebug,
               "Returns the item count and each sub-filter's size, hashes and fill"),
      rows.ScanDumpRow<kChunkTexts>("bf.scandump",
                                    "Begins an incremental save of the bloom filter"),
      rows.LoadChunkRow<kChunkTexts>("bf.loadchunk",
                                     "Restores a filter previously saved using SCANDUMP"),
  };
  // Every argument is a key (dest, then the sources); not order-free, so
  // the keys are locked exclusively.
  CommandSpec merge = rows.Row("bf.merge", -3, 0, kWriteOom, CmdMerge,
                               "Merges Bloom filters of identical parameters into one");
  merge.last_key = -1;
  list.push_back(std::move(merge));
  return list;
}

// check-snapshot's summary line.
std::string Describe(const ScalableBloomFilter& f) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "bloom: %u layer(s), capacity %llu, items %llu, error %g, expansion %u, %llu bytes",
                f.num_layers(), static_cast<unsigned long long>(f.capacity()),
                static_cast<unsigned long long>(f.items()), f.error_rate(), f.expansion(),
                static_cast<unsigned long long>(f.memory_bytes()));
  return line;
}

}  // namespace

// The COMMAND DOCS syntax line of each row but SCANDUMP and LOADCHUNK
// (theirs come with them), sorted by name: catalogue/command_syntax.h
// says how a line reads.
constexpr CommandSyntax kRowSyntax[] = {
    {"bf.add", "key item", ""},
    {"bf.card", "key", ""},
    {"bf.debug", "key", ""},
    {"bf.exists", "key item", ""},
    {"bf.info",
     "key [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION|ERROR|TIGHTENING|MAXSCALEDCAPACITY]", ""},
    {"bf.insert",
     "key [CAPACITY capacity] [ERROR error] [EXPANSION expansion] [NOCREATE] [NONSCALING] "
     "[WINDOW seconds [GENERATIONS generations]] [SEED seed] [TIGHTENING tightening] "
     "[VALIDATESCALETO validatescaleto] ITEMS item [item ...]",
     "capacity:integer error:double expansion:integer seconds:integer generations:integer "
     "tightening:double validatescaleto:integer"},
    {"bf.madd", "key item [item ...]", ""},
    {"bf.merge", "destkey sourcekey [sourcekey ...]", "destkey:key sourcekey:key"},
    {"bf.mexists", "key item [item ...]", ""},
    {"bf.reserve",
     "key error_rate capacity [EXPANSION expansion] [NONSCALING] "
     "[WINDOW seconds [GENERATIONS generations]] [SEED seed]",
     "error_rate:double capacity:integer expansion:integer seconds:integer "
     "generations:integer"},
};

// The family's registration (server/commands/registry.cc registers it).
const FilterFamily& BloomFamily() {
  static const FilterFamily family{
      .kind = FilterKind::kScalableBloom,
      .type_name = "MBbloom--",  // RedisBloom's module type name, as TYPE shows it
      .group = "bf",
      .acl_category = "@bloom",
      .writes = FamilyWrites::kCommute,
      .commands = BloomCommands,
      .syntax = kRowSyntax,
      .describe = DescribeAs<ScalableBloomFilter, Describe>,
      .health = HealthAs<ScalableBloomFilter, BloomHealth>,
  };
  return family;
}

}  // namespace bloomgate
