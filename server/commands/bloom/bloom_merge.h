// BF.MERGE's op: the union of Bloom filters that hash alike and have the
// same layers, as a value (bloom_commands.cc parses and replies).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "server/commands/bloom/bloom_ops.h"
#include "server/commands/family_shared/filter_lookup.h"

namespace bloomgate {

struct CommandContext;

// How one input differs from the merge's reference: "<key> has <what>
// <value>, <reference> has <reference_value>" once MergeFailureText words it
// ("src2 has 3 layers, dest has 2"; `what` empty when the value says it).
struct MergeDifference {
  std::string key;
  std::string what;
  std::string value;
  std::string reference;
  std::string reference_value;
  // Windowed filters: the generations at this offset back from the current
  // one differ; unset when the filters themselves do.
  std::optional<uint32_t> generation_back;
};

struct MergeResult {
  BloomStatus status = BloomStatus::kOk;
  // kMergeMismatch: the first difference found. kMergeUnsupported: `key`
  // and, in `value`, what kind of filter it is.
  MergeDifference difference;
  // A windowed merge journaled its result itself (the whole dest, with its
  // bits: its generations came from the clock, which replay must not ask);
  // the command is then not journaled.
  bool journaled = false;
  // The merge waits for its new dest to be built off the loop: the command
  // parked (CommandContext::MakeFilter) and changed nothing yet.
  bool parked = false;
};

// BF.MERGE dest src [src ...]: ORs every layer of each source into `dest`,
// which keeps what it held (as PFMERGE: dest may be one of the sources, and
// is then merged with itself, a no-op). A missing dest is created first
// with the first source's parameters and layer shapes (and seed), charged
// to maxmemory. Refused, with nothing changed: a missing source (kNotFound),
// a key of another family (kWrongType), a filter in RedisBloom's layout
// (kMergeUnsupported), a windowed filter among plain ones or a plain one
// among windowed ones, and any source that differs from the reference (dest
// if it exists, else the first source) in error rate, capacity, expansion,
// seed, number of layers or a layer's bits and probes (kMergeMismatch; the
// difference names the first one).
//
// Items: each layer's count becomes the union's estimate from its bits,
// n = -(m/k) ln(1 - X/m) for X of m bits set with k probes, clamped to
// [the largest count of any input, the sum of them]: duplicates across the
// shards count once (what the sum would overstate), and the count never
// falls below what one input already reported. The estimate depends only on
// the bits, so a replay of the logged command reproduces it exactly.
//
// Windowed filters (the reference, dest if it exists else the first source,
// decides) merge generation by generation: every input windowed, with the
// same error rate, capacity, expansion, window, generations and seed, and
// its current generation starting at the same instant on the window clock
// (aligned boundaries), else kMergeMismatch naming the first difference.
// The generations at each offset back from the current one merge as plain
// filters (same layer shapes, else the mismatch names the offset); one the
// dest lacks is made empty first. A missing dest is a copy of the first
// source. The result is journaled whole (MergeResult::journaled), so a
// result that may not fit one log record is refused (kTooLargeToLog).
//
// A dest that does not exist yet is built off the event loop when `ctx` is
// given and the build is big (CommandContext::WouldPark): the command parks
// (MergeResult::parked) while the filter maker creates the dest and merges
// the sources into it, reading them in place (EntryReadHold: their writers
// wait meanwhile, nothing is copied); the second run publishes it if every
// source is still the entry it read, unchanged, else merges again. Its
// creation record describes the dest as created, empty, as an inline
// merge's does. Inline, creating a 1 GB dest and ORing its sources into it
// stalled the loop 5.2 s (BF) and 2.4 s (CBF).
//
// The caller holds every key exclusively (the command's row lists them all).
MergeResult MergeBloom(FilterStore& store, const KeyRef& dest, std::span<const KeyRef> sources,
                       CommandContext* ctx = nullptr);

// CBF.MERGE dest src [src ...]: the same rules (and the counter width must
// match too), but counters add, saturating at the width's maximum (15 or
// 255), and item counts add: the multiset union, so an item added twice to
// one shard and once to another has CBF.COUNT >= 3 after. Each distinct
// filter counts once: dest named as a source, or a source named twice, is
// not added to itself.
MergeResult MergeCounting(FilterStore& store, const KeyRef& dest,
                          std::span<const KeyRef> sources, CommandContext* ctx = nullptr);

// The client's text for a failed merge by `command` ("BF.MERGE"): the
// difference or the unsupported input in errors.h's wording, else
// BloomStatusText.
std::string MergeFailureText(std::string_view command, const MergeResult& result);

}  // namespace bloomgate
