// The windowed Bloom filter's ops (BF.* on a filter made with WINDOW):
// creating, adding and journaling, as values like bloom_ops.h, whose
// statuses and texts they share.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/bloom/bloom_ops.h"

namespace bloomgate {

// Creates a windowed filter of `params` (window_ms != 0) whose generation 0
// starts at store.window_now_ms, and stores it as CreateBloom does.
BloomStatus CreateWindowedBloom(FilterStore& store, const KeyRef& key, const BloomParams& params,
                                bool fail_if_exists, EntryPtr* entry);

struct WindowAddResult {
  BloomStatus status = BloomStatus::kOk;  // why the adds stopped early, if they did
  MemoryRefusal refusal;                  // ... and for a memory status, its figures
  std::vector<bool> added;                // per item that went in: new to the window?
  std::vector<uint64_t> generations;      // where each went
  std::vector<bool> added_to_generation;  // whether it flipped a bit there
};

// Adds items in order at `now_ms` on the window clock, stopping at the first
// failure (a fresh generation or a new layer refused by the limits).
WindowAddResult AddWindowedItems(KeyEntry& entry, std::span<const std::string_view> items,
                                 int64_t now_ms);

// The journal's record of those adds (server/durability/journal.h,
// kWindowAddedEffect): the key, one flag byte per item, then each item's
// generation and the item. *storage is what `effect` points into. Nothing
// when no item went in.
void WindowAddedEffect(std::string_view key, std::span<const std::string_view> items,
                       const WindowAddResult& result, std::string* storage,
                       std::vector<std::string_view>* effect);

// The flag byte of one add: '0' + 1 (new to the window) + 2 (flipped a bit
// in its generation); and back. False for a byte outside '0'..'3'.
char WindowAddFlag(bool new_to_window, bool added_to_generation);
bool ParseWindowAddFlag(char flag, bool* new_to_window, bool* added_to_generation);

}  // namespace bloomgate
