// ChainedFilter<Traits>: what every filter built on a LayerChain answers the
// same way, so that ScalableBloomFilter, CountingBloomFilter (and the
// windowed filters next) write only what an item does to their layers.
//
// A derived filter holds nothing else of the chain: its layers, capacity,
// growth, limits and memory_bytes() are the chain's, and its requested error
// rate is kept here. Its Create()/Restore() end in Adopt(), which wraps a
// successful LayerChain::Start()/Restore() in a new filter. The accessors are
// as cheap as the chain's (one acquire load, or one relaxed one) and may run
// from any thread at any time, concurrently with every filter operation.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/filter_status.h"
#include "filters/key_hash.h"
#include "filters/layer_chain.h"
#include "filters/limits.h"

namespace bloomgate {

template <typename Traits>
class ChainedFilter {
 public:
  using Cells = typename Traits::Cells;

  uint64_t capacity() const { return chain_.capacity(); }  // sum of the layer capacities, saturating
  uint32_t num_layers() const { return chain_.num_layers(); }
  uint32_t expansion() const { return chain_.expansion(); }  // 0 when NONSCALING
  bool scaling() const { return chain_.scaling(); }
  double error_rate() const { return error_rate_; }  // as requested, after the cap
  // Each new layer's error rate is the newest one's x this (0.5 unless the
  // filter was made with valkey-bloom's TIGHTENING); in (0, 1).
  double tightening() const { return chain_.tightening(); }
  // The capacity growth would reach before a limit stops it (memory cap,
  // layer count, error-rate underflow): valkey-bloom's MAXSCALEDCAPACITY.
  // A NONSCALING filter's is its capacity.
  uint64_t MaxScaledCapacity() const { return chain_.ProjectGrowth(UINT64_MAX).capacity; }
  // The seed every item of this filter is hashed with, in every layer: layers
  // grown later keep it, so growth needs no record of its own in the log and
  // an item is still hashed once per command, not once per layer.
  uint64_t hash_seed() const { return hash_seed_; }
  KeyHash Hash(std::string_view item) const { return HashKey(item, hash_seed_); }
  // Bytes of all layers plus bookkeeping (the filter object included); this is
  // exactly what is reserved in the budget and checked against the cap.
  uint64_t memory_bytes() const { return chain_.memory_bytes(); }
  const FilterLimits& limits() const { return chain_.limits(); }

  // Layer `index` (0 = oldest, < num_layers()), e.g. for a snapshot writer to
  // read its words(). Layers live as long as the filter and never move.
  const Cells& layer(uint32_t index) const { return *chain_.Load()[index].cells; }
  // The same layer, writable: ONLY for a loader filling a Restore()d filter
  // before it is published (see the layer type's mutable_words).
  Cells* mutable_layer(uint32_t index) { return chain_.Load()[index].cells.get(); }

 protected:
  using Chain = LayerChain<Traits>;

  ChainedFilter(double error_rate, uint32_t expansion, uint64_t hash_seed,
                const FilterLimits& limits, typename Chain::Pending&& first,
                double tightening = kErrorTighteningRatio)
      : chain_(std::move(first), expansion, limits, tightening), error_rate_(error_rate),
        hash_seed_(hash_seed) {}
  ~ChainedFilter() = default;  // the chain gives memory_bytes() back to the budget

  ChainedFilter(const ChainedFilter&) = delete;
  ChainedFilter& operator=(const ChainedFilter&) = delete;

  // The end of a Create()/Restore(): `status` is what LayerChain::Start() or
  // Restore() returned into *pending. On kOk a new Filter takes the chain
  // over (through this class's constructor, which a filter inherits with
  // `using ChainedFilter::ChainedFilter;`: as a protected constructor of
  // ours, only Adopt can call it); kOutOfMemory if that allocation fails, and then *pending
  // gives its reservation back as it goes. Other statuses pass through.
  // A Filter with `kBuiltInOwnerBlock` (its chain started with
  // FirstCells::kInOwnerBlock) is built at the start of the pending block
  // instead, which cannot fail; it destroys layer 0's cells in place in its
  // destructor and frees the block in its operator delete.
  template <typename Filter>
  static FilterStatus Adopt(FilterStatus status, double error_rate, uint32_t expansion,
                            uint64_t hash_seed, const FilterLimits& limits,
                            typename Chain::Pending* pending, std::unique_ptr<Filter>* out,
                            double tightening = kErrorTighteningRatio) {
    if (status != FilterStatus::kOk) return status;
    void* at = nullptr;
    if constexpr (requires { Filter::kBuiltInOwnerBlock; }) {
      static_assert(alignof(Filter) <= 64, "the block is line-aligned");
      at = pending->TakeOwnerBlock();
    } else {
      at = ::operator new(sizeof(Filter), std::nothrow);
      if (at == nullptr) return FilterStatus::kOutOfMemory;
    }
    out->reset(new (at) Filter(error_rate, expansion, hash_seed, limits, std::move(*pending),
                               tightening));
    return FilterStatus::kOk;
  }

  // describe(layer) for each layer of the published list, oldest first: the
  // body of a filter's Layers().
  template <typename Info, typename Describe>
  std::vector<Info> DescribeLayers(Describe&& describe) const {
    const typename Chain::List& list = chain_.Load();
    std::vector<Info> infos;
    infos.reserve(list.size());
    for (uint32_t i = 0; i < list.size(); ++i) infos.push_back(describe(list[i]));
    return infos;
  }

  Chain chain_;
  const double error_rate_;
  const uint64_t hash_seed_;
};

}  // namespace bloomgate
