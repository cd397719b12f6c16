// Every error text a client can see, in one place.
//
// Each text is the whole error line without the leading '-': its first word is
// the error code the client sees. Most codes are "ERR", but RedisBloom sends
// some errors with no code at all ("Bad capacity" goes on the wire as
// "-Bad capacity"), and client libraries match on those exact texts, so they
// are kept verbatim here (see shared COMPAT.md §1.10).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "filters/memory_refusal.h"

namespace bloomgate::errors {

// --- Generic (Redis's networking.c / server.c texts) ---
inline constexpr std::string_view kSyntax = "ERR syntax error";
inline constexpr std::string_view kSaveInsideExec =
    "ERR SAVE, BGSAVE and BGREWRITEAOF are not allowed inside a transaction";
inline constexpr std::string_view kTooLargeToLog =
    "ERR command too large for the append-only log (4 GiB per record)";
// Redis's text when its append-only log cannot be written.
inline constexpr std::string_view kLogWriteFailed =
    "MISCONF Errors writing to the AOF file: writes are refused until the server is restarted "
    "with a working data directory";
inline constexpr std::string_view kNotInteger =
    "ERR value is not an integer or out of range";
inline constexpr std::string_view kSlowlogCount =
    "ERR count should be greater than or equal to -1";
inline constexpr std::string_view kNotFloat = "ERR value is not a valid float";
inline constexpr std::string_view kWrongType =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr std::string_view kNoAuth = "NOAUTH Authentication required.";
// Redis's text with our name (clients match the LOADING code and retry).
inline constexpr std::string_view kLoading = "LOADING Bloomgate is loading the dataset in memory";
// Replication: Redis's texts (replication.c, server.c).
inline constexpr std::string_view kReadOnlyReplica =
    "READONLY You can't write against a read only replica.";
inline constexpr std::string_view kNoReplicas = "NOREPLICAS Not enough good replicas to write.";
// Redis 7.0 (replication.c) refuses WAIT on a replica before reading its arguments.
inline constexpr std::string_view kWaitOnReplica =
    "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 "
    "if a replica is configured to be writable (which is not the default) writes to replicas "
    "are just local and are not propagated.";
inline constexpr std::string_view kReplicaOfWhileReplicaLink =
    "ERR Command is not valid when client is a replica.";
inline std::string UnrecognizedReplconfOption(std::string_view option) {
  return "ERR Unrecognized REPLCONF option: " + std::string(option.substr(0, 128));
}
// Ours (Redis has no AUTH throttling): see server/access/auth_throttle.h.
inline constexpr std::string_view kAuthThrottled =
    "ERR too many failed AUTH attempts from this address; try again later";
inline constexpr std::string_view kWrongPass =
    "WRONGPASS invalid username-password pair or user is disabled.";
inline constexpr std::string_view kAuthNotConfigured =
    "ERR AUTH <password> called without any password configured for the "
    "default user. Are you sure your configuration is correct?";
inline constexpr std::string_view kNoProto = "NOPROTO unsupported protocol version";
inline constexpr std::string_view kMaxClients = "ERR max number of clients reached";
// Redis's code and opening words (client libraries match "protected mode"),
// our advice.
inline constexpr std::string_view kProtectedMode =
    "DENIED Bloomgate is running in protected mode because protected mode is enabled and no "
    "password is set for the default user. In this mode connections are only accepted from "
    "the loopback interface (127.0.0.1 and ::1). To accept other clients, do one of: 1) set "
    "a password (requirepass, or CONFIG SET requirepass from the loopback interface); "
    "2) CONFIG SET protected-mode no from the loopback interface, and make sure the server is "
    "not reachable from the internet; 3) start the server with --protected-mode no.";
inline constexpr std::string_view kNoSuchKey = "ERR no such key";
inline constexpr std::string_view kDbIndexOutOfRange = "ERR DB index is out of range";
inline constexpr std::string_view kOom =
    "OOM command not allowed when used memory > 'maxmemory'.";
inline constexpr std::string_view kInvalidExpireTime =
    "ERR invalid expire time in '%s' command";
inline constexpr std::string_view kExpireOptionsConflict =
    "ERR NX and XX, GT or LT options at the same time are not compatible";
inline constexpr std::string_view kExpireGtLtConflict =
    "ERR GT and LT options at the same time are not compatible";
inline constexpr std::string_view kInvalidCursor = "ERR invalid cursor";
// DUMP / RESTORE / COPY (Redis's cluster.c and db.c texts).
inline constexpr std::string_view kBusyKey = "BUSYKEY Target key name already exists.";
inline constexpr std::string_view kDumpPayloadWrong =
    "ERR DUMP payload version or checksum are wrong";
inline constexpr std::string_view kBadDataFormat = "ERR Bad data format";
inline constexpr std::string_view kInvalidTtl = "ERR Invalid TTL value, must be >= 0";
inline constexpr std::string_view kInvalidIdleTime = "ERR Invalid IDLETIME value, must be >= 0";
inline constexpr std::string_view kInvalidFreq =
    "ERR Invalid FREQ value, must be >= 0 and <= 255";
inline constexpr std::string_view kSameObject = "ERR source and destination objects are the same";
inline constexpr std::string_view kClientNameSpaces =
    "ERR Client names cannot contain spaces, newlines or special characters.";

// --- Transactions (Redis's multi.c) ---
inline constexpr std::string_view kMultiNested = "ERR MULTI calls can not be nested";
inline constexpr std::string_view kExecWithoutMulti = "ERR EXEC without MULTI";
inline constexpr std::string_view kDiscardWithoutMulti = "ERR DISCARD without MULTI";
inline constexpr std::string_view kWatchInsideMulti =
    "ERR WATCH inside MULTI is not allowed";
inline constexpr std::string_view kExecAbort =
    "EXECABORT Transaction discarded because of previous errors.";

// --- Bloom filters (RedisBloom, Redis 8 texts) ---
inline constexpr std::string_view kNotFound = "ERR not found";
inline constexpr std::string_view kItemExists = "ERR item exists";
// SCANDUMP / LOADCHUNK (COMPAT.md §1.6).
inline constexpr std::string_view kScanDumpBadIterator = "Second argument must be numeric";
inline constexpr std::string_view kLoadChunkBadIterator = "ERR Second argument must be numeric";
inline constexpr std::string_view kReceivedBadData = "ERR received bad data";
inline constexpr std::string_view kCfInvalidPosition = "Invalid position";
inline constexpr std::string_view kCfCouldNotLoadChunk = "Couldn't load chunk!";
// CF.LOADCHUNK's first chunk describes no filter that can be built.
inline constexpr std::string_view kCfCouldNotCreateFilter = "Couldn't create filter!";
// Ours, for every family: a payload chunk whose dump is not the staged
// header's — the filter changed between the SCANDUMP calls (or the chunk is
// from another dump). RedisBloom does not notice and loads the mix.
inline constexpr std::string_view kDumpChanged =
    "ERR the filter changed during SCANDUMP or the chunk is from another dump: restart "
    "SCANDUMP from iterator 0";
inline constexpr std::string_view kBadErrorRate = "ERR bad error rate";
inline constexpr std::string_view kErrorRateRange =
    "ERR error rate must be in the range (0.000000, 1.000000)";
inline constexpr std::string_view kBadCapacity = "ERR bad capacity";
inline constexpr std::string_view kCapacityRange =
    "ERR capacity must be in the range [1, 18446744073709551615]";
inline constexpr std::string_view kNoExpansion = "ERR no expansion";
inline constexpr std::string_view kBadExpansion = "ERR bad expansion";
inline constexpr std::string_view kExpansionRange =
    "ERR expansion must be in the range [0, 32768]";
inline constexpr std::string_view kNonScalingCannotExpand =
    "Nonscaling filters cannot expand";
inline constexpr std::string_view kInsufficientMemory =
    "ERR Insufficient memory to create filter";
// A memory refusal, for every family: the family's RedisBloom text (`text`:
// kInsufficientMemory, kCfInsufficientMemory, kCmsInsufficientMemory,
// kTopKInsufficientMemory, or for a refused growth kProblemInserting / kOom)
// stays the prefix clients match, then which limit and the figures:
//   "ERR Insufficient memory to create filter: needs 4000002737 bytes,
//    max-filter-memory is 4294967296"
//   "ERR Insufficient memory to create filter: needs 1234 bytes, maxmemory has
//    100 bytes free of 100000000"
//   "ERR problem inserting into filter: growing needs 8589934720 bytes in all,
//    max-filter-memory is 4294967296"
//   "OOM command not allowed when used memory > 'maxmemory'.: growing needs
//    2048 more bytes, maxmemory has 100 bytes free of 100000000"
// A size no filter can have says so; a failed allocation names its size.
// Limit::kNone (nothing told) leaves `text` bare.
inline std::string MemoryRefused(std::string_view text, const MemoryRefusal& r, bool growth) {
  using Limit = MemoryRefusal::Limit;
  std::string out(text);
  if (r.limit == Limit::kNone) return out;
  const std::string needed = r.needed_bytes == UINT64_MAX ? std::string("more than 2^64")
                                                           : std::to_string(r.needed_bytes);
  out.append(growth ? ": growing needs " : ": needs ").append(needed);
  switch (r.limit) {
    case Limit::kFilterCap:
      out.append(growth ? " bytes in all" : " bytes");
      if (r.limit_bytes == 0 || r.needed_bytes == UINT64_MAX) {
        return out.append(", more than any filter can have");
      }
      return out.append(", max-filter-memory is ").append(std::to_string(r.limit_bytes));
    case Limit::kBudget: {
      const uint64_t free = r.used_bytes >= r.limit_bytes ? 0 : r.limit_bytes - r.used_bytes;
      return out.append(growth ? " more bytes" : " bytes")
          .append(", maxmemory has ")
          .append(std::to_string(free))
          .append(" bytes free of ")
          .append(std::to_string(r.limit_bytes));
    }
    case Limit::kAllocation:
      return out.append(growth ? " more bytes" : " bytes").append(", which could not be allocated");
    case Limit::kNone: break;
  }
  return out;
}
inline constexpr std::string_view kNonScalingFull = "ERR non scaling filter is full";
inline constexpr std::string_view kProblemInserting = "ERR problem inserting into filter";
// RedisBloom's text for a failed scale-out plus which limit it was: a
// RedisBloom filter has no layer cap (it grows until its error rate
// underflows), so a client matching RedisBloom's text still matches the
// prefix, and the rest says why this one stopped (kMaxBloomLayers).
// Ours: RedisBloom takes any rate in (0, 1) (filters/limits.h's
// kMinBloomErrorRate says why we do not). Its range text prints the bounds
// with %f, so "(0.000000, 1.000000)" cannot say 1e-30: a text of its own.
inline constexpr std::string_view kErrorRateFloor =
    "ERR error rate must be at least 1e-30 (below it every item costs more memory than the "
    "rate is worth)";
inline constexpr std::string_view kTooManyLayers =
    "ERR problem inserting into filter: it already has 64 layers, the most a filter may have";
inline constexpr std::string_view kInvalidInfoValue = "Invalid information value";
// BF.INSERT's own texts carry no "ERR" code in RedisBloom.
inline constexpr std::string_view kInsertBadErrorRate = "Bad error rate";
inline constexpr std::string_view kInsertBadExpansion = "Bad expansion";
inline constexpr std::string_view kInsertBadCapacity = "Bad capacity";
inline constexpr std::string_view kInsertUnknownArgument = "Unknown argument received";
// Where RedisBloom silently misreads input, we refuse it instead (README
// "Differences from RedisBloom").
inline constexpr std::string_view kNoCreateWithOptions =
    "ERR NOCREATE cannot be combined with CAPACITY or ERROR";
inline constexpr std::string_view kNoCreateWithCounterBits =
    "ERR NOCREATE cannot be combined with COUNTERBITS";
inline constexpr std::string_view kDuplicateOption = "ERR option given more than once";
// SEED and BF.MERGE / CBF.MERGE (ours: RedisBloom has neither; valkey-bloom
// has a SEED of its own). Merge texts name the first mismatch; seeds are
// secret, so a seed mismatch never shows either value.
// valkey-bloom's text for a SEED that is neither its 32 raw bytes nor our
// integer in [1, 18446744073709551615].
inline constexpr std::string_view kBadSeed = "ERR invalid seed";
inline constexpr std::string_view kNoCreateWithSeed = "ERR NOCREATE cannot be combined with SEED";
// valkey-bloom's BF.INSERT options TIGHTENING and VALIDATESCALETO, with its
// texts (its src/bloom/utils.rs), and BF.INFO's fields past RedisBloom's.
inline constexpr std::string_view kBadTighteningRatio = "ERR bad tightening ratio";
inline constexpr std::string_view kTighteningRatioRange = "ERR (0 < tightening ratio range < 1)";
inline constexpr std::string_view kValkeyBadCapacity = "ERR bad capacity";
inline constexpr std::string_view kValkeyCapacityRange = "ERR (capacity should be larger than 0)";
inline constexpr std::string_view kNonScalingValidateScaleTo =
    "ERR cannot use NONSCALING and VALIDATESCALETO options together";
inline constexpr std::string_view kValidateScaleToOverMemory =
    "ERR provided VALIDATESCALETO causes bloom object to exceed memory limit";
inline constexpr std::string_view kValidateScaleToErrorUnderflow =
    "ERR provided VALIDATESCALETO causes false positive to degrade to 0";
// Ours: valkey-bloom has no layer cap short of its memory limit.
inline constexpr std::string_view kValidateScaleToTooManyLayers =
    "ERR provided VALIDATESCALETO needs more than 64 filters, the most a bloom object may have";
inline constexpr std::string_view kErrorRateUnderflow =
    "ERR false positive degrades to 0 on scale out";
// Ours, as for SEED and WINDOW: these only describe a filter being made.
inline constexpr std::string_view kNoCreateWithTightening =
    "ERR NOCREATE cannot be combined with TIGHTENING";
inline constexpr std::string_view kWindowWithValkeyOptions =
    "ERR WINDOW cannot be combined with TIGHTENING or VALIDATESCALETO";
inline constexpr std::string_view kMergeMismatch = "ERR filters to merge differ";
// "ERR BF.MERGE: src2 has 3 layers, dest has 2"
inline std::string MergeMismatch(std::string_view command, std::string_view key,
                                 std::string_view what, std::string_view key_value,
                                 std::string_view reference, std::string_view reference_value) {
  std::string text = "ERR ";
  text.append(command).append(": ").append(key).append(" has ").append(what);
  if (!what.empty()) text.append(" ");
  text.append(key_value).append(", ").append(reference).append(" has ").append(reference_value);
  return text;
}
// "ERR BF.MERGE: src2 is a windowed filter, which BF.MERGE does not merge"
// (kind: "a windowed filter", "a filter in RedisBloom's layout").
inline std::string MergeUnsupported(std::string_view command, std::string_view key,
                                    std::string_view kind) {
  std::string text = "ERR ";
  text.append(command).append(": ").append(key).append(" is ").append(kind).append(", which ");
  text.append(command).append(" does not merge");
  return text;
}
inline std::string MergeWindowed(std::string_view command, std::string_view key) {
  return MergeUnsupported(command, key, "a windowed filter");
}
// MergeMismatch of the windowed generations `back` periods before the
// current one: "... (in the generation 2 back)".
inline std::string MergeGenerationMismatch(std::string_view command, std::string_view key,
                                           std::string_view what, std::string_view key_value,
                                           std::string_view reference,
                                           std::string_view reference_value, uint32_t back) {
  return MergeMismatch(command, key, what, key_value, reference, reference_value) +
         " (in the generation " + std::to_string(back) + " back)";
}
// A merge input of a kind the merge does not take, when its name is not known.
inline constexpr std::string_view kMergeUnsupported =
    "ERR a filter to merge is of a kind the merge does not take";
// Windowed filters (ours: RedisBloom has none).
inline constexpr std::string_view kBadWindow =
    "ERR WINDOW must be a number of seconds in [0.001, 316224000]";
inline constexpr std::string_view kBadGenerations = "ERR GENERATIONS must be in the range [1, 64]";
inline constexpr std::string_view kGenerationsWithoutWindow = "ERR GENERATIONS requires WINDOW";
inline constexpr std::string_view kWindowNonScaling =
    "ERR WINDOW cannot be combined with NONSCALING or EXPANSION 0";
inline constexpr std::string_view kWindowTooShort =
    "ERR WINDOW must be at least GENERATIONS milliseconds";
inline constexpr std::string_view kNoCreateWithWindow =
    "ERR NOCREATE cannot be combined with WINDOW or GENERATIONS";

// --- Counting Bloom filters (CBF.*, ours) ---
inline constexpr std::string_view kBadCounterBits = "ERR COUNTERBITS must be 4 or 8";

// --- Cuckoo filters (RedisBloom, Redis 8 texts) ---
inline constexpr std::string_view kCfBadCapacity = "Bad capacity";
inline constexpr std::string_view kCfBadMaxIterations = "Couldn't parse MAXITERATIONS";
inline constexpr std::string_view kCfMaxIterationsRange =
    "MAXITERATIONS: value must be in the range [1, 65535]";
inline constexpr std::string_view kCfBadBucketSize = "Couldn't parse BUCKETSIZE";
inline constexpr std::string_view kCfBucketSizeRange =
    "BUCKETSIZE: value must be in the range [1, 255]";
inline constexpr std::string_view kCfBadExpansion = "Couldn't parse EXPANSION";
inline constexpr std::string_view kCfExpansionRange =
    "EXPANSION: value must be in the range [0, 32768]";
// Our capacity bound is memory, not RedisBloom's 2^30 (README).
inline constexpr std::string_view kCfCapacityRange =
    "Capacity must be in the range [2 * BUCKETSIZE, 18446744073709551615]";
inline constexpr std::string_view kCfInsertCapacityRange =
    "Capacity must be in the range [cf-bucket-size * 2, 18446744073709551615]";
inline constexpr std::string_view kCfMaxExpansions = "Maximum expansions reached";
inline constexpr std::string_view kCfFull = "Filter is full";
// Ours (CuckooFilter's kCopiesFull): RedisBloom would add a sub-filter for
// the copy; we refuse it with RedisBloom's no-room text and say why.
inline constexpr std::string_view kCfCopiesFull =
    "Filter is full: copies of this item fill its buckets in the newest two sub-filters";
inline constexpr std::string_view kCfInsufficientMemory = "ERR Insufficient memory";
inline constexpr std::string_view kCfDelNotFound = "Not found";
inline constexpr std::string_view kCfCompactNotFound = "Cuckoo filter was not found";
inline constexpr std::string_view kCouldNotCreateFilter = "ERR Could not create filter";

// --- Count-min sketches (RedisBloom rm_cms.c texts, no "ERR" code) ---
inline constexpr std::string_view kCmsKeyExists = "CMS: key already exists";
inline constexpr std::string_view kCmsKeyMissing = "CMS: key does not exist";
inline constexpr std::string_view kCmsInvalidWidth = "CMS: invalid width";
inline constexpr std::string_view kCmsInvalidDepth = "CMS: invalid depth";
inline constexpr std::string_view kCmsInvalidOverestimation = "CMS: invalid overestimation value";
inline constexpr std::string_view kCmsInvalidProb = "CMS: invalid prob value";
inline constexpr std::string_view kCmsInvalidInitArguments = "CMS: invalid init arguments";
inline constexpr std::string_view kCmsInsufficientMemory =
    "CMS: Insufficient memory to create the key";
inline constexpr std::string_view kCmsCannotParseNumber = "CMS: Cannot parse number";
inline constexpr std::string_view kCmsNegativeNumber = "CMS: Number cannot be negative";
// An array element, in place of an item's count that saturated at 2^32 - 1.
inline constexpr std::string_view kCmsIncrByOverflow = "CMS: INCRBY overflow";
inline constexpr std::string_view kCmsInvalidNumKeys = "CMS: invalid numkeys";
inline constexpr std::string_view kCmsNumKeysPositive = "CMS: Number of keys must be positive";
inline constexpr std::string_view kCmsWrongNumberOfKeys = "CMS: wrong number of keys";
inline constexpr std::string_view kCmsWrongNumberOfKeysWeights =
    "CMS: wrong number of keys/weights";
inline constexpr std::string_view kCmsInvalidWeight = "CMS: invalid weight value";
inline constexpr std::string_view kCmsShapeMismatch = "CMS: width/depth is not equal";
inline constexpr std::string_view kCmsMergeOverflow = "CMS: MERGE overflow";
// Ours: a sketch saved before new sketches hashed as RedisBloom's cannot
// merge with a new one (filters/sketch_scheme.h).
inline constexpr std::string_view kCmsSchemeMismatch =
    "CMS: sketches hash differently (one was created before RedisBloom hashing)";

// --- Top-k (RedisBloom rm_topk.c texts) ---
inline constexpr std::string_view kTopKKeyExists = "TopK: key already exists";
inline constexpr std::string_view kTopKKeyMissing = "TopK: key does not exist";
inline constexpr std::string_view kTopKInvalidK = "TopK: invalid k";
inline constexpr std::string_view kTopKInvalidWidth = "TopK: invalid width";
inline constexpr std::string_view kTopKInvalidDepth = "TopK: invalid depth";
inline constexpr std::string_view kTopKInvalidDecay =
    "TopK: invalid decay value. must be '<= 1' & '> 0'";
inline constexpr std::string_view kTopKInsufficientMemory =
    "ERR Insufficient memory to create topk data structure";
// Verbatim, 28 spaces included: rm_topk.c continues the C string literal
// with a backslash-newline, and the next line's indentation became part of it.
inline constexpr std::string_view kTopKBadIncrement =
    "TopK: increment must be an integer greater or equal to 0                            "
    "and smaller or equal to 100,000";
inline constexpr std::string_view kTopKWithCountExpected = "WITHCOUNT keyword expected";

// --- T-digests (RedisBloom rm_tdigest.c texts, with its "ERR" code) ---
inline constexpr std::string_view kTdKeyExists = "ERR T-Digest: key already exists";
inline constexpr std::string_view kTdKeyMissing = "ERR T-Digest: key does not exist";
inline constexpr std::string_view kTdWrongKeyword = "ERR T-Digest: wrong keyword";
inline constexpr std::string_view kTdParseCompression =
    "ERR T-Digest: error parsing compression parameter";
inline constexpr std::string_view kTdCompressionPositive =
    "ERR T-Digest: compression parameter needs to be a positive integer";
inline constexpr std::string_view kTdAllocationFailed = "ERR T-Digest: allocation failed";
inline constexpr std::string_view kTdMergeAllocationFailed =
    "ERR T-Digest: allocation of destination digest failed";
inline constexpr std::string_view kTdParseVal = "ERR T-Digest: error parsing val parameter";
inline constexpr std::string_view kTdValNotFinite =
    "ERR T-Digest: val parameter needs to be a finite number";
inline constexpr std::string_view kTdOverflow = "ERR T-Digest: overflow detected";
inline constexpr std::string_view kTdParseNumKeys = "ERR T-Digest: error parsing numkeys";
inline constexpr std::string_view kTdNumKeysPositive =
    "ERR T-Digest: numkeys needs to be a positive integer";
inline constexpr std::string_view kTdParseValue = "ERR T-Digest: error parsing value";
inline constexpr std::string_view kTdParseRank = "ERR T-Digest: error parsing rank";
inline constexpr std::string_view kTdRankNegative = "ERR T-Digest: rank needs to be non negative";
inline constexpr std::string_view kTdParseQuantile = "ERR T-Digest: error parsing quantile";
inline constexpr std::string_view kTdQuantileRange = "ERR T-Digest: quantile should be in [0,1]";
inline constexpr std::string_view kTdParseCdf = "ERR T-Digest: error parsing cdf";
inline constexpr std::string_view kTdParseLowCut = "ERR T-Digest: error parsing low_cut_percentile";
inline constexpr std::string_view kTdParseHighCut =
    "ERR T-Digest: error parsing high_cut_percentile";
inline constexpr std::string_view kTdCutRange =
    "ERR T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]";
inline constexpr std::string_view kTdCutOrder =
    "ERR T-Digest: low_cut_percentile should be lower than high_cut_percentile";

// --- Texts that name what the client sent (Redis's, built in one place) ---

// `command` as Redis names it in this error: lower case, a subcommand as
// "container|sub" ("config|set").
inline std::string WrongArity(std::string_view command) {
  return "ERR wrong number of arguments for '" + std::string(command) + "' command";
}

// Redis's text, including its 128-byte caps and the trailing space.
inline std::string UnknownCommand(std::span<const std::string_view> args) {
  std::string quoted;
  for (size_t i = 1; i < args.size() && quoted.size() < 128; ++i) {
    quoted += "'";
    quoted += args[i].substr(0, 128 - quoted.size() + 1);
    quoted += "' ";
  }
  return "ERR unknown command '" + std::string(args[0].substr(0, 128)) +
         "', with args beginning with: " + quoted;
}

// --- Connection and introspection texts (Redis's) ---
inline constexpr std::string_view kHelloBadProtocol =
    "ERR Protocol version is not an integer or out of range";
inline constexpr std::string_view kHelloNoAuth =
    "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
    "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
    "select the RESP protocol version at the same time";
inline constexpr std::string_view kInvalidClientId = "ERR Invalid client ID";
inline constexpr std::string_view kNoSuchClient = "ERR No such client";
// CLIENT PAUSE, in the order Redis checks: the mode, then the timeout.
inline constexpr std::string_view kPauseMode = "ERR CLIENT PAUSE mode must be WRITE or ALL";
inline constexpr std::string_view kTimeoutNotInteger =
    "ERR timeout is not an integer or out of range";
inline constexpr std::string_view kTimeoutNegative = "ERR timeout is negative";
inline constexpr std::string_view kTimeoutOutOfRange = "ERR timeout is out of range";
// MONITOR inside MULTI/EXEC (Redis's deny-blocking clients); and any key
// command from a monitoring connection, which Redis treats as a replica.
inline constexpr std::string_view kMonitorDenyBlocking =
    "ERR MONITOR isn't allowed for DENY BLOCKING client";
inline constexpr std::string_view kReplicaKeyspace = "ERR Replica can't interact with the keyspace";
inline constexpr std::string_view kObjectFreqNotTracked =
    "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note "
    "that when switching between policies at runtime LRU and LFU data will take some time to "
    "adjust.";
inline constexpr std::string_view kClientIdNotPositive = "ERR client-id should be greater than 0";
inline constexpr std::string_view kNoShutdownInProgress = "ERR No shutdown in progress.";
inline constexpr std::string_view kInvalidCommandSpecified = "ERR Invalid command specified";
inline constexpr std::string_view kGetKeysBadArity =
    "ERR Invalid number of arguments specified for command";
inline constexpr std::string_view kGetKeysNoKeys = "ERR The command has no key arguments";

inline std::string HelloSyntax(std::string_view option) {
  return "ERR Syntax error in HELLO option '" + std::string(option) + "'";
}
inline std::string UnrecognizedOption(std::string_view option) {
  return "ERR Unrecognized option '" + std::string(option) + "'";
}
// CLIENT SETINFO LIB-NAME / LIB-VER with a space or control character.
inline std::string ClientLibInfoInvalid(bool lib_name) {
  return std::string("ERR ") + (lib_name ? "lib-name" : "lib-ver") +
         " cannot contain spaces, newlines or special characters.";
}
inline std::string NoSuchUser(std::string_view user) {
  return "ERR No such user '" + std::string(user) + "'";
}
// Redis 7.0 processCommand: a RESP2 client subscribed to a channel or
// pattern may run only these; `command` is the row's full name ("client|list").
inline std::string OnlyPubSubCommands(std::string_view command) {
  return "ERR Can't execute '" + std::string(command) +
         "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in "
         "this context";
}
inline std::string UnknownClientType(std::string_view type) {
  return "ERR Unknown client type '" + std::string(type) + "'";
}
// SET-style options EXPIRE does not know.
inline std::string UnsupportedOption(std::string_view option) {
  return "ERR Unsupported option " + std::string(option);
}
// kInvalidExpireTime with the command's name in place of %s.
inline std::string InvalidExpireTime(std::string_view command_lower) {
  std::string text(kInvalidExpireTime);
  text.replace(text.find("%s"), 2, command_lower);
  return text;
}
// CONFIG SET's refusal: the config layer's message (config/runtime_config.h).
inline std::string ConfigSetFailed(std::string_view message) {
  return "ERR " + std::string(message);
}
// CONFIG REWRITE (Redis's config.c texts).
inline constexpr std::string_view kConfigRewriteNoFile =
    "ERR The server is running without a config file";
inline std::string ConfigRewriteFailed(std::string_view why) {
  return "ERR Rewriting config file: " + std::string(why);
}

// `container_upper` is the container's name in upper case ("CLIENT").
inline std::string UnknownSubcommand(std::string_view sub, std::string_view container_upper) {
  return "ERR unknown subcommand '" + std::string(sub.substr(0, 128)) + "'. Try " +
         std::string(container_upper) + " HELP.";
}

// --- ACL (Redis 7's acl.c / server.c / multi.c texts) ---
inline constexpr std::string_view kNoPermissionKey = "NOPERM No permissions to access a key";
inline constexpr std::string_view kAclDefaultUserUndeletable =
    "ERR The 'default' user cannot be removed";
inline constexpr std::string_view kAclBadUsername =
    "ERR Usernames can't contain spaces or null characters";
// EXEC's per-command refusal when ACLs changed after the command was queued,
// with one of the two reasons below.
inline constexpr std::string_view kAclChangedBeforeExec =
    "NOPERM ACLs rules changed between the moment the transaction was accumulated and the "
    "EXEC call. This command is no longer allowed for the following reason: ";
inline constexpr std::string_view kAclReasonCommand =
    "no permission to execute the command or subcommand";
inline constexpr std::string_view kAclReasonKey = "no permission to touch the specified keys";
inline constexpr std::string_view kValueMustBePositive =
    "ERR value is out of range, must be positive";
inline constexpr std::string_view kAclReasonChannel =
    "no permission to access one of the channels used as arguments";
inline constexpr std::string_view kNoPermissionChannel =
    "NOPERM No permissions to access a channel";

// CLUSTER COUNTKEYSINSLOT / GETKEYSINSLOT (Redis 7.0 cluster.c).
inline constexpr std::string_view kSlotKeysInvalidSlot = "ERR Invalid slot";
inline constexpr std::string_view kSlotKeysInvalidSlotOrCount =
    "ERR Invalid slot or number of keys";

// MIGRATE (Redis 7.0 cluster.c migrateCommand).
inline constexpr std::string_view kMigrateKeysNeedEmptyKey =
    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string";
inline constexpr std::string_view kMigrateConnectFailed =
    "IOERR error or timeout connecting to the client";
inline constexpr std::string_view kMigrateWriteFailed =
    "IOERR error or timeout writing to target instance";
inline constexpr std::string_view kMigrateReadFailed =
    "IOERR error or timeout reading to target instance";
// `error` is the target's error line without its '-'.
inline std::string MigrateTargetError(std::string_view error) {
  return "ERR Target instance replied with error: " + std::string(error);
}
// Ours: RESTORE takes a payload as one argument, which Redis caps at 512 MiB.
inline std::string MigratePayloadTooLarge(std::string_view key, uint64_t bytes) {
  return "ERR MIGRATE refused: the DUMP payload of key '" + std::string(key.substr(0, 128)) +
         "' is " + std::to_string(bytes) +
         " bytes, over the 512 MiB a RESTORE argument may have (proto-max-bulk-len), and the "
         "target is not a Bloomgate server, which takes it in chunks (RESTORE-CHUNK); "
         "nothing was sent";
}
// RESTORE-CHUNK key offset chunk [COMMIT ttl [REPLACE]] (ours: MIGRATE's
// chunked form of RESTORE-ASKING).
inline constexpr std::string_view kRestoreChunkTooLarge =
    "ERR RESTORE-CHUNK chunk is over 64 MiB";
inline std::string RestoreChunkOutOfOrder(uint64_t offset, uint64_t expected) {
  return "ERR RESTORE-CHUNK out of order: offset " + std::to_string(offset) + ", expected " +
         std::to_string(expected) + " (0 starts a payload); nothing was staged";
}
inline constexpr std::string_view kRestoreChunkInMulti =
    "ERR RESTORE-CHUNK is not allowed in MULTI";
inline constexpr std::string_view kRestoreChunkNothingStaged =
    "ERR RESTORE-CHUNK no payload staged for this key on this connection: "
    "send its first chunk at offset 0";
inline std::string RestoreChunkIncomplete(uint64_t staged) {
  return "ERR RESTORE-CHUNK COMMIT before the payload's last byte (" + std::to_string(staged) +
         " bytes staged); nothing was created";
}

inline constexpr std::string_view kDebugNotAllowed =
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
    "you can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.";

// --- Redis Cluster: Redis 7.0's cluster.c texts ---
// REPLICAOF / SLAVEOF on a cluster node: its master is chosen with CLUSTER
// REPLICATE, which the bus spreads (Redis 7.0's text).
inline constexpr std::string_view kReplicaOfInClusterMode =
    "ERR REPLICAOF not allowed in cluster mode.";
inline constexpr std::string_view kClusterDisabled =
    "ERR This instance has cluster support disabled";
inline constexpr std::string_view kInvalidSlot = "ERR Invalid or out of range slot";
inline constexpr std::string_view kFlushSlotsNotEmpty =
    "ERR DB must be empty to perform CLUSTER FLUSHSLOTS.";
inline constexpr std::string_view kSetSlotOnlyMasters =
    "ERR Please use SETSLOT only with masters.";
inline constexpr std::string_view kTargetNotMaster = "ERR Target node is not a master";
inline constexpr std::string_view kInvalidSetSlot =
    "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP";
inline constexpr std::string_view kConfigEpochOtherNodes =
    "ERR The user can assign a config epoch only when the node does not know any other node.";
inline constexpr std::string_view kConfigEpochNonZero = "ERR Node config epoch is already non-zero";
inline constexpr std::string_view kResetWithKeys =
    "ERR CLUSTER RESET can't be called with master nodes containing keys";
inline constexpr std::string_view kCrossSlot =
    "CROSSSLOT Keys in request don't hash to the same slot";
inline constexpr std::string_view kTryAgain =
    "TRYAGAIN Multiple keys request during rehashing of slot";
inline constexpr std::string_view kClusterDown = "CLUSTERDOWN The cluster is down";
inline constexpr std::string_view kSlotNotServed = "CLUSTERDOWN Hash slot not served";
// cluster-allow-reads-when-down: a write while the cluster is down.
inline constexpr std::string_view kClusterDownReadOnly =
    "CLUSTERDOWN The cluster is down and only accepts read commands";
// CLUSTER FAILOVER (Redis 7.0's texts).
inline constexpr std::string_view kFailoverOnMaster =
    "ERR You should send CLUSTER FAILOVER to a replica";
inline constexpr std::string_view kFailoverMasterUnknown =
    "ERR I'm a replica but my master is unknown to me";
inline constexpr std::string_view kFailoverMasterDown =
    "ERR Master is down or failed, please use CLUSTER FAILOVER FORCE";
inline std::string SlotAlreadyUnassigned(int slot) {
  return "ERR Slot " + std::to_string(slot) + " is already unassigned";
}
inline std::string SlotBusy(int slot) {
  return "ERR Slot " + std::to_string(slot) + " is already busy";
}
inline std::string SlotSpecifiedTwice(int slot) {
  return "ERR Slot " + std::to_string(slot) + " specified multiple times";
}
inline std::string StartSlotAfterEnd(int start, int end) {
  return "ERR start slot number " + std::to_string(start) + " is greater than end slot number " +
         std::to_string(end);
}
inline std::string NotSlotOwner(int slot) {
  return "ERR I'm not the owner of hash slot " + std::to_string(slot);
}
inline std::string AlreadySlotOwner(int slot) {
  return "ERR I'm already the owner of hash slot " + std::to_string(slot);
}
// Ours: Redis 7.0 takes SETSLOT MIGRATING/IMPORTING naming the node itself,
// an open slot that sends its clients back to it with -ASK; nodes.conf
// refuses one at load, so the command refuses to make it.
inline std::string SlotMigratingToMyself(int slot) {
  return "ERR I can't migrate hash slot " + std::to_string(slot) + " to myself";
}
inline std::string SlotImportingFromMyself(int slot) {
  return "ERR I can't import hash slot " + std::to_string(slot) + " from myself";
}
inline std::string DontKnowNode(std::string_view id) {
  return "ERR I don't know about node " + std::string(id.substr(0, 128));
}
inline std::string UnknownNode(std::string_view id) {
  return "ERR Unknown node " + std::string(id.substr(0, 128));
}
inline std::string SlotStillHasKeys(int slot) {
  return "ERR Can't assign hashslot " + std::to_string(slot) +
         " to a different node while I still hold keys for this hash slot.";
}
inline std::string ClusterSaveConfigFailed(std::string_view why) {
  return "ERR error saving the cluster node config: " + std::string(why);
}
inline std::string InvalidConfigEpoch(std::string_view epoch) {
  return "ERR Invalid config epoch specified: " + std::string(epoch.substr(0, 64));
}
// CLUSTER MEET / FORGET (the cluster bus).
inline constexpr std::string_view kCantForgetMyself =
    "ERR I tried hard but I can't forget myself...";
inline constexpr std::string_view kCantForgetMyMaster = "ERR Can't forget my master!";
// Ours: CLUSTER MEET when the view holds its most nodes (Redis has no cap).
inline std::string TooManyClusterNodes(size_t limit) {
  return "ERR Too many known nodes: the limit is " + std::to_string(limit);
}
// CLUSTER REPLICATE / REPLICAS (Redis 7.0's texts).
inline constexpr std::string_view kCantReplicateMyself = "ERR Can't replicate myself";
inline constexpr std::string_view kCanOnlyReplicateMaster =
    "ERR I can only replicate a master, not a replica.";
inline constexpr std::string_view kReplicateNotEmpty =
    "ERR To set a master the node must be empty and without assigned slots.";
inline constexpr std::string_view kNodeNotMaster = "ERR The specified node is not a master";
// Ours: only a server started without its bus (an in-process test) says it.
inline constexpr std::string_view kClusterBusDown = "ERR The cluster bus is not running";
inline std::string InvalidTcpBasePort(std::string_view port) {
  return "ERR Invalid TCP base port specified: " + std::string(port.substr(0, 64));
}
inline std::string InvalidTcpBusPort(std::string_view port) {
  return "ERR Invalid TCP bus port specified: " + std::string(port.substr(0, 64));
}
inline std::string InvalidNodeAddress(std::string_view ip, std::string_view port) {
  return "ERR Invalid node address specified: " + std::string(ip.substr(0, 128)) + ":" +
         std::string(port.substr(0, 64));
}
// -MOVED / -ASK <slot> <ip>:<port>.
inline std::string ClusterRedirect(bool ask, int slot, std::string_view ip, int port) {
  return std::string(ask ? "ASK " : "MOVED ") + std::to_string(slot) + " " + std::string(ip) +
         ":" + std::to_string(port);
}

// `command` is the row's full name ("bf.reserve", "client|list").
inline std::string NoPermissionCommand(std::string_view user, std::string_view command) {
  return "NOPERM User " + std::string(user) + " has no permissions to run the '" +
         std::string(command) + "' command";
}
inline std::string UnknownAclCategory(std::string_view category) {
  return "ERR Unknown category '" + std::string(category.substr(0, 128)) + "'";
}

}  // namespace bloomgate::errors
