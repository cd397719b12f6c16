// A result built off the event loop from other keys' filters, read where
// they are: a merge's new dest (BF.MERGE, CBF.MERGE), a sketch's merged
// cells (CMS.MERGE). Inline such builds stalled their loop for seconds
// (BF.MERGE of big sources into a new key 5.2 s, CMS.MERGE of a huge sketch
// 7 s).
//
// The command's first run holds each source (EntryReadHold, under the
// command's exclusive locks): its writers park, as for a snapshot copy being
// made, until the filter maker has read it, and nothing is copied. The
// second run takes the result only if every source is still the entry that
// was read, unchanged (KeyEntry::version): a write that ran between the read
// and the second run is journaled before this command, so a replay would
// read the written source; then the result is built again (as COPY copies
// again, server/commands/keys/key_copy_commands.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "server/commands/command_context.h"
#include "server/keyspace/keyspace.h"

namespace bloomgate {

// What the maker built, and each source it read with that source's version
// when the read was held.
template <typename Result>
struct BuiltFromSources {
  Result result;
  std::vector<std::pair<EntryPtr, uint64_t>> read;
};

// `entries` without repeats (a key named twice is read once), in order, and
// in *smallest the least MemoryUsage among them: what to pass as `bytes`
// below, so that every source read off the loop is big enough that its
// writers park for the read instead of waiting on their loop.
inline std::vector<EntryPtr> DistinctSources(const std::vector<EntryPtr>& entries,
                                             uint64_t* smallest) {
  std::vector<EntryPtr> distinct;
  *smallest = UINT64_MAX;
  for (const EntryPtr& entry : entries) {
    if (std::find(distinct.begin(), distinct.end(), entry) != distinct.end()) continue;
    distinct.push_back(entry);
    *smallest = std::min(*smallest, entry->MemoryUsage());
  }
  return distinct;
}

// Builds `build()` (a Result; it may read `sources`' filters, and must own
// everything else it reads) on the filter maker's thread, about `bytes` big,
// into *out. False when the command parked; its next run calls this again
// with the sources it finds then. Every source should be at least
// SnapshotCopier::kInlineCopyBytes, so its writers park on the copier's
// thread rather than wait on their loop: pass the smallest as `bytes`.
template <typename Result, typename Build>
bool BuildFromSourcesOffLoop(CommandContext& ctx, uint64_t bytes,
                             const std::vector<EntryPtr>& sources, const Build& build,
                             Result* out) {
  for (;;) {
    std::vector<std::pair<EntryPtr, uint64_t>> read;
    std::vector<EntryReadHold> holds;
    if (!ctx.HasMadeFilter()) {
      for (const EntryPtr& source : sources) {
        read.emplace_back(source, source->version());
        holds.emplace_back(source);
      }
    }
    auto job = [build, read = std::move(read), holds = std::move(holds)](
                   std::unique_ptr<BuiltFromSources<Result>>* done, MemoryRefusal*) mutable {
      auto built = std::make_unique<BuiltFromSources<Result>>();
      built->result = build();
      holds.clear();  // the sources' writers go on
      built->read = std::move(read);
      *done = std::move(built);
      return FilterStatus::kOk;
    };
    FilterStatus status = FilterStatus::kOk;
    MemoryRefusal refusal;
    std::unique_ptr<BuiltFromSources<Result>> made;
    if (!ctx.MakeFilter(bytes, std::move(job), &status, &made, &refusal)) return false;
    bool unchanged = made->read.size() == sources.size();
    for (size_t i = 0; unchanged && i < sources.size(); ++i) {
      unchanged = made->read[i].first == sources[i] &&
                  made->read[i].second == sources[i]->version();
    }
    if (unchanged) {
      *out = std::move(made->result);
      return true;
    }
    ctx.server.lazy_freer.Free(std::shared_ptr<BuiltFromSources<Result>>(std::move(made)));
  }
}

}  // namespace bloomgate
