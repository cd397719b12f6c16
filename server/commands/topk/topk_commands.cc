// TOPK.*: top-k heavy hitters, RedisBloom's syntax, replies and texts
// (rm_topk.c, Redis 8).
//
// Every write holds its key exclusively (FamilyWrites::kExclusive): that is
// the per-key lock HeavyKeeper needs, since an add moves bucket counts, the
// heap and the PRNG together. Writes are journaled as sent: TOPK.ADD and
// TOPK.INCRBY are the items and their increments, and replaying them on the
// same state -- PRNG state included, which is part of the filter -- decides
// every decay and eviction as the original run did.
//
// Where we differ on purpose (README): items come back as bulk strings, not
// simple strings (an item may hold CR or LF); TOPK.INCRBY answers a bad
// increment with an error element at that item and goes on with the next
// pair (RedisBloom 2.4 stops there and sends a shorter array than it
// announced; Redis 8 goes on, as we do); TOPK.LIST takes WITHCOUNT whole
// (RedisBloom takes any prefix of it, even an empty one); TOPK.COUNT is
// read-only (RedisBloom flags it write).
#include <cstdio>
#include <optional>
#include <vector>

#include "filters/key_hash.h"
#include "filters/top_k.h"
#include "server/catalogue/command_table.h"
#include "server/catalogue/filter_family.h"
#include "server/commands/arg_parser.h"
#include "server/commands/family_shared/chunk_transfer.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"
#include "server/commands/family_shared/family_rows.h"
#include "server/commands/family_shared/filter_lookup.h"

namespace bloomgate {

const FilterFamily& TopKFamily();  // the record, at the end of this file

namespace {

// RedisBloom's TOPK.INCRBY bound.
constexpr int64_t kMaxTopKIncrement = 100000;

// ---------------------------------------------------------------- ops ----

EntryPtr FindTopK(CommandContext& ctx, std::string_view key) {
  FilterStore store = StoreFor(ctx);
  EntryPtr entry;
  if (!FoundOrFail(ctx, FindFilter<TopK>(store, ctx.Key(key), &entry), errors::kTopKKeyMissing)) {
    return nullptr;
  }
  return entry;
}

// Adds the items with their increments in order; replies the expelled items.
// An item whose increment is nullopt was refused: its element is the error.
void AddAndReply(CommandContext& ctx, TopK& topk, EntryPtr& entry,
                 std::span<const std::string_view> items,
                 std::span<const std::optional<uint32_t>> increments) {
  ctx.reply.ArrayHeader(items.size());
  std::string expelled;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!increments[i]) {
      ctx.reply.Error(errors::kTopKBadIncrement);
    } else if (topk.Add(HashKey(items[i]), items[i], *increments[i], &expelled)) {
      ctx.reply.Bulk(expelled);
    } else {
      ctx.reply.Null();
    }
  }
  entry->MarkModified();
}

// ---------------------------------------------------------------- cmds ---

// TOPK.RESERVE key topk [width depth decay]
void CmdReserve(CommandContext& ctx) {
  // RedisBloom: 3 or 6 arguments; the table says 3..6, the rest is here.
  if (ctx.args.size() != 3 && ctx.args.size() != 6) {
    ctx.Fail(errors::WrongArity("topk.reserve"));
    return;
  }
  if (ctx.server.keyspace.Find(ctx.Key(ctx.args[1]), ctx.now_ms) != nullptr) {
    ctx.Fail(errors::kTopKKeyExists);  // checked first, whatever the key holds
    return;
  }
  TopKOptions options;
  int64_t k = 0;
  if (!ParseInt64(ctx.args[2], &k) || k < 1 || k > UINT32_MAX) {
    ctx.Fail(errors::kTopKInvalidK);
    return;
  }
  options.k = static_cast<uint32_t>(k);
  if (ctx.args.size() == 6) {
    int64_t width = 0;
    int64_t depth = 0;
    double decay = 0;
    if (!ParseInt64(ctx.args[3], &width) || width < 1 || width > UINT32_MAX) {
      ctx.Fail(errors::kTopKInvalidWidth);
      return;
    }
    if (!ParseInt64(ctx.args[4], &depth) || depth < 1 || depth > UINT32_MAX) {
      ctx.Fail(errors::kTopKInvalidDepth);
      return;
    }
    if (!ParseDouble(ctx.args[5], &decay) || decay <= 0 || decay > 1) {
      ctx.Fail(errors::kTopKInvalidDecay);
      return;
    }
    options.width = static_cast<uint32_t>(width);
    options.depth = static_cast<uint32_t>(depth);
    options.decay = decay;
  }
  // The generator's first state is the same for every key, so the same
  // commands on two servers build the same filter (it is saved with the
  // filter, so replay never depends on this rule).
  // New top-ks decay as RedisBloom's, from the rand() state of a fresh
  // RedisBloom process (filters/sketch_scheme.h).
  options.scheme = SketchScheme::kRedisBloom;
  options.random = GlibcRandom::FreshProcess();
  std::unique_ptr<TopK> topk;
  FilterStatus created = FilterStatus::kOk;
  MemoryRefusal refusal;
  if (!ctx.MakeFilter(TopK::FixedBytesFor(options.k, options.width, options.depth),
                      [options, limits = ctx.server.filter_limits(), budget = &ctx.server.budget](
                          std::unique_ptr<TopK>* out, MemoryRefusal* refused) {
                        return TopK::Create(options, limits, budget, out, refused);
                      },
                      &created, &topk, &refusal)) {
    return;  // parked: runs again once the filter is made off the loop
  }
  if (created != FilterStatus::kOk) {
    ctx.Fail(errors::MemoryRefused(errors::kTopKInsufficientMemory, refusal, /*growth=*/false));
    return;
  }
  FilterStore store = StoreFor(ctx);
  EntryPtr stored;
  if (StoreNewFilter(store, ctx.Key(ctx.args[1]), std::move(topk), /*fail_if_exists=*/true,
                     &stored) != StoreOutcome::kStored) {
    ctx.Fail(errors::kTopKKeyExists);
    return;
  }
  ctx.skip_journal = true;  // the creation record in the log says it all
  ctx.reply.Ok();
}

// TOPK.ADD key item [item ...]
void CmdAdd(CommandContext& ctx) {
  EntryPtr entry = FindTopK(ctx, ctx.args[1]);
  if (entry == nullptr) return;
  auto items = ctx.args.subspan(2);
  std::vector<std::optional<uint32_t>> ones(items.size(), 1u);
  AddAndReply(ctx, *entry->get<TopK>(), entry, items, ones);
}

// TOPK.INCRBY key item increment [item increment ...]
void CmdIncrBy(CommandContext& ctx) {
  if (ctx.args.size() % 2 != 0) {  // pairs: see CMS.INCRBY
    ctx.Fail(errors::WrongArity("topk.incrby"));
    return;
  }
  EntryPtr entry = FindTopK(ctx, ctx.args[1]);
  if (entry == nullptr) return;
  const size_t pairs = (ctx.args.size() - 2) / 2;
  std::vector<std::string_view> items(pairs);
  std::vector<std::optional<uint32_t>> increments(pairs);
  for (size_t i = 0; i < pairs; ++i) {
    items[i] = ctx.args[2 + 2 * i];
    // A bad increment is RedisBloom's error element at that item; the other
    // pairs still apply, and a replay of the command refuses the same ones.
    int64_t value = 0;
    if (ParseInt64(ctx.args[3 + 2 * i], &value) && value >= 0 && value <= kMaxTopKIncrement) {
      increments[i] = static_cast<uint32_t>(value);
    }
  }
  AddAndReply(ctx, *entry->get<TopK>(), entry, items, increments);
}

// TOPK.QUERY key item [item ...]: 1/0 (RESP3: booleans).
void CmdQuery(CommandContext& ctx) {
  EntryPtr entry = FindTopK(ctx, ctx.args[1]);
  if (entry == nullptr) return;
  const TopK& topk = *entry->get<TopK>();
  auto items = ctx.args.subspan(2);
  ctx.reply.ArrayHeader(items.size());
  for (std::string_view item : items) ctx.reply.Bool(topk.Query(HashKey(item), item));
}

// TOPK.COUNT key item [item ...] (deprecated in RedisBloom 2.4, answered).
void CmdCount(CommandContext& ctx) {
  EntryPtr entry = FindTopK(ctx, ctx.args[1]);
  if (entry == nullptr) return;
  const TopK& topk = *entry->get<TopK>();
  auto items = ctx.args.subspan(2);
  ctx.reply.ArrayHeader(items.size());
  for (std::string_view item : items) ctx.reply.Integer(topk.Count(HashKey(item), item));
}

// TOPK.LIST key [WITHCOUNT]: the items, largest count first.
void CmdList(CommandContext& ctx) {
  const bool with_count = ctx.args.size() == 3;
  if (with_count && !EqualsIgnoreCase(ctx.args[2], "withcount")) {
    ctx.Fail(errors::kTopKWithCountExpected);
    return;
  }
  EntryPtr entry = FindTopK(ctx, ctx.args[1]);
  if (entry == nullptr) return;
  const std::vector<TopKEntry> list = entry->get<TopK>()->List();
  ctx.reply.ArrayHeader(list.size() * (with_count ? 2 : 1));
  for (const TopKEntry& e : list) {
    ctx.reply.Bulk(e.item);
    if (with_count) ctx.reply.Integer(e.count);
  }
}

// TOPK.INFO key: k, width, depth, decay (a map in RESP3).
void CmdInfo(CommandContext& ctx) {
  EntryPtr entry = FindTopK(ctx, ctx.args[1]);
  if (entry == nullptr) return;
  const TopK& topk = *entry->get<TopK>();
  ctx.reply.MapHeader(4);
  ctx.reply.SimpleString("k");
  ctx.reply.Integer(topk.k());
  ctx.reply.SimpleString("width");
  ctx.reply.Integer(topk.width());
  ctx.reply.SimpleString("depth");
  ctx.reply.Integer(topk.depth());
  ctx.reply.SimpleString("decay");
  if (ctx.reply.resp3()) {
    ctx.reply.Double(topk.decay());
    return;
  }
  // RESP2: RedisBloom's RedisModule_ReplyWithDouble on Redis 7.0 writes
  // %.17g ("0.90000000000000002" for 0.9), which clients compare as text.
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", topk.decay());
  ctx.reply.Bulk(text);
}

// TOPK.SCANDUMP / TOPK.LOADCHUNK: ours, in our chunk format.
constexpr ChunkCommandTexts kChunkTexts = {errors::kScanDumpBadIterator,
                                           errors::kLoadChunkBadIterator,
                                           errors::kReceivedBadData};

std::vector<CommandSpec> TopKCommands() {
  const FamilyRows rows(TopKFamily(), /*since=*/"2.0.0");
  constexpr uint32_t kWriteOom = FamilyRows::kWriteOom;
  constexpr uint32_t kReadFast = FamilyRows::kReadFast;
  return {
      rows.Row("topk.reserve", -3, 6, kWriteOom | kCmdFast, CmdReserve,
               "Initializes a TopK with specified parameters"),
      rows.Row("topk.add", -3, 0, kWriteOom, CmdAdd, "Adds an item to a Top-k sketch"),
      rows.Row("topk.incrby", -4, 0, kWriteOom, CmdIncrBy,
               "Increases the count of one or more items by increment"),
      rows.Row("topk.query", -3, 0, kReadFast, CmdQuery,
               "Checks whether one or more items are in a sketch"),
      rows.Row("topk.count", -3, 0, kReadFast, CmdCount,
               "Return the count for one or more items are in a sketch"),
      rows.Row("topk.list", -2, 3, kReadFast, CmdList, "Return full list of items in Top K list"),
      rows.Row("topk.info", 2, 0, kReadFast, CmdInfo, "Returns information about a sketch"),
      rows.ScanDumpRow<kChunkTexts>("topk.scandump",
                                    "Begins an incremental save of a top-k sketch"),
      rows.LoadChunkRow<kChunkTexts>("topk.loadchunk",
                                     "Restores a top-k sketch saved with TOPK.SCANDUMP"),
  };
}

// check-snapshot's summary line.
std::string Describe(const TopK& t) {
  char line[160];
  std::snprintf(line, sizeof(line), "top-k: k %u, width %u, depth %u, decay %g, %zu listed, %llu bytes",
                t.k(), t.width(), t.depth(), t.decay(), t.List().size(),
                static_cast<unsigned long long>(t.memory_bytes()));
  return line;
}

}  // namespace

// The COMMAND DOCS syntax line of each row but SCANDUMP and LOADCHUNK
// (theirs come with them), sorted by name: catalogue/command_syntax.h
// says how a line reads.
constexpr CommandSyntax kRowSyntax[] = {
    {"topk.add", "key items [items ...]", ""},
    {"topk.count", "key item [item ...]", ""},
    {"topk.incrby", "key item increment [item increment ...]", "increment:integer"},
    {"topk.info", "key", ""},
    {"topk.list", "key [WITHCOUNT]", ""},
    {"topk.query", "key item [item ...]", ""},
    {"topk.reserve", "key topk [width depth decay]",
     "topk:integer width:integer depth:integer decay:double"},
};

// The family's registration (server/commands/registry.cc registers it).
const FilterFamily& TopKFamily() {
  static const FilterFamily family{
      .kind = FilterKind::kTopK,
      .type_name = "TopK-TYPE",  // RedisBloom's module type name
      .group = "topk",
      .acl_category = "@topk",
      .writes = FamilyWrites::kExclusive,  // HeavyKeeper needs its key to itself
      .commands = TopKCommands,
      .syntax = kRowSyntax,
      .describe = DescribeAs<TopK, Describe>,
  };
  return family;
}

}  // namespace bloomgate
