// CF.*: RedisBloom-compatible cuckoo filter commands (COMPAT.md §1.7):
// RedisBloom's syntax, defaults (cf-* config), reply shapes in RESP2 and
// RESP3 and error texts, with two deliberate differences: a key of another
// type is WRONGTYPE for every command (CF.EXISTS and CF.DEL included), and
// "Maximum expansions reached" is only answered when the filter actually
// needs a new sub-filter (RedisBloom refuses every add once the count is
// reached, even one that would fit).
#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

#include "filters/key_hash.h"
#include "server/catalogue/command_table.h"
#include "server/catalogue/filter_family.h"
#include "server/commands/arg_parser.h"
#include "server/commands/family_shared/chunk_transfer.h"
#include "server/commands/command_context.h"
#include "server/commands/cuckoo/cuckoo_ops.h"
#include "server/commands/errors.h"
#include "server/commands/family_shared/family_rows.h"
#include "server/commands/family_shared/info_reply.h"

namespace bloomgate {

const FilterFamily& CuckooFamily();  // the record, at the end of this file

namespace {

// ---------------------------------------------------------------- cmds ---
// Each parses, calls the ops of cuckoo_ops.h, maps a status to its text with
// CuckooStatusText and replies.

// A memory refusal says its limit (CuckooFailureText).
void Fail(CommandContext& ctx, CuckooStatus status, const MemoryRefusal& refusal = {}) {
  ctx.Fail(CuckooFailureText(status, refusal));
}

// The filter of a command that does not create one into *filter (null for
// a missing key); false when the key holds another type and WRONGTYPE was
// replied.
bool FindForRead(CommandContext& ctx, EntryPtr* holder, CuckooFilter** filter) {
  FilterStore store = StoreFor(ctx);
  switch (FindFilter<CuckooFilter>(store, ctx.Key(ctx.args[1]), holder)) {
    case Lookup::kWrongType:
      Fail(ctx, CuckooStatus::kWrongType);
      return false;
    case Lookup::kOutOfMemory:  // a write (CF.DEL, CBF.DEL...) whose snapshot copy does not fit
      Fail(ctx, CuckooStatus::kSnapshotCopyOom);
      return false;
    case Lookup::kFound:
    case Lookup::kMissing:
      break;
  }
  *filter = *holder == nullptr ? nullptr : (*holder)->get<CuckooFilter>();
  return true;
}

// Reads a number as RedisBloom does for CF.*: as a signed integer, so that
// a negative one is out of range rather than unparsable.
uint64_t NextSigned(ArgParser& parser, std::string_view unparsable,
                    std::string_view out_of_range, uint64_t min, uint64_t max) {
  std::string_view text = parser.Next(unparsable);
  if (parser.failed()) return 0;
  uint64_t value = 0;
  int64_t negative = 0;
  if (ParseUint64(text, &value)) {
    if (value < min || value > max) parser.Fail(out_of_range);
    return value;
  }
  parser.Fail(ParseInt64(text, &negative) ? out_of_range : unparsable);
  return 0;
}

// Parses one "NAME value" option of CF.RESERVE into *value within [min, max].
void ParseBoundedOption(ArgParser& parser, std::string_view unparsable,
                        std::string_view out_of_range, uint64_t min, uint64_t max,
                        std::optional<uint64_t>* value) {
  if (value->has_value()) parser.Fail(errors::kDuplicateOption);
  *value = NextSigned(parser, unparsable, out_of_range, min, max);
}

// ---------------------------------------------------------------- cmds ---

// Creates the cuckoo filter of `options` under `key` through
// CommandContext::MakeFilter: off the event loop from FilterMaker::kInlineBytes
// on (one byte a slot and at least `capacity` slots, zeroed and resident when
// made: 1 GiB stalled the loop 0.9 s on an idle machine, 6.0 s on a loaded
// one). False when the command parked. Else *status: kOk with *entry the
// filter under the key (with `fail_if_exists` false, one another client
// stored meanwhile, the made one then freed), or why not (*refusal: what a
// refused build's memory check said).
bool MakeCuckoo(CommandContext& ctx, FilterStore& store, const KeyRef& key,
                const CuckooFilterOptions& options, bool fail_if_exists, EntryPtr* entry,
                CuckooStatus* status, MemoryRefusal* refusal) {
  std::unique_ptr<CuckooFilter> filter;
  FilterStatus created = FilterStatus::kOk;
  if (!ctx.MakeFilter(options.capacity,
                      [options, limits = store.limits, budget = store.budget](
                          std::unique_ptr<CuckooFilter>* out, MemoryRefusal* refused) {
                        return CuckooFilter::Create(options, limits, budget, out, refused);
                      },
                      &created, &filter, refusal)) {
    return false;
  }
  if (created != FilterStatus::kOk) {
    *status = CuckooCreateStatus(created, *refusal);
    return true;
  }
  switch (StoreNewFilter(store, key, std::move(filter), fail_if_exists, entry)) {
    case StoreOutcome::kStored:
    case StoreOutcome::kExisting:
      *status = CuckooStatus::kOk;
      break;
    case StoreOutcome::kItemExists:
      *status = CuckooStatus::kItemExists;
      break;
    case StoreOutcome::kWrongType:
      *status = CuckooStatus::kWrongType;
      break;
  }
  return true;
}

// CF.RESERVE key capacity [BUCKETSIZE bs] [MAXITERATIONS mi] [EXPANSION e]
void CmdReserve(CommandContext& ctx) {
  if (ctx.args.size() % 2 == 0) {
    // Options come in name/value pairs: one without its value is an arity
    // error, as in RedisBloom.
    ctx.Fail(errors::WrongArity(ctx.spec.full_name));
    return;
  }
  ArgParser parser(ctx.args, 2);
  CuckooFilterOptions options = DefaultCuckooOptions(ctx.server.config);
  options.capacity =
      NextSigned(parser, errors::kCfBadCapacity, errors::kCfCapacityRange, 0, UINT64_MAX);
  std::optional<uint64_t> bucket_size, max_iterations, expansion;
  while (parser.HasNext() && !parser.failed()) {
    if (parser.Accept("BUCKETSIZE")) {
      ParseBoundedOption(parser, errors::kCfBadBucketSize, errors::kCfBucketSizeRange, 1, 255,
                         &bucket_size);
    } else if (parser.Accept("MAXITERATIONS")) {
      ParseBoundedOption(parser, errors::kCfBadMaxIterations, errors::kCfMaxIterationsRange, 1,
                         65535, &max_iterations);
    } else if (parser.Accept("EXPANSION")) {
      ParseBoundedOption(parser, errors::kCfBadExpansion, errors::kCfExpansionRange, 0, 32768,
                         &expansion);
    } else {
      parser.Fail(errors::kSyntax);
    }
  }
  if (bucket_size) options.bucket_size = static_cast<uint32_t>(*bucket_size);
  if (max_iterations) options.max_iterations = static_cast<uint32_t>(*max_iterations);
  if (expansion) options.expansion = static_cast<uint32_t>(*expansion);
  if (!parser.failed() && options.capacity < 2ull * options.bucket_size) {
    parser.Fail(errors::kCfCapacityRange);
  }
  if (parser.failed()) {
    ctx.Fail(parser.error());
    return;
  }
  FilterStore store = StoreFor(ctx);
  const KeyRef key = ctx.Key(ctx.args[1]);
  if (options.capacity >= FilterMaker::kInlineBytes) {
    // Big enough to build off the loop: the key is checked before anything
    // is built, and the build stored as ReserveCuckoo would store its own.
    if (const Lookup conflict = ReserveConflict<CuckooFilter>(store, key);
        conflict != Lookup::kMissing) {
      Fail(ctx, conflict == Lookup::kFound ? CuckooStatus::kItemExists : CuckooStatus::kWrongType);
      return;
    }
    EntryPtr entry;
    CuckooStatus status = CuckooStatus::kOk;
    MemoryRefusal refusal;
    if (!MakeCuckoo(ctx, store, key, options, /*fail_if_exists=*/true, &entry, &status,
                    &refusal)) {
      return;  // parked: runs again once the filter is made off the loop
    }
    if (status != CuckooStatus::kOk) {
      Fail(ctx, status, refusal);
      return;
    }
  } else if (CuckooStatus status = ReserveCuckoo(store, key, options);
             status != CuckooStatus::kOk) {
    Fail(ctx, status, store.refusal);
    return;
  }
  ctx.skip_journal = true;  // the creation record in the log says it all
  ctx.reply.Ok();
}

// CF.ADD key item / CF.ADDNX key item
void AddOne(CommandContext& ctx, bool only_if_absent) {
  FilterStore store = StoreFor(ctx);
  EntryPtr entry;
  bool added = false;
  CuckooStatus status = FindOrCreateCuckoo(store, ctx.Key(ctx.args[1]), /*create=*/true,
                                           /*capacity=*/std::nullopt, &entry);
  MemoryRefusal refusal = store.refusal;  // a creation's, else the add's below
  if (status == CuckooStatus::kOk) {
    status = AddCuckooItem(*entry, ctx.args[2], only_if_absent, store.admission, &added, &refusal);
  }
  if (status != CuckooStatus::kOk) {
    Fail(ctx, status, refusal);
    return;
  }
  ctx.reply.Bool(added);
}

void CmdAdd(CommandContext& ctx) { AddOne(ctx, /*only_if_absent=*/false); }
void CmdAddNx(CommandContext& ctx) { AddOne(ctx, /*only_if_absent=*/true); }

// CF.INSERT / CF.INSERTNX key [CAPACITY capacity] [NOCREATE] ITEMS item [item ...]
// Per item: 1 added, 0 already there (INSERTNX), -1 no room. RESP3 turns
// CF.INSERT's replies into booleans (false = no room) but, as RedisBloom,
// leaves CF.INSERTNX's three-valued integers alone.
void InsertMany(CommandContext& ctx, bool only_if_absent) {
  ArgParser parser(ctx.args, 2);
  std::optional<uint64_t> capacity;
  bool create = true, items_found = false;
  while (parser.HasNext() && !parser.failed()) {
    if (parser.Accept("ITEMS")) {
      items_found = true;
      break;
    }
    if (parser.Accept("CAPACITY")) {
      if (capacity) parser.Fail(errors::kDuplicateOption);
      capacity = NextSigned(parser, errors::kCfBadCapacity, errors::kCfInsertCapacityRange, 0,
                            UINT64_MAX);
      // Checked here, as RedisBloom's CFInsert does, before the key is looked
      // at: a capacity below two buckets is refused even for a filter that
      // exists (which would ignore it) and before a later unknown argument.
      if (!parser.failed() &&
          *capacity < 2ull * DefaultCuckooOptions(ctx.server.config).bucket_size) {
        parser.Fail(errors::kCfInsertCapacityRange);
      }
    } else if (parser.Accept("NOCREATE")) {
      if (!create) parser.Fail(errors::kDuplicateOption);
      create = false;
    } else {
      parser.Fail(errors::kInsertUnknownArgument);
    }
  }
  if (!parser.failed() && (!items_found || !parser.HasNext())) {
    parser.Fail(errors::WrongArity(ctx.spec.full_name));
  }
  if (!parser.failed() && !create && capacity) parser.Fail(errors::kNoCreateWithOptions);
  if (parser.failed()) {
    ctx.Fail(parser.error());
    return;
  }
  FilterStore store = StoreFor(ctx);
  const KeyRef key = ctx.Key(ctx.args[1]);
  EntryPtr entry;
  CuckooStatus status = CuckooStatus::kOk;
  MemoryRefusal refusal;
  if (create && capacity && *capacity >= FilterMaker::kInlineBytes &&
      ReserveConflict<CuckooFilter>(store, key) == Lookup::kMissing) {
    // A creation as big as CF.RESERVE's: built off the loop the same way.
    CuckooFilterOptions options = DefaultCuckooOptions(ctx.server.config);
    options.capacity = *capacity;
    if (!MakeCuckoo(ctx, store, key, options, /*fail_if_exists=*/false, &entry, &status,
                    &refusal)) {
      return;  // parked: runs again once the filter is made off the loop
    }
  } else {
    status = FindOrCreateCuckoo(store, key, create, capacity, &entry);
    refusal = store.refusal;
  }
  if (status != CuckooStatus::kOk) {
    Fail(ctx, status, refusal);
    return;
  }
  const std::span<const std::string_view> items = parser.Rest();
  CuckooInsertResult result = InsertCuckooItems(*entry, items, only_if_absent, store.admission);
  const bool stopped = result.status != CuckooStatus::kOk;
  ctx.reply.ArrayHeader(result.results.size() + (stopped ? 1 : 0));
  for (CuckooInsert one : result.results) {
    if (!only_if_absent && ctx.reply.resp3()) {
      ctx.reply.Bool(one == CuckooInsert::kAdded);
    } else {
      ctx.reply.Integer(static_cast<int>(one));
    }
  }
  if (!stopped) return;
  // Running out of memory stops the inserts part way: the items before it
  // went in and were acknowledged, so the command succeeded in part. The
  // error sits inside the array (as BF.MADD's), and the journal records the
  // command cut after the items tried, so replay neither drops the ones that
  // went in nor adds the ones refused (cuckoo kicks are deterministic: the
  // same state gives the same outcome per item).
  ctx.reply.Error(CuckooFailureText(result.status, result.refusal));
  if (result.results.empty()) {
    ctx.skip_journal = true;  // nothing took effect; a creation journals itself
    return;
  }
  const size_t cut = ctx.args.size() - items.size() + result.results.size();
  ctx.effect.assign(ctx.args.begin(), ctx.args.begin() + cut);
}

void CmdInsert(CommandContext& ctx) { InsertMany(ctx, /*only_if_absent=*/false); }
void CmdInsertNx(CommandContext& ctx) { InsertMany(ctx, /*only_if_absent=*/true); }

// CF.EXISTS key item
void CmdExists(CommandContext& ctx) {
  EntryPtr holder;
  CuckooFilter* filter = nullptr;
  if (!FindForRead(ctx, &holder, &filter)) return;
  ctx.reply.Bool(filter != nullptr && filter->MayContain(filter->Hash(ctx.args[2])));
}

// CF.MEXISTS key item [item ...]
void CmdMExists(CommandContext& ctx) {
  EntryPtr holder;
  CuckooFilter* filter = nullptr;
  if (!FindForRead(ctx, &holder, &filter)) return;
  auto items = ctx.args.subspan(2);
  ctx.reply.ArrayHeader(items.size());
  if (filter == nullptr) {
    for (size_t i = 0; i < items.size(); ++i) ctx.reply.Bool(false);
    return;
  }
  // Hash a chunk, then the filter's batch (one lock, every bucket
  // prefetched, then probed).
  constexpr size_t kChunk = 128;
  KeyHash hashes[kChunk];
  bool found[kChunk];
  for (size_t start = 0; start < items.size(); start += kChunk) {
    const size_t count = std::min(kChunk, items.size() - start);
    for (size_t i = 0; i < count; ++i) hashes[i] = filter->Hash(items[start + i]);
    filter->MayContainBatch({hashes, count}, found);
    for (size_t i = 0; i < count; ++i) ctx.reply.Bool(found[i]);
  }
}

// CF.COUNT key item: matching fingerprints, which may over-count.
void CmdCount(CommandContext& ctx) {
  EntryPtr holder;
  CuckooFilter* filter = nullptr;
  if (!FindForRead(ctx, &holder, &filter)) return;
  ctx.reply.Integer(
      filter == nullptr ? 0 : static_cast<int64_t>(filter->Count(filter->Hash(ctx.args[2]))));
}

// CF.DEL key item. Deleting an item that was never added can delete another
// item's fingerprint (a false negative for it): only delete what you added.
void CmdDel(CommandContext& ctx) {
  EntryPtr holder;
  CuckooFilter* filter = nullptr;
  if (!FindForRead(ctx, &holder, &filter)) return;
  if (filter == nullptr) {
    Fail(ctx, CuckooStatus::kNothingToDelete);
    return;
  }
  ctx.reply.Bool(DeleteCuckooItem(*holder, ctx.args[2]));
}

// CF.COMPACT key: moves fingerprints into newer sub-filters and frees the
// emptied ones. Registered as a write (RedisBloom flags it read-only,
// although it changes the filter).
void CmdCompact(CommandContext& ctx) {
  EntryPtr holder;
  CuckooFilter* filter = nullptr;
  if (!FindForRead(ctx, &holder, &filter)) return;
  if (filter == nullptr) {
    Fail(ctx, CuckooStatus::kNothingToCompact);
    return;
  }
  CompactCuckoo(*holder);
  ctx.reply.Ok();
}

// CF.INFO key: RedisBloom's eight fields, in its order.
void CmdInfo(CommandContext& ctx) {
  EntryPtr holder;
  CuckooFilter* filter = nullptr;
  if (!FindForRead(ctx, &holder, &filter)) return;
  if (filter == nullptr) {
    Fail(ctx, CuckooStatus::kNotFound);
    return;
  }
  CuckooFilterInfo info = filter->Info();
  auto integer = [](uint64_t value) {
    return [value](ReplyBuilder& reply) { reply.Integer(static_cast<int64_t>(value)); };
  };
  // Size: MEMORY USAGE's figure; for a filter imported from RedisBloom,
  // RedisBloom's own (its struct sizes + slots), so CF.INFO is its answer.
  const uint64_t size = filter->scheme() == CuckooScheme::kRedisBloom ? info.size
                                                                      : holder->MemoryUsage();
  const InfoField fields[] = {
      {"", "Size", integer(size)},
      {"", "Number of buckets", integer(info.num_buckets)},
      {"", "Number of filters", integer(info.num_filters)},
      {"", "Number of items inserted", integer(info.items)},
      {"", "Number of items deleted", integer(info.deletes)},
      {"", "Bucket size", integer(info.bucket_size)},
      {"", "Expansion rate", integer(info.expansion)},
      {"", "Max iterations", integer(info.max_iterations)},
  };
  (void)ReplyInfoFields(ctx.reply, fields, std::nullopt);  // no selector: never an error
}

// CF.DEBUG key: one bulk string in RedisBloom's format (rebloom.c
// CFDebug_RedisCommand); buckets are the first sub-filter's, as CF.INFO's.
void CmdDebug(CommandContext& ctx) {
  EntryPtr holder;
  CuckooFilter* filter = nullptr;
  if (!FindForRead(ctx, &holder, &filter)) return;
  if (filter == nullptr) {
    Fail(ctx, CuckooStatus::kNotFound);
    return;
  }
  const CuckooFilterInfo info = filter->Info();
  char line[256];
  std::snprintf(line, sizeof(line),
                "bktsize:%llu buckets:%llu items:%llu deletes:%llu filters:%llu "
                "max_iterations:%llu expansion:%llu",
                static_cast<unsigned long long>(info.bucket_size),
                static_cast<unsigned long long>(info.num_buckets),
                static_cast<unsigned long long>(info.items),
                static_cast<unsigned long long>(info.deletes),
                static_cast<unsigned long long>(info.num_filters),
                static_cast<unsigned long long>(info.max_iterations),
                static_cast<unsigned long long>(info.expansion));
  ctx.reply.Bulk(line);
}

constexpr ChunkCommandTexts kChunkTexts = {errors::kCfInvalidPosition,
                                           errors::kCfInvalidPosition,
                                           errors::kCfCouldNotLoadChunk,
                                           /*end_is_null=*/true,
                                           errors::kCfCouldNotCreateFilter};

std::vector<CommandSpec> CuckooCommands() {
  const FamilyRows rows(CuckooFamily(), /*since=*/"1.0.0");
  constexpr uint32_t kWriteOom = FamilyRows::kWriteOom;
  constexpr uint32_t kReadFast = FamilyRows::kReadFast;
  return {
      rows.Row("cf.reserve", -3, 9, kWriteOom, CmdReserve, "Creates a new Cuckoo Filter", "1.0.0"),
      rows.Row("cf.add", 3, 0, kWriteOom | kCmdFast, CmdAdd,
               "Adds an item to a Cuckoo Filter", "1.0.0"),
      rows.Row("cf.addnx", 3, 0, kWriteOom | kCmdFast, CmdAddNx,
               "Adds an item to a Cuckoo Filter if the item did not exist previously", "1.0.0"),
      rows.Row("cf.insert", -4, 0, kWriteOom, CmdInsert,
               "Adds one or more items to a Cuckoo Filter. A filter will be created if it does not "
               "exist",
               "1.0.0"),
      rows.Row("cf.insertnx", -4, 0, kWriteOom, CmdInsertNx,
               "Adds one or more items to a Cuckoo Filter if the items did not exist previously. A "
               "filter will be created if it does not exist",
               "1.0.0"),
      rows.Row("cf.exists", 3, 0, kReadFast, CmdExists,
               "Checks whether one or more items exist in a Cuckoo Filter", "1.0.0"),
      rows.Row("cf.mexists", -3, 0, kReadFast, CmdMExists,
               "Checks whether one or more items exist in a Cuckoo Filter", "2.0.0"),
      rows.Row("cf.count", 3, 0, kReadFast, CmdCount,
               "Return the number of times an item might be in a Cuckoo Filter", "1.0.0"),
      rows.Row("cf.del", 3, 0, kCmdWrite | kCmdFast, CmdDel,
               "Deletes an item from a Cuckoo Filter", "1.0.0"),
      rows.Row("cf.compact", 2, 0, kCmdWrite, CmdCompact,
               "Moves items into newer sub-filters and frees emptied ones", "1.0.0"),
      rows.Row("cf.info", 2, 0, kReadFast, CmdInfo,
               "Returns information about a Cuckoo Filter", "1.0.0"),
      rows.Row("cf.debug", 2, 0, kReadFast, CmdDebug,
               "Returns the bucket size, bucket, item, deletion and sub-filter counts, max "
               "iterations and expansion of a Cuckoo Filter", "1.0.0"),
      rows.ScanDumpRow<kChunkTexts>("cf.scandump",
                                    "Begins an incremental save of the bloom filter"),
      rows.LoadChunkRow<kChunkTexts>("cf.loadchunk",
                                     "Restores a filter previously saved using SCANDUMP"),
  };
}

// BLOOMGATE.HEALTH: the occupancy per sub-filter reads every slot, so only
// when the scan budget covers the whole filter.
FilterHealth Health(const CuckooFilter& f, uint64_t max_scan_bytes) {
  return CuckooHealth(f, /*per_sub_filter=*/max_scan_bytes >= f.memory_bytes());
}

// check-snapshot's summary line.
std::string Describe(const CuckooFilter& f) {
  CuckooFilterInfo info = f.Info();
  char line[256];
  std::snprintf(line, sizeof(line),
                "cuckoo: %llu sub-filter(s), %llu buckets of %llu, items %llu, deleted %llu, "
                "%llu bytes",
                static_cast<unsigned long long>(info.num_filters),
                static_cast<unsigned long long>(info.num_buckets),
                static_cast<unsigned long long>(info.bucket_size),
                static_cast<unsigned long long>(info.items),
                static_cast<unsigned long long>(info.deletes),
                static_cast<unsigned long long>(info.size));
  return line;
}

}  // namespace

// The COMMAND DOCS syntax line of each row but SCANDUMP and LOADCHUNK
// (theirs come with them), sorted by name: catalogue/command_syntax.h
// says how a line reads.
constexpr CommandSyntax kRowSyntax[] = {
    {"cf.add", "key item", ""},
    {"cf.addnx", "key item", ""},
    {"cf.compact", "key", ""},
    {"cf.count", "key item", ""},
    {"cf.debug", "key", ""},
    {"cf.del", "key item", ""},
    {"cf.exists", "key item", ""},
    {"cf.info", "key", ""},
    {"cf.insert", "key [CAPACITY capacity] [NOCREATE] ITEMS item [item ...]",
     "capacity:integer"},
    {"cf.insertnx", "key [CAPACITY capacity] [NOCREATE] ITEMS item [item ...]",
     "capacity:integer"},
    {"cf.mexists", "key item [item ...]", ""},
    {"cf.reserve",
     "key capacity [BUCKETSIZE bucketsize] [MAXITERATIONS maxiterations] "
     "[EXPANSION expansion]",
     "capacity:integer bucketsize:integer maxiterations:integer expansion:integer"},
};

// The family's registration (server/commands/registry.cc registers it).
const FilterFamily& CuckooFamily() {
  static const FilterFamily family{
      .kind = FilterKind::kCuckoo,
      .type_name = "MBbloomCF",  // RedisBloom's module type name, as TYPE shows it
      .group = "cf",
      .acl_category = "@cuckoo",
      .writes = FamilyWrites::kExclusive,
      .commands = CuckooCommands,
      .syntax = kRowSyntax,
      .describe = DescribeAs<CuckooFilter, Describe>,
      .health = HealthAs<CuckooFilter, Health>,
  };
  return family;
}

}  // namespace bloomgate
