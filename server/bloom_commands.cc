// BF.*: RedisBloom-compatible scalable Bloom filter commands.
//
// Ops (find, create, add) work on filters and return statuses; the cmd
// functions parse arguments, call the ops and write the reply. Reply shapes
// and error texts follow RedisBloom (Redis 8), see shared COMPAT.md §1.4-1.5;
// where RedisBloom silently misreads input (options matched by first letter
// or searched across the whole argument list) we refuse it instead.
#include <optional>
#include <vector>

#include "filters/key_hash.h"
#include "server/arg_parser.h"
#include "server/command_context.h"
#include "server/command_table.h"
#include "server/errors.h"

namespace bloomgate {
namespace {

// ---------------------------------------------------------------- ops ----

struct BloomParams {
  double error_rate = 0.01;
  uint64_t capacity = 100;
  uint32_t expansion = 2;  // 0 = non-scaling
};

BloomParams DefaultBloomParams(const ServerContext& server) {
  ServerConfig config = server.config.Get();
  return BloomParams{config.bf_error_rate, config.bf_initial_size,
                     config.bf_expansion_factor};
}

// The entry under `key` if it is a Bloom filter. On a missing key returns
// null with *error unset; on another type sets *error to WRONGTYPE.
EntryPtr FindBloom(CommandContext& ctx, std::string_view key,
                   std::optional<std::string_view>* error) {
  EntryPtr entry = ctx.server.keyspace.Find(key, ctx.now_ms);
  if (entry == nullptr) {
    Bump(ctx.counters().keyspace_misses);
    return nullptr;
  }
  Bump(ctx.counters().keyspace_hits);
  if (entry->bloom() == nullptr) {
    *error = errors::kWrongType;
    return nullptr;
  }
  return entry;
}

std::string_view AddFailureText(FilterStatus status) {
  switch (status) {
    case FilterStatus::kFull:
      return errors::kNonScalingFull;
    case FilterStatus::kOutOfMemory:
      return errors::kOom;
    case FilterStatus::kFilterMemoryLimit:
    case FilterStatus::kTooManyLayers:
    case FilterStatus::kOk:
      break;
  }
  return errors::kProblemInserting;
}

// Creates a filter under `key` unless one appeared meanwhile; returns the
// entry now stored, or null with *error set.
EntryPtr CreateBloom(CommandContext& ctx, std::string_view key, const BloomParams& params,
                     bool fail_if_exists, std::optional<std::string_view>* error) {
  ScalableBloomOptions options;
  options.error_rate = params.error_rate;
  options.capacity = params.capacity;
  options.expansion = params.expansion;
  std::unique_ptr<ScalableBloomFilter> filter;
  FilterStatus status = ScalableBloomFilter::Create(options, ctx.server.filter_limits(),
                                                    &ctx.server.budget, &filter);
  if (status != FilterStatus::kOk) {
    // RedisBloom's one text for every creation failure (all are memory
    // limits: the parameters were validated before).
    *error = errors::kInsufficientMemory;
    return nullptr;
  }
  bool inserted = false;
  EntryPtr entry = ctx.server.keyspace.Insert(
      key, std::make_shared<KeyEntry>(std::move(filter)), ctx.now_ms, &inserted);
  if (!inserted) {
    if (entry->bloom() == nullptr) {
      *error = errors::kWrongType;
      return nullptr;
    }
    if (fail_if_exists) {
      *error = errors::kItemExists;
      return nullptr;
    }
  }
  return entry;
}

// How a command that adds items treats a missing key.
struct CreateRule {
  bool create = true;  // false: NOCREATE, a missing key is "ERR not found"
  // Parameters given with the command; anything unset comes from the config
  // defaults, which are only read when a filter is actually created.
  std::optional<double> error_rate;
  std::optional<uint64_t> capacity;
  std::optional<uint32_t> expansion;
};

// The filter under `key`, created by `rule` when missing.
EntryPtr FindOrCreateBloom(CommandContext& ctx, std::string_view key, const CreateRule& rule,
                           std::optional<std::string_view>* error) {
  EntryPtr entry = FindBloom(ctx, key, error);
  if (entry != nullptr || error->has_value()) return entry;
  if (!rule.create) {
    *error = errors::kNotFound;
    return nullptr;
  }
  BloomParams params = DefaultBloomParams(ctx.server);
  params.error_rate = rule.error_rate.value_or(params.error_rate);
  params.capacity = rule.capacity.value_or(params.capacity);
  params.expansion = rule.expansion.value_or(params.expansion);
  return CreateBloom(ctx, key, params, /*fail_if_exists=*/false, error);
}

// Adds items in order, stopping at the first failure (RedisBloom truncates
// BF.MADD's reply there: the results so far, then the error).
struct AddOutcome {
  std::vector<bool> added;
  std::optional<std::string_view> error;
};

AddOutcome AddItems(KeyEntry& entry, std::span<const std::string_view> items) {
  AddOutcome outcome;
  outcome.added.reserve(items.size());
  ScalableBloomFilter& filter = *entry.bloom();
  bool changed = false;
  for (std::string_view item : items) {
    bool added = false;
    FilterStatus status = filter.Add(HashKey(item), &added);
    if (status != FilterStatus::kOk) {
      outcome.error = AddFailureText(status);
      break;
    }
    outcome.added.push_back(added);
    changed |= added;
  }
  if (changed) entry.MarkModified();
  return outcome;
}

void ReplyAddOutcome(ReplyBuilder& reply, const AddOutcome& outcome) {
  reply.ArrayHeader(outcome.added.size() + (outcome.error ? 1 : 0));
  for (bool added : outcome.added) reply.Bool(added);
  if (outcome.error) reply.Error(*outcome.error);
}

// BF.RESERVE's counts: a negative number is out of range (RedisBloom reads
// them as signed integers and range-checks them), anything else that is not
// a number is `bad`.
uint64_t NextCount(ArgParser& parser, std::string_view bad, std::string_view out_of_range) {
  std::string_view text = parser.Next(bad);
  uint64_t value = 0;
  int64_t negative = 0;
  if (parser.failed() || ParseUint64(text, &value)) return value;
  parser.Fail(ParseInt64(text, &negative) ? out_of_range : bad);
  return 0;
}

// Parses EXPANSION / NONSCALING as BF.RESERVE takes them; they may come in
// any order after the positional arguments.
void ParseReserveOptions(ArgParser& parser, BloomParams* params) {
  bool nonscaling = false;
  std::optional<uint64_t> expansion;
  while (parser.HasNext() && !parser.failed()) {
    if (parser.Accept("EXPANSION")) {
      if (expansion) parser.Fail(errors::kDuplicateOption);
      if (!parser.HasNext()) parser.Fail(errors::kNoExpansion);
      uint64_t value = NextCount(parser, errors::kBadExpansion, errors::kExpansionRange);
      if (!parser.failed() && value > kMaxBloomExpansion) parser.Fail(errors::kExpansionRange);
      expansion = value;
    } else if (parser.Accept("NONSCALING")) {
      if (nonscaling) parser.Fail(errors::kDuplicateOption);
      nonscaling = true;
    } else {
      parser.Fail(errors::kSyntax);
    }
  }
  if (parser.failed()) return;
  if (nonscaling && expansion && *expansion != 0) {
    parser.Fail(errors::kNonScalingCannotExpand);
    return;
  }
  if (nonscaling) {
    params->expansion = 0;
  } else if (expansion) {
    params->expansion = static_cast<uint32_t>(*expansion);
  }
}

// ---------------------------------------------------------------- cmds ---

// BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]
void CmdReserve(CommandContext& ctx) {
  ArgParser parser(ctx.args, 2);
  BloomParams params = DefaultBloomParams(ctx.server);
  params.error_rate = parser.NextDouble(errors::kBadErrorRate, errors::kBadErrorRate);
  if (!parser.failed() && !(params.error_rate > 0 && params.error_rate < 1)) {
    parser.Fail(errors::kErrorRateRange);
  }
  params.capacity = NextCount(parser, errors::kBadCapacity, errors::kCapacityRange);
  if (!parser.failed() && params.capacity == 0) parser.Fail(errors::kCapacityRange);
  ParseReserveOptions(parser, &params);
  if (parser.failed()) {
    ctx.reply.Error(parser.error());
    return;
  }
  std::optional<std::string_view> error;
  EntryPtr existing = FindBloom(ctx, ctx.args[1], &error);
  if (existing != nullptr) error = errors::kItemExists;
  if (!error) CreateBloom(ctx, ctx.args[1], params, /*fail_if_exists=*/true, &error);
  if (error) {
    ctx.reply.Error(*error);
    return;
  }
  ctx.reply.Ok();
}

// BF.ADD key item
void CmdAdd(CommandContext& ctx) {
  std::optional<std::string_view> error;
  EntryPtr entry = FindOrCreateBloom(ctx, ctx.args[1], CreateRule{}, &error);
  if (entry == nullptr) {
    ctx.reply.Error(*error);
    return;
  }
  AddOutcome outcome = AddItems(*entry, ctx.args.subspan(2, 1));
  if (outcome.error) {
    ctx.reply.Error(*outcome.error);
    return;
  }
  ctx.reply.Bool(outcome.added[0]);
}

// BF.MADD key item [item ...]
void CmdMAdd(CommandContext& ctx) {
  std::optional<std::string_view> error;
  EntryPtr entry = FindOrCreateBloom(ctx, ctx.args[1], CreateRule{}, &error);
  if (entry == nullptr) {
    ctx.reply.Error(*error);
    return;
  }
  ReplyAddOutcome(ctx.reply, AddItems(*entry, ctx.args.subspan(2)));
}

// BF.INSERT key [CAPACITY capacity] [ERROR error] [EXPANSION expansion]
//           [NOCREATE] [NONSCALING] ITEMS item [item ...]
void CmdInsert(CommandContext& ctx) {
  ArgParser parser(ctx.args, 2);
  CreateRule rule;
  bool nonscaling = false;
  std::optional<uint64_t> expansion;
  bool items_found = false;
  while (parser.HasNext() && !parser.failed()) {
    if (parser.Accept("ITEMS")) {
      items_found = true;
      break;
    }
    if (parser.Accept("CAPACITY")) {
      if (rule.capacity) parser.Fail(errors::kDuplicateOption);
      rule.capacity = parser.NextUint64(errors::kInsertBadCapacity, errors::kInsertBadCapacity);
      if (!parser.failed() && *rule.capacity == 0) parser.Fail(errors::kInsertBadCapacity);
    } else if (parser.Accept("ERROR")) {
      if (rule.error_rate) parser.Fail(errors::kDuplicateOption);
      rule.error_rate =
          parser.NextDouble(errors::kInsertBadErrorRate, errors::kInsertBadErrorRate);
      if (!parser.failed() && !(*rule.error_rate > 0 && *rule.error_rate < 1)) {
        parser.Fail(errors::kInsertBadErrorRate);
      }
    } else if (parser.Accept("EXPANSION")) {
      if (expansion) parser.Fail(errors::kDuplicateOption);
      expansion = parser.NextUint64(errors::kInsertBadExpansion, errors::kInsertBadExpansion);
      if (!parser.failed() && *expansion > kMaxBloomExpansion) {
        parser.Fail(errors::kInsertBadExpansion);
      }
    } else if (parser.Accept("NOCREATE")) {
      if (!rule.create) parser.Fail(errors::kDuplicateOption);
      rule.create = false;
    } else if (parser.Accept("NONSCALING")) {
      if (nonscaling) parser.Fail(errors::kDuplicateOption);
      nonscaling = true;
    } else {
      parser.Fail(errors::kInsertUnknownArgument);
    }
  }
  if (!parser.failed() && (!items_found || !parser.HasNext())) {
    parser.Fail("ERR wrong number of arguments for 'bf.insert' command");
  }
  if (!parser.failed() && !rule.create && (rule.capacity || rule.error_rate)) {
    parser.Fail(errors::kNoCreateWithOptions);
  }
  if (!parser.failed() && nonscaling && expansion && *expansion != 0) {
    parser.Fail(errors::kNonScalingCannotExpand);
  }
  if (parser.failed()) {
    ctx.reply.Error(parser.error());
    return;
  }
  if (nonscaling) {
    rule.expansion = 0;
  } else if (expansion) {
    rule.expansion = static_cast<uint32_t>(*expansion);
  }
  std::optional<std::string_view> error;
  EntryPtr entry = FindOrCreateBloom(ctx, ctx.args[1], rule, &error);
  if (entry == nullptr) {
    ctx.reply.Error(*error);
    return;
  }
  ReplyAddOutcome(ctx.reply, AddItems(*entry, parser.Rest()));
}

// BF.EXISTS key item
void CmdExists(CommandContext& ctx) {
  std::optional<std::string_view> error;
  EntryPtr entry = FindBloom(ctx, ctx.args[1], &error);
  if (error) {
    ctx.reply.Error(*error);
    return;
  }
  ctx.reply.Bool(entry != nullptr && entry->bloom()->MayContain(HashKey(ctx.args[2])));
}

// BF.MEXISTS key item [item ...]
void CmdMExists(CommandContext& ctx) {
  std::optional<std::string_view> error;
  EntryPtr entry = FindBloom(ctx, ctx.args[1], &error);
  if (error) {
    ctx.reply.Error(*error);
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
  EntryPtr entry = FindBloom(ctx, ctx.args[1], &error);
  if (error) {
    ctx.reply.Error(*error);
    return;
  }
  ctx.reply.Integer(entry == nullptr ? 0 : static_cast<int64_t>(entry->bloom()->items()));
}

// BF.INFO key [CAPACITY | SIZE | FILTERS | ITEMS | EXPANSION]
void CmdInfo(CommandContext& ctx) {
  struct Field {
    std::string_view selector;
    std::string_view name;
  };
  // RedisBloom's order and names; client libraries read them by name.
  static constexpr Field kFields[] = {
      {"CAPACITY", "Capacity"},
      {"SIZE", "Size"},
      {"FILTERS", "Number of filters"},
      {"ITEMS", "Number of items inserted"},
      {"EXPANSION", "Expansion rate"},
  };
  std::optional<size_t> selected;
  if (ctx.args.size() == 3) {
    for (size_t i = 0; i < std::size(kFields); ++i) {
      if (EqualsIgnoreCase(ctx.args[2], kFields[i].selector)) selected = i;
    }
    if (!selected) {
      ctx.reply.Error(errors::kInvalidInfoValue);
      return;
    }
  }
  std::optional<std::string_view> error;
  EntryPtr entry = FindBloom(ctx, ctx.args[1], &error);
  if (entry == nullptr) {
    ctx.reply.Error(error ? *error : errors::kNotFound);
    return;
  }
  const ScalableBloomFilter& filter = *entry->bloom();
  auto write_value = [&](size_t field) {
    switch (field) {
      case 0: ctx.reply.Integer(static_cast<int64_t>(filter.capacity())); break;
      case 1: ctx.reply.Integer(static_cast<int64_t>(entry->MemoryUsage())); break;
      case 2: ctx.reply.Integer(filter.num_layers()); break;
      case 3: ctx.reply.Integer(static_cast<int64_t>(filter.items())); break;
      default:
        if (filter.scaling()) {
          ctx.reply.Integer(filter.expansion());
        } else {
          ctx.reply.Null();
        }
    }
  };
  if (selected) {
    // RESP2: a singleton array; RESP3: a one-entry map (RedisBloom).
    if (ctx.reply.resp3()) {
      ctx.reply.MapHeader(1);
      ctx.reply.SimpleString(kFields[*selected].name);
    } else {
      ctx.reply.ArrayHeader(1);
    }
    write_value(*selected);
    return;
  }
  ctx.reply.MapHeader(std::size(kFields));
  for (size_t i = 0; i < std::size(kFields); ++i) {
    ctx.reply.SimpleString(kFields[i].name);
    write_value(i);
  }
}

}  // namespace

std::vector<CommandSpec> BloomCommands() {
  constexpr uint32_t kWriteOom = kCmdWrite | kCmdDenyOom;
  constexpr uint32_t kReadFast = kCmdReadOnly | kCmdFast;
  return {
      {.name = "bf.reserve", .arity = -4, .max_args = 7, .flags = kWriteOom | kCmdFast,
       .first_key = 1, .last_key = 1, .key_step = 1, .handler = CmdReserve,
       .summary = "Creates a new Bloom filter", .group = "bf", .since = "1.0.0"},
      {.name = "bf.add", .arity = 3, .flags = kWriteOom | kCmdFast, .first_key = 1,
       .last_key = 1, .key_step = 1, .handler = CmdAdd,
       .summary = "Adds an item to a Bloom filter", .group = "bf", .since = "1.0.0"},
      {.name = "bf.madd", .arity = -3, .flags = kWriteOom | kCmdFast, .first_key = 1,
       .last_key = 1, .key_step = 1, .handler = CmdMAdd,
       .summary = "Adds one or more items to a Bloom filter. A filter will be created if it "
                  "does not exist",
       .group = "bf", .since = "1.0.0"},
      {.name = "bf.insert", .arity = -4, .flags = kWriteOom, .first_key = 1, .last_key = 1,
       .key_step = 1, .handler = CmdInsert,
       .summary = "Adds one or more items to a Bloom filter. A filter will be created if it "
                  "does not exist",
       .group = "bf", .since = "1.0.0"},
      {.name = "bf.exists", .arity = 3, .flags = kReadFast, .first_key = 1, .last_key = 1,
       .key_step = 1, .handler = CmdExists,
       .summary = "Checks whether an item exists in a Bloom filter", .group = "bf",
       .since = "1.0.0"},
      {.name = "bf.mexists", .arity = -3, .flags = kReadFast, .first_key = 1, .last_key = 1,
       .key_step = 1, .handler = CmdMExists,
       .summary = "Checks whether one or more items exist in a Bloom filter", .group = "bf",
       .since = "1.0.0"},
      {.name = "bf.card", .arity = 2, .flags = kReadFast, .first_key = 1, .last_key = 1,
       .key_step = 1, .handler = CmdCard,
       .summary = "Returns the cardinality of a Bloom filter", .group = "bf",
       .since = "2.4.4"},
      {.name = "bf.info", .arity = -2, .max_args = 3, .flags = kReadFast, .first_key = 1,
       .last_key = 1, .key_step = 1, .handler = CmdInfo,
       .summary = "Returns information about a Bloom filter", .group = "bf",
       .since = "1.0.0"},
  };
}

}  // namespace bloomgate
