// CMS.*: count-min sketches, RedisBloom's syntax, replies and texts
// (rm_cms.c, Redis 8 before 8.12: 32-bit cells, non-negative increments).
//
// CMS.INCRBY is order-free (kCmdOrderFree): its increments are saturating
// adds on atomic cells (filters/count_min_sketch.h), which commute, so
// several run on one key under shared locks and the log replays them in any
// order to the same sketch. It is journaled as the command itself. CMS.MERGE
// holds its destination and sources exclusively and is journaled as sent
// too: the same sources on the same state merge to the same result.
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

#include "filters/count_min_sketch.h"
#include "filters/key_hash.h"
#include "server/catalogue/command_table.h"
#include "server/catalogue/filter_family.h"
#include "server/commands/arg_parser.h"
#include "server/commands/family_shared/chunk_transfer.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"
#include "server/commands/family_shared/family_rows.h"
#include "server/commands/family_shared/filter_lookup.h"
#include "server/commands/family_shared/sources_read_off_loop.h"

namespace bloomgate {

const FilterFamily& CountMinSketchFamily();  // the record, at the end of this file

namespace {

// ---------------------------------------------------------------- ops ----

// The sketch under `key`, or null after replying RedisBloom's error (a
// missing key is "CMS: key does not exist").
EntryPtr FindSketch(CommandContext& ctx, std::string_view key) {
  FilterStore store = StoreFor(ctx);
  EntryPtr entry;
  if (!FoundOrFail(ctx, FindFilter<CountMinSketch>(store, ctx.Key(key), &entry), errors::kCmsKeyMissing)) {
    return nullptr;
  }
  return entry;
}

// Creates a width x depth sketch under args[1], which the caller checked is
// free. Replies.
void CreateAndReply(CommandContext& ctx, uint64_t width, uint64_t depth) {
  std::unique_ptr<CountMinSketch> sketch;
  FilterStatus created = FilterStatus::kOk;
  MemoryRefusal refusal;
  // Dimensions Create refuses cost nothing to refuse: built "inline".
  const uint64_t bytes = depth != 0 && width <= CountMinSketch::kMaxCells / depth
                             ? CountMinSketch::BytesFor(width, depth) : 0;
  if (!ctx.MakeFilter(bytes,
                      [width, depth, limits = ctx.server.filter_limits(),
                       budget = &ctx.server.budget](std::unique_ptr<CountMinSketch>* out,
                                                    MemoryRefusal* refused) {
                        // New sketches hash as RedisBloom's (filters/sketch_scheme.h).
                        return CountMinSketch::Create(width, depth, limits, budget, out, refused,
                                                      SketchScheme::kRedisBloom);
                      },
                      &created, &sketch, &refusal)) {
    return;  // parked: runs again once the sketch is made off the loop
  }
  switch (created) {
    case FilterStatus::kOk:
      break;
    case FilterStatus::kInvalidOptions:
      ctx.Fail(errors::kCmsInvalidInitArguments);
      return;
    default:  // the per-filter cap, maxmemory or the allocation
      ctx.Fail(errors::MemoryRefused(errors::kCmsInsufficientMemory, refusal, /*growth=*/false));
      return;
  }
  FilterStore store = StoreFor(ctx);
  EntryPtr stored;
  if (StoreNewFilter(store, ctx.Key(ctx.args[1]), std::move(sketch), /*fail_if_exists=*/true,
                     &stored) != StoreOutcome::kStored) {
    ctx.Fail(errors::kCmsKeyExists);  // the key was checked free under its lock
    return;
  }
  ctx.skip_journal = true;  // the creation record in the log says it all
  ctx.reply.Ok();
}

// RedisBloom checks the key before the arguments: any key at all is "CMS:
// key already exists", whatever its type.
bool KeyIsFree(CommandContext& ctx) {
  if (ctx.server.keyspace.Find(ctx.Key(ctx.args[1]), ctx.now_ms) == nullptr) return true;
  ctx.Fail(errors::kCmsKeyExists);
  return false;
}

// ---------------------------------------------------------------- cmds ---

// CMS.INITBYDIM key width depth
void CmdInitByDim(CommandContext& ctx) {
  if (!KeyIsFree(ctx)) return;
  int64_t width = 0;
  int64_t depth = 0;
  if (!ParseInt64(ctx.args[2], &width) || width < 1) {
    ctx.Fail(errors::kCmsInvalidWidth);
    return;
  }
  if (!ParseInt64(ctx.args[3], &depth) || depth < 1) {
    ctx.Fail(errors::kCmsInvalidDepth);
    return;
  }
  // RedisBloom's rule: width x depth past a signed 64-bit count is invalid;
  // below it, a size no allocator can give is a memory failure, with its
  // bare text (its calloc failed), whatever our limits say.
  if (width > INT64_MAX / depth) {
    ctx.Fail(errors::kCmsInvalidInitArguments);
    return;
  }
  if (static_cast<uint64_t>(width) > CountMinSketch::kMaxCells / static_cast<uint64_t>(depth)) {
    ctx.Fail(errors::kCmsInsufficientMemory);
    return;
  }
  CreateAndReply(ctx, static_cast<uint64_t>(width), static_cast<uint64_t>(depth));
}

// CMS.INITBYPROB key error probability
void CmdInitByProb(CommandContext& ctx) {
  if (!KeyIsFree(ctx)) return;
  double error = 0;
  double probability = 0;
  if (!ParseDouble(ctx.args[2], &error) || error <= 0 || error >= 1) {
    ctx.Fail(errors::kCmsInvalidOverestimation);
    return;
  }
  if (!ParseDouble(ctx.args[3], &probability) || probability <= 0 || probability >= 1) {
    ctx.Fail(errors::kCmsInvalidProb);
    return;
  }
  uint64_t width = 0;
  uint64_t depth = 0;
  if (!CountMinSketch::DimensionsFor(error, probability, &width, &depth)) {
    ctx.Fail(errors::kCmsInvalidInitArguments);
    return;
  }
  CreateAndReply(ctx, width, depth);
}

// CMS.INCRBY key item increment [item increment ...]
void CmdIncrBy(CommandContext& ctx) {
  // Items come in pairs; the table's arity (-4) cannot say "even", so the
  // pair rule is checked here, with the arity text Redis gives.
  if (ctx.args.size() % 2 != 0) {
    ctx.Fail(errors::WrongArity("cms.incrby"));
    return;
  }
  EntryPtr entry = FindSketch(ctx, ctx.args[1]);
  if (entry == nullptr) return;
  // Every increment is checked before any is applied.
  const size_t pairs = (ctx.args.size() - 2) / 2;
  std::vector<uint64_t> increments(pairs);
  for (size_t i = 0; i < pairs; ++i) {
    int64_t value = 0;
    if (!ParseInt64(ctx.args[3 + 2 * i], &value)) {
      ctx.Fail(errors::kCmsCannotParseNumber);
      return;
    }
    if (value < 0) {
      ctx.Fail(errors::kCmsNegativeNumber);
      return;
    }
    increments[i] = static_cast<uint64_t>(value);
  }
  CountMinSketch& sketch = *entry->get<CountMinSketch>();
  ctx.reply.ArrayHeader(pairs);
  for (size_t i = 0; i < pairs; ++i) {
    const uint64_t count = sketch.IncrBy(ctx.args[2 + 2 * i], increments[i]);
    if (count == CountMinSketch::kMaxCell) {
      ctx.reply.Error(errors::kCmsIncrByOverflow);  // the cell saturated (RedisBloom)
    } else {
      ctx.reply.Integer(static_cast<int64_t>(count));
    }
  }
  entry->MarkModified();
}

// CMS.QUERY key item [item ...]
void CmdQuery(CommandContext& ctx) {
  EntryPtr entry = FindSketch(ctx, ctx.args[1]);
  if (entry == nullptr) return;
  const CountMinSketch& sketch = *entry->get<CountMinSketch>();
  auto items = ctx.args.subspan(2);
  ctx.reply.ArrayHeader(items.size());
  for (std::string_view item : items) {
    ctx.reply.Integer(static_cast<int64_t>(sketch.Query(item)));
  }
}

// A merged sketch built off the loop: the new sketch, or why not.
struct MergedSketch {
  FilterStatus created = FilterStatus::kOk;
  CountMinSketch::MergeStatus merged = CountMinSketch::MergeStatus::kOk;
  MemoryRefusal refusal;
  std::unique_ptr<CountMinSketch> sketch;
};

// Merges `sources` x `weights` into `dest` off the event loop when it is big
// (CommandContext::WouldPark): inline, a merge into a huge sketch stalled
// its loop 7 s. The maker builds the merged cells into a new sketch of
// dest's shape, reading the sources in place (sources_read_off_loop.h), and
// this run's second pass puts it in dest's place under dest's lock; the
// old cells are freed off the loop. While it is built the new sketch is
// charged beside dest's (an inline merge writes dest in place). True when
// it replied or parked; false when the merge is small: the caller merges.
bool MergeOffLoop(CommandContext& ctx, const EntryPtr& dest, const std::vector<EntryPtr>& holders,
                  const std::vector<int64_t>& weights) {
  uint64_t bytes = 0;
  const std::vector<EntryPtr> distinct = DistinctSources(holders, &bytes);
  if (!ctx.HasMadeFilter() && !ctx.WouldPark(bytes)) return false;
  const CountMinSketch& target = *dest->get<CountMinSketch>();
  auto build = [holders, weights, width = target.width(), depth = target.depth(),
                scheme = target.scheme(), limits = ctx.server.filter_limits(),
                budget = &ctx.server.budget] {
    MergedSketch result;
    result.created = CountMinSketch::Create(width, depth, limits, budget, &result.sketch,
                                            &result.refusal, scheme);
    if (result.created != FilterStatus::kOk) return result;
    std::vector<const CountMinSketch*> sources;
    for (const EntryPtr& holder : holders) sources.push_back(holder->get<CountMinSketch>());
    result.merged = result.sketch->Merge(sources, weights);
    if (result.merged != CountMinSketch::MergeStatus::kOk) result.sketch.reset();
    return result;
  };
  MergedSketch made;
  if (!BuildFromSourcesOffLoop(ctx, bytes, distinct, build, &made)) return true;  // parked
  if (made.created != FilterStatus::kOk) {
    ctx.Fail(errors::MemoryRefused(errors::kCmsInsufficientMemory, made.refusal,
                                   /*growth=*/false));
    return true;
  }
  if (made.merged != CountMinSketch::MergeStatus::kOk) {
    ctx.Fail(errors::kCmsMergeOverflow);  // nothing changed
    return true;
  }
  AnyFilter old = dest->ReplaceFilter(AnyFilter(std::move(made.sketch)));
  ctx.server.lazy_freer.Free(std::make_shared<AnyFilter>(std::move(old)));
  ctx.reply.Ok();
  return true;
}

// CMS.MERGE destination numKeys source [source ...] [WEIGHTS weight [weight ...]]
void CmdMerge(CommandContext& ctx) {
  EntryPtr dest = FindSketch(ctx, ctx.args[1]);
  if (dest == nullptr) return;
  int64_t num_keys = 0;
  if (!ParseInt64(ctx.args[2], &num_keys)) {
    ctx.Fail(errors::kCmsInvalidNumKeys);
    return;
  }
  if (num_keys <= 0) {
    ctx.Fail(errors::kCmsNumKeysPositive);
    return;
  }
  // RedisBloom's shape rule: after numKeys come exactly numKeys sources, or
  // numKeys sources, WEIGHTS and numKeys weights (WEIGHTS found as the first
  // matching word after numKeys).
  auto rest = ctx.args.subspan(3);
  std::optional<size_t> weights_at;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (EqualsIgnoreCase(rest[i], "weights")) {
      weights_at = i;
      break;
    }
  }
  const uint64_t n = static_cast<uint64_t>(num_keys);
  if (!weights_at) {
    if (n != rest.size()) {
      ctx.Fail(errors::kCmsWrongNumberOfKeys);
      return;
    }
  } else if (*weights_at != n || rest.size() != 1 + 2 * n) {
    ctx.Fail(errors::kCmsWrongNumberOfKeysWeights);
    return;
  }
  // Here the sources are exactly the keys the row's numkeys_index locked;
  // checked, since reading an unlocked key would race its writers.
  if (CommandTable::NumKeys(ctx.spec, ctx.args) != n) {
    ctx.Fail(errors::kCmsWrongNumberOfKeys);
    return;
  }
  std::vector<EntryPtr> holders;
  std::vector<const CountMinSketch*> sources;
  std::vector<int64_t> weights;
  holders.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t weight = 1;
    if (weights_at && !ParseInt64(rest[n + 1 + i], &weight)) {
      ctx.Fail(errors::kCmsInvalidWeight);
      return;
    }
    EntryPtr source = FindSketch(ctx, rest[i]);
    if (source == nullptr) return;
    const CountMinSketch* sketch = source->get<CountMinSketch>();
    const CountMinSketch& target = *dest->get<CountMinSketch>();
    if (sketch->width() != target.width() || sketch->depth() != target.depth()) {
      ctx.Fail(errors::kCmsShapeMismatch);
      return;
    }
    if (sketch->scheme() != target.scheme()) {
      ctx.Fail(errors::kCmsSchemeMismatch);  // cells of one item sit elsewhere
      return;
    }
    holders.push_back(std::move(source));
    sources.push_back(sketch);
    weights.push_back(weight);
  }
  if (MergeOffLoop(ctx, dest, holders, weights)) return;
  CountMinSketch& target = *dest->get<CountMinSketch>();
  if (target.Merge(sources, weights) != CountMinSketch::MergeStatus::kOk) {
    ctx.Fail(errors::kCmsMergeOverflow);  // nothing changed
    return;
  }
  dest->MarkModified();
  ctx.reply.Ok();
}

// CMS.INFO key: width, depth, count (a map in RESP3).
void CmdInfo(CommandContext& ctx) {
  EntryPtr entry = FindSketch(ctx, ctx.args[1]);
  if (entry == nullptr) return;
  const CountMinSketch& sketch = *entry->get<CountMinSketch>();
  ctx.reply.MapHeader(3);
  ctx.reply.SimpleString("width");
  ctx.reply.Integer(static_cast<int64_t>(sketch.width()));
  ctx.reply.SimpleString("depth");
  ctx.reply.Integer(static_cast<int64_t>(sketch.depth()));
  ctx.reply.SimpleString("count");
  ctx.reply.Integer(static_cast<int64_t>(sketch.total()));
}

// CMS.SCANDUMP / CMS.LOADCHUNK: ours (RedisBloom has none for sketches), in
// our chunk format, with BF.*'s texts.
constexpr ChunkCommandTexts kChunkTexts = {errors::kScanDumpBadIterator,
                                           errors::kLoadChunkBadIterator,
                                           errors::kReceivedBadData};

std::vector<CommandSpec> CountMinSketchCommands() {
  const FamilyRows rows(CountMinSketchFamily(), /*since=*/"2.0.0");
  constexpr uint32_t kWriteOom = FamilyRows::kWriteOom;
  constexpr uint32_t kReadFast = FamilyRows::kReadFast;
  CommandSpec merge = rows.Row("cms.merge", -4, 0, kWriteOom, CmdMerge,
                               "Merges several sketches into one sketch");
  merge.numkeys_index = 2;  // the sources: numKeys of them after it
  return {
      rows.Row("cms.initbydim", 4, 0, kWriteOom | kCmdFast, CmdInitByDim,
               "Initializes a Count-Min Sketch to dimensions specified by user"),
      rows.Row("cms.initbyprob", 4, 0, kWriteOom | kCmdFast, CmdInitByProb,
               "Initializes a Count-Min Sketch to accommodate requested tolerances"),
      rows.Row("cms.incrby", -4, 0, kWriteOom | kCmdFast | kCmdOrderFree, CmdIncrBy,
               "Increases the count of one or more items by increment"),
      rows.Row("cms.query", -3, 0, kReadFast, CmdQuery,
               "Returns the count for one or more items in a sketch"),
      merge,
      rows.Row("cms.info", 2, 0, kReadFast, CmdInfo, "Returns information about a sketch"),
      rows.ScanDumpRow<kChunkTexts>("cms.scandump",
                                    "Begins an incremental save of a count-min sketch"),
      rows.LoadChunkRow<kChunkTexts>("cms.loadchunk",
                                     "Restores a count-min sketch saved with CMS.SCANDUMP"),
  };
}

// check-snapshot's summary line.
std::string Describe(const CountMinSketch& s) {
  char line[160];
  std::snprintf(line, sizeof(line), "count-min sketch: width %llu, depth %llu, count %llu, %llu bytes",
                static_cast<unsigned long long>(s.width()),
                static_cast<unsigned long long>(s.depth()),
                static_cast<unsigned long long>(s.total()),
                static_cast<unsigned long long>(s.memory_bytes()));
  return line;
}

}  // namespace

// The COMMAND DOCS syntax line of each row but SCANDUMP and LOADCHUNK
// (theirs come with them), sorted by name: catalogue/command_syntax.h
// says how a line reads.
constexpr CommandSyntax kRowSyntax[] = {
    {"cms.incrby", "key item increment [item increment ...]", "increment:integer"},
    {"cms.info", "key", ""},
    {"cms.initbydim", "key width depth", "width:integer depth:integer"},
    {"cms.initbyprob", "key error probability", "error:double probability:double"},
    {"cms.merge", "destination numKeys source [source ...] [WEIGHTS weight [weight ...]]",
     "destination:key numKeys:integer source:key weight:double"},
    {"cms.query", "key item [item ...]", ""},
};

// The family's registration (server/commands/registry.cc registers it).
const FilterFamily& CountMinSketchFamily() {
  static const FilterFamily family{
      .kind = FilterKind::kCountMinSketch,
      .type_name = "CMSk-TYPE",  // RedisBloom's module type name
      .group = "cms",
      .acl_category = "@cms",
      .writes = FamilyWrites::kCommute,  // CMS.INCRBY is kCmdOrderFree
      .commands = CountMinSketchCommands,
      .syntax = kRowSyntax,
      .describe = DescribeAs<CountMinSketch, Describe>,
  };
  return family;
}

}  // namespace bloomgate
