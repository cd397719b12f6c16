// TDIGEST.*: t-digests, RedisBloom 2.4 / Redis 8 syntax, replies and texts
// (rm_tdigest.c). Doubles reply as Redis 7.0 formats them for a module:
// "%.17g" bulk strings in RESP2 ("inf", "-inf", "nan" as words), RESP3
// doubles.
//
// Every write holds its keys exclusively and is journaled as sent: ADD,
// RESET and MERGE on the same digests give the same digests. Two things
// beyond a plain write:
//  - QUANTILE, CDF, RANK, REVRANK, BYRANK, BYREVRANK and TRIMMED_MEAN
//    compress the digest first, as RedisBloom's do, and the compress changes
//    every later answer (and INFO). So they hold the key exclusively
//    (kCmdExclusiveKeys), take the snapshot's copy before they compress, and
//    journal themselves when they did compress: a replay then compresses at
//    the same point and rebuilds the same digest.
//  - MERGE into a missing key stores an empty digest of the chosen
//    compression first (its creation record) and fills it; on replay that
//    key exists, and merging into an existing empty digest without OVERRIDE
//    gives the same digest (its compression is the one chosen, it adds
//    nothing, and it compresses nothing).
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "filters/t_digest.h"
#include "server/catalogue/command_table.h"
#include "server/catalogue/filter_family.h"
#include "server/commands/arg_parser.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"
#include "server/commands/family_shared/family_rows.h"
#include "server/commands/family_shared/filter_lookup.h"
#include "server/context/server_context.h"

namespace bloomgate {

const FilterFamily& TDigestFamily();  // the record, at the end of this file

namespace {

// ------------------------------------------------------------ helpers ----

// Redis's string2d: a finite double, or "inf" / "infinity" with a sign (a
// NaN or an out-of-range exponent is not a number).
bool ParseRedisDouble(std::string_view text, double* value) {
  if (ParseDouble(text, value)) return true;
  std::string_view word = text;
  bool negative = false;
  if (!word.empty() && (word[0] == '+' || word[0] == '-')) {
    negative = word[0] == '-';
    word.remove_prefix(1);
  }
  if (EqualsIgnoreCase(word, "inf") || EqualsIgnoreCase(word, "infinity")) {
    *value = negative ? -INFINITY : INFINITY;
    return true;
  }
  return false;
}

// A double reply as RedisBloom's (RedisModule_ReplyWithDouble on Redis 7.0).
void ReplyDouble(CommandContext& ctx, double value) {
  if (ctx.reply.resp3() || std::isinf(value) || std::isnan(value)) {
    ctx.reply.Double(value);  // RESP3 ",..."; RESP2 "inf", "-inf", "nan"
    return;
  }
  char text[40];
  const int n = std::snprintf(text, sizeof(text), "%.17g", value);
  ctx.reply.Bulk(std::string_view(text, static_cast<size_t>(n)));
}

// The digest under `key`, or null after replying (a missing key is
// "T-Digest: key does not exist"). `write`: the snapshot's copy is taken
// first, as for any write.
EntryPtr FindDigest(CommandContext& ctx, std::string_view key, bool write) {
  FilterStore store = StoreFor(ctx);
  store.write = write;
  EntryPtr entry;
  if (!FoundOrFail(ctx, FindFilter<TDigest>(store, ctx.Key(key), &entry), errors::kTdKeyMissing)) {
    return nullptr;
  }
  return entry;
}

// For the answers that compress: the digest, holding the snapshot's copy
// when a compress may follow. Pair with JournalIfCompressed.
EntryPtr FindDigestToCompress(CommandContext& ctx) {
  EntryPtr entry = FindDigest(ctx, ctx.args[1], /*write=*/false);
  if (entry == nullptr || entry->get<TDigest>()->unmerged_nodes() == 0) return entry;
  if (!entry->TakeSnapshotCopy(&ctx.server.budget, /*final_attempt=*/false)) {
    ctx.Fail(errors::kOom);
    return nullptr;
  }
  return entry;
}

// Journals the command when it compressed the digest (see the top).
void JournalIfCompressed(CommandContext& ctx, const TDigest& digest, int64_t compressions_before) {
  if (digest.total_compressions() == compressions_before) return;
  ctx.server.journal.RecordCommand(ctx.client.journal, ctx.now_ms, ctx.args);
}

// The arguments from args[2] on as numbers, each checked as RedisBloom does
// before the next is read: fails with `unparsed` where `parse` refuses, or
// with the text `check` gives (none: "").
template <typename T>
bool ParseArguments(CommandContext& ctx, bool (*parse)(std::string_view, T*),
                    std::string_view unparsed, std::vector<T>* out,
                    std::string_view (*check)(T) = nullptr) {
  auto texts = ctx.args.subspan(2);
  out->resize(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    if (!parse(texts[i], &(*out)[i])) {
      ctx.Fail(unparsed);
      return false;
    }
    if (std::string_view refused = check ? check((*out)[i]) : ""; !refused.empty()) {
      ctx.Fail(refused);
      return false;
    }
  }
  return true;
}

// The answers' reply, after journaling the compress they made, if any.
void ReplyAnswers(CommandContext& ctx, const TDigest& digest, int64_t compressions_before,
                  std::span<const double> values) {
  JournalIfCompressed(ctx, digest, compressions_before);
  ctx.reply.ArrayHeader(values.size());
  for (double value : values) ReplyDouble(ctx, value);
}

// COMPRESSION's value: a positive integer.
bool ParseCompression(CommandContext& ctx, std::string_view text, int64_t* compression) {
  if (!ParseInt64(text, compression)) {
    ctx.Fail(errors::kTdParseCompression);
    return false;
  }
  if (*compression <= 0) {
    ctx.Fail(errors::kTdCompressionPositive);
    return false;
  }
  return true;
}

// A digest of `compression` (replies and returns null if refused).
std::unique_ptr<TDigest> NewDigest(CommandContext& ctx, int64_t compression,
                                   std::string_view refused_text) {
  std::unique_ptr<TDigest> digest;
  MemoryRefusal refusal;
  const FilterStatus status = TDigest::Create(compression, ctx.server.filter_limits(),
                                              &ctx.server.budget, &digest, &refusal);
  if (status == FilterStatus::kOk) return digest;
  ctx.Fail(status == FilterStatus::kInvalidOptions
               ? std::string(refused_text)
               : errors::MemoryRefused(refused_text, refusal, /*growth=*/false));
  return nullptr;
}

// -------------------------------------------------------------- writes ---

// TDIGEST.CREATE key [COMPRESSION compression]
void CmdCreate(CommandContext& ctx) {
  if (ctx.args.size() != 2 && ctx.args.size() != 4) {
    ctx.Fail(errors::WrongArity("tdigest.create"));
    return;
  }
  // RedisBloom checks the key first: its own type or WRONGTYPE.
  if (EntryPtr existing = ctx.server.keyspace.Find(ctx.Key(ctx.args[1]), ctx.now_ms)) {
    ctx.Fail(existing->get<TDigest>() != nullptr ? errors::kTdKeyExists : errors::kWrongType);
    return;
  }
  int64_t compression = TDigest::kDefaultCompression;
  if (ctx.args.size() == 4) {
    if (!EqualsIgnoreCase(ctx.args[2], "compression")) {
      ctx.Fail(errors::kTdWrongKeyword);
      return;
    }
    if (!ParseCompression(ctx, ctx.args[3], &compression)) return;
  }
  std::unique_ptr<TDigest> digest;
  FilterStatus created = FilterStatus::kOk;
  MemoryRefusal refusal;
  const uint64_t bytes = compression <= TDigest::kMaxCompression ? TDigest::BytesFor(compression) : 0;
  if (!ctx.MakeFilter(bytes,
                      [compression, limits = ctx.server.filter_limits(),
                       budget = &ctx.server.budget](std::unique_ptr<TDigest>* out,
                                                    MemoryRefusal* refused) {
                        return TDigest::Create(compression, limits, budget, out, refused);
                      },
                      &created, &digest, &refusal)) {
    return;  // parked: runs again once the digest is made off the loop
  }
  if (created != FilterStatus::kOk) {
    ctx.Fail(created == FilterStatus::kInvalidOptions
                 ? std::string(errors::kTdAllocationFailed)
                 : errors::MemoryRefused(errors::kTdAllocationFailed, refusal, /*growth=*/false));
    return;
  }
  FilterStore store = StoreFor(ctx);
  EntryPtr stored;
  if (StoreNewFilter(store, ctx.Key(ctx.args[1]), std::move(digest), /*fail_if_exists=*/true,
                     &stored) != StoreOutcome::kStored) {
    ctx.Fail(errors::kTdKeyExists);  // the key was checked free under its lock
    return;
  }
  ctx.skip_journal = true;  // the creation record in the log says it all
  ctx.reply.Ok();
}

// TDIGEST.RESET key
void CmdReset(CommandContext& ctx) {
  EntryPtr entry = FindDigest(ctx, ctx.args[1], /*write=*/true);
  if (entry == nullptr) return;
  entry->get<TDigest>()->Reset();
  entry->MarkModified();
  ctx.reply.Ok();
}

// TDIGEST.ADD key value [value ...]
void CmdAdd(CommandContext& ctx) {
  EntryPtr entry = FindDigest(ctx, ctx.args[1], /*write=*/true);
  if (entry == nullptr) return;
  // Every value is checked before any is added.
  auto texts = ctx.args.subspan(2);
  std::vector<double> values(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    if (!ParseRedisDouble(texts[i], &values[i])) {
      ctx.Fail(errors::kTdParseVal);
      return;
    }
    if (!std::isfinite(values[i])) {
      ctx.Fail(errors::kTdValNotFinite);
      return;
    }
  }
  TDigest& digest = *entry->get<TDigest>();
  if (digest.total_weight() > INT64_MAX - static_cast<int64_t>(values.size())) {
    ctx.Fail(errors::kTdOverflow);  // 2^63 samples: refused whole, nothing added
    return;
  }
  for (double value : values) digest.Add(value);  // finite and fitting: cannot fail
  entry->MarkModified();
  ctx.reply.Ok();
}

// TDIGEST.MERGE destination numkeys source [source ...] [COMPRESSION c] [OVERRIDE]
void CmdMerge(CommandContext& ctx) {
  const std::string_view dest_name = ctx.args[1];
  FilterStore store = StoreFor(ctx);
  EntryPtr dest;
  switch (FindFilter<TDigest>(store, ctx.Key(dest_name), &dest)) {
    case Lookup::kFound:
    case Lookup::kMissing:
      break;
    case Lookup::kWrongType:
      ctx.Fail(errors::kWrongType);
      return;
    case Lookup::kOutOfMemory:
      ctx.Fail(errors::kOom);
      return;
  }
  int64_t num_keys = 0;
  if (!ParseInt64(ctx.args[2], &num_keys)) {
    ctx.Fail(errors::kTdParseNumKeys);
    return;
  }
  if (num_keys <= 0) {
    ctx.Fail(errors::kTdNumKeysPositive);
    return;
  }
  if (static_cast<uint64_t>(num_keys) > ctx.args.size() - 3) {
    ctx.Fail(errors::WrongArity("tdigest.merge"));
    return;
  }
  const size_t n = static_cast<size_t>(num_keys);
  // Here the sources are exactly the keys the row's numkeys_index locked.
  if (CommandTable::NumKeys(ctx.spec, ctx.args) != n) {
    ctx.Fail(errors::WrongArity("tdigest.merge"));
    return;
  }
  // RedisBloom's rule: the compression is the destination's, or the given
  // one, or (for a new destination or OVERRIDE without one) the largest of
  // the sources'. Its keywords are found anywhere after the sources.
  int64_t compression = dest != nullptr ? dest->get<TDigest>()->compression() : 0;
  bool use_max = dest == nullptr;
  bool override_dest = false;
  auto rest = ctx.args.subspan(3 + n);
  if (!rest.empty()) {
    std::optional<size_t> compression_at;
    for (size_t i = 0; i < rest.size() && !compression_at; ++i) {
      if (EqualsIgnoreCase(rest[i], "compression")) compression_at = i;
    }
    for (std::string_view word : rest) override_dest |= EqualsIgnoreCase(word, "override");
    if (compression_at) {
      use_max = false;
      if (*compression_at + 1 >= rest.size()) {
        ctx.Fail(errors::WrongArity("tdigest.merge"));
        return;
      }
      if (!ParseCompression(ctx, rest[*compression_at + 1], &compression)) return;
    } else if (override_dest) {
      use_max = true;
      compression = 0;
    } else {
      ctx.Fail(errors::kTdWrongKeyword);
      return;
    }
  }
  std::vector<EntryPtr> holders;
  std::vector<TDigest*> sources;
  for (size_t i = 0; i < n; ++i) {
    const std::string_view name = ctx.args[3 + i];
    EntryPtr source;
    if (name == dest_name) {
      if (dest == nullptr) {
        ctx.Fail(errors::kTdKeyMissing);
        return;
      }
      source = dest;
    } else if ((source = FindDigest(ctx, name, /*write=*/true)) == nullptr) {
      return;
    }
    TDigest* digest = source->get<TDigest>();
    if (use_max) compression = std::max(compression, digest->compression());
    holders.push_back(std::move(source));
    sources.push_back(digest);
  }
  std::vector<TDigest*> inputs;
  if (dest != nullptr && !override_dest) inputs.push_back(dest->get<TDigest>());
  inputs.insert(inputs.end(), sources.begin(), sources.end());
  std::unique_ptr<TDigest> merged = NewDigest(ctx, compression, errors::kTdMergeAllocationFailed);
  if (merged == nullptr) return;
  // Refused before anything is compressed, so a refusal changes nothing.
  if (!merged->CanAbsorb(inputs)) {
    ctx.Fail(errors::kTdOverflow);
    return;
  }
  std::unique_ptr<TDigest> fresh;  // the new key's digest, empty until filled
  if (dest == nullptr) {
    fresh = NewDigest(ctx, compression, errors::kTdMergeAllocationFailed);
    if (fresh == nullptr) return;
  }
  for (TDigest* input : inputs) merged->MergeFrom(*input);  // fits: checked above
  if (dest == nullptr) {
    TDigest* target = fresh.get();
    if (StoreNewFilter(store, ctx.Key(dest_name), std::move(fresh), /*fail_if_exists=*/true,
                       &dest) != StoreOutcome::kStored) {
      ctx.Fail(errors::kTdKeyExists);  // the key was checked free under its lock
      return;
    }
    target->SwapContents(*merged);
  } else {
    dest->get<TDigest>()->SwapContents(*merged);
  }
  dest->MarkModified();
  ctx.reply.Ok();
}

// --------------------------------------------------------------- reads ---

// TDIGEST.MIN key / TDIGEST.MAX key: nan when empty.
void ReplyExtreme(CommandContext& ctx, bool max) {
  EntryPtr entry = FindDigest(ctx, ctx.args[1], /*write=*/false);
  if (entry == nullptr) return;
  const TDigest& digest = *entry->get<TDigest>();
  ReplyDouble(ctx, digest.total_weight() == 0 ? NAN : (max ? digest.max() : digest.min()));
}
void CmdMin(CommandContext& ctx) { ReplyExtreme(ctx, /*max=*/false); }
void CmdMax(CommandContext& ctx) { ReplyExtreme(ctx, /*max=*/true); }

// TDIGEST.QUANTILE key quantile [quantile ...]
void CmdQuantile(CommandContext& ctx) {
  EntryPtr entry = FindDigestToCompress(ctx);
  if (entry == nullptr) return;
  std::vector<double> quantiles;
  if (!ParseArguments<double>(ctx, ParseRedisDouble, errors::kTdParseQuantile, &quantiles,
                              [](double q) {
                                return q < 0 || q > 1 ? errors::kTdQuantileRange
                                                      : std::string_view();
                              })) {
    return;
  }
  TDigest& digest = *entry->get<TDigest>();
  const int64_t before = digest.total_compressions();
  // Each ascending run shares one walk over the centroids, as RedisBloom's.
  std::vector<double> values(quantiles.size());
  for (size_t start = 0; start < quantiles.size();) {
    size_t end = start + 1;
    while (end < quantiles.size() && quantiles[end - 1] <= quantiles[end]) ++end;
    digest.Quantiles(std::span(quantiles).subspan(start, end - start),
                     std::span(values).subspan(start, end - start));
    start = end;
  }
  ReplyAnswers(ctx, digest, before, values);
}

// TDIGEST.CDF key value [value ...]
void CmdCdf(CommandContext& ctx) {
  EntryPtr entry = FindDigestToCompress(ctx);
  if (entry == nullptr) return;
  std::vector<double> points;
  if (!ParseArguments(ctx, ParseRedisDouble, errors::kTdParseCdf, &points)) return;
  TDigest& digest = *entry->get<TDigest>();
  const int64_t before = digest.total_compressions();
  std::vector<double> values(points.size());
  for (size_t i = 0; i < points.size(); ++i) values[i] = digest.Cdf(points[i]);
  ReplyAnswers(ctx, digest, before, values);
}

// Rounds half down (2.5 -> 2), away from zero otherwise: RedisBloom's RANK.
double HalfRoundDown(double f) {
  double whole = 0;
  const double frac = std::modf(f, &whole);
  if (std::fabs(frac) <= 0.5) return whole;
  return whole >= 0 ? whole + 1 : whole - 1;
}

// RedisBloom's (long long) cast as x86-64 performs it: a NaN (the CDF of a
// digest spanning more than DBL_MAX, whose widths are inf) or a value out
// of range becomes INT64_MIN, with no undefined conversion here.
int64_t RankAsInteger(double rank) {
  if (!(rank >= -9223372036854775808.0 && rank < 9223372036854775808.0)) return INT64_MIN;
  return static_cast<int64_t>(rank);
}

// TDIGEST.RANK / REVRANK key value [value ...]: -2 when empty; below min
// -1 (REVRANK: n); above max n (REVRANK: -1); else the CDF in samples.
void ReplyRanks(CommandContext& ctx, bool reverse) {
  EntryPtr entry = FindDigestToCompress(ctx);
  if (entry == nullptr) return;
  std::vector<double> points;
  if (!ParseArguments(ctx, ParseRedisDouble, errors::kTdParseValue, &points)) return;
  TDigest& digest = *entry->get<TDigest>();
  const int64_t before = digest.total_compressions();
  const double size = static_cast<double>(digest.total_weight());
  std::vector<double> ranks(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    const double v = points[i];
    if (size == 0) {
      ranks[i] = -2;
    } else if (v < digest.min()) {
      ranks[i] = reverse ? size : -1;
    } else if (v > digest.max()) {
      ranks[i] = reverse ? -1 : size;
    } else {
      const double samples = digest.Cdf(v) * size;
      ranks[i] = reverse ? std::round(size - std::round(samples)) : HalfRoundDown(samples);
    }
  }
  JournalIfCompressed(ctx, digest, before);
  ctx.reply.ArrayHeader(ranks.size());
  for (double rank : ranks) ctx.reply.Integer(RankAsInteger(rank));
}
void CmdRank(CommandContext& ctx) { ReplyRanks(ctx, /*reverse=*/false); }
void CmdRevRank(CommandContext& ctx) { ReplyRanks(ctx, /*reverse=*/true); }

// TDIGEST.BYRANK / BYREVRANK key rank [rank ...]: nan when empty; rank 0 is
// min (max); rank >= n is inf (-inf); else the quantile rank / n (reverse:
// (n - rank - 1) / n).
void ReplyByRanks(CommandContext& ctx, bool reverse) {
  EntryPtr entry = FindDigestToCompress(ctx);
  if (entry == nullptr) return;
  std::vector<int64_t> ranks;
  if (!ParseArguments<int64_t>(ctx, ParseInt64, errors::kTdParseRank, &ranks, [](int64_t rank) {
        return rank < 0 ? errors::kTdRankNegative : std::string_view();
      })) {
    return;
  }
  TDigest& digest = *entry->get<TDigest>();
  const int64_t before = digest.total_compressions();
  const double size = static_cast<double>(digest.total_weight());
  std::vector<double> values(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    const double rank = static_cast<double>(ranks[i]);
    if (size == 0) {
      values[i] = NAN;
    } else if (rank == 0) {
      values[i] = reverse ? digest.max() : digest.min();
    } else if (rank >= size) {
      values[i] = reverse ? -INFINITY : INFINITY;
    } else {
      values[i] = digest.Quantile((reverse ? size - rank - 1 : rank) / size);
    }
  }
  ReplyAnswers(ctx, digest, before, values);
}
void CmdByRank(CommandContext& ctx) { ReplyByRanks(ctx, /*reverse=*/false); }
void CmdByRevRank(CommandContext& ctx) { ReplyByRanks(ctx, /*reverse=*/true); }

// TDIGEST.TRIMMED_MEAN key low_cut_quantile high_cut_quantile
void CmdTrimmedMean(CommandContext& ctx) {
  EntryPtr entry = FindDigestToCompress(ctx);
  if (entry == nullptr) return;
  double low = 0;
  double high = 0;
  if (!ParseRedisDouble(ctx.args[2], &low)) {
    ctx.Fail(errors::kTdParseLowCut);
    return;
  }
  if (!ParseRedisDouble(ctx.args[3], &high)) {
    ctx.Fail(errors::kTdParseHighCut);
    return;
  }
  if (low < 0 || low > 1 || high < 0 || high > 1) {
    ctx.Fail(errors::kTdCutRange);
    return;
  }
  if (low >= high) {
    ctx.Fail(errors::kTdCutOrder);
    return;
  }
  TDigest& digest = *entry->get<TDigest>();
  const int64_t before = digest.total_compressions();
  const double mean = digest.TrimmedMean(low, high);
  JournalIfCompressed(ctx, digest, before);
  ReplyDouble(ctx, mean);
}

// TDIGEST.INFO key (a map in RESP3). Compresses nothing.
void CmdInfo(CommandContext& ctx) {
  EntryPtr entry = FindDigest(ctx, ctx.args[1], /*write=*/false);
  if (entry == nullptr) return;
  const TDigest& d = *entry->get<TDigest>();
  const std::pair<std::string_view, int64_t> fields[] = {
      {"Compression", d.compression()},
      {"Capacity", d.capacity()},
      {"Merged nodes", d.merged_nodes()},
      {"Unmerged nodes", d.unmerged_nodes()},
      {"Merged weight", d.merged_weight()},
      {"Unmerged weight", d.unmerged_weight()},
      {"Observations", d.total_weight()},
      {"Total compressions", d.total_compressions()},
      {"Memory usage", d.redisbloom_memory_usage()},
  };
  ctx.reply.MapHeader(std::size(fields));
  for (const auto& [name, value] : fields) {
    ctx.reply.SimpleString(name);
    ctx.reply.Integer(value);
  }
}

std::vector<CommandSpec> TDigestCommands() {
  const FamilyRows rows(TDigestFamily(), /*since=*/"2.4.0");
  constexpr uint32_t kWriteOom = FamilyRows::kWriteOom;
  constexpr uint32_t kRead = kCmdReadOnly;
  // Reads that compress first: exclusive, since they change the digest.
  constexpr uint32_t kCompressingRead = kCmdReadOnly | kCmdExclusiveKeys;
  CommandSpec merge = rows.Row("tdigest.merge", -4, 0, kWriteOom, CmdMerge,
                          "Merges multiple t-digest sketches into a single sketch");
  merge.numkeys_index = 2;  // the sources: numkeys of them after it
  return {
      rows.Row("tdigest.create", -2, 0, kWriteOom, CmdCreate,
          "Allocates memory and initializes a new t-digest sketch", "2.4.0"),
      rows.Row("tdigest.reset", 2, 0, kWriteOom, CmdReset,
          "Resets a t-digest sketch: empties the sketch and re-initializes it"),
      rows.Row("tdigest.add", -3, 0, kWriteOom, CmdAdd,
          "Adds one or more observations to a t-digest sketch"),
      merge,
      rows.Row("tdigest.min", 2, 0, kRead | kCmdFast, CmdMin,
          "Returns the minimum observation value from a t-digest sketch"),
      rows.Row("tdigest.max", 2, 0, kRead | kCmdFast, CmdMax,
          "Returns the maximum observation value from a t-digest sketch"),
      rows.Row("tdigest.quantile", -3, 0, kCompressingRead, CmdQuantile,
          "Returns, for each input fraction, a floating-point estimation of the value that is "
          "smaller than the given fraction of observations"),
      rows.Row("tdigest.cdf", -3, 0, kCompressingRead, CmdCdf,
          "Returns, for each input value, an estimation of the fraction of (observations smaller "
          "than the given value + half the observations equal to the given value)"),
      rows.Row("tdigest.rank", -3, 0, kCompressingRead, CmdRank,
          "Returns, for each input value (floating-point), the estimated rank of the value (the "
          "number of observations in the sketch that are smaller than the value + half the "
          "number of observations that are equal to the value)"),
      rows.Row("tdigest.revrank", -3, 0, kCompressingRead, CmdRevRank,
          "Returns, for each input value (floating-point), the estimated reverse rank of the "
          "value (the number of observations in the sketch that are larger than the value + "
          "half the number of observations that are equal to the value)"),
      rows.Row("tdigest.byrank", -3, 0, kCompressingRead, CmdByRank,
          "Returns, for each input rank, an estimation of the value (floating-point) with that "
          "rank"),
      rows.Row("tdigest.byrevrank", -3, 0, kCompressingRead, CmdByRevRank,
          "Returns, for each input reverse rank, an estimation of the value (floating-point) "
          "with that reverse rank"),
      rows.Row("tdigest.trimmed_mean", 4, 0, kCompressingRead, CmdTrimmedMean,
          "Returns an estimation of the mean value from the sketch, excluding observation values "
          "outside the low and high cutoff quantiles"),
      rows.Row("tdigest.info", 2, 0, kRead | kCmdFast, CmdInfo,
          "Returns information and statistics about a t-digest sketch"),
  };
}

// check-snapshot's summary line.
std::string Describe(const AnyFilter& filter) {
  const TDigest& d = *std::get<std::unique_ptr<TDigest>>(filter);
  char line[200];
  std::snprintf(line, sizeof(line),
                "t-digest: compression %lld, %u merged + %u unmerged centroids, %lld "
                "observations, %llu bytes",
                static_cast<long long>(d.compression()), d.merged_nodes(), d.unmerged_nodes(),
                static_cast<long long>(d.total_weight()),
                static_cast<unsigned long long>(d.memory_bytes()));
  return line;
}

}  // namespace

// The COMMAND DOCS syntax line of each row but SCANDUMP and LOADCHUNK
// (theirs come with them), sorted by name: catalogue/command_syntax.h
// says how a line reads.
constexpr CommandSyntax kRowSyntax[] = {
    {"tdigest.add", "key value [value ...]", "value:double"},
    {"tdigest.byrank", "key rank [rank ...]", "rank:integer"},
    {"tdigest.byrevrank", "key reverse_rank [reverse_rank ...]", "reverse_rank:integer"},
    {"tdigest.cdf", "key value [value ...]", "value:double"},
    {"tdigest.create", "key [COMPRESSION compression]", "compression:integer"},
    {"tdigest.info", "key", ""},
    {"tdigest.max", "key", ""},
    {"tdigest.merge",
     "destination-key numkeys source-key [source-key ...] [COMPRESSION compression] [OVERRIDE]",
     "destination-key:key numkeys:integer source-key:key compression:integer"},
    {"tdigest.min", "key", ""},
    {"tdigest.quantile", "key quantile [quantile ...]", "quantile:double"},
    {"tdigest.rank", "key value [value ...]", "value:double"},
    {"tdigest.reset", "key", ""},
    {"tdigest.revrank", "key value [value ...]", "value:double"},
    {"tdigest.trimmed_mean", "key low_cut_quantile high_cut_quantile",
     "low_cut_quantile:double high_cut_quantile:double"},
};

// The family's registration (server/commands/registry.cc registers it).
const FilterFamily& TDigestFamily() {
  static const FilterFamily family{
      .kind = FilterKind::kTDigest,
      .type_name = "TDIS-TYPE",  // RedisBloom's module type name
      .group = "tdigest",
      .acl_category = "@tdigest",
      .writes = FamilyWrites::kExclusive,
      .commands = TDigestCommands,
      .syntax = kRowSyntax,
      .describe = Describe,
      .health = HealthAs<TDigest, TDigestHealth>,
  };
  return family;
}

}  // namespace bloomgate
