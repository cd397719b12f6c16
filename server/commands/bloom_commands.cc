// BF.*: RedisBloom-compatible scalable Bloom filter commands.
//
// Ops (create, add) work on filters and return statuses; the cmd functions
// parse arguments, call the ops and write the reply. Reply shapes and error
// texts follow RedisBloom (Redis 8), see shared COMPAT.md §1.4-1.5; where
// RedisBloom silently misreads input (options matched by first letter or
// searched across the whole argument list) we refuse it instead.
#include <cstdio>
#include <optional>
#include <vector>

#include "filters/key_hash.h"
#include "server/commands/bloom_options.h"
#include "server/commands/chunk_transfer.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"
#include "server/commands/filter_health_report.h"
#include "server/commands/filter_lookup.h"
#include "server/commands/info_reply.h"
#include "server/context/command_table.h"
#include "server/context/filter_family.h"
#include "server/durability/journal.h"

namespace bloomgate {

std::string_view BloomAddFailureText(FilterStatus status) {
  switch (status) {
    case FilterStatus::kFull:
      return errors::kNonScalingFull;
    case FilterStatus::kOutOfMemory:
      return errors::kOom;
    case FilterStatus::kOk:
    case FilterStatus::kFilterMemoryLimit:
    case FilterStatus::kTooManyLayers:
    case FilterStatus::kInvalidOptions:
    case FilterStatus::kMaxExpansions:
      break;
  }
  return errors::kProblemInserting;
}

void ReplyBoolsThenError(ReplyBuilder& reply, const std::vector<bool>& results,
                         std::optional<std::string_view> error) {
  reply.ArrayHeader(results.size() + (error ? 1 : 0));
  for (bool result : results) reply.Bool(result);
  if (error) reply.Error(*error);
}

namespace {

// ---------------------------------------------------------------- ops ----

EntryPtr CreateBloom(CommandContext& ctx, std::string_view key, const BloomParams& params,
                     bool fail_if_exists, std::optional<std::string_view>* error) {
  ScalableBloomOptions options;
  options.error_rate = params.error_rate;
  options.capacity = params.capacity;
  options.expansion = params.expansion;
  std::unique_ptr<ScalableBloomFilter> filter;
  if (ScalableBloomFilter::Create(options, ctx.server.filter_limits(), &ctx.server.budget,
                                  &filter) != FilterStatus::kOk) {
    // RedisBloom's one text for every creation failure; all are memory
    // limits, the parameters having been validated before.
    *error = errors::kInsufficientMemory;
    return nullptr;
  }
  return StoreNewFilter(ctx, key, std::move(filter), fail_if_exists, error);
}

EntryPtr FindOrCreateBloom(CommandContext& ctx, std::string_view key, const CreateRule& rule,
                           std::optional<std::string_view>* error) {
  EntryPtr entry = FindFilter<ScalableBloomFilter>(ctx, key, error);
  if (entry != nullptr || error->has_value()) return entry;
  if (!rule.create) {
    *error = errors::kNotFound;
    return nullptr;
  }
  return CreateBloom(ctx, key, rule.Resolve(ctx.server), /*fail_if_exists=*/false, error);
}

struct AddOutcome {
  std::vector<bool> added;
  std::optional<std::string_view> error;
};

// Adds items in order, stopping at the first failure, and has the journal
// record the adds that took effect rather than the command (server/durability/journal.h):
// replaying BF.MADD would judge capacity and limits again, in whatever
// order concurrent adds reach the log, and could refuse what was
// acknowledged here.
AddOutcome AddItems(CommandContext& ctx, KeyEntry& entry, std::string_view key,
                    std::span<const std::string_view> items) {
  AddOutcome outcome;
  outcome.added.reserve(items.size());
  ScalableBloomFilter& filter = *entry.bloom();
  std::string& counted = ctx.effect_bytes;
  bool changed = false;
  const uint64_t items_before = filter.scaling() ? 0 : filter.items();
  for (std::string_view item : items) {
    bool added = false;
    FilterStatus status = filter.Add(HashKey(item), &added);
    if (status != FilterStatus::kOk) {
      outcome.error = BloomAddFailureText(status);
      break;
    }
    outcome.added.push_back(added);
    counted.push_back(added ? '1' : '0');
    changed |= added;
  }
  // WATCH sees a change only when the filter changed; an add of an item the
  // filter already holds changes nothing.
  if (changed) entry.MarkModified();
  if (!filter.scaling() && changed) {
    NoteNonScalingFill(ctx.spec.full_name, key, items_before, filter.items(), filter.capacity());
  }
  const size_t applied = outcome.added.size();
  if (applied == 0) {
    ctx.skip_journal = true;  // nothing took effect (a creation journals itself)
    return outcome;
  }
  ctx.effect.reserve(3 + applied);
  ctx.effect.assign({kBloomAddedEffect, key, counted});
  ctx.effect.insert(ctx.effect.end(), items.begin(), items.begin() + applied);
  return outcome;
}

// ---------------------------------------------------------------- cmds ---

// BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]
void CmdReserve(CommandContext& ctx) {
  ArgParser parser(ctx.args, 2);
  BloomParams params = DefaultBloomParams(ctx.server);
  ParseReserveArgs(parser, /*counting=*/false, &params);
  if (parser.failed()) {
    ctx.Fail(parser.error());
    return;
  }
  std::optional<std::string_view> error = ReserveConflict<ScalableBloomFilter>(ctx, ctx.args[1]);
  if (!error) CreateBloom(ctx, ctx.args[1], params, /*fail_if_exists=*/true, &error);
  if (error) {
    ctx.Fail(*error);
    return;
  }
  ctx.skip_journal = true;  // the creation record in the log says it all
  ctx.reply.Ok();
}

// BF.ADD key item
void CmdAdd(CommandContext& ctx) {
  std::optional<std::string_view> error;
  EntryPtr entry = FindOrCreateBloom(ctx, ctx.args[1], CreateRule{}, &error);
  if (entry == nullptr) {
    ctx.Fail(*error);
    return;
  }
  AddOutcome outcome = AddItems(ctx, *entry, ctx.args[1], ctx.args.subspan(2, 1));
  if (outcome.error) {
    ctx.Fail(*outcome.error);
    return;
  }
  ctx.reply.Bool(outcome.added[0]);
}

// BF.MADD key item [item ...]
void CmdMAdd(CommandContext& ctx) {
  std::optional<std::string_view> error;
  EntryPtr entry = FindOrCreateBloom(ctx, ctx.args[1], CreateRule{}, &error);
  if (entry == nullptr) {
    ctx.Fail(*error);
    return;
  }
  AddOutcome outcome = AddItems(ctx, *entry, ctx.args[1], ctx.args.subspan(2));
  ReplyBoolsThenError(ctx.reply, outcome.added, outcome.error);
}

// BF.INSERT key [CAPACITY capacity] [ERROR error] [EXPANSION expansion]
//           [NOCREATE] [NONSCALING] ITEMS item [item ...]
void CmdInsert(CommandContext& ctx) {
  ArgParser parser(ctx.args, 2);
  CreateRule rule;
  ParseInsertArgs(parser, "bf.insert", /*counting=*/false, &rule);
  if (parser.failed()) {
    ctx.Fail(parser.error());
    return;
  }
  std::optional<std::string_view> error;
  EntryPtr entry = FindOrCreateBloom(ctx, ctx.args[1], rule, &error);
  if (entry == nullptr) {
    ctx.Fail(*error);
    return;
  }
  AddOutcome outcome = AddItems(ctx, *entry, ctx.args[1], parser.Rest());
  ReplyBoolsThenError(ctx.reply, outcome.added, outcome.error);
}

// BF.EXISTS key item
void CmdExists(CommandContext& ctx) {
  std::optional<std::string_view> error;
  EntryPtr entry = FindFilter<ScalableBloomFilter>(ctx, ctx.args[1], &error);
  if (error) {
    ctx.Fail(*error);
    return;
  }
  ctx.reply.Bool(entry != nullptr && entry->bloom()->MayContain(HashKey(ctx.args[2])));
}

// BF.MEXISTS key item [item ...]
void CmdMExists(CommandContext& ctx) {
  std::optional<std::string_view> error;
  EntryPtr entry = FindFilter<ScalableBloomFilter>(ctx, ctx.args[1], &error);
  if (error) {
    ctx.Fail(*error);
    return;
  }
  auto items = ctx.args.subspan(2);
  ctx.reply.ArrayHeader(items.size());
  for (std::string_view item : items) {
    ctx.reply.Bool(entry != nullptr && entry->bloom()->MayContain(HashKey(item)));
  }
}

// BF.CARD key
void CmdCard(CommandContext& ctx) {
  std::optional<std::string_view> error;
  EntryPtr entry = FindFilter<ScalableBloomFilter>(ctx, ctx.args[1], &error);
  if (error) {
    ctx.Fail(*error);
    return;
  }
  ctx.reply.Integer(entry == nullptr ? 0 : static_cast<int64_t>(entry->bloom()->items()));
}

// BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION]
void CmdInfo(CommandContext& ctx) {
  std::optional<std::string_view> error;
  EntryPtr entry = FindFilter<ScalableBloomFilter>(ctx, ctx.args[1], &error);
  if (entry == nullptr) {
    ctx.Fail(error ? *error : errors::kNotFound);
    return;
  }
  const ScalableBloomFilter& filter = *entry->bloom();
  auto integer = [](uint64_t value) {
    return [value](ReplyBuilder& reply) { reply.Integer(static_cast<int64_t>(value)); };
  };
  // RedisBloom's order and names; client libraries read them by name.
  const InfoField fields[] = {
      {"CAPACITY", "Capacity", integer(filter.capacity())},
      {"SIZE", "Size", integer(entry->MemoryUsage())},
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
  };
  std::optional<std::string_view> selector;
  if (ctx.args.size() == 3) selector = ctx.args[2];
  if (!ReplyInfoFields(ctx.reply, fields, selector)) ctx.failed = true;
}

constexpr ChunkCommandTexts kChunkTexts = {FilterKind::kScalableBloom,
                                           errors::kScanDumpBadIterator,
                                           errors::kLoadChunkBadIterator,
                                           errors::kReceivedBadData};

// BF.SCANDUMP key iterator / BF.LOADCHUNK key iterator data
void CmdScanDump(CommandContext& ctx) { ScanDump(ctx, kChunkTexts); }
void CmdLoadChunk(CommandContext& ctx) { LoadChunk(ctx, kChunkTexts); }

std::vector<CommandSpec> BloomCommands() {
  // Flags as RedisBloom registers them (COMPAT.md §1.4): writes are
  // "write deny-oom", reads "readonly fast".
  constexpr uint32_t kWriteOom = kCmdWrite | kCmdDenyOom;
  constexpr uint32_t kReadFast = kCmdReadOnly | kCmdFast;
  auto row = [](std::string_view name, int arity, int max_args, uint32_t flags,
                CommandHandler handler, std::string_view summary, std::string_view since) {
    return CommandSpec{.name = name, .arity = arity, .max_args = max_args, .flags = flags,
                       .first_key = 1, .last_key = 1, .key_step = 1, .handler = handler,
                       .summary = summary, .group = "bf", .since = since};
  };
  return {
      row("bf.reserve", -4, 7, kWriteOom, CmdReserve, "Creates a new Bloom filter",
          "1.0.0"),
      row("bf.add", 3, 0, kWriteOom | kCmdOrderFree, CmdAdd, "Adds an item to a Bloom filter",
          "1.0.0"),
      row("bf.madd", -3, 0, kWriteOom | kCmdOrderFree, CmdMAdd,
          "Adds one or more items to a Bloom filter. A filter will be created if it does not "
          "exist",
          "1.0.0"),
      row("bf.insert", -4, 0, kWriteOom | kCmdOrderFree, CmdInsert,
          "Adds one or more items to a Bloom filter. A filter will be created if it does not "
          "exist",
          "1.0.0"),
      row("bf.exists", 3, 0, kReadFast, CmdExists,
          "Checks whether an item exists in a Bloom filter", "1.0.0"),
      row("bf.mexists", -3, 0, kReadFast, CmdMExists,
          "Checks whether one or more items exist in a Bloom filter", "1.0.0"),
      row("bf.card", 2, 0, kReadFast, CmdCard, "Returns the cardinality of a Bloom filter",
          "2.4.4"),
      row("bf.info", -2, 3, kReadFast, CmdInfo, "Returns information about a Bloom filter",
          "1.0.0"),
      row("bf.scandump", 3, 0, kReadFast, CmdScanDump,
          "Begins an incremental save of the bloom filter", "1.0.0"),
      row("bf.loadchunk", 4, 0, kWriteOom, CmdLoadChunk,
          "Restores a filter previously saved using SCANDUMP", "1.0.0"),
  };
}

// check-snapshot's summary line.
FilterHealth Health(const AnyFilter& filter, uint64_t max_scan_bytes) {
  const ScalableBloomFilter& f = *std::get<std::unique_ptr<ScalableBloomFilter>>(filter);
  return BloomHealth(f, max_scan_bytes);
}

std::string Describe(const AnyFilter& filter) {
  const ScalableBloomFilter& f = *std::get<std::unique_ptr<ScalableBloomFilter>>(filter);
  char line[256];
  std::snprintf(line, sizeof(line),
                "bloom: %u layer(s), capacity %llu, items %llu, error %g, expansion %u, %llu bytes",
                f.num_layers(), static_cast<unsigned long long>(f.capacity()),
                static_cast<unsigned long long>(f.items()), f.error_rate(), f.expansion(),
                static_cast<unsigned long long>(f.memory_bytes()));
  return line;
}

}  // namespace

// The family's registration (server/context/family_registry.cc lists it).
const FilterFamily& BloomFamily() {
  static const FilterFamily family{
      .kind = FilterKind::kScalableBloom,
      .type_name = "MBbloom--",  // RedisBloom's module type name, as TYPE shows it
      .group = "bf",
      .acl_category = "@bloom",
      .writes = FamilyWrites::kCommute,
      .commands = BloomCommands,
      .describe = Describe,
      .health = Health,
  };
  return family;
}

}  // namespace bloomgate
