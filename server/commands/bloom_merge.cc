#include "server/commands/bloom_merge.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "filters/counting_bloom_filter.h"
#include "filters/scalable_bloom_filter.h"
#include "filters/windowed_bloom_filter.h"
#include "server/commands/errors.h"

namespace bloomgate {
namespace {

std::string Number(uint64_t value) { return std::to_string(value); }
std::string Number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

// What must be equal for two filters to merge, read alike from both families.
struct Facts {
  double error_rate;
  uint64_t capacity;  // layer 0's
  uint32_t expansion;
  uint64_t seed;
  uint32_t counter_bits;  // 0 for a Bloom filter
  BloomLayout layout;     // kBlocked for a counting filter
  struct Layer {
    uint64_t capacity, items, cells;
    uint32_t probes;
    double error_rate;
  };
  std::vector<Layer> layers;
};

Facts FactsOf(const ScalableBloomFilter& filter) {
  Facts facts{filter.error_rate(), 0, filter.expansion(), filter.hash_seed(), 0, filter.layout(),
              {}};
  for (const BloomLayerInfo& layer : filter.Layers()) {
    facts.layers.push_back({layer.capacity, layer.items, layer.bits, layer.probes,
                            layer.error_rate});
  }
  facts.capacity = facts.layers[0].capacity;
  return facts;
}

Facts FactsOf(const CountingBloomFilter& filter) {
  Facts facts{filter.error_rate(), 0, filter.expansion(), filter.hash_seed(),
              filter.counter_bits(), BloomLayout::kBlocked, {}};
  for (const CountingBloomLayerInfo& layer : filter.Layers()) {
    // net_items: the count a snapshot saves; sums stay exact under a merge.
    facts.layers.push_back({layer.capacity, static_cast<uint64_t>(layer.net_items), layer.cells,
                            layer.probes, layer.error_rate});
  }
  facts.capacity = facts.layers[0].capacity;
  return facts;
}

// The first way `facts` (of `name`) differs from `ref` (of `ref_name`), as
// the client's text; empty when they merge.
std::string FirstMismatch(std::string_view command, std::string_view name, const Facts& facts,
                          std::string_view ref_name, const Facts& ref) {
  auto differ = [&](std::string_view what, const std::string& value, const std::string& theirs) {
    return errors::MergeMismatch(command, name, what, value, ref_name, theirs);
  };
  if (facts.error_rate != ref.error_rate) {
    return differ("error rate", Number(facts.error_rate), Number(ref.error_rate));
  }
  if (facts.capacity != ref.capacity) {
    return differ("capacity", Number(facts.capacity), Number(ref.capacity));
  }
  if (facts.expansion != ref.expansion) {
    return differ("expansion", Number(uint64_t{facts.expansion}), Number(uint64_t{ref.expansion}));
  }
  if (facts.counter_bits != ref.counter_bits) {
    return differ("counter bits", Number(uint64_t{facts.counter_bits}),
                  Number(uint64_t{ref.counter_bits}));
  }
  // Filters from before the classic layout existed stay blocked at any rate.
  if (facts.layout != ref.layout) {
    auto name_of = [](BloomLayout layout) {
      return std::string(layout == BloomLayout::kClassic ? "the classic layout"
                                                         : "the blocked layout");
    };
    return differ("", name_of(facts.layout), name_of(ref.layout));
  }
  // Seeds are secret (hash_seed.h): say that they differ, never what they are.
  if (facts.seed != ref.seed) return differ("", "another seed", "its own");
  if (facts.layers.size() != ref.layers.size()) {
    return differ("", Number(uint64_t{facts.layers.size()}) + " layers",
                  Number(uint64_t{ref.layers.size()}));
  }
  const std::string_view cells = facts.counter_bits == 0 ? " bits" : " counters";
  for (size_t i = 0; i < facts.layers.size(); ++i) {
    const Facts::Layer& mine = facts.layers[i];
    const Facts::Layer& theirs = ref.layers[i];
    if (mine.cells != theirs.cells || mine.probes != theirs.probes) {
      return differ("layer " + Number(uint64_t{i}) + " of",
                    Number(mine.cells) + std::string(cells) + " and " +
                        Number(uint64_t{mine.probes}) + " probes",
                    Number(theirs.cells) + " and " + Number(uint64_t{theirs.probes}));
    }
  }
  return {};
}

// Set bits of one Bloom layer.
uint64_t BitsSet(const BloomLayer& layer) {
  const std::atomic<uint64_t>* words = layer.words();
  uint64_t set = 0;
  for (uint64_t w = 0; w < layer.num_words(); ++w) {
    set += static_cast<uint64_t>(__builtin_popcountll(words[w].load(std::memory_order_relaxed)));
  }
  return set;
}

// The union's item estimate for one Bloom layer (see MergeBloom).
uint64_t UnionItems(const BloomLayer& layer, uint64_t largest, uint64_t sum) {
  const double m = static_cast<double>(layer.bits());
  const double x = static_cast<double>(BitsSet(layer));
  if (x >= m) return sum;  // saturated: the bits no longer tell
  const double estimate = -(m / layer.probes()) * std::log1p(-x / m);
  const uint64_t n = estimate >= static_cast<double>(sum) ? sum
                                                          : static_cast<uint64_t>(estimate + 0.5);
  return std::clamp(n, largest, sum);
}

MergeResult Failed(BloomStatus status, std::string detail = {}) {
  return MergeResult{status, std::move(detail)};
}

// The family's filter under `key` for a merge: kOk with *entry set, or why not.
template <typename Filter>
MergeResult FindInput(FilterStore& store, std::string_view command, const KeyRef& key,
                      bool missing_ok, EntryPtr* entry) {
  const Lookup lookup = FindFilter<Filter>(store, key, entry);
  if (lookup == Lookup::kMissing && missing_ok) return {};
  const BloomStatus status = BloomLookupStatus(lookup, BloomStatus::kNotFound);
  if (status != BloomStatus::kOk) return Failed(status);
  if ((*entry)->get<Filter>() == nullptr) {  // served by BF.* but windowed
    return Failed(BloomStatus::kMergeMismatch, errors::MergeWindowed(command, key.name));
  }
  if constexpr (std::is_same_v<Filter, ScalableBloomFilter>) {
    // Imported from RedisBloom: its classic layers cannot be rebuilt as a
    // new dest's (RestoreLike makes blocked ones), so such filters stay out.
    if ((*entry)->get<Filter>()->layout() == BloomLayout::kRedisBloom) {
      return Failed(BloomStatus::kMergeMismatch,
                    errors::MergeUnsupported(command, key.name, "a filter in RedisBloom's layout"));
    }
  }
  return {};
}

FilterStatus RestoreLike(const Facts& ref, FilterStore& store,
                         std::unique_ptr<ScalableBloomFilter>* out) {
  std::vector<BloomLayerShape> shapes;
  for (const Facts::Layer& l : ref.layers) {
    shapes.push_back(BloomLayerShape{l.capacity, 0, l.error_rate, l.cells, l.probes});
  }
  return ScalableBloomFilter::Restore(ref.error_rate, ref.expansion, shapes, store.limits,
                                      store.budget, out, ref.seed, ref.layout);
}

FilterStatus RestoreLike(const Facts& ref, FilterStore& store,
                         std::unique_ptr<CountingBloomFilter>* out) {
  std::vector<CountingBloomLayerShape> shapes;
  for (const Facts::Layer& l : ref.layers) {
    shapes.push_back(CountingBloomLayerShape{l.capacity, 0, l.error_rate, l.cells, l.probes});
  }
  return CountingBloomFilter::Restore(ref.error_rate, ref.expansion, ref.counter_bits, shapes,
                                      store.limits, store.budget, out, ref.seed);
}

// Bloom: OR, then each layer's count from its bits.
bool Combine(ScalableBloomFilter& target, std::span<const ScalableBloomFilter* const> inputs) {
  std::vector<uint64_t> largest(target.num_layers());
  std::vector<uint64_t> sum(target.num_layers());
  auto count = [&](const ScalableBloomFilter& filter) {
    const std::vector<BloomLayerInfo> layers = filter.Layers();
    for (size_t i = 0; i < layers.size(); ++i) {
      largest[i] = std::max(largest[i], layers[i].items);
      sum[i] = layers[i].items > UINT64_MAX - sum[i] ? UINT64_MAX : sum[i] + layers[i].items;
    }
  };
  count(target);
  for (const ScalableBloomFilter* input : inputs) {
    if (!target.OrLayersFrom(*input)) return false;
    count(*input);
  }
  for (uint32_t i = 0; i < target.num_layers(); ++i) {
    target.SetLayerItems(i, UnionItems(target.layer(i), largest[i], sum[i]));
  }
  return true;
}

// Counting: counters and counts add (a multiset union).
bool Combine(CountingBloomFilter& target, std::span<const CountingBloomFilter* const> inputs) {
  for (const CountingBloomFilter* input : inputs) {
    if (!target.AddCountersFrom(*input)) return false;
  }
  return true;
}

template <typename Filter>
MergeResult Merge(FilterStore& store, std::string_view command, const KeyRef& dest,
                  std::span<const KeyRef> sources) {
  EntryPtr dest_entry;
  if (MergeResult found = FindInput<Filter>(store, command, dest, /*missing_ok=*/true, &dest_entry);
      found.status != BloomStatus::kOk) {
    return found;
  }
  std::vector<EntryPtr> inputs;  // holds the sources' entries while they are read
  inputs.reserve(sources.size());
  for (const KeyRef& source : sources) {
    EntryPtr entry;
    if (MergeResult found = FindInput<Filter>(store, command, source, /*missing_ok=*/false, &entry);
        found.status != BloomStatus::kOk) {
      return found;
    }
    inputs.push_back(std::move(entry));
  }
  // Every check before the first change: a refused merge changes nothing.
  const Facts ref =
      FactsOf(dest_entry != nullptr ? *dest_entry->get<Filter>() : *inputs[0]->get<Filter>());
  const std::string_view ref_name = dest_entry != nullptr ? dest.name : sources[0].name;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string mismatch =
        FirstMismatch(command, sources[i].name, FactsOf(*inputs[i]->get<Filter>()), ref_name, ref);
    if (!mismatch.empty()) return Failed(BloomStatus::kMergeMismatch, std::move(mismatch));
  }
  if (dest_entry == nullptr) {
    // The first source's shapes, empty: Restore sizes and charges it whole.
    std::unique_ptr<Filter> created;
    switch (RestoreLike(ref, store, &created)) {
      case FilterStatus::kOk: break;
      case FilterStatus::kOutOfMemory: return Failed(BloomStatus::kOutOfMemory);
      default: return Failed(BloomStatus::kCreateFailed);
    }
    switch (StoreNewFilter(store, dest, std::move(created), /*fail_if_exists=*/false,
                           &dest_entry)) {
      case StoreOutcome::kStored:
      case StoreOutcome::kExisting: break;  // not while we hold the key
      case StoreOutcome::kItemExists:
      case StoreOutcome::kWrongType: return Failed(BloomStatus::kWrongType);
    }
  }
  Filter& target = *dest_entry->get<Filter>();
  std::vector<const Filter*> others;
  for (const EntryPtr& input : inputs) {
    // dest named as a source, or a source named twice: merged once.
    const Filter* filter = input->get<Filter>();
    if (filter != &target && std::find(others.begin(), others.end(), filter) == others.end()) {
      others.push_back(filter);
    }
  }
  // Checked above against the same reference, so this cannot refuse.
  if (!Combine(target, others)) return Failed(BloomStatus::kMergeMismatch);
  dest_entry->MarkModified();
  return {};
}

}  // namespace

MergeResult MergeBloom(FilterStore& store, std::string_view command, const KeyRef& dest,
                       std::span<const KeyRef> sources) {
  return Merge<ScalableBloomFilter>(store, command, dest, sources);
}

MergeResult MergeCounting(FilterStore& store, std::string_view command, const KeyRef& dest,
                          std::span<const KeyRef> sources) {
  return Merge<CountingBloomFilter>(store, command, dest, sources);
}

}  // namespace bloomgate
