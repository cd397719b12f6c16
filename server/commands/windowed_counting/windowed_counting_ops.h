// The windowed counting Bloom filter's ops (CBF.* on a filter made with
// WINDOW): creating, adding, deleting and journaling, as values like
// counting_bloom_ops.h, whose statuses and texts they share.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/bloom/bloom_ops.h"

namespace bloomgate {

// Creates a windowed counting filter of `params` (window_ms != 0) whose
// generation 0 starts at store.window_now_ms, and stores it as
// CreateCounting does.
BloomStatus CreateWindowedCounting(FilterStore& store, const KeyRef& key,
                                   const BloomParams& params, bool fail_if_exists,
                                   EntryPtr* entry);

// What adds or deletes did, item by item in order, for the reply and the
// journal. An add stops at the first failure (a fresh generation or a new
// layer refused by the limits).
struct WindowCountResult {
  BloomStatus status = BloomStatus::kOk;  // why the adds stopped early, if they did
  MemoryRefusal refusal;                  // ... and for a memory status, its figures
  std::vector<bool> done;                 // add: new to the window; delete: removed
  std::vector<uint64_t> counts;           // add: the window count after it (CBF.INCR)
  std::vector<uint64_t> generations;      // where each add or removal went
};

WindowCountResult AddWindowedCountingItems(KeyEntry& entry, std::span<const std::string_view> items,
                                           int64_t now_ms);
WindowCountResult DeleteWindowedCountingItems(KeyEntry& entry,
                                              std::span<const std::string_view> items,
                                              int64_t now_ms);

// The journal's record of those (server/durability/journal.h,
// kWindowCountEffect): the key, one op byte per item that took effect ('+'
// an add, '-' a removal), then each one's generation and item. `deleted`
// says which `result` holds; a delete that found nothing is left out.
// Nothing when nothing took effect. *storage is what `effect` points into.
void WindowCountEffect(std::string_view key, std::span<const std::string_view> items,
                       const WindowCountResult& result, bool deleted, std::string* storage,
                       std::vector<std::string_view>* effect);

}  // namespace bloomgate
