#include "server/commands/bloom/bloom_merge.h"

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
#include "filters/windowed_counting_bloom_filter.h"
#include "persistence/append_log.h"
#include "persistence/filter_codec.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"
#include "server/commands/family_shared/sources_read_off_loop.h"

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
  double tightening;      // each new layer's rate x this (kErrorTighteningRatio for counting)
  struct Layer {
    uint64_t capacity, items, cells;
    uint32_t probes;
    double error_rate;
  };
  std::vector<Layer> layers;
};

Facts FactsOf(const ScalableBloomFilter& filter) {
  Facts facts{filter.error_rate(), 0, filter.expansion(), filter.hash_seed(), 0, filter.layout(),
              filter.tightening(), {}};
  for (const BloomLayerInfo& layer : filter.Layers()) {
    facts.layers.push_back({layer.capacity, layer.items, layer.bits, layer.probes,
                            layer.error_rate});
  }
  facts.capacity = facts.layers[0].capacity;
  return facts;
}

Facts FactsOf(const CountingBloomFilter& filter) {
  Facts facts{filter.error_rate(), 0, filter.expansion(), filter.hash_seed(),
              filter.counter_bits(), BloomLayout::kBlocked, filter.tightening(), {}};
  for (const CountingBloomLayerInfo& layer : filter.Layers()) {
    // net_items: the count a snapshot saves; sums stay exact under a merge.
    facts.layers.push_back({layer.capacity, static_cast<uint64_t>(layer.net_items), layer.cells,
                            layer.probes, layer.error_rate});
  }
  facts.capacity = facts.layers[0].capacity;
  return facts;
}

// `name`'s difference from `ref_name`: `what`, and the two values.
std::optional<MergeDifference> Differ(std::string_view name, std::string_view what,
                                      std::string value, std::string_view ref_name,
                                      std::string ref_value) {
  return MergeDifference{std::string(name), std::string(what), std::move(value),
                         std::string(ref_name), std::move(ref_value), std::nullopt};
}

// The first way `facts` (of `name`) differs from `ref` (of `ref_name`);
// nullopt when they merge.
std::optional<MergeDifference> FirstMismatch(std::string_view name, const Facts& facts,
                                             std::string_view ref_name, const Facts& ref) {
  auto differ = [&](std::string_view what, std::string value, std::string theirs) {
    return Differ(name, what, std::move(value), ref_name, std::move(theirs));
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
  // Equal layers now, but they would grow apart.
  if (facts.tightening != ref.tightening) {
    return differ("tightening ratio", Number(facts.tightening), Number(ref.tightening));
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
  return std::nullopt;
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

MergeResult Failed(BloomStatus status, MergeDifference difference = {}) {
  return MergeResult{status, std::move(difference)};
}

// The family's filter under `key` for a merge: kOk with *entry set, or why not.
template <typename Filter>
MergeResult FindInput(FilterStore& store, const KeyRef& key,
                      bool missing_ok, std::string_view ref_name, EntryPtr* entry) {
  const Lookup lookup = FindFilter<Filter>(store, key, entry);
  if (lookup == Lookup::kMissing && missing_ok) return {};
  const BloomStatus status = BloomLookupStatus(lookup, BloomStatus::kNotFound);
  if (status != BloomStatus::kOk) return Failed(status);
  if ((*entry)->get<Filter>() == nullptr) {  // served by BF.* / CBF.* but windowed
    return Failed(BloomStatus::kMergeMismatch, *Differ(key.name, "", "a window", ref_name, "none"));
  }
  if constexpr (std::is_same_v<Filter, ScalableBloomFilter>) {
    // Imported from RedisBloom: its classic layers cannot be rebuilt as a
    // new dest's (RestoreLike makes blocked ones), so such filters stay out.
    if ((*entry)->get<Filter>()->layout() == BloomLayout::kRedisBloom) {
      return Failed(BloomStatus::kMergeUnsupported,
                    MergeDifference{.key = std::string(key.name),
                                    .value = "a filter in RedisBloom's layout"});
    }
  }
  return {};
}

FilterStatus RestoreLike(const Facts& ref, const FilterLimits& limits, MemoryBudget* budget,
                         std::unique_ptr<ScalableBloomFilter>* out) {
  std::vector<BloomLayerShape> shapes;
  for (const Facts::Layer& l : ref.layers) {
    shapes.push_back(BloomLayerShape{l.capacity, 0, l.error_rate, l.cells, l.probes});
  }
  return ScalableBloomFilter::Restore(ref.error_rate, ref.expansion, shapes, limits, budget, out,
                                      ref.seed, ref.layout, ref.tightening);
}

FilterStatus RestoreLike(const Facts& ref, const FilterLimits& limits, MemoryBudget* budget,
                         std::unique_ptr<CountingBloomFilter>* out) {
  std::vector<CountingBloomLayerShape> shapes;
  for (const Facts::Layer& l : ref.layers) {
    shapes.push_back(CountingBloomLayerShape{l.capacity, 0, l.error_rate, l.cells, l.probes});
  }
  return CountingBloomFilter::Restore(ref.error_rate, ref.expansion, ref.counter_bits, shapes,
                                      limits, budget, out, ref.seed);
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

// A new dest built off the loop: the filter (kOk), and its description as
// created (empty, before the sources were merged in: its creation record).
template <typename Filter>
struct MergedDest {
  FilterStatus status = FilterStatus::kOk;
  std::unique_ptr<Filter> filter;
  FilterHeader created;
};

// The new dest of a merge of `sources` (distinct, checked against `ref`),
// as an inline merge makes it: created empty in the reference's shapes,
// then every source combined into it. Reads only what it was given and the
// memory budget, so it may run on the filter maker's thread.
template <typename Filter>
MergedDest<Filter> BuildMergedDest(const Facts& ref, const std::vector<EntryPtr>& sources,
                                   const FilterLimits& limits, MemoryBudget* budget) {
  MergedDest<Filter> merged;
  std::unique_ptr<Filter> filter;
  merged.status = RestoreLike(ref, limits, budget, &filter);
  if (merged.status != FilterStatus::kOk) return merged;
  AnyFilter created(std::move(filter));
  merged.created = DescribeFilter(created);
  filter = std::move(std::get<std::unique_ptr<Filter>>(created));
  std::vector<const Filter*> inputs;
  for (const EntryPtr& source : sources) inputs.push_back(source->get<Filter>());
  // Checked against the same reference: cannot refuse.
  if (!Combine(*filter, inputs)) merged.status = FilterStatus::kInvalidOptions;
  merged.filter = std::move(filter);
  return merged;
}

// Publishes a dest built off the loop under `dest`, which this run found
// missing with its lock held; journals its creation as an inline merge
// does (the empty dest), before the command's own record.
template <typename Filter>
MergeResult PublishMergedDest(FilterStore& store, const KeyRef& dest, MergedDest<Filter> made) {
  switch (made.status) {
    case FilterStatus::kOk: break;
    case FilterStatus::kOutOfMemory: return Failed(BloomStatus::kOutOfMemory);
    default: return Failed(BloomStatus::kCreateFailed);
  }
  bool inserted = false;
  EntryPtr entry = store.keyspace.Insert(
      dest, std::make_shared<KeyEntry>(std::move(made.filter)), store.now_ms, &inserted,
      [&store, &made](const std::string& name, const KeyEntry&) {
        store.journal.RecordFilterHeader(store.session, store.now_ms, name, made.created);
      });
  // Held exclusively and missing in this run: nothing can have taken it.
  if (!inserted) return Failed(BloomStatus::kCreateFailed);
  entry->MarkModified();
  return {};
}

template <typename Filter>
MergeResult Merge(FilterStore& store, const KeyRef& dest, std::span<const KeyRef> sources,
                  CommandContext* ctx) {
  EntryPtr dest_entry;
  if (MergeResult found = FindInput<Filter>(store, dest, /*missing_ok=*/true, sources[0].name,
                                            &dest_entry);
      found.status != BloomStatus::kOk) {
    return found;
  }
  const std::string_view ref_name = dest_entry != nullptr ? dest.name : sources[0].name;
  std::vector<EntryPtr> inputs;  // holds the sources' entries while they are read
  inputs.reserve(sources.size());
  for (const KeyRef& source : sources) {
    EntryPtr entry;
    if (MergeResult found =
            FindInput<Filter>(store, source, /*missing_ok=*/false, ref_name, &entry);
        found.status != BloomStatus::kOk) {
      return found;
    }
    inputs.push_back(std::move(entry));
  }
  // Every check before the first change: a refused merge changes nothing.
  const Facts ref =
      FactsOf(dest_entry != nullptr ? *dest_entry->get<Filter>() : *inputs[0]->get<Filter>());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (std::optional<MergeDifference> mismatch =
            FirstMismatch(sources[i].name, FactsOf(*inputs[i]->get<Filter>()), ref_name, ref)) {
      return Failed(BloomStatus::kMergeMismatch, std::move(*mismatch));
    }
  }
  if (dest_entry == nullptr && ctx != nullptr) {
    uint64_t bytes = 0;
    const std::vector<EntryPtr> distinct = DistinctSources(inputs, &bytes);
    if (ctx->HasMadeFilter() || ctx->WouldPark(bytes)) {
      MergedDest<Filter> made;
      auto build = [ref, distinct, limits = store.limits, budget = store.budget] {
        return BuildMergedDest<Filter>(ref, distinct, limits, budget);
      };
      if (!BuildFromSourcesOffLoop(*ctx, bytes, distinct, build, &made)) {
        return MergeResult{.parked = true};
      }
      return PublishMergedDest(store, dest, std::move(made));
    }
  }
  if (dest_entry == nullptr) {
    // The first source's shapes, empty: Restore sizes and charges it whole.
    std::unique_ptr<Filter> created;
    switch (RestoreLike(ref, store.limits, store.budget, &created)) {
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


// ------------------------------------------------------------ windowed ---
// Windowed filters merge generation by generation: the inputs must have the
// same parameters, window and generations, hash alike, and have their
// current generations start at the same instant on the window clock (the
// same boundaries), so that each input's generation k periods back covers
// the same period as every other's. The generations at each offset then
// merge as plain filters do (the same layer shapes, else the mismatch
// names the offset); a generation the destination lacks is made empty in
// the shape of the first source's and then merged into.

// The generation filter type of a windowed filter.
template <typename W>
struct WindowGen;
template <>
struct WindowGen<WindowedBloomFilter> {
  using type = ScalableBloomFilter;
};
template <>
struct WindowGen<WindowedCountingBloomFilter> {
  using type = CountingBloomFilter;
};
template <typename W>
using GenOf = typename WindowGen<W>::type;

uint32_t CounterBitsOf(const WindowedBloomFilter&) { return 0; }
uint32_t CounterBitsOf(const WindowedCountingBloomFilter& f) { return f.counter_bits(); }

// What a windowed input is judged by, at the window clock's `now`.
struct WindowFacts {
  double error_rate;
  uint64_t capacity;
  uint32_t expansion, counter_bits;
  uint64_t window_ms;
  uint32_t generations;
  uint64_t seed;
  uint64_t at;             // the generation lookups judge by (LookupAt)
  int64_t current_start;   // when that generation began on the window clock
};

template <typename W>
WindowFacts WindowFactsOf(const W& f, int64_t now) {
  const uint64_t at = f.ring().LookupAt(now);
  return WindowFacts{f.error_rate(), f.capacity(), f.expansion(), CounterBitsOf(f),
                     f.window_ms(), f.generations(), f.hash_seed(), at,
                     f.origin_ms() + static_cast<int64_t>(at * f.ring().period_ms())};
}

std::optional<MergeDifference> WindowMismatch(std::string_view name, const WindowFacts& w,
                                              std::string_view ref_name, const WindowFacts& ref) {
  auto differ = [&](std::string_view what, std::string value, std::string theirs) {
    return Differ(name, what, std::move(value), ref_name, std::move(theirs));
  };
  if (w.error_rate != ref.error_rate) {
    return differ("error rate", Number(w.error_rate), Number(ref.error_rate));
  }
  if (w.capacity != ref.capacity) return differ("capacity", Number(w.capacity), Number(ref.capacity));
  if (w.expansion != ref.expansion) {
    return differ("expansion", Number(uint64_t{w.expansion}), Number(uint64_t{ref.expansion}));
  }
  if (w.counter_bits != ref.counter_bits) {
    return differ("counter bits", Number(uint64_t{w.counter_bits}),
                  Number(uint64_t{ref.counter_bits}));
  }
  if (w.window_ms != ref.window_ms) {
    return differ("window", Number(w.window_ms) + " ms", Number(ref.window_ms) + " ms");
  }
  if (w.generations != ref.generations) {
    return differ("generations", Number(uint64_t{w.generations}),
                  Number(uint64_t{ref.generations}));
  }
  if (w.seed != ref.seed) return differ("", "another seed", "its own");
  if (w.current_start != ref.current_start) {
    return differ("its current generation starting at",
                  Number(static_cast<uint64_t>(w.current_start)) + " ms",
                  Number(static_cast<uint64_t>(ref.current_start)) + " ms");
  }
  return std::nullopt;
}

// The live generation `back` periods before `at`, or nullptr.
template <typename Gen>
Gen* GenerationBack(const std::vector<typename WindowGenerations<Gen>::Slot>& slots, uint64_t at,
                    uint64_t back) {
  if (back > at) return nullptr;
  const uint64_t g = at - back;
  const auto& slot = slots[g % slots.size()];
  return slot.filter != nullptr && slot.generation == g ? slot.filter.get() : nullptr;
}

// The new_items of generation `at - back` (BF.CARD's share), 0 if absent.
template <typename Gen>
uint64_t NewItemsBack(const WindowGenerations<Gen>& ring, uint64_t at, uint64_t back) {
  using Slots = std::vector<typename WindowGenerations<Gen>::Slot>;
  return ring.Shared([&](const Slots& slots) -> uint64_t {
    if (GenerationBack<Gen>(slots, at, back) == nullptr) return 0;
    return slots[(at - back) % slots.size()].new_items.load(std::memory_order_relaxed);
  });
}

template <typename W>
MergeResult FindWindowedInput(FilterStore& store, const KeyRef& key, bool missing_ok,
                              std::string_view ref_name, EntryPtr* entry) {
  using Served = std::conditional_t<std::is_same_v<W, WindowedBloomFilter>, ScalableBloomFilter,
                                    CountingBloomFilter>;
  const Lookup lookup = FindFilter<Served>(store, key, entry);
  if (lookup == Lookup::kMissing && missing_ok) return {};
  const BloomStatus status = BloomLookupStatus(lookup, BloomStatus::kNotFound);
  if (status != BloomStatus::kOk) return Failed(status);
  if ((*entry)->get<W>() == nullptr) {  // a plain filter among windowed ones
    return Failed(BloomStatus::kMergeMismatch, *Differ(key.name, "", "no window", ref_name, "one"));
  }
  return {};
}

void SetNewItems(WindowedBloomFilter& f, uint64_t g, uint64_t largest, uint64_t sum) {
  // BF.CARD's share of the merged generation: its distinct items, as the
  // bits estimate them, within [the largest input's, the inputs' sum].
  using Slots = std::vector<WindowGenerations<ScalableBloomFilter>::Slot>;
  f.ring().Shared([&](Slots& slots) {
    auto& slot = slots[g % slots.size()];
    slot.new_items.store(std::clamp(slot.filter->items(), largest, sum),
                         std::memory_order_relaxed);
  });
}
void SetNewItems(WindowedCountingBloomFilter&, uint64_t, uint64_t, uint64_t) {}

template <typename W>
MergeResult MergeWindowedFilters(FilterStore& store, const KeyRef& dest,
                                 std::span<const KeyRef> sources) {
  using Gen = GenOf<W>;
  using Ring = WindowGenerations<Gen>;
  using Slots = std::vector<typename Ring::Slot>;
  const int64_t now = store.window_now_ms;
  EntryPtr dest_entry;
  const std::string_view first_name = sources[0].name;
  if (MergeResult found =
          FindWindowedInput<W>(store, dest, /*missing_ok=*/true, first_name, &dest_entry);
      found.status != BloomStatus::kOk) {
    return found;
  }
  const std::string_view ref_name = dest_entry != nullptr ? dest.name : first_name;
  std::vector<EntryPtr> inputs;
  for (const KeyRef& source : sources) {
    EntryPtr entry;
    if (MergeResult found =
            FindWindowedInput<W>(store, source, /*missing_ok=*/false, ref_name, &entry);
        found.status != BloomStatus::kOk) {
      return found;
    }
    inputs.push_back(std::move(entry));
  }
  const W& ref = dest_entry != nullptr ? *dest_entry->get<W>() : *inputs[0]->get<W>();
  const WindowFacts ref_facts = WindowFactsOf(ref, now);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (std::optional<MergeDifference> mismatch = WindowMismatch(
            sources[i].name, WindowFactsOf(*inputs[i]->get<W>(), now), ref_name, ref_facts)) {
      return Failed(BloomStatus::kMergeMismatch, std::move(*mismatch));
    }
  }
  // Each offset's generations against that offset's reference (dest's, else
  // the first source's that has one), every check before the first change.
  const uint32_t n = ref.generations();
  std::vector<std::optional<Facts>> shape(n + 1);
  std::vector<std::string> shape_name(n + 1);
  auto check = [&](const W& f, std::string_view name) -> std::optional<MergeDifference> {
    const uint64_t at = f.ring().LookupAt(now);
    return f.ring().Shared([&](const Slots& slots) -> std::optional<MergeDifference> {
      for (uint32_t back = 0; back <= n; ++back) {
        const Gen* g = GenerationBack<Gen>(slots, at, back);
        if (g == nullptr) continue;
        Facts facts = FactsOf(*g);
        if (!shape[back]) {
          shape[back] = std::move(facts);
          shape_name[back] = std::string(name);
          continue;
        }
        if (std::optional<MergeDifference> what =
                FirstMismatch(name, facts, shape_name[back], *shape[back])) {
          what->generation_back = back;
          return what;
        }
      }
      return std::nullopt;
    });
  };
  if (dest_entry != nullptr) {
    if (std::optional<MergeDifference> m = check(*dest_entry->get<W>(), dest.name)) {
      return Failed(BloomStatus::kMergeMismatch, std::move(*m));
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (std::optional<MergeDifference> m = check(*inputs[i]->get<W>(), sources[i].name)) {
      return Failed(BloomStatus::kMergeMismatch, std::move(*m));
    }
  }
  // The result is logged whole (its generations came from the clock, which
  // a replay must not ask again), so it must fit one log record: bounded
  // above by the inputs' sizes together.
  uint64_t bound = dest_entry != nullptr ? dest_entry->get<W>()->memory_bytes() : 0;
  for (const EntryPtr& input : inputs) bound += input->get<W>()->memory_bytes();
  if (!store.journal.CanTake(store.session, 2 * bound)) {
    return Failed(BloomStatus::kTooLargeToLog);
  }
  // Filters merged in already: dest itself, and the first source when dest
  // is made as its copy. A source named twice merges once.
  std::vector<const W*> merged;
  if (dest_entry == nullptr) {
    // A copy of the first source (its generations, counts and clock).
    AnyFilter copy = CloneFilter(inputs[0]->filter(), store.budget);
    auto* held = std::get_if<std::unique_ptr<W>>(&copy);
    if (held == nullptr || *held == nullptr) return Failed(BloomStatus::kOutOfMemory);
    merged.push_back(inputs[0]->get<W>());
    switch (StoreNewFilter(store, dest, std::move(*held), /*fail_if_exists=*/false,
                           &dest_entry)) {
      case StoreOutcome::kStored:
      case StoreOutcome::kExisting: break;  // not while we hold the key
      case StoreOutcome::kItemExists:
      case StoreOutcome::kWrongType: return Failed(BloomStatus::kWrongType);
    }
  }
  W& target = *dest_entry->get<W>();
  merged.push_back(&target);
  std::vector<const W*> others;
  for (const EntryPtr& input : inputs) {
    const W* f = input->get<W>();
    if (std::find(merged.begin(), merged.end(), f) != merged.end()) continue;
    merged.push_back(f);
    others.push_back(f);
  }
  if (target.AdvanceTo(now) != FilterStatus::kOk) return Failed(BloomStatus::kOutOfMemory);
  const uint64_t at = target.ring().LookupAt(now);
  for (uint32_t back = 0; back <= n && back <= at; ++back) {
    std::vector<const Gen*> gens;  // they stay put: every input's key is held exclusively
    uint64_t largest = 0, sum = 0;
    for (const W* f : others) {
      const uint64_t f_at = f->ring().LookupAt(now);
      const Gen* g = f->ring().Shared(
          [&](const Slots& slots) -> const Gen* { return GenerationBack<Gen>(slots, f_at, back); });
      if (g == nullptr) continue;
      gens.push_back(g);
      const uint64_t items = NewItemsBack<Gen>(f->ring(), f_at, back);
      largest = std::max(largest, items);
      sum += items;
    }
    if (gens.empty()) continue;
    auto mine_of = [&]() -> Gen* {
      return target.ring().Shared([&](const Slots& slots) -> Gen* {
        return const_cast<Gen*>(GenerationBack<Gen>(slots, at, back));
      });
    };
    Gen* mine = mine_of();
    if (mine == nullptr) {
      std::unique_ptr<Gen> fresh;
      if (RestoreLike(FactsOf(*gens[0]), store.limits, store.budget, &fresh) != FilterStatus::kOk ||
          !target.ring().Install(at - back, std::move(fresh))) {
        return Failed(BloomStatus::kOutOfMemory);
      }
      mine = mine_of();
    } else {
      const uint64_t items = NewItemsBack<Gen>(target.ring(), at, back);
      largest = std::max(largest, items);
      sum += items;
    }
    if (!Combine(*mine, gens)) return Failed(BloomStatus::kMergeMismatch);
    SetNewItems(target, at - back, largest, sum);
  }
  dest_entry->MarkModified();
  // Journaled whole, with its bits (the command is not replayed).
  store.journal.RecordFilter(store.session, store.now_ms, dest.name, dest_entry->filter(),
                             /*with_payload=*/true);
  MergeResult done;
  done.journaled = true;
  return done;
}

// Whether the merge is over windowed filters: the reference (dest if it
// exists, else the first source) decides.
template <typename W>
bool WindowedReference(FilterStore& store, const KeyRef& dest, std::span<const KeyRef> sources) {
  EntryPtr entry = store.keyspace.Find(dest, store.now_ms);
  if (entry == nullptr && !sources.empty()) entry = store.keyspace.Find(sources[0], store.now_ms);
  return entry != nullptr && entry->get<W>() != nullptr;
}

}  // namespace

MergeResult MergeBloom(FilterStore& store, const KeyRef& dest, std::span<const KeyRef> sources,
                       CommandContext* ctx) {
  if (WindowedReference<WindowedBloomFilter>(store, dest, sources)) {
    return MergeWindowedFilters<WindowedBloomFilter>(store, dest, sources);
  }
  return Merge<ScalableBloomFilter>(store, dest, sources, ctx);
}

MergeResult MergeCounting(FilterStore& store, const KeyRef& dest,
                          std::span<const KeyRef> sources, CommandContext* ctx) {
  if (WindowedReference<WindowedCountingBloomFilter>(store, dest, sources)) {
    return MergeWindowedFilters<WindowedCountingBloomFilter>(store, dest, sources);
  }
  return Merge<CountingBloomFilter>(store, dest, sources, ctx);
}

std::string MergeFailureText(std::string_view command, const MergeResult& result) {
  const MergeDifference& d = result.difference;
  switch (result.status) {
    case BloomStatus::kMergeMismatch:
      if (d.key.empty()) break;  // a refusal the checks did not foresee
      if (d.generation_back) {
        return errors::MergeGenerationMismatch(command, d.key, d.what, d.value, d.reference,
                                               d.reference_value, *d.generation_back);
      }
      return errors::MergeMismatch(command, d.key, d.what, d.value, d.reference,
                                   d.reference_value);
    case BloomStatus::kMergeUnsupported: return errors::MergeUnsupported(command, d.key, d.value);
    default: break;
  }
  return std::string(BloomStatusText(result.status));
}

}  // namespace bloomgate
