#include "filters/counting_bloom_filter.h"

#include <algorithm>
#include <new>
#include <utility>

#include "filters/memory_reservation.h"

namespace bloomgate {
namespace {

using internal::PendingReservation;
using internal::SaturatingAdd;
using internal::SaturatingMul;

// RedisBloom's ERROR_TIGHTENING_RATIO, as in ScalableBloomFilter.
constexpr double kErrorTighteningRatio = 0.5;

}  // namespace

struct CountingBloomFilter::Layer {
  std::unique_ptr<BlockedCountingBloom> counters;
  uint64_t capacity;
  double error_rate;
  // Adds into this layer minus removes from it (see items()); may dip below 0
  // only when the rule is broken.
  // On its own cache line: every new item bumps it, while every operation
  // reads the fields above. Relaxed RMWs: a count, published through nothing.
  alignas(64) std::atomic<int64_t> items{0};
};

struct CountingBloomFilter::LayerList {
  std::unique_ptr<const LayerList> previous;  // the list this one replaced
  std::unique_ptr<Layer> newest;              // the layer this list appended
  std::unique_ptr<Layer*[]> layers;           // all `count` layers, oldest first
  uint32_t count = 0;
};

uint64_t CountingBloomFilter::LayerCost(const BlockedShape& shape, uint32_t count) {
  // Everything one growth step allocates, so memory_bytes() is what we really
  // hold: the counters, their BlockedCountingBloom, the Layer, and a new list
  // whose pointer array has `count` entries (< 2^62 for any unsaturated shape).
  return BlockedCountingBloom::BytesFor(shape) + sizeof(BlockedCountingBloom) + sizeof(Layer) +
         sizeof(LayerList) + uint64_t{count} * sizeof(Layer*);
}

FilterStatus CountingBloomFilter::NewLayerList(const LayerList* previous, uint64_t capacity,
                                               double error_rate, const BlockedShape& shape,
                                               uint32_t counter_bits, uint64_t extra_bytes,
                                               uint64_t current_bytes, const FilterLimits& limits,
                                               MemoryBudget* budget,
                                               std::unique_ptr<LayerList>* out,
                                               uint64_t* reserved_bytes) {
  // A saturated shape (2^61 bytes) can never be allocated: refuse it as the
  // absurd size it is, before asking anyone for memory.
  if (shape.cells >= MaxBlockedCells(shape.block_cells)) return FilterStatus::kFilterMemoryLimit;
  const uint32_t count = previous == nullptr ? 1 : previous->count + 1;
  const uint64_t cost = extra_bytes + LayerCost(shape, count);
  if (limits.max_filter_bytes != 0 &&
      SaturatingAdd(current_bytes, cost) > limits.max_filter_bytes) {
    return FilterStatus::kFilterMemoryLimit;
  }
  if (budget != nullptr && !budget->TryReserve(cost)) return FilterStatus::kOutOfMemory;
  PendingReservation reservation(budget, cost);

  std::unique_ptr<BlockedCountingBloom> counters = BlockedCountingBloom::Create(shape, counter_bits);
  if (counters == nullptr) return FilterStatus::kOutOfMemory;
  std::unique_ptr<Layer> layer(new (std::nothrow) Layer{std::move(counters), capacity, error_rate});
  std::unique_ptr<LayerList> list(new (std::nothrow) LayerList);
  if (layer == nullptr || list == nullptr) return FilterStatus::kOutOfMemory;
  list->layers.reset(new (std::nothrow) Layer*[count]);
  if (list->layers == nullptr) return FilterStatus::kOutOfMemory;
  if (previous != nullptr) {
    std::copy(previous->layers.get(), previous->layers.get() + previous->count, list->layers.get());
  }
  list->layers[count - 1] = layer.get();
  list->newest = std::move(layer);
  list->count = count;

  reservation.Keep();
  *out = std::move(list);
  *reserved_bytes = cost;
  return FilterStatus::kOk;
}

FilterStatus CountingBloomFilter::Create(const CountingBloomOptions& options,
                                         const FilterLimits& limits, MemoryBudget* budget,
                                         std::unique_ptr<CountingBloomFilter>* out) {
  out->reset();
  if (!(options.error_rate > 0 && options.error_rate < 1) || options.capacity == 0 ||
      options.expansion > kMaxBloomExpansion ||
      (options.counter_bits != kCountingBloomNarrowCounterBits &&
       options.counter_bits != kCountingBloomWideCounterBits)) {
    return FilterStatus::kInvalidOptions;
  }
  const double error_rate = std::min(options.error_rate, kMaxBloomErrorRate);
  const double first_error =
      options.expansion == 0 ? error_rate : error_rate * kErrorTighteningRatio;
  const uint32_t block_cells = BlockedCountingBloom::BlockCellsFor(options.counter_bits);

  std::unique_ptr<LayerList> first;
  uint64_t bytes = 0;
  const FilterStatus status =
      NewLayerList(/*previous=*/nullptr, options.capacity, first_error,
                   ChooseBlockedShape(first_error, options.capacity, block_cells),
                   options.counter_bits, /*extra_bytes=*/sizeof(CountingBloomFilter),
                   /*current_bytes=*/0, limits, budget, &first, &bytes);
  if (status != FilterStatus::kOk) return status;
  out->reset(new (std::nothrow) CountingBloomFilter(error_rate, options.expansion,
                                                    options.counter_bits, limits, budget,
                                                    std::move(first), bytes));
  if (*out == nullptr) {
    if (budget != nullptr) budget->Release(bytes);
    return FilterStatus::kOutOfMemory;
  }
  return FilterStatus::kOk;
}

FilterStatus CountingBloomFilter::Restore(double error_rate, uint32_t expansion,
                                          uint32_t counter_bits,
                                          std::span<const CountingBloomLayerShape> layers,
                                          const FilterLimits& limits, MemoryBudget* budget,
                                          std::unique_ptr<CountingBloomFilter>* out) {
  out->reset();
  // The loader has already refused these with precise texts; here they only
  // must never produce a filter (or an allocation) from a bad description.
  if (!(error_rate > 0 && error_rate <= kMaxBloomErrorRate) || expansion > kMaxBloomExpansion ||
      (counter_bits != kCountingBloomNarrowCounterBits &&
       counter_bits != kCountingBloomWideCounterBits) ||
      layers.empty() || layers.size() > kMaxBloomLayers || (expansion == 0 && layers.size() != 1)) {
    return FilterStatus::kInvalidOptions;
  }
  const uint32_t block_cells = BlockedCountingBloom::BlockCellsFor(counter_bits);
  uint64_t total = sizeof(CountingBloomFilter);
  for (size_t i = 0; i < layers.size(); ++i) {
    const CountingBloomLayerShape& layer = layers[i];
    if (layer.capacity == 0 || !(layer.error_rate > 0 && layer.error_rate <= kMaxBloomErrorRate) ||
        layer.cells == 0 || layer.cells % block_cells != 0 ||
        layer.cells >= MaxBlockedCells(block_cells) || layer.probes < 1 ||
        layer.probes > kMaxBloomProbes) {
      return FilterStatus::kInvalidOptions;
    }
    const BlockedShape shape{layer.cells, block_cells, layer.probes, 0, 0};
    total = SaturatingAdd(total, LayerCost(shape, static_cast<uint32_t>(i + 1)));
  }
  // Checked and reserved as a whole before the first allocation (see
  // ScalableBloomFilter::Restore).
  if (limits.max_filter_bytes != 0 && total > limits.max_filter_bytes) {
    return FilterStatus::kFilterMemoryLimit;
  }
  if (budget != nullptr && !budget->TryReserve(total)) return FilterStatus::kOutOfMemory;
  PendingReservation reservation(budget, total);

  // Built as growth builds it, so structure and memory_bytes() match the
  // original's; already checked and reserved, so no cap or budget per step.
  const FilterLimits unlimited{/*max_filter_bytes=*/0};
  std::unique_ptr<LayerList> list;
  for (const CountingBloomLayerShape& layer : layers) {
    std::unique_ptr<LayerList> grown;
    uint64_t reserved = 0;
    const FilterStatus status =
        NewLayerList(list.get(), layer.capacity, layer.error_rate,
                     BlockedShape{layer.cells, block_cells, layer.probes, 0, 0}, counter_bits,
                     /*extra_bytes=*/0, /*current_bytes=*/0, unlimited, /*budget=*/nullptr,
                     &grown, &reserved);
    if (status != FilterStatus::kOk) return status;
    // Relaxed: the filter is not published yet.
    grown->newest->items.store(layer.items, std::memory_order_relaxed);
    grown->previous = std::move(list);
    list = std::move(grown);
  }
  out->reset(new (std::nothrow) CountingBloomFilter(error_rate, expansion, counter_bits, limits,
                                                    budget, std::move(list), total));
  if (*out == nullptr) return FilterStatus::kOutOfMemory;
  reservation.Keep();  // the filter's destructor releases `total` from here on
  return FilterStatus::kOk;
}

CountingBloomFilter::CountingBloomFilter(double error_rate, uint32_t expansion,
                                         uint32_t counter_bits, const FilterLimits& limits,
                                         MemoryBudget* budget, std::unique_ptr<LayerList> first,
                                         uint64_t bytes)
    : layers_(first.get()),
      error_rate_(error_rate),
      expansion_(expansion),
      counter_bits_(counter_bits),
      limits_(limits),
      budget_(budget),
      memory_bytes_(bytes),
      owned_layers_(std::move(first)) {}

CountingBloomFilter::~CountingBloomFilter() {
  // Relaxed: no call may be running, so there is nothing left to order with.
  if (budget_ != nullptr) budget_->Release(memory_bytes_.load(std::memory_order_relaxed));
}

CountingBloomFilter::Layer* CountingBloomFilter::OldestHolder(const LayerList& list,
                                                              const KeyHash& h) {
  // Oldest first (see the header: the oldest layer reporting an item is the
  // one that holds it). A miss costs one cache line per layer either way.
  for (uint32_t i = 0; i < list.count; ++i) {
    if (list.layers[i]->counters->MayContain(h)) return list.layers[i];
  }
  return nullptr;
}

bool CountingBloomFilter::MayContain(const KeyHash& h) const {
  // Acquire: pairs with Grow's release store, so the list and its layers are
  // fully built before we read them.
  const LayerList& list = *layers_.load(std::memory_order_acquire);
  // Newest first, as ScalableBloomFilter: with EXPANSION >= 2 the newest layer
  // holds about half the items. Any order gives the same answer.
  for (uint32_t i = list.count; i-- > 0;) {
    if (list.layers[i]->counters->MayContain(h)) return true;
  }
  return false;
}

uint64_t CountingBloomFilter::Count(const KeyHash& h) const {
  // Acquire: see MayContain.
  const LayerList& list = *layers_.load(std::memory_order_acquire);
  uint64_t total = 0;
  for (uint32_t i = 0; i < list.count; ++i) {
    total = SaturatingAdd(total, list.layers[i]->counters->MinCounter(h));
  }
  return total;
}

FilterStatus CountingBloomFilter::Add(const KeyHash& h, bool* was_new) {
  *was_new = false;
  // Acquire: see MayContain.
  const LayerList* list = layers_.load(std::memory_order_acquire);
  if (Layer* holder = OldestHolder(*list, h); holder != nullptr) {
    holder->counters->Increment(h);
    // Relaxed: a statistic; the counters themselves are already in place.
    holder->items.fetch_add(1, std::memory_order_relaxed);
    return FilterStatus::kOk;
  }
  for (;;) {
    Layer& newest = *list->layers[list->count - 1];
    // Relaxed: a fill level that guards no data. Racing adders may each see
    // "not full" and overshoot the capacity by one item apiece.
    const int64_t items = newest.items.load(std::memory_order_relaxed);
    if (items < 0 || static_cast<uint64_t>(items) < newest.capacity) {
      newest.counters->Increment(h);
      // Relaxed: a statistic; the counters themselves are already in place.
      newest.items.fetch_add(1, std::memory_order_relaxed);
      *was_new = true;
      return FilterStatus::kOk;
    }
    if (!scaling()) return FilterStatus::kFull;
    // Either we append a layer or another thread already did; loop to
    // re-check the (new) newest layer, which may itself be full by now.
    const FilterStatus status = Grow(list, &list);
    if (status != FilterStatus::kOk) return status;
  }
}

bool CountingBloomFilter::Remove(const KeyHash& h) {
  // Acquire: see MayContain.
  const LayerList& list = *layers_.load(std::memory_order_acquire);
  Layer* holder = OldestHolder(list, h);
  if (holder == nullptr) return false;
  holder->counters->Decrement(h);
  // Relaxed: a statistic (see Add).
  holder->items.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

FilterStatus CountingBloomFilter::Grow(const LayerList* seen, const LayerList** current) {
  std::lock_guard<std::mutex> lock(grow_mutex_);
  // Relaxed: layers_ is only stored with grow_mutex_ held, which we hold now,
  // so the mutex already orders this load after the last store.
  const LayerList* list = layers_.load(std::memory_order_relaxed);
  *current = list;
  if (list != seen) return FilterStatus::kOk;  // someone else grew it first
  if (list->count >= kMaxBloomLayers) return FilterStatus::kTooManyLayers;

  const Layer& last = *list->layers[list->count - 1];
  // Saturates at UINT64_MAX, which sizes to an absurd shape and so reports
  // kFilterMemoryLimit instead of wrapping to a small capacity.
  const uint64_t capacity = SaturatingMul(last.capacity, expansion_);
  const double error_rate = last.error_rate * kErrorTighteningRatio;
  if (next_shape_layers_ != list->count) {
    next_shape_ = ChooseBlockedShape(error_rate, capacity,
                                     BlockedCountingBloom::BlockCellsFor(counter_bits_));
    next_shape_layers_ = list->count;
  }
  // Relaxed: only this thread (holding the mutex) writes memory_bytes_.
  const uint64_t bytes = memory_bytes_.load(std::memory_order_relaxed);
  std::unique_ptr<LayerList> grown;
  uint64_t reserved = 0;
  const FilterStatus status =
      NewLayerList(list, capacity, error_rate, next_shape_, counter_bits_,
                   /*extra_bytes=*/0, bytes, limits_, budget_, &grown, &reserved);
  if (status != FilterStatus::kOk) return status;

  grown->previous = std::move(owned_layers_);
  owned_layers_ = std::move(grown);
  // Relaxed: a statistic for INFO; the budget was already charged.
  memory_bytes_.store(bytes + reserved, std::memory_order_relaxed);
  // Release: publishes the new list, its new layer and that layer's zeroed
  // counters to every reader whose acquire load sees this pointer.
  layers_.store(owned_layers_.get(), std::memory_order_release);
  *current = owned_layers_.get();
  return FilterStatus::kOk;
}

uint64_t CountingBloomFilter::capacity() const {
  // Acquire: see MayContain.
  const LayerList& list = *layers_.load(std::memory_order_acquire);
  uint64_t total = 0;
  for (uint32_t i = 0; i < list.count; ++i) total = SaturatingAdd(total, list.layers[i]->capacity);
  return total;
}

uint64_t CountingBloomFilter::items() const {
  // Acquire: see MayContain.
  const LayerList& list = *layers_.load(std::memory_order_acquire);
  int64_t total = 0;
  for (uint32_t i = 0; i < list.count; ++i) {
    // Relaxed: a statistic; exact once concurrent updates have finished.
    total += list.layers[i]->items.load(std::memory_order_relaxed);
  }
  return total < 0 ? 0 : static_cast<uint64_t>(total);
}

uint32_t CountingBloomFilter::num_layers() const {
  // Acquire: see MayContain.
  return layers_.load(std::memory_order_acquire)->count;
}

uint64_t CountingBloomFilter::saturated_counters() const {
  // Acquire: see MayContain.
  const LayerList& list = *layers_.load(std::memory_order_acquire);
  uint64_t total = 0;
  for (uint32_t i = 0; i < list.count; ++i) {
    total += list.layers[i]->counters->saturated_counters();
  }
  return total;
}

uint64_t CountingBloomFilter::memory_bytes() const {
  // Relaxed: a statistic; Grow stores it before the release store of the
  // list, so it never lags behind a layer a caller could have seen.
  return memory_bytes_.load(std::memory_order_relaxed);
}

std::vector<CountingBloomLayerInfo> CountingBloomFilter::Layers() const {
  // Acquire: see MayContain.
  const LayerList& list = *layers_.load(std::memory_order_acquire);
  std::vector<CountingBloomLayerInfo> infos;
  infos.reserve(list.count);
  for (uint32_t i = 0; i < list.count; ++i) {
    const Layer& layer = *list.layers[i];
    // Relaxed: a statistic (see items()).
    const int64_t items = layer.items.load(std::memory_order_relaxed);
    infos.push_back(CountingBloomLayerInfo{
        /*capacity=*/layer.capacity,
        /*items=*/items < 0 ? 0 : static_cast<uint64_t>(items),
        /*cells=*/layer.counters->cells(),
        /*bytes=*/layer.counters->bytes(),
        /*probes=*/layer.counters->probes(),
        /*error_rate=*/layer.error_rate,
        /*saturated_counters=*/layer.counters->saturated_counters(),
        /*net_items=*/items,
    });
  }
  return infos;
}

const BlockedCountingBloom& CountingBloomFilter::layer(uint32_t index) const {
  // Acquire: see MayContain.
  return *layers_.load(std::memory_order_acquire)->layers[index]->counters;
}

BlockedCountingBloom* CountingBloomFilter::mutable_layer(uint32_t index) {
  // Acquire: see MayContain (the caller owns the unpublished filter anyway).
  return layers_.load(std::memory_order_acquire)->layers[index]->counters.get();
}

}  // namespace bloomgate
