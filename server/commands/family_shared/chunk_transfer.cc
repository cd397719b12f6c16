#include "server/commands/family_shared/chunk_transfer.h"

#include <optional>
#include <string>
#include <vector>

#include "persistence/append_log.h"
#include "persistence/redisbloom_cuckoo_chunk.h"
#include "persistence/redisbloom_dump.h"
#include "server/catalogue/family_registry.h"
#include "server/commands/arg_parser.h"
#include "server/commands/command_context.h"
#include "server/commands/cuckoo/cuckoo_ops.h"
#include "server/commands/errors.h"

namespace bloomgate {

namespace {

// The state tag of a dump (persistence/dump_chunk.h): it changes with every
// write to the entry (its version) and differs between entries (its id), so
// chunks taken before and after any change, or from a filter renamed onto
// the key, never load together. splitmix64's finalizer spreads the id over
// all 64 bits before the version goes in: two (id, version) pairs collide
// only if the mixed ids differ in just the low bits the versions differ in.
uint64_t DumpStateTag(const KeyEntry& entry) {
  uint64_t z = entry.id() + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (z ^ (z >> 31)) ^ entry.version();
}

// Whether the chunk commands of `row`'s group serve a filter of `kind`: the
// family registry says which group each kind's family belongs to.
bool Serves(const CommandSpec& row, FilterKind kind) {
  const FilterFamily* family = FindFamily(kind);
  return family != nullptr && family->group == row.group;
}

// The kinds a header may start a load of under `row`: the group's family,
// then its variants, in registration order (BF.*: Bloom, windowed Bloom).
std::vector<FilterKind> ServedKinds(const CommandSpec& row) {
  std::vector<FilterKind> kinds;
  for (const FilterFamily* family : RegisteredFamilies()) {
    if (family->group == row.group) kinds.push_back(family->kind);
  }
  return kinds;
}

// Whether `row` is one of the rows of the family of `kind` (not a variant).
bool RowsOf(const CommandSpec& row, FilterKind kind) {
  const FilterFamily* family = FamilyOfGroup(row.group);
  return family != nullptr && family->kind == kind;
}

// Why `key` cannot take a new filter of `kind`, or nullopt if it is free.
std::optional<std::string_view> KeyTaken(CommandContext& ctx, std::string_view key) {
  EntryPtr entry = ctx.server.keyspace.Find(ctx.Key(key), ctx.now_ms);
  if (entry == nullptr) return std::nullopt;
  return Serves(ctx.spec, entry->type()) ? errors::kItemExists : errors::kWrongType;
}

// Stores a finished load under `key`, journaling it whole.
void Publish(CommandContext& ctx, std::string_view key, ChunkedFilterLoad& load,
             const ChunkCommandTexts& texts) {
  AnyFilter filter;
  Status status = load.Finish(&filter);
  if (!status.ok()) {
    ctx.Fail(texts.bad_data);
    return;
  }
  if (!ctx.server.journal.CanTake(
          ctx.client.journal,
          FilterRecordBodyBytes(key, DescribeFilter(filter), /*has_payload=*/true))) {
    ctx.Fail(errors::kTooLargeToLog);
    return;
  }
  bool inserted = false;
  EntryPtr entry = ctx.server.keyspace.Insert(
      ctx.Key(key), std::make_shared<KeyEntry>(std::move(filter)), ctx.now_ms, &inserted,
      [&ctx](const std::string& name, const KeyEntry& created) {
        ctx.server.journal.RecordFilter(ctx.client.journal, ctx.now_ms, name, created.filter(),
                                        /*with_payload=*/true);
      });
  if (!inserted) {
    // Created by another client while this one was loading.
    ctx.Fail(Serves(ctx.spec, entry->type()) ? errors::kItemExists : errors::kWrongType);
    return;
  }
  ctx.reply.Ok();
}

// After an accepted chunk: the filter appears if that was its last one,
// else the load waits in the staging area for the next.
void PublishOrStage(CommandContext& ctx, std::string_view key,
                    std::unique_ptr<ChunkedFilterLoad> load, const ChunkCommandTexts& texts) {
  if (load->complete()) {
    Publish(ctx, key, *load, texts);
    return;
  }
  ctx.server.chunk_staging.Put(std::string(key), std::move(load), ctx.now_ms);
  ctx.reply.Ok();
}

// Starts a load from a header chunk through CommandContext::MakeFilter,
// `start` a callable bool(std::unique_ptr<ChunkedFilterLoad>*) that owns
// the header. Reading a header allocates the filter it declares, zeroed
// (a 99-byte CF header declaring 1 GiB stalled the loop 8.6 s, a sketch's
// 71-byte one 3.9 s, on a loaded machine), and its size is known only once
// it is read: so every header is read off the event loop, as if it were
// big (parking a small one costs a hop to the maker's thread and back;
// LOADCHUNK is a migration's command, not a hot one). False when parked;
// else *load is the started load, or null for a header refused.
template <typename Start>
bool StartLoad(CommandContext& ctx, Start start, std::unique_ptr<ChunkedFilterLoad>* load) {
  FilterStatus status = FilterStatus::kOk;
  MemoryRefusal refusal;
  if (!ctx.MakeFilter(FilterMaker::kInlineBytes,
                      [start = std::move(start)](std::unique_ptr<ChunkedFilterLoad>* out,
                                                 MemoryRefusal*) {
                        if (start(out)) return FilterStatus::kOk;
                        out->reset();
                        return FilterStatus::kInvalidOptions;
                      },
                      &status, load, &refusal)) {
    return false;
  }
  if (status != FilterStatus::kOk) load->reset();
  return true;
}

// A cuckoo filter in RedisBloom's scheme, or null.
const CuckooFilter* RedisBloomCuckoo(const KeyEntry& entry) {
  const CuckooFilter* cuckoo = entry.get<CuckooFilter>();
  return cuckoo != nullptr && cuckoo->scheme() == CuckooScheme::kRedisBloom ? cuckoo : nullptr;
}

// CF.SCANDUMP of an imported filter: RedisBloom's chunks again, so the
// user can move it back (persistence/redisbloom_cuckoo_chunk.h).
void ScanDumpRedisBloomCuckoo(CommandContext& ctx, const CuckooFilter& cuckoo, uint64_t iterator) {
  uint64_t next = 0;
  std::string chunk;
  bool end = false;
  NextRedisBloomCuckooChunk(cuckoo, iterator, &next, &chunk, &end);
  ctx.reply.ArrayHeader(2);
  ctx.reply.Integer(static_cast<int64_t>(next));
  if (end) {
    ctx.reply.Null();  // RedisBloom's end: [0, nil]
  } else {
    ctx.reply.Bulk(chunk);
  }
}

// CF.LOADCHUNK key 1 <not one of our header chunks>: RedisBloom's header.
// Any refusal is "Couldn't create filter!", RedisBloom's text for a header
// it cannot build (a wrong-sized one gets "Invalid header" there; here a
// chunk that is neither ours nor 38 bytes may be either's, damaged).
void StartRedisBloomCuckooLoad(CommandContext& ctx, std::string_view key, std::string_view data,
                               const ChunkCommandTexts& texts) {
  if (std::optional<std::string_view> taken = KeyTaken(ctx, key)) {
    ctx.Fail(*taken);
    return;
  }
  if (!IsRedisBloomCuckooHeader(data)) {
    ctx.Fail(errors::kCfCouldNotCreateFilter);
    return;
  }
  std::unique_ptr<ChunkedFilterLoad> load;
  if (!StartLoad(ctx,
                 [header = std::string(data),
                  max_expansions = DefaultCuckooOptions(ctx.server.config).max_expansions,
                  limits = ctx.server.filter_limits(),
                  budget = &ctx.server.budget](std::unique_ptr<ChunkedFilterLoad>* out) {
                   return ChunkedFilterLoad::StartRedisBloomCuckoo(header, max_expansions, limits,
                                                                   budget, out)
                       .ok();
                 },
                 &load)) {
    return;  // parked: runs again once the header is read off the loop
  }
  if (load == nullptr) {
    ctx.Fail(errors::kCfCouldNotCreateFilter);
    return;
  }
  PublishOrStage(ctx, key, std::move(load), texts);
}

std::string_view BadHeaderText(const ChunkCommandTexts& texts) {
  return texts.bad_header.empty() ? texts.bad_data : texts.bad_header;
}

}  // namespace

// SCANDUMP key iterator
void ScanDump(CommandContext& ctx, const ChunkCommandTexts& texts) {
  int64_t iterator = 0;
  if (!ParseInt64(ctx.args[2], &iterator) || iterator < 0) {
    ctx.Fail(texts.bad_iterator_scandump);
    return;
  }
  EntryPtr entry = ctx.server.keyspace.Find(ctx.Key(ctx.args[1]), ctx.now_ms);
  if (entry == nullptr) {
    ctx.Fail(errors::kNotFound);
    return;
  }
  if (!Serves(ctx.spec, entry->type())) {
    ctx.Fail(errors::kWrongType);
    return;
  }
  if (const CuckooFilter* cuckoo = RedisBloomCuckoo(*entry)) {
    ScanDumpRedisBloomCuckoo(ctx, *cuckoo, static_cast<uint64_t>(iterator));
    return;
  }
  uint64_t next = 0;
  std::string chunk;
  // A filter in RedisBloom's layout (imported from RedisBloom; it grows in
  // that layout too) dumps in RedisBloom's format, so it can move back.
  if (const ScalableBloomFilter* bloom = entry->bloom();
      bloom != nullptr && bloom->layout() == BloomLayout::kRedisBloom) {
    NextRedisBloomChunk(*bloom, static_cast<uint64_t>(iterator), &next, &chunk);
    ctx.reply.ArrayHeader(2);
    ctx.reply.Integer(static_cast<int64_t>(next));
    ctx.reply.Bulk(chunk);
    return;
  }
  // No writer runs meanwhile: a family's writes hold the key exclusively,
  // or, where they commute (BF adds, CMS.INCRBY), the SCANDUMP row takes the
  // key exclusively from them (FamilyRows::ScanDumpRow), so the header, the
  // cells and the tag are of one moment.
  NextDumpChunk(entry->filter(), static_cast<uint64_t>(iterator), &next, &chunk,
                kDumpChunkPayloadBytes, DumpStateTag(*entry));
  ctx.reply.ArrayHeader(2);
  ctx.reply.Integer(static_cast<int64_t>(next));
  if (next == 0 && texts.end_is_null) {
    ctx.reply.Null();
  } else {
    ctx.reply.Bulk(chunk);
  }
}

// LOADCHUNK key iterator data
void LoadChunk(CommandContext& ctx, const ChunkCommandTexts& texts) {
  // Chunks are staged; only the finished filter is logged (by Publish).
  ctx.skip_journal = true;
  int64_t iterator = 0;
  if (!ParseInt64(ctx.args[2], &iterator) || iterator < 1) {
    ctx.Fail(texts.bad_iterator_loadchunk);
    return;
  }
  std::string_view key = ctx.args[1];
  std::string_view data = ctx.args[3];
  ChunkStaging& staging = ctx.server.chunk_staging;
  if (RowsOf(ctx.spec, FilterKind::kCuckoo) && iterator == 1 && !IsHeaderChunk(data)) {
    StartRedisBloomCuckooLoad(ctx, key, data, texts);
    return;
  }
  // RedisBloom's header chunk always comes at iterator 1 (its data chunks
  // can never: they end at iterator - 1 >= 1 byte). Anything at 1 that is
  // not our header is read as RedisBloom's, so a damaged header of either
  // kind gets RedisBloom's "received bad data".
  if (RowsOf(ctx.spec, FilterKind::kScalableBloom) && iterator == 1 && !IsHeaderChunk(data)) {
    if (std::optional<std::string_view> taken = KeyTaken(ctx, key)) {
      ctx.Fail(*taken);
      return;
    }
    std::unique_ptr<ChunkedFilterLoad> load;
    if (!StartLoad(ctx,
                   [header = std::string(data), limits = ctx.server.filter_limits(),
                    budget = &ctx.server.budget](std::unique_ptr<ChunkedFilterLoad>* out) {
                     return ChunkedFilterLoad::StartRedisBloom(header, limits, budget, out).ok();
                   },
                   &load)) {
      return;  // parked: runs again once the header is read off the loop
    }
    if (load == nullptr) {
      ctx.Fail(texts.bad_data);
      return;
    }
    PublishOrStage(ctx, key, std::move(load), texts);
    return;
  }
  if (IsHeaderChunk(data)) {
    if (std::optional<std::string_view> taken = KeyTaken(ctx, key)) {
      ctx.Fail(*taken);
      return;
    }
    std::unique_ptr<ChunkedFilterLoad> load;
    if (!StartLoad(ctx,
                   [header = std::string(data), kinds = ServedKinds(ctx.spec),
                    limits = ctx.server.filter_limits(),
                    budget = &ctx.server.budget](std::unique_ptr<ChunkedFilterLoad>* out) {
                     for (FilterKind kind : kinds) {
                       if (ChunkedFilterLoad::Start(header, kind, limits, budget, out).ok()) {
                         return true;
                       }
                     }
                     return false;
                   },
                   &load)) {
      return;  // parked: runs again once the header is read off the loop
    }
    if (load == nullptr) {
      ctx.Fail(BadHeaderText(texts));
      return;
    }
    PublishOrStage(ctx, key, std::move(load), texts);
    return;
  }
  if (iterator == 1) {
    // Iterator 1 is only ever a dump's first chunk (a payload chunk's is
    // 1 + its length, >= 2): this one is damaged (its magic, say). Answered
    // as RedisBloom answers a header it cannot read, not as a stray chunk.
    std::optional<std::string_view> taken = KeyTaken(ctx, key);
    ctx.Fail(taken ? *taken : BadHeaderText(texts));
    return;
  }
  std::unique_ptr<ChunkedFilterLoad> load = staging.Take(key);
  if (load == nullptr) {
    // RedisBloom: a data chunk for a missing key is "not found"; for a key
    // that exists, no load is in progress, so the chunk cannot be placed.
    ctx.Fail(KeyTaken(ctx, key) ? texts.bad_data : errors::kNotFound);
    return;
  }
  bool other_dump = false;
  Status status = load->redisbloom() ? load->AddRedisBloom(static_cast<uint64_t>(iterator), data)
                                     : load->Add(data, &other_dump);
  if (!status.ok()) {
    // A refused chunk changes nothing: the load stays, the right chunk may
    // follow (or a restarted dump's header replaces it).
    staging.Put(std::string(key), std::move(load), ctx.now_ms);
    ctx.Fail(other_dump ? errors::kDumpChanged : texts.bad_data);
    return;
  }
  PublishOrStage(ctx, key, std::move(load), texts);
}

}  // namespace bloomgate
