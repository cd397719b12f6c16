// CBF.*: counting Bloom filters, our own family. The commands mirror BF.*
// where they overlap (same options, defaults, reply shapes and texts) and
// add deletion and counts.
//
// A counting filter forgets an item when it is deleted as many times as it
// was added. Only items that were added may be deleted: deleting an item
// that was never added but happens to test positive (a false positive)
// decrements counters that belong to other items and can make one of them
// test absent — a false negative. Counters that reach their maximum (15 with
// 4 bits, 255 with 8) stay there for good, so heavy repetition costs
// accuracy (the item can never be fully deleted) but never correctness.
#include <cstdio>
#include <optional>
#include <vector>

#include "filters/key_hash.h"
#include "server/catalogue/command_table.h"
#include "server/catalogue/filter_family.h"
#include "server/commands/bloom/bloom_merge.h"
#include "server/commands/family_shared/chunk_transfer.h"
#include "server/commands/command_context.h"
#include "server/commands/counting_bloom/counting_bloom_ops.h"
#include "server/commands/errors.h"
#include "server/commands/family_shared/family_rows.h"
#include "server/commands/server/filter_health_report.h"
#include "server/commands/family_shared/filter_lookup.h"
#include "server/commands/family_shared/info_reply.h"
#include "server/commands/windowed_counting/windowed_counting_ops.h"

namespace bloomgate {

// windowed_counting_commands.cc: CBF.INFO's reply for a windowed filter.
void ReplyWindowedCountingInfo(CommandContext& ctx, const KeyEntry& entry,
                               const WindowedCountingBloomFilter& filter);

const FilterFamily& CountingBloomFamily();  // the record, at the end of this file

namespace {

// ---------------------------------------------------------------- cmds ---
// Each parses, calls the ops of counting_bloom_ops.h, maps a status to its
// text with BloomStatusText (the family follows BF.*) and replies.

// A memory refusal says its limit (BloomFailureText).
void Fail(CommandContext& ctx, BloomStatus status, const MemoryRefusal& refusal = {}) {
  ctx.Fail(BloomFailureText(status, refusal));
}

// A windowed filter's writes are journaled as what they did, each with its
// generation (kWindowCountEffect), so replay needs no clock; nothing when
// nothing took effect (a creation journals itself).
void JournalWindowCount(CommandContext& ctx, std::span<const std::string_view> items,
                        const WindowCountResult& result, bool deleted) {
  WindowCountEffect(ctx.args[1], items, result, deleted, &ctx.effect_bytes, &ctx.effect);
  if (ctx.effect.empty()) ctx.skip_journal = true;
}

// Finds or creates the filter, adds the items and replies: a boolean for
// `single`, else one per item that went in, then the error that stopped
// the adds, if any.
void AddAndReply(CommandContext& ctx, const CreateRule& rule,
                 std::span<const std::string_view> items, bool single) {
  FilterStore store = StoreFor(ctx);
  EntryPtr entry;
  if (BloomStatus status = FindOrCreateCounting(store, ctx.Key(ctx.args[1]), rule, &entry);
      status != BloomStatus::kOk) {
    Fail(ctx, status, store.refusal);
    return;
  }
  if (entry->get<WindowedCountingBloomFilter>() != nullptr) {
    WindowCountResult result = AddWindowedCountingItems(*entry, items, store.window_now_ms);
    JournalWindowCount(ctx, items, result, /*deleted=*/false);
    if (single) {
      if (result.status != BloomStatus::kOk) {
        Fail(ctx, result.status, result.refusal);
      } else {
        ctx.reply.Bool(result.done[0]);
      }
      return;
    }
    std::optional<std::string> error;
    if (result.status != BloomStatus::kOk) error = BloomFailureText(result.status, result.refusal);
    ReplyBoolsThenError(ctx.reply, result.done, error);
    return;
  }
  // Non-scaling fill warning (filter_health_report.h), here rather than in
  // the ops so they stay free of the command's name and the log.
  const CountingBloomFilter& filter = *entry->get<CountingBloomFilter>();
  const uint64_t items_before = filter.items();
  BloomAddResult result = AddCountingItems(*entry, items);
  if (!filter.scaling() && !result.added.empty()) {
    NoteNonScalingFill(ctx.spec.full_name, ctx.args[1], items_before, filter.items(),
                       filter.capacity());
  }
  if (single) {
    if (result.status != BloomStatus::kOk) {
      Fail(ctx, result.status, result.refusal);
    } else {
      ctx.reply.Bool(result.added[0]);
    }
    return;
  }
  std::optional<std::string> error;
  if (result.status != BloomStatus::kOk) error = BloomFailureText(result.status, result.refusal);
  ReplyBoolsThenError(ctx.reply, result.added, error);
}

// Deletes items; a missing key is "ERR not found" (there is nothing to
// delete from, and a typo should not pass silently).
void DeleteAndReply(CommandContext& ctx, std::span<const std::string_view> items, bool single) {
  FilterStore store = StoreFor(ctx);
  EntryPtr entry;
  if (BloomStatus status = BloomLookupStatus(
          FindFilter<CountingBloomFilter>(store, ctx.Key(ctx.args[1]), &entry),
          /*missing=*/BloomStatus::kNotFound);
      status != BloomStatus::kOk) {
    Fail(ctx, status);
    return;
  }
  std::vector<bool> removed;
  if (entry->get<WindowedCountingBloomFilter>() != nullptr) {
    // DEL on a windowed filter: the newest live occurrence (see
    // windowed_counting_bloom_filter.h).
    WindowCountResult result = DeleteWindowedCountingItems(*entry, items, store.window_now_ms);
    JournalWindowCount(ctx, items, result, /*deleted=*/true);
    removed = std::move(result.done);
  } else {
    removed = DeleteCountingItems(*entry, items);
  }
  if (single) {
    ctx.reply.Bool(removed[0]);
  } else {
    ReplyBoolsThenError(ctx.reply, removed, std::nullopt);
  }
}

// A read command's filter into *filter, or a windowed one into *windowed
// (both null for a missing key); false when the key holds another type and
// WRONGTYPE was replied.
bool FindForRead(CommandContext& ctx, EntryPtr* holder, const CountingBloomFilter** filter,
                 const WindowedCountingBloomFilter** windowed) {
  FilterStore store = StoreFor(ctx);
  switch (FindFilter<CountingBloomFilter>(store, ctx.Key(ctx.args[1]), holder)) {
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
  *filter = *holder == nullptr ? nullptr : (*holder)->get<CountingBloomFilter>();
  *windowed = *holder == nullptr ? nullptr : (*holder)->get<WindowedCountingBloomFilter>();
  return true;
}

// CBF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING] [COUNTERBITS 4|8]
//             [WINDOW seconds [GENERATIONS n]] [SEED seed]
void CmdReserve(CommandContext& ctx) {
  ArgParser parser(ctx.args, 2);
  BloomParams params = DefaultBloomParams(ctx.server.config);
  ParseReserveArgs(parser, /*counting=*/true, &params);
  if (parser.failed()) {
    ctx.Fail(parser.error());
    return;
  }
  FilterStore store = StoreFor(ctx);
  if (BloomStatus status = ReserveCounting(store, ctx.Key(ctx.args[1]), params);
      status != BloomStatus::kOk) {
    Fail(ctx, status, store.refusal);
    return;
  }
  ctx.skip_journal = true;  // the creation record in the log says it all
  ctx.reply.Ok();
}

// CBF.INCR key item [item ...]: one add per item, replying each item's
// count including this add (an upper bound, as CBF.COUNT), then the error
// that stopped the adds, if any. Journaled as the command: CBF writes hold
// the key exclusively, so replaying it on the same state adds the same. On
// a windowed filter, the count within the window, journaled with each
// add's generation (replay must not ask the clock).
void CmdIncr(CommandContext& ctx) {
  FilterStore store = StoreFor(ctx);
  EntryPtr entry;
  if (BloomStatus status = FindOrCreateCounting(store, ctx.Key(ctx.args[1]), CreateRule{}, &entry);
      status != BloomStatus::kOk) {
    Fail(ctx, status, store.refusal);
    return;
  }
  if (entry->get<WindowedCountingBloomFilter>() != nullptr) {
    // The count within the window, this add included: the n-th-hit answer.
    WindowCountResult result =
        AddWindowedCountingItems(*entry, ctx.args.subspan(2), store.window_now_ms);
    JournalWindowCount(ctx, ctx.args.subspan(2), result, /*deleted=*/false);
    const bool stopped = result.status != BloomStatus::kOk;
    ctx.reply.ArrayHeader(result.counts.size() + (stopped ? 1 : 0));
    for (uint64_t count : result.counts) ctx.reply.Integer(static_cast<int64_t>(count));
    if (stopped) ctx.reply.Error(BloomFailureText(result.status, result.refusal));
    return;
  }
  CountingIncrResult result = IncrCountingItems(*entry, ctx.args.subspan(2));
  const bool stopped = result.status != BloomStatus::kOk;
  ctx.reply.ArrayHeader(result.counts.size() + (stopped ? 1 : 0));
  for (uint64_t count : result.counts) ctx.reply.Integer(static_cast<int64_t>(count));
  if (stopped) ctx.reply.Error(BloomFailureText(result.status, result.refusal));
}

void CmdAdd(CommandContext& ctx) { AddAndReply(ctx, CreateRule{}, ctx.args.subspan(2), true); }
void CmdMAdd(CommandContext& ctx) { AddAndReply(ctx, CreateRule{}, ctx.args.subspan(2), false); }

// CBF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION n] [NOCREATE] [NONSCALING]
//            [COUNTERBITS 4|8] ITEMS item [item ...]
void CmdInsert(CommandContext& ctx) {
  ArgParser parser(ctx.args, 2);
  CreateRule rule;
  ParseInsertArgs(parser, "cbf.insert", /*counting=*/true, &rule);
  if (parser.failed()) {
    ctx.Fail(parser.error());
    return;
  }
  AddAndReply(ctx, rule, parser.Rest(), false);
}

void CmdDel(CommandContext& ctx) { DeleteAndReply(ctx, ctx.args.subspan(2), true); }
void CmdMDel(CommandContext& ctx) { DeleteAndReply(ctx, ctx.args.subspan(2), false); }

// CBF.EXISTS key item
void CmdExists(CommandContext& ctx) {
  EntryPtr holder;
  const CountingBloomFilter* filter = nullptr;
  const WindowedCountingBloomFilter* windowed = nullptr;
  if (!FindForRead(ctx, &holder, &filter, &windowed)) return;
  if (windowed != nullptr) {
    ctx.reply.Bool(windowed->MayContain(windowed->Hash(ctx.args[2]), ctx.WindowNowMs()));
    return;
  }
  ctx.reply.Bool(filter != nullptr && filter->MayContain(filter->Hash(ctx.args[2])));
}

// CBF.MEXISTS key item [item ...]
void CmdMExists(CommandContext& ctx) {
  EntryPtr holder;
  const CountingBloomFilter* filter = nullptr;
  const WindowedCountingBloomFilter* windowed = nullptr;
  if (!FindForRead(ctx, &holder, &filter, &windowed)) return;
  auto items = ctx.args.subspan(2);
  const int64_t now = ctx.WindowNowMs();
  ctx.reply.ArrayHeader(items.size());
  for (std::string_view item : items) {
    if (windowed != nullptr) {
      ctx.reply.Bool(windowed->MayContain(windowed->Hash(item), now));
    } else {
      ctx.reply.Bool(filter != nullptr && filter->MayContain(filter->Hash(item)));
    }
  }
}

// CBF.COUNT key item: the smallest of the item's counters, summed over the
// layers — an upper bound on how many more times it was added than deleted.
void CmdCount(CommandContext& ctx) {
  EntryPtr holder;
  const CountingBloomFilter* filter = nullptr;
  const WindowedCountingBloomFilter* windowed = nullptr;
  if (!FindForRead(ctx, &holder, &filter, &windowed)) return;
  if (windowed != nullptr) {
    // Summed over the live generations: the occurrences within the window.
    ctx.reply.Integer(static_cast<int64_t>(
        windowed->Count(windowed->Hash(ctx.args[2]), ctx.WindowNowMs())));
    return;
  }
  ctx.reply.Integer(
      filter == nullptr ? 0 : static_cast<int64_t>(filter->Count(filter->Hash(ctx.args[2]))));
}

// CBF.CARD key
void CmdCard(CommandContext& ctx) {
  EntryPtr holder;
  const CountingBloomFilter* filter = nullptr;
  const WindowedCountingBloomFilter* windowed = nullptr;
  if (!FindForRead(ctx, &holder, &filter, &windowed)) return;
  if (windowed != nullptr) {
    ctx.reply.Integer(static_cast<int64_t>(windowed->ItemsAt(ctx.WindowNowMs())));
    return;
  }
  ctx.reply.Integer(filter == nullptr ? 0 : static_cast<int64_t>(filter->items()));
}

// CBF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION | COUNTERBITS | SATURATED]
void CmdInfo(CommandContext& ctx) {
  EntryPtr holder;
  const CountingBloomFilter* filter = nullptr;
  const WindowedCountingBloomFilter* windowed = nullptr;
  if (!FindForRead(ctx, &holder, &filter, &windowed)) return;
  if (windowed != nullptr) {
    ReplyWindowedCountingInfo(ctx, *holder, *windowed);
    return;
  }
  if (filter == nullptr) {
    Fail(ctx, BloomStatus::kNotFound);
    return;
  }
  auto integer = [](uint64_t value) {
    return [value](ReplyBuilder& reply) { reply.Integer(static_cast<int64_t>(value)); };
  };
  // BF.INFO's five fields in BF.INFO's order, then what only counters have.
  const InfoField fields[] = {
      {"CAPACITY", "Capacity", integer(filter->capacity())},
      {"SIZE", "Size", integer(holder->MemoryUsage())},
      {"FILTERS", "Number of filters", integer(filter->num_layers())},
      {"ITEMS", "Number of items inserted", integer(filter->items())},
      {"EXPANSION", "Expansion rate",
       [filter](ReplyBuilder& reply) {
         if (filter->scaling()) {
           reply.Integer(filter->expansion());
         } else {
           reply.Null();
         }
       }},
      {"COUNTERBITS", "Counter bits", integer(filter->counter_bits())},
      {"SATURATED", "Saturated counters", integer(filter->saturated_counters())},
  };
  std::optional<std::string_view> selector;
  if (ctx.args.size() == 3) selector = ctx.args[2];
  if (!ReplyInfoFields(ctx.reply, fields, selector)) ctx.failed = true;
}

// CBF.SCANDUMP / CBF.LOADCHUNK take BF.*'s texts: the family follows BF.*.
constexpr ChunkCommandTexts kChunkTexts = {errors::kScanDumpBadIterator,
                                           errors::kLoadChunkBadIterator,
                                           errors::kReceivedBadData};

// CBF.MERGE dest src [src ...]: as BF.MERGE (bloom_commands.cc), with
// counters added; every argument is a key, locked exclusively, and the
// command itself is journaled.
void CmdMerge(CommandContext& ctx) {
  std::vector<KeyRef> keys;
  keys.reserve(ctx.args.size() - 1);
  for (size_t i = 1; i < ctx.args.size(); ++i) keys.push_back(ctx.Key(ctx.args[i]));
  FilterStore store = StoreFor(ctx);
  MergeResult result =
      MergeCounting(store, keys[0], std::span<const KeyRef>(keys).subspan(1), &ctx);
  if (result.parked) return;  // runs again once its new dest is built
  if (result.status != BloomStatus::kOk) {
    ctx.Fail(MergeFailureText("CBF.MERGE", result));
    return;
  }
  if (result.journaled) ctx.skip_journal = true;  // a windowed merge logged its result
  ctx.reply.Ok();
}

std::vector<CommandSpec> CountingBloomCommands() {
  const FamilyRows rows(CountingBloomFamily(), /*since=*/"0.1.0");
  constexpr uint32_t kWriteOom = FamilyRows::kWriteOom;
  constexpr uint32_t kReadFast = FamilyRows::kReadFast;
  std::vector<CommandSpec> list = {
      // 15: key error_rate capacity EXPANSION n NONSCALING COUNTERBITS b
      // WINDOW s GENERATIONS n SEED s.
      rows.Row("cbf.reserve", -4, 15, kWriteOom | kCmdFast, CmdReserve,
               "Creates a new counting Bloom filter"),
      rows.Row("cbf.add", 3, 0, kWriteOom | kCmdFast, CmdAdd,
               "Adds an item to a counting Bloom filter, creating the filter if needed"),
      rows.Row("cbf.madd", -3, 0, kWriteOom | kCmdFast, CmdMAdd,
               "Adds one or more items to a counting Bloom filter, creating it if needed"),
      rows.Row("cbf.insert", -4, 0, kWriteOom, CmdInsert,
               "Adds one or more items to a counting Bloom filter, with creation options"),
      rows.Row("cbf.incr", -3, 0, kWriteOom | kCmdFast, CmdIncr,
               "Adds items to a counting Bloom filter and returns each one's count, this add "
               "included"),
      rows.Row("cbf.exists", 3, 0, kReadFast, CmdExists,
               "Checks whether an item exists in a counting Bloom filter"),
      rows.Row("cbf.mexists", -3, 0, kReadFast, CmdMExists,
               "Checks whether one or more items exist in a counting Bloom filter"),
      rows.Row("cbf.del", 3, 0, kCmdWrite | kCmdFast, CmdDel,
               "Deletes one occurrence of an added item from a counting Bloom filter"),
      rows.Row("cbf.mdel", -3, 0, kCmdWrite | kCmdFast, CmdMDel,
               "Deletes one occurrence of each of several added items"),
      rows.Row("cbf.count", 3, 0, kReadFast, CmdCount,
               "Returns an upper bound on how many times an item was added (and not deleted)"),
      rows.Row("cbf.card", 2, 0, kReadFast, CmdCard,
               "Returns the number of items in a counting Bloom filter"),
      rows.Row("cbf.info", -2, 3, kReadFast, CmdInfo,
               "Returns information about a counting Bloom filter"),
      rows.ScanDumpRow<kChunkTexts>("cbf.scandump",
                                    "Begins an incremental save of a counting Bloom filter"),
      rows.LoadChunkRow<kChunkTexts>("cbf.loadchunk",
                                     "Restores a counting Bloom filter saved with CBF.SCANDUMP"),
  };
  // Every argument is a key (dest, then the sources).
  CommandSpec merge =
      rows.Row("cbf.merge", -3, 0, kWriteOom, CmdMerge,
               "Merges counting Bloom filters of identical parameters by adding counters");
  merge.last_key = -1;
  list.push_back(std::move(merge));
  return list;
}

// check-snapshot's summary line.
std::string Describe(const CountingBloomFilter& f) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "counting bloom: %u layer(s), capacity %llu, items %llu, error %g, "
                "%u-bit counters, %llu bytes",
                f.num_layers(), static_cast<unsigned long long>(f.capacity()),
                static_cast<unsigned long long>(f.items()), f.error_rate(), f.counter_bits(),
                static_cast<unsigned long long>(f.memory_bytes()));
  return line;
}

}  // namespace

// The COMMAND DOCS syntax line of each row but SCANDUMP and LOADCHUNK
// (theirs come with them), sorted by name: catalogue/command_syntax.h
// says how a line reads.
constexpr CommandSyntax kRowSyntax[] = {
    {"cbf.add", "key item", ""},
    {"cbf.card", "key", ""},
    {"cbf.count", "key item", ""},
    {"cbf.del", "key item", ""},
    {"cbf.exists", "key item", ""},
    {"cbf.incr", "key item [item ...]", ""},
    {"cbf.info", "key [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION|COUNTERBITS|SATURATED]", ""},
    {"cbf.insert",
     "key [CAPACITY capacity] [ERROR error] [EXPANSION expansion] [NOCREATE] [NONSCALING] "
     "[COUNTERBITS counterbits] [WINDOW seconds [GENERATIONS generations]] [SEED seed] "
     "ITEMS item [item ...]",
     "capacity:integer error:double expansion:integer counterbits:integer seconds:integer "
     "generations:integer"},
    {"cbf.madd", "key item [item ...]", ""},
    {"cbf.mdel", "key item [item ...]", ""},
    {"cbf.merge", "destkey sourcekey [sourcekey ...]", "destkey:key sourcekey:key"},
    {"cbf.mexists", "key item [item ...]", ""},
    {"cbf.reserve",
     "key error_rate capacity [EXPANSION expansion] [NONSCALING] [COUNTERBITS counterbits] "
     "[WINDOW seconds [GENERATIONS generations]] [SEED seed]",
     "error_rate:double capacity:integer expansion:integer counterbits:integer "
     "seconds:integer generations:integer"},
};

// The family's registration (server/commands/registry.cc registers it).
const FilterFamily& CountingBloomFamily() {
  static const FilterFamily family{
      .kind = FilterKind::kCountingBloom,
      .type_name = "BGcountBF",  // ours, in the nine-character style of RedisBloom's names
      .group = "cbf",
      .acl_category = "@bloom",
      .writes = FamilyWrites::kExclusive,
      .commands = CountingBloomCommands,
      .syntax = kRowSyntax,
      .describe = DescribeAs<CountingBloomFilter, Describe>,
      .health = HealthAs<CountingBloomFilter, CountingBloomHealth>,
  };
  return family;
}

}  // namespace bloomgate
