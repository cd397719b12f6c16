// LayerChain<Traits>: the growing list of layers behind every scalable filter
// (ScalableBloomFilter, CountingBloomFilter; the windowed filters next). It
// owns the layers, the growth rule, the memory accounting and the lock-free
// publication of the list; the filter on top owns what an item does to a
// layer (set bits, bump counters) and which layer it picks.
//
// THE CONTRACT
//
// Layers. Each layer is a blocked array of `block_cells` cells per 64-byte
// block (512 one-bit cells for Bloom, 128 4-bit or 64 8-bit counters), sized
// by ChooseBlockedShape, with its own capacity, error rate and item count.
// Layers are only ever appended, never moved, changed in shape or freed
// before the chain: a Layer& stays valid for the chain's lifetime.
//
// Growth (RedisBloom's sb.c rule). Layer 0 gets what Start() is given (a
// scaling filter asks for error_rate x 0.5, so the sum over all layers,
// error_rate x (1/2 + 1/4 + ...), stays below error_rate). Layer n+1 gets
// layer n's capacity x expansion (saturating at UINT64_MAX, which sizes to an
// absurd shape: kFilterMemoryLimit, never a wrap to a small capacity) and its
// error rate x the chain's tightening ratio (kErrorTighteningRatio, 0.5,
// unless the filter was made with another: valkey-bloom's TIGHTENING). At
// most kMaxBloomLayers layers (kTooManyLayers); expansion 0 (NONSCALING)
// never grows (kFull); a rate that would fall to DBL_MIN or below (a tiny
// ratio, many layers) stops growth (kErrorRateUnderflow).
//
// Memory. memory_bytes() is everything the chain allocated plus the
// `owner_bytes` its filter declared at Start()/Restore() (sizeof the filter):
// per layer the cells (Traits::BytesFor), the Cells object, the item
// counter's own line from kCounterLineFromBytes of cells on, and from layer 1
// on the new list's block (the Layer's line, the List header and its `count`
// pointers). Layer 0 and the first list are inside the chain, so inside the
// owner's bytes. Every step checks the per-filter
// cap (limits.max_filter_bytes, 0 = none) against memory_bytes() + its cost
// (kFilterMemoryLimit), then reserves the cost in the shared MemoryBudget
// (may be nullptr; kOutOfMemory), and only then allocates. A failed step
// leaves the chain, the budget and memory_bytes() exactly as they were. The
// destructor gives memory_bytes() back to the budget.
//
// Items. Each layer counts its items in an atomic Count (uint64_t for a
// filter whose counts only grow, int64_t for one with deletes); a layer is
// full when that count is >= its capacity (a negative count is never full).
// The filter decides what counts as an item; the chain only sums.
//
// Concurrency. Everything except Grow() and the constructor/destructor is
// lock-free and may run from any number of threads. The published list is
// immutable: Grow() builds a new List (old layers + the new one) under the
// chain's grow stripe (filters/grow_stripes.h: 64 mutexes for all chains, so
// a chain carries no mutex of its own) and stores it with
// memory_order_release; Load() reads it with
// memory_order_acquire, so a reader that sees the new pointer sees the new
// layer and its zeroed cells. A reader may go on using a retired list after
// the swap, so retired lists are never freed early: each list owns its
// predecessor and all go with the chain (at most 64 lists, 2,080 pointers).
// Grow() of a list that is no longer the published one appends nothing and
// hands back the current list, so racing growers append one layer, not two.
//
// Restore. Restore() builds a chain of exactly the saved layers (zeroed
// cells, saved item counts), validating every LayerShape first (kInvalid-
// Options) and checking and reserving the whole memory_bytes() -- the same
// figure the original chain had -- before the first allocation.
//
// Traits supplies: `Cells` (the layer type), `Count` (the item counter's
// type), `static uint64_t BytesFor(const BlockedShape&)` and
// `static std::unique_ptr<Cells> Create(const BlockedShape&)` (nullptr on a
// failed allocation; never throws); for FirstCells::kInOwnerBlock also
// `static Cells* CreateAt(void* at, const BlockedShape&, void* words)`: the
// cells built in place at `at` over `words` (BytesFor bytes, 64-byte
// aligned, not owned), or over an array of their own when `words` is null;
// nullptr on failure, with nothing left to free.
//
// One allocation (FirstCells::kInOwnerBlock). A filter may ask for its own
// object, layer 0's cells object and (under kInlineWordsBelow bytes) layer
// 0's array to be one 64-byte aligned block: [owner | cells] rounded up to
// whole lines (OwnerBlockHeader), then the array. A small filter is then
// one heap chunk instead of three, and a lookup reads the filter's lines
// and the array right behind them. The owner is built in the block
// (Pending::TakeOwnerBlock), destroys layer 0's cells in place in its
// destructor (ReleaseFirstCells) and frees the block with the line
// alignment. memory_bytes() counts the block as it is asked for.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

#include "filters/block_words.h"
#include "filters/bloom_math.h"
#include "filters/filter_status.h"
#include "filters/grow_stripes.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "filters/memory_reservation.h"

namespace bloomgate {

// RedisBloom's ERROR_TIGHTENING_RATIO: each layer gets half the error of the
// one before, and a scaling filter's first layer half the requested rate.
constexpr double kErrorTighteningRatio = 0.5;

// A tightening ratio a filter may have: (0, 1), valkey-bloom's range. NaN: false.
constexpr bool IsTighteningRatio(double ratio) { return ratio > 0 && ratio < 1; }

// Where growth would stop, as LayerChain::ProjectGrowth reports it.
struct GrowthProjection {
  uint64_t capacity = 0;  // the total capacity reached, saturating
  // kOk: the target was reached; else what stopped growth first
  // (kFilterMemoryLimit, kTooManyLayers, kErrorRateUnderflow, kFull).
  FilterStatus stop = FilterStatus::kOk;
};

// One layer as a snapshot or a dump saves it, for Restore: its capacity,
// item count, error rate and geometry (cells in whole blocks; for a Bloom
// layer a cell is one bit). The blocks' cell count is the filter's, not the
// layer's. Count is the chain's item counter type.
template <typename Count>
struct LayerShape {
  uint64_t capacity;  // >= 1
  Count items;        // the layer's own count, as its filter saved it
  double error_rate;  // in (0, kMaxBloomErrorRate]
  uint64_t cells;     // a whole number of blocks, > 0, < MaxBlockedCells(block_cells)
  uint32_t probes;    // [1, kMaxBloomProbes]
};

// The shape of a new layer: Traits::ChooseShape if the layer type has its
// own sizing rule (RedisBloom-layout Bloom layers), else ChooseBlockedShape.
template <typename Traits>
BlockedShape ChooseLayerShape(double error_rate, uint64_t capacity, uint32_t block_cells) {
  if constexpr (requires { Traits::ChooseShape(error_rate, capacity, block_cells); }) {
    return Traits::ChooseShape(error_rate, capacity, block_cells);
  } else {
    return ChooseBlockedShape(error_rate, capacity, block_cells);
  }
}

// What a lookup needs of a layer's cells, kept inline in the Layer when the
// traits define `Probe` and `static Probe ProbeOf(Cells&)` (Bloom layers:
// their bit array, block count and probes), so a lookup over L layers reads
// L inline records instead of following cells -> inner object -> array in
// each. Otherwise an empty member that takes no room.
struct NoLayerProbe {};
template <typename Traits>
struct LayerProbeOf {
  using type = NoLayerProbe;
};
template <typename Traits>
  requires requires { typename Traits::Probe; }
struct LayerProbeOf<Traits> {
  using type = typename Traits::Probe;
};

template <typename Traits>
class LayerChain {
 public:
  using Cells = typename Traits::Cells;
  using Count = typename Traits::Count;
  using Shape = LayerShape<Count>;
  using Probe = typename LayerProbeOf<Traits>::type;

  // From this many bytes of cells (Traits::BytesFor) on, a layer's item
  // counter gets a cache line of its own, right behind the Layer in the same
  // allocation: every new item bumps it while every lookup reads the Layer,
  // and on one line the two would bounce between cores. Below it the counter
  // shares the Layer's line: in a Bloom filter only the newest layer's
  // counter is written, about `capacity` times before the next layer takes
  // over, so a small layer's bounces are bounded and brief (a counting
  // filter's deletes also write older, small layers' counters: those lines
  // bounce under concurrent deletes and lookups of one small filter), while
  // the spare line would be 64 of a small filter's 729 bytes. 4 KiB of
  // cells is ~2,800 items at 1%; there the extra line is at
  // most 1.6% of the layer.
  static constexpr uint64_t kCounterLineFromBytes = 4096;
  static constexpr uint64_t kCounterLineBytes = 64;
  static bool HasCounterLine(const BlockedShape& shape) {
    return Traits::BytesFor(shape) >= kCounterLineFromBytes;
  }

  // What a lookup reads (cells, the inline probe) and, for a small layer, its
  // item counter (see kCounterLineFromBytes): at most one line. Layer 0
  // lives inside the chain (so inside its filter object), every later one
  // at the start of its list's 64-byte aligned block (Append).
  struct Layer {
    std::unique_ptr<Cells> cells;
    uint64_t capacity;
    double error_rate;
    // Set once when the layer is built, before it is published (see
    // LayerProbeOf).
    [[no_unique_address]] Probe probe{};

    Count item_count() const {
      // Relaxed: a statistic and a fill level; it guards no data (the cells
      // are reached through the list's acquire load, not through this).
      return items_->load(std::memory_order_relaxed);
    }
    void CountItems(Count delta) {
      // Relaxed: a count published through nothing; RMWs on one atomic are
      // never lost whatever the order, so the sum stays exact.
      items_->fetch_add(delta, std::memory_order_relaxed);
    }
    // A loader's saved count, or BF.MERGE's; relaxed as item_count.
    void SetItemCount(Count items) { items_->store(items, std::memory_order_relaxed); }
    // Relaxed read (see item_count): racing adders may each see "room" and
    // overshoot the capacity by one item apiece.
    // `pending`: items a batch has put in but not counted yet (see
    // ScalableBloomFilter::AddBatch), so its own fill level stays exact.
    bool HasRoom(Count pending = 0) const {
      const Count n = item_count() + pending;
      if constexpr (std::is_signed_v<Count>) {
        if (n < 0) return true;
      }
      return static_cast<uint64_t>(n) < capacity;
    }

   private:
    friend class LayerChain;
    Layer(std::unique_ptr<Cells> layer_cells, uint64_t layer_capacity, double layer_error_rate)
        : cells(std::move(layer_cells)), capacity(layer_capacity), error_rate(layer_error_rate) {}

    // The counter: own_items_, or a line of its own (the line behind the
    // Layer in its list's block; for layer 0, a separate line). Set
    // before the layer is published; the pointer sits on the line the add
    // reads anyway, so it costs an L1 hit, not a miss.
    std::atomic<Count>* items_ = &own_items_;
    std::atomic<Count> own_items_{0};
  };
  // memory_bytes() (BF.INFO Size) counts a whole line for a Layer in a list
  // block, plus the counter line where there is one (LayerCost).
  static constexpr uint64_t kLayerLineBytes = 64;
  static_assert(sizeof(Layer) <= kLayerLineBytes, "a Layer fits one cache line");
  static_assert(std::is_trivially_destructible_v<std::atomic<Count>>);

  // An immutable snapshot of the layers, oldest first. The first list (one
  // layer) lives inside the chain; every later one is one 64-byte aligned
  // block: the layer it appended (a line, plus its counter line where there
  // is one), this header, then the `count_` layer pointers (Append).
  class List {
   public:
    uint32_t size() const { return count_; }
    Layer& operator[](uint32_t index) const { return *layers_[index]; }
    Layer& newest() const { return *layers_[count_ - 1]; }

   private:
    friend class LayerChain;
    // The list this one replaced: owned (freed with it) unless it is the
    // chain's first list. Null only in a Pending's oldest block list until
    // the chain links it to its first list.
    List* previous_ = nullptr;
    Layer** layers_ = nullptr;  // all `count_` layers, oldest first
    uint32_t count_ = 0;
  };

  // A first list, built and paid for, that no chain owns yet: what Start()
  // and Restore() hand to the filter's constructor. Destroyed unused, it
  // gives its bytes back to the budget.
  class Pending {
   public:
    Pending() = default;
    Pending(const Pending&) = delete;
    Pending& operator=(const Pending&) = delete;
    ~Pending() { Reset(); }

   private:
    friend class LayerChain;
    // Takes the `bytes` already reserved for what this holds in `budget`.
    void Hold(MemoryBudget* budget, uint64_t bytes, uint32_t block_cells) {
      held_ = true;
      budget_ = budget;
      bytes_ = bytes;
      block_cells_ = block_cells;
    }
    // Frees whatever is built and gives back what is held.
    void Reset() {
      DeleteLists(std::exchange(newest_, nullptr), /*stop=*/nullptr);
      FreeCounterLine(std::exchange(first_counter_, nullptr));
      first_cells_.reset();
      if (Cells* cells = std::exchange(first_in_block_, nullptr)) cells->~Cells();
      if (void* block = std::exchange(owner_block_, nullptr)) {
        ::operator delete(block, kLineAlignment);
      }
      if (held_ && budget_ != nullptr) budget_->Release(bytes_);
      held_ = false;
    }

   public:
    // kInOwnerBlock: the block the owner is to be built in (at its start,
    // then handed this Pending); from here on the owner frees it. Null
    // otherwise.
    void* TakeOwnerBlock() { return std::exchange(owner_block_, nullptr); }

   private:
    // Layer 0, which the chain builds inside itself: its cells on their own
    // (kOwnAllocation) or in the owner's block (kInOwnerBlock).
    std::unique_ptr<Cells> first_cells_;
    Cells* first_in_block_ = nullptr;
    void* owner_block_ = nullptr;
    uint64_t first_capacity_ = 0;
    double first_error_rate_ = 0;
    Count first_items_ = 0;
    std::atomic<Count>* first_counter_ = nullptr;  // its own line, or null
    // Restore's layers 1.., newest first, each a list block whose slot 0 and
    // (in the oldest) previous_ the chain fills with its first layer and list.
    List* newest_ = nullptr;
    bool held_ = false;
    MemoryBudget* budget_ = nullptr;
    uint64_t bytes_ = 0;
    uint32_t block_cells_ = 0;
  };

  // Where layer 0's cells are allocated (see "One allocation" above).
  enum class FirstCells : uint8_t { kOwnAllocation, kInOwnerBlock };
  // Arrays of at least this many bytes stay out of the owner's block: from
  // there internal::NewZeroedBlockWords maps fresh (and huge) pages instead
  // of writing every byte of a heap chunk.
  static constexpr uint64_t kInlineWordsBelow = internal::kMappedBlockWordsBytes;
  // The owner's object and layer 0's cells object, in whole lines.
  static constexpr uint64_t OwnerBlockHeader(uint64_t owner_bytes) {
    return (owner_bytes + sizeof(Cells) + kLayerLineBytes - 1) / kLayerLineBytes * kLayerLineBytes;
  }
  // What memory_bytes() counts for the owner itself: with kInOwnerBlock its
  // share of the block's header (the line padding included).
  static constexpr uint64_t AccountedOwnerBytes(uint64_t owner_bytes, FirstCells place) {
    return place == FirstCells::kInOwnerBlock ? OwnerBlockHeader(owner_bytes) - sizeof(Cells)
                                              : owner_bytes;
  }

  // A one-layer chain of `capacity` items at `error_rate`, in blocks of
  // `block_cells` cells. Statuses: kFilterMemoryLimit (a layer too large to
  // exist, or owner_bytes + its cost over limits.max_filter_bytes),
  // kOutOfMemory (budget or allocation); on failure *out holds nothing and
  // nothing stays reserved. A memory refusal is described in *refusal when
  // given (filters/memory_refusal.h).
  static FilterStatus Start(uint64_t capacity, double error_rate, uint32_t block_cells,
                            uint64_t owner_bytes, const FilterLimits& limits, MemoryBudget* budget,
                            Pending* out, MemoryRefusal* refusal = nullptr,
                            FirstCells place = FirstCells::kOwnAllocation);

  // A chain of exactly `layers` (oldest first, zeroed cells, the saved item
  // counts). kInvalidOptions unless: expansion <= kMaxBloomExpansion;
  // 1..kMaxBloomLayers layers, exactly one when expansion is 0; each layer
  // within LayerShape's ranges for `block_cells`. Then the whole
  // memory_bytes() is checked (kFilterMemoryLimit) and reserved
  // (kOutOfMemory) before anything is allocated.
  static FilterStatus Restore(std::span<const Shape> layers, uint32_t expansion,
                              uint32_t block_cells, uint64_t owner_bytes,
                              const FilterLimits& limits, MemoryBudget* budget, Pending* out,
                              FirstCells place = FirstCells::kOwnAllocation);

  // Layer 0's error rate for a filter asking for `error_rate`: error_rate x
  // the tightening ratio when scaling (half of it by default, see "Growth"),
  // all of it when NONSCALING (expansion 0).
  static double FirstErrorRate(double error_rate, uint32_t expansion,
                               double tightening = kErrorTighteningRatio) {
    return expansion == 0 ? error_rate : error_rate * tightening;
  }

  // The total capacity a chain would reach growing from where it stands
  // (`layers` layers, the newest of `newest_capacity` items at
  // `newest_error_rate`, `bytes` of memory_bytes() and `capacity` in all;
  // layers 0: a chain not started yet, whose first layer is
  // `newest_capacity` at `newest_error_rate` and whose owner takes `bytes`)
  // until its capacity is at least `target`, or what would stop it first:
  // the same shapes, costs and limits Grow() applies, nothing allocated.
  // valkey-bloom's VALIDATESCALETO and BF.INFO MAXSCALEDCAPACITY.
  static GrowthProjection ProjectGrowth(uint32_t layers, uint64_t newest_capacity,
                                        double newest_error_rate, uint64_t bytes,
                                        uint64_t capacity, uint32_t expansion, double tightening,
                                        uint32_t block_cells, const FilterLimits& limits,
                                        uint64_t target);
  // ProjectGrowth from this chain as it stands.
  GrowthProjection ProjectGrowth(uint64_t target) const;

  // Takes over a successful Start()/Restore() (pending is left empty) and its
  // budget. Later growth follows `expansion`, `tightening` and `limits`.
  LayerChain(Pending&& pending, uint32_t expansion, const FilterLimits& limits,
             double tightening = kErrorTighteningRatio);
  // Releases memory_bytes() back to the budget. No call may be running.
  ~LayerChain();

  LayerChain(const LayerChain&) = delete;
  LayerChain& operator=(const LayerChain&) = delete;

  // The published list. Never blocks, not even while another thread grows.
  const List& Load() const {
    // Acquire: pairs with Grow's release store, so the list and its layers
    // are fully built before the caller reads them.
    return *layers_.load(std::memory_order_acquire);
  }

  // Appends a layer if `seen` is still the published list; if another thread
  // got there first, appends nothing. *current is the published list
  // afterwards, on every status. kFull when NONSCALING; kTooManyLayers,
  // kFilterMemoryLimit, kOutOfMemory as in the contract (nothing changed),
  // described in *refusal when given.
  FilterStatus Grow(const List* seen, const List** current, MemoryRefusal* refusal = nullptr);

  // Runs insert(layer) on the newest layer of *list that has room, growing
  // first when the newest is full; *list is updated to the list it used. The
  // usual "new item" step of a scalable filter. Statuses as Grow (kFull: a
  // full NONSCALING chain); insert is not run on any status but kOk.
  template <typename Insert>
  FilterStatus InsertIntoNewest(const List** list, Insert&& insert,
                                MemoryRefusal* refusal = nullptr) {
    for (;;) {
      Layer& newest = (*list)->newest();
      if (newest.HasRoom()) {
        insert(newest);
        return FilterStatus::kOk;
      }
      // Checked before Grow, which takes the mutex: a full NONSCALING
      // filter answers every new item without locking.
      if (!scaling()) return FilterStatus::kFull;
      // Either we append a layer or another thread already did; loop to
      // re-check the (new) newest layer, which may itself be full by now.
      const FilterStatus status = Grow(*list, list, refusal);
      if (status != FilterStatus::kOk) return status;
    }
  }

  uint64_t capacity() const;  // sum of the layer capacities, saturating
  Count item_sum() const;     // sum of the layers' counts (exact once updates are quiet)
  uint32_t num_layers() const { return Load().size(); }
  uint32_t expansion() const { return expansion_; }  // 0 when NONSCALING
  bool scaling() const { return expansion_ != 0; }
  double tightening() const { return tightening_; }  // each new layer's rate x this
  uint32_t block_cells() const { return block_cells_; }
  const FilterLimits& limits() const { return limits_; }
  uint64_t memory_bytes() const {
    // Relaxed: a statistic; Grow stores it before the release store of the
    // list, so it never lags behind a layer a caller could have seen.
    return memory_bytes_.load(std::memory_order_relaxed);
  }

  // kInOwnerBlock: layer 0's cells, given up for the owner to destroy in
  // place (in its destructor; the chain then never touches them again).
  Cells* ReleaseFirstCells() { return first_layer_.cells.release(); }
  // Frees an owner block (Pending::TakeOwnerBlock) once its owner is gone.
  static void FreeOwnerBlock(void* block) { ::operator delete(block, kLineAlignment); }

 private:
  // What appending a layer of `shape` as layer number `count` (1-based) adds
  // to memory_bytes(); < 2^62 for any shape below MaxBlockedCells and count
  // <= kMaxBloomLayers.
  // Layer 0 and the first list are part of the chain, so of the owner's
  // bytes: of layer 0 only its cells and its counter line are extra.
  static uint64_t LayerCost(const BlockedShape& shape, uint32_t count) {
    const bool counter_line = HasCounterLine(shape);
    if (count == 1) {
      return Traits::BytesFor(shape) + sizeof(Cells) + (counter_line ? kCounterLineBytes : 0);
    }
    return Traits::BytesFor(shape) + sizeof(Cells) + ListBlockBytes(count, counter_line);
  }
  // The block of a list of `count` layers (count >= 2): see List.
  static uint64_t ListBlockBytes(uint32_t count, bool counter_line) {
    return kLayerLineBytes + (counter_line ? kCounterLineBytes : 0) + sizeof(List) +
           uint64_t{count} * sizeof(Layer*);
  }
  static constexpr std::align_val_t kLineAlignment{64};
  // A zeroed item counter on a 64-byte line of its own; nullptr if the
  // allocation fails. FreeCounterLine(nullptr) does nothing.
  static std::atomic<Count>* NewCounterLine();
  static void FreeCounterLine(std::atomic<Count>* counter);
  // Frees the block lists from `newest` down to (not including) `stop`, each
  // with the layer it appended.
  static void DeleteLists(List* newest, const List* stop);
  // Checks `bytes` more against the cap (current_bytes held already) and
  // reserves them in the budget; on failure nothing is reserved.
  static FilterStatus Reserve(uint64_t bytes, uint64_t current_bytes, const FilterLimits& limits,
                              MemoryBudget* budget, MemoryRefusal* refusal = nullptr) {
    return internal::CheckAndReserve(bytes, current_bytes, limits, budget, refusal);
  }
  // A layer too large to exist (its cell count saturated).
  static FilterStatus AbsurdShape(const FilterLimits& limits, MemoryRefusal* refusal) {
    return internal::AbsurdSize(UINT64_MAX, limits, refusal);
  }
  // A new, unpublished list: previous's layers plus one zeroed layer of
  // `shape`, which does not own `previous` yet. nullptr if an allocation
  // fails. Checks and reserves nothing.
  // `previous` null: a Pending's layer 1, whose slot 0 (layer 0) and
  // previous_ the chain fills in when it takes the Pending over.
  static List* Append(List* previous, uint32_t count, uint64_t capacity, double error_rate,
                      const BlockedShape& shape);
  // Layer 0 of a Pending: its cells (placed as `place` says, `owner_bytes`
  // the owner's object) and, for a large layer, its counter line.
  static bool BuildFirst(const BlockedShape& shape, uint64_t capacity, double error_rate,
                         FirstCells place, uint64_t owner_bytes, Pending* out);

  // See "Concurrency" above. The chain owns the published list (and through
  // it every older one); stored only under the grow stripe. 48 bytes with
  // the fields below it; the grow mutex and the next-shape cache live in the
  // chain's grow stripe (filters/grow_stripes.h), not here.
  std::atomic<const List*> layers_;
  const uint32_t expansion_;
  const uint32_t block_cells_;
  const double tightening_;
  const FilterLimits limits_;
  MemoryBudget* const budget_;
  // Written only under the grow stripe; read relaxed by memory_bytes().
  std::atomic<uint64_t> memory_bytes_;
  // Layer 0 and the one-layer list, inside the chain: a lookup in a filter
  // that never grew reads the filter object's own lines and then the cells,
  // and a small filter is one allocation (and its cells) instead of four.
  List first_list_;
  Layer* first_slot_[1];
  Layer first_layer_;
};

// ---------------------------------------------------------------- details ---

template <typename Traits>
std::atomic<typename LayerChain<Traits>::Count>* LayerChain<Traits>::NewCounterLine() {
  void* raw = ::operator new(kCounterLineBytes, kLineAlignment, std::nothrow);
  return raw == nullptr ? nullptr : new (raw) std::atomic<Count>(0);
}

template <typename Traits>
void LayerChain<Traits>::FreeCounterLine(std::atomic<Count>* counter) {
  if (counter != nullptr) ::operator delete(static_cast<void*>(counter), kLineAlignment);
}

template <typename Traits>
void LayerChain<Traits>::DeleteLists(List* newest, const List* stop) {
  while (newest != nullptr && newest != stop) {
    List* previous = newest->previous_;
    // The block starts with the layer this list appended: its newest.
    Layer* layer = &newest->newest();
    newest->~List();
    layer->~Layer();
    ::operator delete(static_cast<void*>(layer), kLineAlignment);
    newest = previous;
  }
}

template <typename Traits>
typename LayerChain<Traits>::List* LayerChain<Traits>::Append(List* previous, uint32_t count,
                                                              uint64_t capacity,
                                                              double error_rate,
                                                              const BlockedShape& shape) {
  std::unique_ptr<Cells> cells = Traits::Create(shape);
  if (cells == nullptr) return nullptr;
  const bool counter_line = HasCounterLine(shape);
  const uint64_t bytes = ListBlockBytes(count, counter_line);
  char* raw = static_cast<char*>(::operator new(bytes, kLineAlignment, std::nothrow));
  if (raw == nullptr) return nullptr;
  Layer* layer = new (raw) Layer(std::move(cells), capacity, error_rate);
  char* header = raw + kLayerLineBytes;
  if (counter_line) {
    layer->items_ = new (header) std::atomic<Count>(0);
    header += kCounterLineBytes;
  }
  if constexpr (!std::is_same_v<Probe, NoLayerProbe>) layer->probe = Traits::ProbeOf(*layer->cells);
  List* list = new (header) List;
  list->layers_ = reinterpret_cast<Layer**>(header + sizeof(List));
  static_assert(sizeof(List) % alignof(Layer*) == 0);
  if (previous != nullptr) {
    std::copy(previous->layers_, previous->layers_ + previous->count_, list->layers_);
  } else {
    list->layers_[0] = nullptr;  // layer 0, once the chain holds it
  }
  list->layers_[count - 1] = layer;
  list->count_ = count;
  list->previous_ = previous;
  return list;
}

template <typename Traits>
bool LayerChain<Traits>::BuildFirst(const BlockedShape& shape, uint64_t capacity,
                                    double error_rate, FirstCells place, uint64_t owner_bytes,
                                    Pending* out) {
  if (place == FirstCells::kOwnAllocation) {
    out->first_cells_ = Traits::Create(shape);
    if (out->first_cells_ == nullptr) return false;
  } else if constexpr (requires(void* at) { Traits::CreateAt(at, shape, at); }) {
    const uint64_t header = OwnerBlockHeader(owner_bytes);
    const uint64_t words = Traits::BytesFor(shape);
    const bool inline_words = words < kInlineWordsBelow;
    char* block = static_cast<char*>(
        ::operator new(header + (inline_words ? words : 0), kLineAlignment, std::nothrow));
    if (block == nullptr) return false;
    out->owner_block_ = block;
    out->first_in_block_ = Traits::CreateAt(block + header - sizeof(Cells), shape,
                                            inline_words ? block + header : nullptr);
    if (out->first_in_block_ == nullptr) return false;
  } else {
    return false;  // cells without CreateAt are never placed in a block
  }
  if (HasCounterLine(shape)) {
    out->first_counter_ = NewCounterLine();
    if (out->first_counter_ == nullptr) return false;
  }
  out->first_capacity_ = capacity;
  out->first_error_rate_ = error_rate;
  return true;
}

template <typename Traits>
FilterStatus LayerChain<Traits>::Start(uint64_t capacity, double error_rate, uint32_t block_cells,
                                       uint64_t owner_bytes, const FilterLimits& limits,
                                       MemoryBudget* budget, Pending* out, MemoryRefusal* refusal,
                                       FirstCells place) {
  out->Reset();
  const BlockedShape shape = ChooseLayerShape<Traits>(error_rate, capacity, block_cells);
  // A saturated shape (2^61 bytes) can never be allocated: refuse it as the
  // absurd size it is, before asking anyone for memory.
  if (shape.cells >= MaxBlockedCells(block_cells)) return AbsurdShape(limits, refusal);
  const uint64_t cost = AccountedOwnerBytes(owner_bytes, place) + LayerCost(shape, /*count=*/1);
  if (FilterStatus s = Reserve(cost, /*current_bytes=*/0, limits, budget, refusal);
      s != FilterStatus::kOk) {
    return s;
  }
  internal::PendingReservation reservation(budget, cost);
  if (!BuildFirst(shape, capacity, error_rate, place, owner_bytes, out)) {
    out->Reset();
    return internal::AllocationFailed(cost, refusal);
  }
  reservation.Keep();  // *out gives it back from here on
  out->Hold(budget, cost, block_cells);
  return FilterStatus::kOk;
}

template <typename Traits>
FilterStatus LayerChain<Traits>::Restore(std::span<const Shape> layers, uint32_t expansion,
                                         uint32_t block_cells, uint64_t owner_bytes,
                                         const FilterLimits& limits, MemoryBudget* budget,
                                         Pending* out, FirstCells place) {
  out->Reset();
  // The loader has already refused these with precise texts; here they only
  // must never produce a chain (or an allocation) from a bad description.
  if (expansion > kMaxBloomExpansion || layers.empty() || layers.size() > kMaxBloomLayers ||
      (expansion == 0 && layers.size() != 1)) {
    return FilterStatus::kInvalidOptions;
  }
  uint64_t total = AccountedOwnerBytes(owner_bytes, place);
  for (size_t i = 0; i < layers.size(); ++i) {
    const Shape& layer = layers[i];
    if (layer.capacity == 0 || !(layer.error_rate > 0 && layer.error_rate <= kMaxBloomErrorRate) ||
        layer.cells == 0 || layer.cells % block_cells != 0 ||
        layer.cells >= MaxBlockedCells(block_cells) || layer.probes < 1 ||
        layer.probes > kMaxBloomProbes) {
      return FilterStatus::kInvalidOptions;
    }
    const BlockedShape shape{layer.cells, block_cells, layer.probes, 0, 0};
    total = internal::SaturatingAdd(total, LayerCost(shape, static_cast<uint32_t>(i + 1)));
  }
  // The whole chain is checked and reserved at once, before the first
  // allocation: a description of 64 huge layers is refused up front instead
  // of after allocating the first few.
  if (FilterStatus s = Reserve(total, /*current_bytes=*/0, limits, budget);
      s != FilterStatus::kOk) {
    return s;
  }
  internal::PendingReservation reservation(budget, total);

  // Built as growth builds it (each list owns its predecessor), so the
  // structure and memory_bytes() match the original's.
  const Shape& first = layers[0];
  if (!BuildFirst(BlockedShape{first.cells, block_cells, first.probes, 0, 0}, first.capacity,
                  first.error_rate, place, owner_bytes, out)) {
    out->Reset();
    return FilterStatus::kOutOfMemory;
  }
  out->first_items_ = first.items;
  for (size_t i = 1; i < layers.size(); ++i) {
    const Shape& layer = layers[i];
    List* grown = Append(out->newest_, static_cast<uint32_t>(i + 1), layer.capacity,
                         layer.error_rate, BlockedShape{layer.cells, block_cells, layer.probes, 0, 0});
    if (grown == nullptr) {
      out->Reset();
      return FilterStatus::kOutOfMemory;
    }
    // Relaxed: the chain is not published yet.
    grown->newest().SetItemCount(layer.items);
    out->newest_ = grown;
  }
  reservation.Keep();  // *out gives it back from here on
  out->Hold(budget, total, block_cells);
  return FilterStatus::kOk;
}

template <typename Traits>
LayerChain<Traits>::LayerChain(Pending&& pending, uint32_t expansion, const FilterLimits& limits,
                               double tightening)
    : layers_(&first_list_),
      expansion_(expansion),
      block_cells_(pending.block_cells_),
      tightening_(tightening),
      limits_(limits),
      budget_(pending.budget_),
      memory_bytes_(pending.bytes_),
      first_slot_{&first_layer_},
      first_layer_(pending.first_in_block_ != nullptr
                       ? std::unique_ptr<Cells>(std::exchange(pending.first_in_block_, nullptr))
                       : std::move(pending.first_cells_),
                   pending.first_capacity_, pending.first_error_rate_) {
  if (pending.first_counter_ != nullptr) first_layer_.items_ = std::exchange(pending.first_counter_, nullptr);
  first_layer_.SetItemCount(pending.first_items_);
  if constexpr (!std::is_same_v<Probe, NoLayerProbe>) {
    first_layer_.probe = Traits::ProbeOf(*first_layer_.cells);
  }
  first_list_.layers_ = first_slot_;
  first_list_.count_ = 1;
  // Restore's later layers: point them at layer 0 and the first list.
  List* newest = std::exchange(pending.newest_, nullptr);
  for (List* list = newest; list != nullptr; list = list->previous_) {
    list->layers_[0] = &first_layer_;
    if (list->previous_ == nullptr) {
      list->previous_ = &first_list_;
      break;
    }
  }
  pending.held_ = false;  // the chain gives the bytes back from here on
  // Relaxed: the chain is not published yet (its owner publishes it).
  if (newest != nullptr) layers_.store(newest, std::memory_order_relaxed);
}

template <typename Traits>
LayerChain<Traits>::~LayerChain() {
  // Relaxed: no call may be running, so there is nothing left to order with.
  DeleteLists(const_cast<List*>(layers_.load(std::memory_order_relaxed)), &first_list_);
  if (first_layer_.items_ != &first_layer_.own_items_) FreeCounterLine(first_layer_.items_);
  if (budget_ != nullptr) budget_->Release(memory_bytes_.load(std::memory_order_relaxed));
}

template <typename Traits>
FilterStatus LayerChain<Traits>::Grow(const List* seen, const List** current,
                                      MemoryRefusal* refusal) {
  internal::GrowStripe& stripe = internal::GrowStripeFor(this);
  std::lock_guard<std::mutex> lock(stripe.mutex());
  // Relaxed: layers_ is only stored with this stripe held, which we hold
  // now, so the mutex already orders this load after the last store.
  const List* list = layers_.load(std::memory_order_relaxed);
  *current = list;
  if (list != seen) return FilterStatus::kOk;  // someone else grew it first
  if (!scaling()) return FilterStatus::kFull;
  if (list->count_ >= kMaxBloomLayers) return FilterStatus::kTooManyLayers;

  const Layer& last = list->newest();
  const uint64_t capacity = internal::SaturatingMul(last.capacity, expansion_);
  const double error_rate = last.error_rate * tightening_;
  if (!(error_rate > kMinLayerErrorRate)) return FilterStatus::kErrorRateUnderflow;
  // From the stripe's memo when this chain (or one alike) asked last: a
  // chain stuck at a memory limit retries growth on every new item.
  const BlockedShape next_shape =
      stripe.Shape(&ChooseLayerShape<Traits>, error_rate, capacity, block_cells_);
  if (next_shape.cells >= MaxBlockedCells(block_cells_)) return AbsurdShape(limits_, refusal);
  const uint64_t cost = LayerCost(next_shape, list->count_ + 1);
  // Relaxed: only this thread (holding the mutex) writes memory_bytes_.
  const uint64_t bytes = memory_bytes_.load(std::memory_order_relaxed);
  if (FilterStatus s = Reserve(cost, bytes, limits_, budget_, refusal); s != FilterStatus::kOk) {
    return s;
  }
  internal::PendingReservation reservation(budget_, cost);
  // The new list owns the one it replaces (unless that is the first list).
  List* published =
      Append(const_cast<List*>(list), list->count_ + 1, capacity, error_rate, next_shape);
  if (published == nullptr) return internal::AllocationFailed(cost, refusal);
  reservation.Keep();

  // Relaxed: a statistic for INFO; the budget was already charged.
  memory_bytes_.store(bytes + cost, std::memory_order_relaxed);
  // Release: publishes the new list, its new layer and that layer's zeroed
  // cells to every reader whose acquire load sees this pointer.
  layers_.store(published, std::memory_order_release);
  *current = published;
  return FilterStatus::kOk;
}

template <typename Traits>
GrowthProjection LayerChain<Traits>::ProjectGrowth(uint32_t layers, uint64_t newest_capacity,
                                                   double newest_error_rate, uint64_t bytes,
                                                   uint64_t capacity, uint32_t expansion,
                                                   double tightening, uint32_t block_cells,
                                                   const FilterLimits& limits, uint64_t target) {
  GrowthProjection projection{capacity, FilterStatus::kOk};
  uint64_t next_capacity = newest_capacity;
  double next_rate = newest_error_rate;
  if (layers > 0) {
    next_capacity = internal::SaturatingMul(newest_capacity, expansion);
    next_rate = newest_error_rate * tightening;
  }
  for (uint32_t count = layers; projection.capacity < target; ++count) {
    if (count > 0 && expansion == 0) {
      projection.stop = FilterStatus::kFull;
      break;
    }
    if (count >= kMaxBloomLayers) {
      projection.stop = FilterStatus::kTooManyLayers;
      break;
    }
    if (!(next_rate > kMinLayerErrorRate)) {
      projection.stop = FilterStatus::kErrorRateUnderflow;
      break;
    }
    const BlockedShape shape = ChooseLayerShape<Traits>(next_rate, next_capacity, block_cells);
    const uint64_t cost = shape.cells >= MaxBlockedCells(block_cells)
                              ? UINT64_MAX
                              : LayerCost(shape, count + 1);
    if (cost == UINT64_MAX ||
        (limits.max_filter_bytes != 0 && internal::SaturatingAdd(bytes, cost) > limits.max_filter_bytes)) {
      projection.stop = FilterStatus::kFilterMemoryLimit;
      break;
    }
    bytes += cost;
    projection.capacity = internal::SaturatingAdd(projection.capacity, next_capacity);
    next_capacity = internal::SaturatingMul(next_capacity, expansion);
    next_rate *= tightening;
  }
  return projection;
}

template <typename Traits>
GrowthProjection LayerChain<Traits>::ProjectGrowth(uint64_t target) const {
  const List& list = Load();
  const Layer& newest = list.newest();
  return ProjectGrowth(list.size(), newest.capacity, newest.error_rate, memory_bytes(),
                       capacity(), expansion_, tightening_, block_cells_, limits_, target);
}

template <typename Traits>
uint64_t LayerChain<Traits>::capacity() const {
  const List& list = Load();
  uint64_t total = 0;
  for (uint32_t i = 0; i < list.size(); ++i) total = internal::SaturatingAdd(total, list[i].capacity);
  return total;
}

template <typename Traits>
typename LayerChain<Traits>::Count LayerChain<Traits>::item_sum() const {
  const List& list = Load();
  Count total = 0;
  for (uint32_t i = 0; i < list.size(); ++i) total += list[i].item_count();
  return total;
}

}  // namespace bloomgate
