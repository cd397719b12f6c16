#include "filters/scalable_bloom_filter.h"

#include <algorithm>
#include <new>
#include <utility>

#include "filters/blocked_bloom.h"
#include "filters/bloom_math.h"
#include "filters/memory_reservation.h"

namespace bloomgate {
namespace {

// RedisBloom's ERROR_TIGHTENING_RATIO: each layer gets half the error of the
// one before, and a scaling filter's first layer half the requested rate.
constexpr double kErrorTighteningRatio = 0.5;

using internal::PendingReservation;
using internal::SaturatingAdd;
using internal::SaturatingMul;

}  // namespace

struct ScalableBloomFilter::Layer {
  std::unique_ptr<BlockedBloom> bloom;
  uint64_t capacity;
  double error_rate;
  // On its own cache line: every new item bumps it, while every lookup reads
  // the fields above, which would otherwise bounce between cores with it.
  // Relaxed fetch_add: a count, published through nothing.
  alignas(64) std::atomic<uint64_t> items{0};
};

struct ScalableBloomFilter::LayerList {
  std::unique_ptr<const LayerList> previous;  // the list this one replaced
  std::unique_ptr<Layer> newest;              // the layer this list appended
  std::unique_ptr<Layer*[]> layers;           // all `count` layers, oldest first
  uint32_t count = 0;
};

uint64_t ScalableBloomFilter::LayerCost(const BloomShape& shape, uint32_t count) {
  // Everything one growth step allocates, so memory_bytes() is what we really
  // hold: the bit array, its BlockedBloom, the Layer, and a new list whose
  // pointer array has `count` entries. < 2^62 for any shape below
  // kMaxBloomBits and count <= kMaxBloomLayers.
  return BlockedBloom::BytesFor(shape) + sizeof(BlockedBloom) + sizeof(Layer) +
         sizeof(LayerList) + uint64_t{count} * sizeof(Layer*);
}

FilterStatus ScalableBloomFilter::NewLayerList(const LayerList* previous, uint64_t capacity,
                                               double error_rate, const BloomShape& shape,
                                               uint64_t extra_bytes, uint64_t current_bytes,
                                               const FilterLimits& limits, MemoryBudget* budget,
                                               std::unique_ptr<LayerList>* out,
                                               uint64_t* reserved_bytes) {
  // A saturated shape (2^61 bytes) can never be allocated: refuse it as the
  // absurd size it is, before asking anyone for memory.
  if (shape.bits >= kMaxBloomBits) return FilterStatus::kFilterMemoryLimit;
  const uint32_t count = previous == nullptr ? 1 : previous->count + 1;
  const uint64_t cost = extra_bytes + LayerCost(shape, count);
  if (limits.max_filter_bytes != 0 &&
      SaturatingAdd(current_bytes, cost) > limits.max_filter_bytes) {
    return FilterStatus::kFilterMemoryLimit;
  }
  if (budget != nullptr && !budget->TryReserve(cost)) return FilterStatus::kOutOfMemory;
  PendingReservation reservation(budget, cost);

  std::unique_ptr<BlockedBloom> bloom = BlockedBloom::Create(shape);
  if (bloom == nullptr) return FilterStatus::kOutOfMemory;
  std::unique_ptr<Layer> layer(new (std::nothrow) Layer{std::move(bloom), capacity, error_rate});
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

FilterStatus ScalableBloomFilter::Create(const ScalableBloomOptions& options,
                                         const FilterLimits& limits, MemoryBudget* budget,
                                         std::unique_ptr<ScalableBloomFilter>* out) {
  out->reset();
  // Out-of-range options are the caller's to reject with a proper text; here
  // they only must not produce a filter (no NaN, zero or > 32768 shapes that a
  // snapshot loader would refuse).
  if (!(options.error_rate > 0 && options.error_rate < 1) || options.capacity == 0 ||
      options.expansion > kMaxBloomExpansion) {
    return FilterStatus::kFilterMemoryLimit;
  }
  const double error_rate = std::min(options.error_rate, kMaxBloomErrorRate);
  const double first_error =
      options.expansion == 0 ? error_rate : error_rate * kErrorTighteningRatio;

  std::unique_ptr<LayerList> first;
  uint64_t bytes = 0;
  const FilterStatus status = NewLayerList(/*previous=*/nullptr, options.capacity, first_error,
                                           ChooseBlockedBloomShape(first_error, options.capacity),
                                           /*extra_bytes=*/sizeof(ScalableBloomFilter),
                                           /*current_bytes=*/0, limits, budget, &first, &bytes);
  if (status != FilterStatus::kOk) return status;
  out->reset(new (std::nothrow) ScalableBloomFilter(error_rate, options.expansion, limits, budget,
                                                    std::move(first), bytes));
  if (*out == nullptr) {
    if (budget != nullptr) budget->Release(bytes);
    return FilterStatus::kOutOfMemory;
  }
  return FilterStatus::kOk;
}

FilterStatus ScalableBloomFilter::Restore(double error_rate, uint32_t expansion,
                                          std::span<const BloomLayerShape> layers,
                                          const FilterLimits& limits, MemoryBudget* budget,
                                          std::unique_ptr<ScalableBloomFilter>* out) {
  out->reset();
  // The loader has already refused these with precise texts; here they only
  // must never produce a filter (or an allocation) from a bad description.
  if (!(error_rate > 0 && error_rate <= kMaxBloomErrorRate) || expansion > kMaxBloomExpansion ||
      layers.empty() || layers.size() > kMaxBloomLayers || (expansion == 0 && layers.size() != 1)) {
    return FilterStatus::kInvalidOptions;
  }
  uint64_t total = sizeof(ScalableBloomFilter);
  for (size_t i = 0; i < layers.size(); ++i) {
    const BloomLayerShape& layer = layers[i];
    if (layer.capacity == 0 || !(layer.error_rate > 0 && layer.error_rate <= kMaxBloomErrorRate) ||
        layer.bits == 0 || layer.bits % kBloomBlockBits != 0 || layer.bits >= kMaxBloomBits ||
        layer.probes < 1 || layer.probes > kMaxBloomProbes) {
      return FilterStatus::kInvalidOptions;
    }
    const BloomShape shape{layer.bits, layer.probes, 0, 0};
    total = SaturatingAdd(total, LayerCost(shape, static_cast<uint32_t>(i + 1)));
  }
  // The whole filter is checked and reserved at once, before the first
  // allocation: a description of 64 huge layers is refused up front instead
  // of after allocating the first few.
  if (limits.max_filter_bytes != 0 && total > limits.max_filter_bytes) {
    return FilterStatus::kFilterMemoryLimit;
  }
  if (budget != nullptr && !budget->TryReserve(total)) return FilterStatus::kOutOfMemory;
  PendingReservation reservation(budget, total);

  // Built as growth builds it (each list owns its predecessor), so the
  // structure and memory_bytes() match the original's. Already checked and
  // reserved above: no cap and no budget per step.
  const FilterLimits unlimited{/*max_filter_bytes=*/0};
  std::unique_ptr<LayerList> list;
  for (const BloomLayerShape& layer : layers) {
    std::unique_ptr<LayerList> grown;
    uint64_t reserved = 0;
    const FilterStatus status = NewLayerList(
        list.get(), layer.capacity, layer.error_rate, BloomShape{layer.bits, layer.probes, 0, 0},
        /*extra_bytes=*/0, /*current_bytes=*/0, unlimited, /*budget=*/nullptr, &grown, &reserved);
    if (status != FilterStatus::kOk) return status;
    // Relaxed: the filter is not published yet.
    grown->newest->items.store(layer.items, std::memory_order_relaxed);
    grown->previous = std::move(list);
    list = std::move(grown);
  }
  out->reset(new (std::nothrow) ScalableBloomFilter(error_rate, expansion, limits, budget,
                                                    std::move(list), total));
  if (*out == nullptr) return FilterStatus::kOutOfMemory;
  reservation.Keep();  // the filter's destructor releases `total` from here on
  return FilterStatus::kOk;
}

ScalableBloomFilter::ScalableBloomFilter(double error_rate, uint32_t expansion,
                                         const FilterLimits& limits, MemoryBudget* budget,
                                         std::unique_ptr<LayerList> first, uint64_t bytes)
    : layers_(first.get()),
      error_rate_(error_rate),
      expansion_(expansion),
      limits_(limits),
      budget_(budget),
      memory_bytes_(bytes),
      owned_layers_(std::move(first)) {}

ScalableBloomFilter::~ScalableBloomFilter() {
  // Relaxed: no call may be running, so there is nothing left to order with.
  if (budget_ != nullptr) budget_->Release(memory_bytes_.load(std::memory_order_relaxed));
}

bool ScalableBloomFilter::Contains(const LayerList& list, const KeyHash& h) {
  // Newest to oldest, as RedisBloom: with EXPANSION >= 2 the newest layer
  // holds about half the items, so present items usually hit first.
  for (uint32_t i = list.count; i-- > 0;) {
    if (list.layers[i]->bloom->MayContain(h)) return true;
  }
  return false;
}

bool ScalableBloomFilter::MayContain(const KeyHash& h) const {
  // Acquire: pairs with Grow's release store, so the list and its layers are
  // fully built before we read them.
  return Contains(*layers_.load(std::memory_order_acquire), h);
}

FilterStatus ScalableBloomFilter::Add(const KeyHash& h, bool* added) {
  *added = false;
  // Acquire: pairs with Grow's release store (see layers_).
  const LayerList* list = layers_.load(std::memory_order_acquire);
  if (Contains(*list, h)) return FilterStatus::kOk;
  for (;;) {
    Layer& newest = *list->layers[list->count - 1];
    // Relaxed: a fill level that guards no data. Racing adders may each see
    // "not full" and overshoot the capacity by one item apiece.
    if (newest.items.load(std::memory_order_relaxed) < newest.capacity) {
      if (newest.bloom->Add(h)) {
        // Relaxed: a statistic; the bits themselves are already in place.
        newest.items.fetch_add(1, std::memory_order_relaxed);
        *added = true;
      }
      return FilterStatus::kOk;
    }
    if (!scaling()) return FilterStatus::kFull;
    // Either we append a layer or another thread already did; loop to
    // re-check the (new) newest layer, which may itself be full by now.
    const FilterStatus status = Grow(list, &list);
    if (status != FilterStatus::kOk) return status;
  }
}

void ScalableBloomFilter::ReplayAdd(const KeyHash& h, bool counted) {
  const LayerList* list = layers_.load(std::memory_order_acquire);
  Layer* newest = list->layers[list->count - 1];
  // Only a counted add fills a layer, so only it may need the next one; one
  // attempt is enough (a failed Grow leaves the list as it was).
  if (counted && scaling() && newest->items.load(std::memory_order_relaxed) >= newest->capacity &&
      Grow(list, &list) == FilterStatus::kOk) {
    newest = list->layers[list->count - 1];
  }
  // Bits the item already has (a snapshot written while it was being added
  // holds them) are set again harmlessly.
  if (!Contains(*list, h)) newest->bloom->Add(h);
  // Relaxed: a statistic, as in Add.
  if (counted) newest->items.fetch_add(1, std::memory_order_relaxed);
}

FilterStatus ScalableBloomFilter::Grow(const LayerList* seen, const LayerList** current) {
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
    next_shape_ = ChooseBlockedBloomShape(error_rate, capacity);
    next_shape_layers_ = list->count;
  }
  // Relaxed: only this thread (holding the mutex) writes memory_bytes_.
  const uint64_t bytes = memory_bytes_.load(std::memory_order_relaxed);
  std::unique_ptr<LayerList> grown;
  uint64_t reserved = 0;
  const FilterStatus status =
      NewLayerList(list, capacity, error_rate, next_shape_,
                   /*extra_bytes=*/0, bytes, limits_, budget_, &grown, &reserved);
  if (status != FilterStatus::kOk) return status;

  grown->previous = std::move(owned_layers_);
  owned_layers_ = std::move(grown);
  // Relaxed: a statistic for INFO; the budget was already charged.
  memory_bytes_.store(bytes + reserved, std::memory_order_relaxed);
  // Release: publishes the new list, its new layer and that layer's zeroed
  // bit array to every reader whose acquire load sees this pointer.
  layers_.store(owned_layers_.get(), std::memory_order_release);
  *current = owned_layers_.get();
  return FilterStatus::kOk;
}

uint64_t ScalableBloomFilter::capacity() const {
  // Acquire: see MayContain.
  const LayerList& list = *layers_.load(std::memory_order_acquire);
  uint64_t total = 0;
  for (uint32_t i = 0; i < list.count; ++i) total = SaturatingAdd(total, list.layers[i]->capacity);
  return total;
}

uint64_t ScalableBloomFilter::items() const {
  // Acquire: see MayContain.
  const LayerList& list = *layers_.load(std::memory_order_acquire);
  uint64_t total = 0;
  for (uint32_t i = 0; i < list.count; ++i) {
    // Relaxed: a statistic; exact once concurrent adds have finished.
    total += list.layers[i]->items.load(std::memory_order_relaxed);
  }
  return total;
}

uint32_t ScalableBloomFilter::num_layers() const {
  // Acquire: see MayContain.
  return layers_.load(std::memory_order_acquire)->count;
}

uint64_t ScalableBloomFilter::memory_bytes() const {
  // Relaxed: a statistic; it never lags behind a layer a caller could see
  // through a happens-before edge with the grower (Grow stores it before the
  // release store of the list).
  return memory_bytes_.load(std::memory_order_relaxed);
}

std::vector<BloomLayerInfo> ScalableBloomFilter::Layers() const {
  // Acquire: see MayContain.
  const LayerList& list = *layers_.load(std::memory_order_acquire);
  std::vector<BloomLayerInfo> infos;
  infos.reserve(list.count);
  for (uint32_t i = 0; i < list.count; ++i) {
    const Layer& layer = *list.layers[i];
    infos.push_back(BloomLayerInfo{
        /*capacity=*/layer.capacity,
        // Relaxed: a statistic (see items()).
        /*items=*/layer.items.load(std::memory_order_relaxed),
        /*bits=*/layer.bloom->bits(),
        /*bytes=*/layer.bloom->bytes(),
        /*probes=*/layer.bloom->probes(),
        /*error_rate=*/layer.error_rate,
    });
  }
  return infos;
}

const BlockedBloom& ScalableBloomFilter::layer(uint32_t index) const {
  // Acquire: see MayContain.
  return *layers_.load(std::memory_order_acquire)->layers[index]->bloom;
}

BlockedBloom* ScalableBloomFilter::mutable_layer(uint32_t index) {
  // Acquire: see MayContain (the caller owns the unpublished filter anyway).
  return layers_.load(std::memory_order_acquire)->layers[index]->bloom.get();
}

}  // namespace bloomgate
