// Filter microbenchmarks (Google Benchmark): what one add and one lookup cost
// in the filter library, against two references measured in the same process:
//
//  - the machine's own random-access latency: a dependent pointer chase over
//    the same footprint (one 64-byte node per cache line, one random cycle),
//    and 16 independent chases at once (how far misses overlap);
//  - a textbook Bloom filter built here: k probes scattered over the whole
//    array (Kirsch-Mitzenmacher double hashing, g_i = h1 + i*h2, mapped with
//    fastrange), the same bits and the same 128-bit item hash.
//
// Every figure is "ns per item"; bench/filter_report.py turns the JSON output
// into ratios against those references. Names read
//   <structure>/<operation>/<mode>/<footprint>
// where mode is
//   single  one item at a time, LFENCE after each: the next item is not even
//           hashed before this one's answer is in, so this is the latency of
//           one lookup (what a server pays per BF.EXISTS);
//   loop    a plain loop of independent items: the CPU's out-of-order window
//           overlaps consecutive lookups by itself;
//   batchN  N items hashed, then their N lines prefetched back to back, then
//           probed (what BF.MEXISTS / BF.MADD can do). BlockedBloom has no
//           batch API, so the batching is written here with
//           BlockedBloom::Prefetch followed by MayContain / Add;
//           ScalableBloomFilter exposes neither, so it has no batch rows.
//   batch16_interleaved  the same, but each item hashed and prefetched in
//           turn (see RunLookups for why that is slower here).
//
// whatif_* rows try a change to filters/ inside the benchmark, on the
// library's own bits, so a lever is measured before anyone pulls it.
//
// Run `filter_bench --help` for the flags added to Google Benchmark's.

#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "filters/blocked_bloom.h"
#include "filters/bloom_math.h"
#include "filters/key_hash.h"
#include "filters/limits.h"
#include "filters/redisbloom_layout.h"
#include "filters/scalable_bloom_filter.h"

namespace bloomgate {
namespace {

constexpr uint64_t kKiB = uint64_t{1} << 10;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kHugePage = 2 * kMiB;  // x86-64 transparent huge page

// Items are 16 bytes {id, salt}: positives are ids [0, filled) with
// kPositiveSalt; negatives use kNegativeSalt, so they were never added.
constexpr uint64_t kPositiveSalt = 0x706f736974697665ull;  // "positive"
constexpr uint64_t kNegativeSalt = 0x6e65676174697665ull;  // "negative"
// Negative ids are drawn from 2^40 values: never repeated in practice.
constexpr uint64_t kNegativeUniverse = uint64_t{1} << 40;

// ---------------------------------------------------------------------------
// Options: flags of our own, removed from argv before Google Benchmark's.

struct Options {
  std::vector<uint64_t> footprints;  // bytes of each filter / chase ring
  uint64_t max_fill = 8 * kMiB;      // items added to a lookup filter at most
  uint64_t layer_items = 32 * kMiB;  // total items of the layered filters
  uint64_t accuracy_items = 2 * kMiB;
  uint64_t accuracy_queries = 20 * kMiB;
  uint64_t layout_items = 1'000'000;   // capacity of each accuracy/layout filter
  uint64_t layout_queries = 4 * kMiB;  // negative queries per accuracy/layout rate
  bool smoke = false;
};

bool ParseSize(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  const std::string copy(text);
  const double value = std::strtod(copy.c_str(), &end);
  std::string_view unit(end);
  uint64_t scale = 1;
  if (unit == "k" || unit == "K") {
    scale = kKiB;
  } else if (unit == "m" || unit == "M") {
    scale = kMiB;
  } else if (unit == "g" || unit == "G") {
    scale = kGiB;
  } else if (!unit.empty()) {
    return false;
  }
  if (!(value > 0)) return false;
  *out = static_cast<uint64_t>(value * static_cast<double>(scale));
  return true;
}

std::string SizeLabel(uint64_t bytes) {
  char text[32];
  if (bytes % kGiB == 0) {
    std::snprintf(text, sizeof text, "%" PRIu64 "GiB", bytes / kGiB);
  } else if (bytes % kMiB == 0) {
    std::snprintf(text, sizeof text, "%" PRIu64 "MiB", bytes / kMiB);
  } else {
    std::snprintf(text, sizeof text, "%" PRIu64 "KiB", bytes / kKiB);
  }
  return text;
}

// "MemAvailable" of /proc/meminfo in bytes, 0 if unknown.
uint64_t MemAvailableBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * kKiB;
  }
  return 0;
}

// AnonHugePages of this process in KiB (/proc/self/smaps_rollup), to check
// that a huge-page request was granted.
uint64_t AnonHugePagesKiB() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("AnonHugePages:", 0) == 0) return std::strtoull(line.c_str() + 14, nullptr, 10);
  }
  return 0;
}

std::string ReadFirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// ---------------------------------------------------------------------------
// Small helpers on the hot path.

// splitmix64 (Steele, Lea, Flood 2014): a few cycles per number, no memory.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) by Lemire's fastrange.
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }

 private:
  uint64_t state_;
};

inline uint64_t FastRange(uint64_t x, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(x) * n) >> 64);
}

inline KeyHash HashItem(uint64_t id, uint64_t salt) {
  const uint64_t item[2] = {id, salt};
  return HashKey(std::string_view(reinterpret_cast<const char*>(item), sizeof item));
}

// Keeps the next item from starting before this one has finished: LFENCE
// does not let later instructions execute before every earlier one has
// completed (dispatch-serialising on AMD Zen 2 and later and on Intel), so a
// loop of single lookups measures latency, not overlapped throughput. It
// costs a few cycles, which the "loop" rows (no fence) show.
inline void SerializeExecution() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_lfence();
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

// Asks the kernel to back [p, p + bytes) with 2 MiB pages now (MADV_COLLAPSE,
// Linux 6.1+), for the "huge pages for big filters" lever. The array is
// already written; only whole aligned 2 MiB ranges inside it can collapse.
void CollapseToHugePages(const void* p, uint64_t bytes) {
#ifdef MADV_HUGEPAGE
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHugePage - 1);
  if (end <= begin) return;
  void* start = reinterpret_cast<void*>(begin);
  madvise(start, end - begin, MADV_HUGEPAGE);
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // linux/mman.h; not in older glibc headers
#endif
  madvise(start, end - begin, MADV_COLLAPSE);
#else
  (void)p;
  (void)bytes;
#endif
}

// ---------------------------------------------------------------------------
// The baseline: a textbook (standard) Bloom filter, as RedisBloom builds one.
// k probes anywhere in the bit array: g_i = h1 + i * h2 (Kirsch and
// Mitzenmacher, "Less hashing, same performance", 2006) with h1, h2 the two
// halves of the same XXH3-128 item hash the blocked filter uses (h2 forced
// odd), each mapped to [0, bits) with fastrange. Plain (non-atomic) words, as
// in single-threaded RedisBloom. Same allocator as BlockedBloom (64-byte
// aligned operator new), so both get the same pages.
class TextbookBloom {
 public:
  TextbookBloom(uint64_t bits, uint32_t probes)
      : num_words_((bits + 63) / 64), bits_(num_words_ * 64), probes_(probes) {
    words_ = static_cast<uint64_t*>(
        ::operator new(num_words_ * sizeof(uint64_t), std::align_val_t{64}));
    std::memset(words_, 0, num_words_ * sizeof(uint64_t));
  }
  ~TextbookBloom() { ::operator delete(words_, std::align_val_t{64}); }
  TextbookBloom(const TextbookBloom&) = delete;
  TextbookBloom& operator=(const TextbookBloom&) = delete;

  bool Add(const KeyHash& h) {
    uint64_t g = h.lo;
    const uint64_t step = h.hi | 1;
    bool flipped = false;
    for (uint32_t i = 0; i < probes_; ++i) {
      const uint64_t bit = FastRange(g, bits_);
      const uint64_t mask = uint64_t{1} << (bit & 63);
      flipped |= (words_[bit >> 6] & mask) == 0;
      words_[bit >> 6] |= mask;
      g += step;
    }
    return flipped;
  }

  bool MayContain(const KeyHash& h) const {
    uint64_t g = h.lo;
    const uint64_t step = h.hi | 1;
    for (uint32_t i = 0; i < probes_; ++i) {
      const uint64_t bit = FastRange(g, bits_);
      if ((words_[bit >> 6] & (uint64_t{1} << (bit & 63))) == 0) return false;
      g += step;
    }
    return true;
  }

  // All k lines: the textbook layout needs k prefetches per item.
  void Prefetch(const KeyHash& h) const {
    uint64_t g = h.lo;
    const uint64_t step = h.hi | 1;
    for (uint32_t i = 0; i < probes_; ++i) {
      __builtin_prefetch(&words_[FastRange(g, bits_) >> 6], /*rw=*/0, /*locality=*/3);
      g += step;
    }
  }

  uint64_t bits() const { return bits_; }
  uint64_t bytes() const { return num_words_ * sizeof(uint64_t); }
  const uint64_t* words() const { return words_; }

 private:
  uint64_t* words_ = nullptr;
  const uint64_t num_words_;
  const uint64_t bits_;
  const uint32_t probes_;
};

// RedisBloom's sizing for a layer (bloom.c, bloom_init): bits per entry
// -ln(p)/ln(2)^2 and k = ceil(ln 2 * bpe); without its rounding of the bit
// count up to a power of two, which would only make the baseline bigger.
std::unique_ptr<TextbookBloom> MakeTextbookForRate(uint64_t capacity, double error_rate) {
  const double ln2 = std::log(2.0);
  const double bpe = -std::log(error_rate) / (ln2 * ln2);
  const auto bits = static_cast<uint64_t>(std::ceil(static_cast<double>(capacity) * bpe));
  const auto probes = static_cast<uint32_t>(std::ceil(ln2 * bpe));
  return std::make_unique<TextbookBloom>(bits, probes);
}

// ---------------------------------------------------------------------------
// The memory latency probe: one random cycle through every 64-byte line of
// the footprint (a random permutation, linked in order, the last node back to
// the first), so each hop is a dependent load to an unpredictable line.

struct alignas(64) ChaseNode {
  ChaseNode* next;
  char pad[64 - sizeof(ChaseNode*)];
};
static_assert(sizeof(ChaseNode) == 64);

class ChaseRing {
 public:
  static constexpr int kChains = 16;

  ChaseRing(uint64_t bytes, bool huge_pages) : count_(bytes / sizeof(ChaseNode)) {
    if (huge_pages) {
      // mmap + MADV_HUGEPAGE before the first touch: faulted in as 2 MiB pages.
      mapped_bytes_ = (count_ * sizeof(ChaseNode) + kHugePage - 1) / kHugePage * kHugePage +
                      kHugePage;
      void* p = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      mapping_ = p;
      const uintptr_t aligned =
          (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
      nodes_ = reinterpret_cast<ChaseNode*>(aligned);
#ifdef MADV_HUGEPAGE
      madvise(nodes_, mapped_bytes_ - kHugePage, MADV_HUGEPAGE);
#endif
    } else {
      // Same allocator as the filters (64-byte aligned operator new).
      nodes_ = static_cast<ChaseNode*>(
          ::operator new(count_ * sizeof(ChaseNode), std::align_val_t{64}));
    }
    std::vector<uint32_t> order(count_);
    for (uint64_t i = 0; i < count_; ++i) order[i] = static_cast<uint32_t>(i);
    Rng rng(0xc4a5e);
    for (uint64_t i = count_ - 1; i > 0; --i) std::swap(order[i], order[rng.Below(i + 1)]);
    for (uint64_t i = 0; i < count_; ++i) {
      nodes_[order[i]].next = &nodes_[order[(i + 1) % count_]];
    }
    for (int c = 0; c < kChains; ++c) entries_[c] = &nodes_[order[count_ / kChains * c]];
  }

  ~ChaseRing() {
    if (mapping_ != nullptr) {
      munmap(mapping_, mapped_bytes_);
    } else {
      ::operator delete(nodes_, std::align_val_t{64});
    }
  }
  ChaseRing(const ChaseRing&) = delete;
  ChaseRing& operator=(const ChaseRing&) = delete;

  ChaseNode* entry(int chain) const { return entries_[chain]; }

 private:
  const uint64_t count_;
  ChaseNode* nodes_ = nullptr;
  void* mapping_ = nullptr;
  uint64_t mapped_bytes_ = 0;
  ChaseNode* entries_[kChains] = {};
};

// ---------------------------------------------------------------------------
// One slot holds the object the current benchmarks share (a filled filter, a
// chase ring). Benchmarks are registered grouped by object, so each object is
// built once; asking for another frees the previous one first, so at most one
// large object is alive (peak memory ~ the largest footprint).

class Slot {
 public:
  template <class T, class Make>
  T& Get(const std::string& key, Make make) {
    if (key != key_) {
      object_.reset();  // free before building the next one
      key_.clear();
      std::shared_ptr<T> made = make();
      object_ = made;
      key_ = key;
    }
    return *static_cast<T*>(object_.get());
  }

 private:
  std::string key_;
  std::shared_ptr<void> object_;
};

Slot& TheSlot() {
  static Slot slot;
  return slot;
}

// ---------------------------------------------------------------------------
// Fixtures: a filter and what was put in it.

// The 1% design point every footprint row uses: 10.11 bits/key and 7 probes
// (ChooseBlockedBloomShape; see bloom_math.h), so capacity = bits / 10.11.
BloomShape OnePercentShape(uint64_t bytes) {
  const BloomShape design = ChooseBlockedBloomShape(0.01, /*capacity=*/1'000'000);
  BloomShape shape = design;
  shape.bits = bytes * 8;
  return shape;
}

uint64_t CapacityFor(const BloomShape& shape) {
  return static_cast<uint64_t>(static_cast<double>(shape.bits) / shape.bits_per_key);
}

struct BlockedFixture {
  std::unique_ptr<BlockedBloom> filter;
  uint64_t capacity = 0;
  uint64_t filled = 0;  // positives are ids [0, filled)
  uint64_t huge_kib = 0;
};

struct TextbookFixture {
  std::unique_ptr<TextbookBloom> filter;
  uint64_t capacity = 0;
  uint64_t filled = 0;
};

struct ScalableFixture {
  std::unique_ptr<ScalableBloomFilter> filter;
  uint64_t capacity = 0;
  uint64_t filled = 0;
};

std::unique_ptr<ScalableBloomFilter> MakeScalable(double error_rate, uint64_t capacity,
                                                  uint32_t expansion) {
  ScalableBloomOptions options;
  options.error_rate = error_rate;
  options.capacity = capacity;
  options.expansion = expansion;
  FilterLimits limits;
  limits.max_filter_bytes = 0;  // no per-filter cap in a benchmark
  std::unique_ptr<ScalableBloomFilter> filter;
  const FilterStatus status = ScalableBloomFilter::Create(options, limits, /*budget=*/nullptr,
                                                          &filter);
  if (status != FilterStatus::kOk) {
    std::fprintf(stderr, "ScalableBloomFilter::Create(%g, %" PRIu64 ", %u): %s\n", error_rate,
                 capacity, expansion, ToString(status));
    std::abort();
  }
  return filter;
}

// Fills with min(capacity, max_fill) items. A filter at capacity has about
// half its bits set; the biggest ones (capacity > max_fill: 8M items fill
// 10 MiB) stay sparser, which only matters for where a negative lookup stops
// inside its line (the line is fetched either way). The `fill` counter says
// how full each one is.
std::shared_ptr<BlockedFixture> MakeBlockedFixture(uint64_t bytes, uint64_t max_fill, bool huge) {
  auto fx = std::make_shared<BlockedFixture>();
  const BloomShape shape = OnePercentShape(bytes);
  fx->filter = BlockedBloom::Create(shape);
  if (fx->filter == nullptr) throw std::bad_alloc();
  if (huge) {
    CollapseToHugePages(fx->filter->words(), fx->filter->bytes());
    fx->huge_kib = AnonHugePagesKiB();
  }
  fx->capacity = CapacityFor(shape);
  fx->filled = std::min(fx->capacity, max_fill);
  for (uint64_t id = 0; id < fx->filled; ++id) fx->filter->Add(HashItem(id, kPositiveSalt));
  return fx;
}

std::shared_ptr<TextbookFixture> MakeTextbookFixture(uint64_t bytes, uint64_t max_fill) {
  auto fx = std::make_shared<TextbookFixture>();
  const BloomShape shape = OnePercentShape(bytes);
  // Same bits as the blocked filter; the optimal k for 10.11 bits/key is
  // round(10.11 * ln 2) = 7, the blocked filter's count too.
  const auto probes = static_cast<uint32_t>(std::lround(shape.bits_per_key * std::log(2.0)));
  fx->filter = std::make_unique<TextbookBloom>(shape.bits, probes);
  fx->capacity = CapacityFor(shape);
  fx->filled = std::min(fx->capacity, max_fill);
  for (uint64_t id = 0; id < fx->filled; ++id) fx->filter->Add(HashItem(id, kPositiveSalt));
  return fx;
}

std::shared_ptr<ScalableFixture> MakeScalableFixture(uint64_t bytes, uint64_t max_fill) {
  auto fx = std::make_shared<ScalableFixture>();
  // NONSCALING at 1%: one layer of the same 10.11 bits/key as the rows above.
  fx->capacity = CapacityFor(OnePercentShape(bytes));
  fx->filter = MakeScalable(0.01, fx->capacity, /*expansion=*/0);
  fx->filled = std::min(fx->capacity, max_fill);
  bool added = false;
  for (uint64_t id = 0; id < fx->filled; ++id) fx->filter->Add(HashItem(id, kPositiveSalt), &added);
  return fx;
}

// The two objects a footprint's memory rows share: the chase ring and the
// blocked filter, so the paired rows can alternate between them. Both stay
// alive while 2 x footprint <= kPairedLimitBytes; above that, asking for one
// frees the other (and there are no paired rows).
constexpr uint64_t kPairedLimitBytes = 4 * kGiB;

struct FootprintFixture {
  uint64_t bytes = 0;
  uint64_t max_fill = 0;
  std::unique_ptr<ChaseRing> ring;
  std::shared_ptr<BlockedFixture> blocked;
  ChaseNode* cursor = nullptr;  // where the paired rows' chase left off

  ChaseRing& Ring() {
    if (ring == nullptr) {
      if (2 * bytes > kPairedLimitBytes) blocked.reset();
      ring = std::make_unique<ChaseRing>(bytes, /*huge_pages=*/false);
      cursor = ring->entry(0);
    }
    return *ring;
  }
  BlockedFixture& Blocked() {
    if (blocked == nullptr) {
      if (2 * bytes > kPairedLimitBytes) ring.reset();
      blocked = MakeBlockedFixture(bytes, max_fill, /*huge=*/false);
    }
    return *blocked;
  }
};

FootprintFixture& GetFootprint(uint64_t bytes, uint64_t max_fill) {
  return TheSlot().Get<FootprintFixture>("footprint/" + SizeLabel(bytes), [&] {
    auto fx = std::make_shared<FootprintFixture>();
    fx->bytes = bytes;
    fx->max_fill = max_fill;
    return fx;
  });
}

// CPU time of this thread in ns: the paired rows time blocks of 2048
// operations each (>= 10 us), so the clock's own cost (a system call, well
// under 1 us) stays under a few percent.
uint64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Lookup adapters: one call shape for the three structures.
struct BlockedOps {
  static bool MayContain(const BlockedBloom& f, const KeyHash& h) { return f.MayContain(h); }
  static void Prefetch(const BlockedBloom& f, const KeyHash& h) { f.Prefetch(h); }
};
// What-if, a lever for filters/ measured here (the server does not use it):
// the exact layout and answers of BlockedBloom::MayContain, but the k probe
// positions computed independently (x_i = lo * M^i with M^i from a table:
// the same values as the library's running product x *= M, which chains k
// 3-cycle multiplications) and all k bits checked without a branch, so a
// negative lookup never mispredicts where it stops. Reads the filter through
// its public words() view.
struct BranchFreeBlockedOps {
  static constexpr auto kPowers = [] {
    std::array<uint64_t, kMaxBloomProbes> powers{};
    uint64_t p = 1;
    for (auto& power : powers) {
      power = p;
      p *= BlockedBloom::kProbeMultiplier;
    }
    return powers;
  }();
  static bool MayContain(const BlockedBloom& f, const KeyHash& h) {
    const uint64_t num_blocks = f.num_words() / BlockedBloom::kWordsPerBlock;
    const std::atomic<uint64_t>* block =
        f.words() + FastRange(h.hi, num_blocks) * BlockedBloom::kWordsPerBlock;
    uint64_t missing = 0;
    for (uint32_t i = 0; i < f.probes(); ++i) {
      const auto bit = static_cast<uint32_t>((h.lo * kPowers[i]) >> (64 - 9));
      // Relaxed: as in BlockedBloom (a read of bits that are only ever set).
      missing |= ~block[bit >> 6].load(std::memory_order_relaxed) & (uint64_t{1} << (bit & 63));
    }
    return missing == 0;
  }
  static void Prefetch(const BlockedBloom& f, const KeyHash& h) { f.Prefetch(h); }
};

struct TextbookOps {
  static bool MayContain(const TextbookBloom& f, const KeyHash& h) { return f.MayContain(h); }
  static void Prefetch(const TextbookBloom& f, const KeyHash& h) { f.Prefetch(h); }
};
struct ScalableOps {
  static bool MayContain(const ScalableBloomFilter& f, const KeyHash& h) {
    return f.MayContain(h);
  }
};

enum class Mode { kSingle, kLoop, kBatch16, kBatch16Interleaved, kBatch100 };

constexpr int BatchSize(Mode mode) {
  return mode == Mode::kBatch16 || mode == Mode::kBatch16Interleaved ? 16
         : mode == Mode::kBatch100                                   ? 100
                                                                     : 1;
}

const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kSingle:
      return "single";
    case Mode::kLoop:
      return "loop";
    case Mode::kBatch16:
      return "batch16";
    case Mode::kBatch16Interleaved:
      return "batch16_interleaved";
    case Mode::kBatch100:
      return "batch100";
  }
  return "?";
}

// Lookups of items drawn uniformly from ids [0, universe) with `salt`.
template <Mode kMode, class Ops, class Filter>
void RunLookups(benchmark::State& state, const Filter& filter, uint64_t universe, uint64_t salt) {
  constexpr int kBatch = BatchSize(kMode);
  Rng rng(0x100c ^ salt);
  uint64_t hits = 0;
  if constexpr (kBatch == 1) {
    for (auto _ : state) {
      hits += Ops::MayContain(filter, HashItem(rng.Below(universe), salt));
      if constexpr (kMode == Mode::kSingle) SerializeExecution();
    }
  } else if constexpr (kMode == Mode::kBatch16Interleaved) {
    // Hash one item, prefetch its line, next item: the obvious loop, and on
    // the reference machine (AMD EPYC under KVM, 4 KiB pages) a slow one:
    // work between prefetches that miss the TLB stalls them (measured with
    // a bare array: 16 prefetches interleaved with 12 multiplies each ran
    // 2x slower than the same work in separate phases).
    KeyHash hashes[kBatch];
    for (auto _ : state) {
      for (int i = 0; i < kBatch; ++i) {
        hashes[i] = HashItem(rng.Below(universe), salt);
        Ops::Prefetch(filter, hashes[i]);
      }
      for (int i = 0; i < kBatch; ++i) hits += Ops::MayContain(filter, hashes[i]);
    }
  } else {
    // Three phases: hash every item, then issue every prefetch back to back,
    // then probe (the probes find their lines in flight or arrived).
    KeyHash hashes[kBatch];
    for (auto _ : state) {
      for (int i = 0; i < kBatch; ++i) hashes[i] = HashItem(rng.Below(universe), salt);
      for (int i = 0; i < kBatch; ++i) Ops::Prefetch(filter, hashes[i]);
      for (int i = 0; i < kBatch; ++i) hits += Ops::MayContain(filter, hashes[i]);
    }
  }
  benchmark::DoNotOptimize(hits);
  const double items = static_cast<double>(state.iterations()) * kBatch;
  state.SetItemsProcessed(static_cast<int64_t>(items));
  state.counters["hit_rate"] = items > 0 ? static_cast<double>(hits) / items : 0;
}

// Adds of new items into a filter that starts empty; each time it reaches
// its capacity it is replaced by an empty one (timer paused), so the figure
// is the mean over filling from empty to full.
template <class Filter>
struct AddFixture {
  std::function<std::unique_ptr<Filter>()> make;
  std::unique_ptr<Filter> filter;
  uint64_t capacity = 0;
  uint64_t added = 0;  // since the last reset
  uint64_t next_id = 0;
};

template <Mode kMode, class Filter, class AddOne, class PrefetchOne>
void RunAdds(benchmark::State& state, AddFixture<Filter>& fx, AddOne add, PrefetchOne prefetch) {
  constexpr int kBatch = BatchSize(kMode);
  KeyHash hashes[kBatch];
  for (auto _ : state) {
    if (fx.added + kBatch > fx.capacity) {
      state.PauseTiming();
      fx.filter.reset();
      fx.filter = fx.make();
      fx.added = 0;
      state.ResumeTiming();
    }
    Filter& filter = *fx.filter;
    if constexpr (kBatch == 1) {
      add(filter, HashItem(fx.next_id++, kPositiveSalt));
      if constexpr (kMode == Mode::kSingle) SerializeExecution();
    } else {
      // Three phases, as the batched lookups.
      for (int i = 0; i < kBatch; ++i) hashes[i] = HashItem(fx.next_id++, kPositiveSalt);
      for (int i = 0; i < kBatch; ++i) prefetch(filter, hashes[i]);
      for (int i = 0; i < kBatch; ++i) add(filter, hashes[i]);
    }
    fx.added += kBatch;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kBatch);
}

// ---------------------------------------------------------------------------
// Layered (scalable) filters: lookup cost against the number of layers.
//
// Both growth rules hold the same total: `total` items, every layer full.
//   exp2: RedisBloom's default expansion 2, first capacity total/(2^L - 1);
//         the newest layer holds half the items, older ones are small.
//   exp1: expansion 1, L equal layers of total/L items (the worst case for a
//         negative lookup: every layer is big, so every layer's line misses).
// Errors halve per layer (first layer at 0.5% for a 1% filter), as in the
// server. The textbook rows use the same capacities and errors with
// RedisBloom's per-layer sizing.

struct LayeredFixture {
  std::unique_ptr<ScalableBloomFilter> filter;
  uint64_t offered = 0;  // ids [0, offered) were added (some were FP-rejected)
  uint64_t bytes = 0;
  uint32_t layers = 0;
};

struct TextbookLayeredFixture {
  std::vector<std::unique_ptr<TextbookBloom>> layers;  // oldest first
  uint64_t offered = 0;
  uint64_t bytes = 0;
};

struct TextbookLayeredOps {
  static bool MayContain(const TextbookLayeredFixture& f, const KeyHash& h) {
    for (size_t i = f.layers.size(); i-- > 0;) {  // newest first, as RedisBloom
      if (f.layers[i]->MayContain(h)) return true;
    }
    return false;
  }
};

std::vector<uint64_t> LayerCapacities(uint64_t total, uint32_t layers, uint32_t expansion) {
  std::vector<uint64_t> capacities;
  if (expansion == 1) {
    capacities.assign(layers, std::max<uint64_t>(1, total / layers));
  } else {
    const uint64_t first = std::max<uint64_t>(1, total / ((uint64_t{1} << layers) - 1));
    for (uint32_t i = 0; i < layers; ++i) capacities.push_back(first << i);
  }
  return capacities;
}

std::shared_ptr<LayeredFixture> MakeLayeredFixture(uint64_t total, uint32_t layers,
                                                   uint32_t expansion) {
  auto fx = std::make_shared<LayeredFixture>();
  const std::vector<uint64_t> capacities = LayerCapacities(total, layers, expansion);
  uint64_t sum = 0;
  for (uint64_t c : capacities) sum += c;
  fx->filter = MakeScalable(0.01, capacities[0], expansion);
  // Add until every layer is full: items() counts adds that flipped a bit,
  // the count growth is decided on, so stop exactly when it reaches the sum.
  uint64_t added_count = 0;
  for (uint64_t id = 0; added_count < sum && id < 4 * sum + 1000; ++id) {
    bool added = false;
    fx->filter->Add(HashItem(id, kPositiveSalt), &added);
    added_count += added;
    fx->offered = id + 1;
  }
  fx->layers = fx->filter->num_layers();
  fx->bytes = fx->filter->memory_bytes();
  return fx;
}

std::shared_ptr<TextbookLayeredFixture> MakeTextbookLayeredFixture(uint64_t total,
                                                                   uint32_t layers,
                                                                   uint32_t expansion) {
  auto fx = std::make_shared<TextbookLayeredFixture>();
  const std::vector<uint64_t> capacities = LayerCapacities(total, layers, expansion);
  double error = 0.01 * 0.5;
  uint64_t id = 0;
  for (uint64_t capacity : capacities) {
    fx->layers.push_back(MakeTextbookForRate(capacity, error));
    for (uint64_t i = 0; i < capacity; ++i) fx->layers.back()->Add(HashItem(id++, kPositiveSalt));
    fx->bytes += fx->layers.back()->bytes();
    error *= 0.5;
  }
  fx->offered = id;
  return fx;
}

// ---------------------------------------------------------------------------
// Registration.

benchmark::internal::Benchmark* Register(const std::string& name,
                                         std::function<void(benchmark::State&)> fn) {
  return benchmark::RegisterBenchmark(name.c_str(), [fn](benchmark::State& state) { fn(state); })
      ->Unit(benchmark::kNanosecond);
}

// `prefix` names the rows; blocked and whatif_branchfree rows share the
// footprint's filter, blocked_2m_pages rows have their own.
template <Mode kMode, class Ops = BlockedOps>
void RegisterBlockedLookups(const std::string& prefix, uint64_t bytes, const Options& o,
                            bool huge) {
  const std::string key = "blocked_2m_pages/" + SizeLabel(bytes);
  auto get = [key, bytes, o, huge]() -> BlockedFixture& {
    if (!huge) return GetFootprint(bytes, o.max_fill).Blocked();
    return TheSlot().Get<BlockedFixture>(key,
                                         [&] { return MakeBlockedFixture(bytes, o.max_fill, huge); });
  };
  for (const bool positive : {true, false}) {
    const std::string name = prefix + (positive ? "/lookup_pos/" : "/lookup_neg/") +
                             ModeName(kMode) + "/" + SizeLabel(bytes);
    Register(name, [get, positive](benchmark::State& state) {
      BlockedFixture& fx = get();
      if (positive) {
        RunLookups<kMode, Ops>(state, *fx.filter, fx.filled, kPositiveSalt);
      } else {
        RunLookups<kMode, Ops>(state, *fx.filter, kNegativeUniverse, kNegativeSalt);
      }
      state.counters["fill"] = static_cast<double>(fx.filled) / static_cast<double>(fx.capacity);
      if (fx.huge_kib != 0) state.counters["huge_MiB"] = static_cast<double>(fx.huge_kib) / 1024;
    });
  }
}

template <Mode kMode>
void RegisterTextbookLookups(uint64_t bytes, const Options& o) {
  const std::string key = "textbook/" + SizeLabel(bytes);
  auto get = [key, bytes, o]() -> TextbookFixture& {
    return TheSlot().Get<TextbookFixture>(key, [&] { return MakeTextbookFixture(bytes, o.max_fill); });
  };
  for (const bool positive : {true, false}) {
    const std::string name = std::string("textbook") +
                             (positive ? "/lookup_pos/" : "/lookup_neg/") + ModeName(kMode) + "/" +
                             SizeLabel(bytes);
    Register(name, [get, positive](benchmark::State& state) {
      TextbookFixture& fx = get();
      if (positive) {
        RunLookups<kMode, TextbookOps>(state, *fx.filter, fx.filled, kPositiveSalt);
      } else {
        RunLookups<kMode, TextbookOps>(state, *fx.filter, kNegativeUniverse, kNegativeSalt);
      }
      state.counters["fill"] = static_cast<double>(fx.filled) / static_cast<double>(fx.capacity);
    });
  }
}

template <Mode kMode>
void RegisterScalableLookups(uint64_t bytes, const Options& o) {
  const std::string key = "scalable/" + SizeLabel(bytes);
  auto get = [key, bytes, o]() -> ScalableFixture& {
    return TheSlot().Get<ScalableFixture>(key, [&] { return MakeScalableFixture(bytes, o.max_fill); });
  };
  for (const bool positive : {true, false}) {
    const std::string name = std::string("scalable") +
                             (positive ? "/lookup_pos/" : "/lookup_neg/") + ModeName(kMode) + "/" +
                             SizeLabel(bytes);
    Register(name, [get, positive](benchmark::State& state) {
      ScalableFixture& fx = get();
      if (positive) {
        RunLookups<kMode, ScalableOps>(state, *fx.filter, fx.filled, kPositiveSalt);
      } else {
        RunLookups<kMode, ScalableOps>(state, *fx.filter, kNegativeUniverse, kNegativeSalt);
      }
      state.counters["fill"] = static_cast<double>(fx.filled) / static_cast<double>(fx.capacity);
    });
  }
}

// ScalableBloomFilter's own batch API (what BF.MEXISTS / BF.MADD call): 100
// items hashed, then MayContainBatch / AddBatch, which prefetch every line
// of every layer and then probe. The `batch100` rows of `blocked` do the
// same from outside over a bare BlockedBloom.
void RunBatchApiLookups(benchmark::State& state, const ScalableBloomFilter& filter,
                        uint64_t universe, uint64_t salt) {
  constexpr int kBatch = 100;
  Rng rng(0x100c ^ salt);
  KeyHash hashes[kBatch];
  bool found[kBatch];
  uint64_t hits = 0;
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) hashes[i] = HashItem(rng.Below(universe), salt);
    filter.MayContainBatch({hashes, kBatch}, found);
    for (int i = 0; i < kBatch; ++i) hits += found[i];
  }
  benchmark::DoNotOptimize(hits);
  const double items = static_cast<double>(state.iterations()) * kBatch;
  state.SetItemsProcessed(static_cast<int64_t>(items));
  state.counters["hit_rate"] = items > 0 ? static_cast<double>(hits) / items : 0;
}

void RegisterScalableBatchLookups(uint64_t bytes, const Options& o) {
  const std::string key = "scalable/" + SizeLabel(bytes);
  auto get = [key, bytes, o]() -> ScalableFixture& {
    return TheSlot().Get<ScalableFixture>(key, [&] { return MakeScalableFixture(bytes, o.max_fill); });
  };
  for (const bool positive : {true, false}) {
    Register(std::string("scalable") + (positive ? "/lookup_pos/" : "/lookup_neg/") +
                 "batch100_api/" + SizeLabel(bytes),
             [get, positive](benchmark::State& state) {
               ScalableFixture& fx = get();
               if (positive) {
                 RunBatchApiLookups(state, *fx.filter, fx.filled, kPositiveSalt);
               } else {
                 RunBatchApiLookups(state, *fx.filter, kNegativeUniverse, kNegativeSalt);
               }
               state.counters["fill"] =
                   static_cast<double>(fx.filled) / static_cast<double>(fx.capacity);
             });
  }
}

template <Mode kMode, class Filter, class Make, class AddOne, class PrefetchOne>
void RegisterAdd(const std::string& structure, uint64_t bytes, Make make, uint64_t capacity,
                 AddOne add, PrefetchOne prefetch) {
  const std::string key = structure + "/add/" + SizeLabel(bytes);
  auto get = [key, make, capacity]() -> AddFixture<Filter>& {
    return TheSlot().Get<AddFixture<Filter>>(key, [&] {
      auto fx = std::make_shared<AddFixture<Filter>>();
      fx->make = make;
      fx->filter = make();
      fx->capacity = capacity;
      return fx;
    });
  };
  Register(structure + "/add/" + ModeName(kMode) + "/" + SizeLabel(bytes),
           [get, add, prefetch](benchmark::State& state) {
             RunAdds<kMode>(state, get(), add, prefetch);
           });
}

void RegisterChase(uint64_t bytes, const Options& o, bool huge, bool parallel) {
  const std::string key = "chase_2m_pages/" + SizeLabel(bytes);
  const uint64_t max_fill = o.max_fill;
  auto get = [key, bytes, huge, max_fill]() -> ChaseRing& {
    if (!huge) return GetFootprint(bytes, max_fill).Ring();
    return TheSlot().Get<ChaseRing>(key, [&] { return std::make_shared<ChaseRing>(bytes, huge); });
  };
  const std::string name = std::string("memory/") +
                           (parallel ? "chase_x16" : huge ? "chase_2m_pages" : "chase") + "/" +
                           SizeLabel(bytes);
  Register(name, [get, parallel, huge](benchmark::State& state) {
    ChaseRing& ring = get();
    constexpr int kHops = 16;
    if (parallel) {
      // 16 independent chains, one hop each per round: misses overlap as far
      // as the core's miss buffers allow.
      ChaseNode* p[ChaseRing::kChains];
      for (int c = 0; c < ChaseRing::kChains; ++c) p[c] = ring.entry(c);
      for (auto _ : state) {
        for (int c = 0; c < ChaseRing::kChains; ++c) p[c] = p[c]->next;
      }
      for (int c = 0; c < ChaseRing::kChains; ++c) benchmark::DoNotOptimize(p[c]);
      state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * ChaseRing::kChains);
    } else {
      ChaseNode* p = ring.entry(0);
      for (auto _ : state) {
        for (int i = 0; i < kHops; ++i) p = p->next;  // each load needs the previous one
      }
      benchmark::DoNotOptimize(p);
      state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kHops);
    }
    if (huge) state.counters["huge_MiB"] = static_cast<double>(AnonHugePagesKiB()) / 1024;
  });
}

// The headline ratios of target 3 from one benchmark: blocks of 2048
// dependent chase hops, single lookups (negative, positive), looped and
// batched lookups, taken in turn on the same footprint, each block timed on
// this thread's CPU clock. Rows measured minutes apart drift with the load
// of a shared machine; these pairs are measured within milliseconds.
void RegisterPaired(uint64_t bytes, const Options& o) {
  const uint64_t max_fill = o.max_fill;
  Register("paired/" + SizeLabel(bytes), [bytes, max_fill](benchmark::State& state) {
    FootprintFixture& fp = GetFootprint(bytes, max_fill);
    fp.Ring();
    BlockedFixture& fx = fp.Blocked();
    const BlockedBloom& filter = *fx.filter;
    constexpr int kBlock = 2048;
    constexpr int kBatch = 100;
    enum { kChase, kSingleNeg, kSinglePos, kLoopNeg, kBatchNeg, kBatchPos, kKinds };
    uint64_t ns[kKinds] = {};
    uint64_t ops[kKinds] = {};
    Rng rng(0x9a1 + bytes);
    uint64_t sink = 0;
    ChaseNode* p = fp.cursor;
    KeyHash hashes[kBatch];
    auto timed = [&](int kind, uint64_t count, auto body) {
      const uint64_t t0 = ThreadCpuNs();
      body();
      ns[kind] += ThreadCpuNs() - t0;
      ops[kind] += count;
    };
    auto batch = [&](uint64_t universe, uint64_t salt) {
      for (int b = 0; b < kBlock / kBatch; ++b) {
        for (int i = 0; i < kBatch; ++i) hashes[i] = HashItem(rng.Below(universe), salt);
        for (int i = 0; i < kBatch; ++i) filter.Prefetch(hashes[i]);
        for (int i = 0; i < kBatch; ++i) sink += filter.MayContain(hashes[i]);
      }
    };
    for (auto _ : state) {
      timed(kChase, kBlock, [&] {
        for (int i = 0; i < kBlock; ++i) p = p->next;
      });
      timed(kSingleNeg, kBlock, [&] {
        for (int i = 0; i < kBlock; ++i) {
          sink += filter.MayContain(HashItem(rng.Below(kNegativeUniverse), kNegativeSalt));
          SerializeExecution();
        }
      });
      timed(kSinglePos, kBlock, [&] {
        for (int i = 0; i < kBlock; ++i) {
          sink += filter.MayContain(HashItem(rng.Below(fx.filled), kPositiveSalt));
          SerializeExecution();
        }
      });
      timed(kLoopNeg, kBlock, [&] {
        for (int i = 0; i < kBlock; ++i) {
          sink += filter.MayContain(HashItem(rng.Below(kNegativeUniverse), kNegativeSalt));
        }
      });
      timed(kBatchNeg, kBlock / kBatch * kBatch, [&] { batch(kNegativeUniverse, kNegativeSalt); });
      timed(kBatchPos, kBlock / kBatch * kBatch, [&] { batch(fx.filled, kPositiveSalt); });
    }
    fp.cursor = p;
    benchmark::DoNotOptimize(sink);
    auto per = [&](int kind) {
      return ops[kind] ? static_cast<double>(ns[kind]) / static_cast<double>(ops[kind]) : 0.0;
    };
    state.counters["chase_ns"] = per(kChase);
    state.counters["single_neg_ns"] = per(kSingleNeg);
    state.counters["single_pos_ns"] = per(kSinglePos);
    state.counters["loop_neg_ns"] = per(kLoopNeg);
    state.counters["batch100_neg_ns"] = per(kBatchNeg);
    state.counters["batch100_pos_ns"] = per(kBatchPos);
    state.counters["single_neg_vs_chase"] = per(kSingleNeg) / per(kChase);
    state.counters["single_pos_vs_chase"] = per(kSinglePos) / per(kChase);
    state.counters["batch100_neg_vs_single"] = per(kBatchNeg) / per(kSingleNeg);
    state.counters["batch100_pos_vs_single"] = per(kBatchPos) / per(kSinglePos);
  });
}

// Issue 14 target 7: a filter as the library allocates it (BlockedBloom::
// Create: arrays of kHugePageArrayBytes or more get their own 2 MiB-aligned
// mapping, MADV_HUGEPAGE before the first write) against the dependent-miss
// latency of a chase ring of the same size on 2 MiB pages, in alternating
// blocks of 2048 as the paired rows do. Both objects live at once (2x the
// footprint), so the row is only registered when MemAvailable leaves 4 GiB
// beside them. huge_MiB is the process's AnonHugePages with both in place:
// about 2x the footprint when both got huge pages.
struct HugePairFixture {
  std::unique_ptr<ChaseRing> ring;
  std::unique_ptr<BlockedBloom> filter;
  uint64_t filled = 0;
  uint64_t huge_kib = 0;
};

void RegisterPairedHuge(uint64_t bytes, const Options& o) {
  const uint64_t max_fill = o.max_fill;
  Register("paired_huge/" + SizeLabel(bytes), [bytes, max_fill](benchmark::State& state) {
    HugePairFixture& fx = TheSlot().Get<HugePairFixture>("paired_huge/" + SizeLabel(bytes), [&] {
      auto made = std::make_shared<HugePairFixture>();
      made->ring = std::make_unique<ChaseRing>(bytes, /*huge_pages=*/true);
      const BloomShape shape = OnePercentShape(bytes);
      made->filter = BlockedBloom::Create(shape);
      if (made->filter == nullptr) throw std::bad_alloc();
      made->filled = std::min(CapacityFor(shape), max_fill);
      for (uint64_t id = 0; id < made->filled; ++id) {
        made->filter->Add(HashItem(id, kPositiveSalt));
      }
      made->huge_kib = AnonHugePagesKiB();
      return made;
    });
    const BlockedBloom& filter = *fx.filter;
    constexpr int kBlock = 2048;
    enum { kChase, kSingleNeg, kSinglePos, kKinds };
    uint64_t ns[kKinds] = {};
    uint64_t ops[kKinds] = {};
    Rng rng(0x7a9e + bytes);
    uint64_t sink = 0;
    ChaseNode* p = fx.ring->entry(0);
    auto timed = [&](int kind, auto body) {
      const uint64_t t0 = ThreadCpuNs();
      body();
      ns[kind] += ThreadCpuNs() - t0;
      ops[kind] += kBlock;
    };
    for (auto _ : state) {
      timed(kChase, [&] {
        for (int i = 0; i < kBlock; ++i) p = p->next;
      });
      timed(kSingleNeg, [&] {
        for (int i = 0; i < kBlock; ++i) {
          sink += filter.MayContain(HashItem(rng.Below(kNegativeUniverse), kNegativeSalt));
          SerializeExecution();
        }
      });
      timed(kSinglePos, [&] {
        for (int i = 0; i < kBlock; ++i) {
          sink += filter.MayContain(HashItem(rng.Below(fx.filled), kPositiveSalt));
          SerializeExecution();
        }
      });
    }
    benchmark::DoNotOptimize(sink);
    benchmark::DoNotOptimize(p);
    auto per = [&](int kind) {
      return ops[kind] ? static_cast<double>(ns[kind]) / static_cast<double>(ops[kind]) : 0.0;
    };
    state.counters["chase_2m_ns"] = per(kChase);
    state.counters["single_neg_ns"] = per(kSingleNeg);
    state.counters["single_pos_ns"] = per(kSinglePos);
    state.counters["single_neg_vs_chase"] = per(kSingleNeg) / per(kChase);
    state.counters["single_pos_vs_chase"] = per(kSinglePos) / per(kChase);
    state.counters["huge_MiB"] = static_cast<double>(fx.huge_kib) / 1024;
  });
}

void RegisterFootprint(uint64_t bytes, const Options& o) {
  // Memory references first (they share a fixture with the blocked rows).
  RegisterChase(bytes, o, /*huge=*/false, /*parallel=*/false);
  RegisterChase(bytes, o, /*huge=*/false, /*parallel=*/true);

  // Blocked Bloom (the library's layer).
  RegisterBlockedLookups<Mode::kSingle>("blocked", bytes, o, false);
  RegisterBlockedLookups<Mode::kLoop>("blocked", bytes, o, false);
  RegisterBlockedLookups<Mode::kBatch16>("blocked", bytes, o, false);
  RegisterBlockedLookups<Mode::kBatch16Interleaved>("blocked", bytes, o, false);
  RegisterBlockedLookups<Mode::kBatch100>("blocked", bytes, o, false);
  if (bytes <= 64 * kMiB) {
    RegisterBlockedLookups<Mode::kSingle, BranchFreeBlockedOps>("whatif_branchfree", bytes, o,
                                                                false);
    RegisterBlockedLookups<Mode::kLoop, BranchFreeBlockedOps>("whatif_branchfree", bytes, o,
                                                              false);
  }
  // Paired rows only where both objects together (2 x footprint) are far
  // beyond the 32 MiB L3 of the reference machine; below, the chase and the
  // filter would evict each other and the pair would measure that.
  if (bytes >= 64 * kMiB && 2 * bytes <= kPairedLimitBytes) RegisterPaired(bytes, o);
  if (bytes >= 4 * kMiB) RegisterChase(bytes, o, /*huge=*/true, /*parallel=*/false);
  if (bytes >= 64 * kMiB && 2 * bytes + 4 * kGiB <= MemAvailableBytes()) {
    RegisterPairedHuge(bytes, o);
  }
  if (bytes >= 64 * kMiB) {
    // The same filter with its array collapsed into 2 MiB pages.
    RegisterBlockedLookups<Mode::kSingle>("blocked_2m_pages", bytes, o, true);
    RegisterBlockedLookups<Mode::kBatch100>("blocked_2m_pages", bytes, o, true);
  }

  // The textbook baseline.
  RegisterTextbookLookups<Mode::kSingle>(bytes, o);
  RegisterTextbookLookups<Mode::kLoop>(bytes, o);
  RegisterTextbookLookups<Mode::kBatch16>(bytes, o);

  // ScalableBloomFilter (what the server calls): one NONSCALING layer.
  RegisterScalableLookups<Mode::kSingle>(bytes, o);
  RegisterScalableLookups<Mode::kLoop>(bytes, o);

  // Adds, each on a filter of its own that starts empty.
  const BloomShape shape = OnePercentShape(bytes);
  const uint64_t capacity = CapacityFor(shape);
  auto make_blocked = [shape] {
    auto f = BlockedBloom::Create(shape);
    if (f == nullptr) throw std::bad_alloc();
    return f;
  };
  auto blocked_add = [](BlockedBloom& f, const KeyHash& h) { f.Add(h); };
  auto blocked_prefetch = [](BlockedBloom& f, const KeyHash& h) { f.Prefetch(h); };
  RegisterAdd<Mode::kSingle, BlockedBloom>("blocked", bytes, make_blocked, capacity, blocked_add,
                                           blocked_prefetch);
  RegisterAdd<Mode::kLoop, BlockedBloom>("blocked", bytes, make_blocked, capacity, blocked_add,
                                         blocked_prefetch);
  RegisterAdd<Mode::kBatch100, BlockedBloom>("blocked", bytes, make_blocked, capacity,
                                             blocked_add, blocked_prefetch);

  const auto textbook_probes =
      static_cast<uint32_t>(std::lround(shape.bits_per_key * std::log(2.0)));
  auto make_textbook = [shape, textbook_probes] {
    return std::make_unique<TextbookBloom>(shape.bits, textbook_probes);
  };
  auto textbook_add = [](TextbookBloom& f, const KeyHash& h) { f.Add(h); };
  auto textbook_prefetch = [](TextbookBloom& f, const KeyHash& h) { f.Prefetch(h); };
  RegisterAdd<Mode::kSingle, TextbookBloom>("textbook", bytes, make_textbook, capacity,
                                            textbook_add, textbook_prefetch);
  RegisterAdd<Mode::kLoop, TextbookBloom>("textbook", bytes, make_textbook, capacity,
                                          textbook_add, textbook_prefetch);

  auto make_scalable = [capacity] { return MakeScalable(0.01, capacity, /*expansion=*/0); };
  auto scalable_add = [](ScalableBloomFilter& f, const KeyHash& h) {
    bool added = false;
    f.Add(h, &added);
  };
  auto no_prefetch = [](ScalableBloomFilter&, const KeyHash&) {};
  RegisterAdd<Mode::kSingle, ScalableBloomFilter>("scalable", bytes, make_scalable, capacity,
                                                  scalable_add, no_prefetch);
  RegisterAdd<Mode::kLoop, ScalableBloomFilter>("scalable", bytes, make_scalable, capacity,
                                                scalable_add, no_prefetch);
  RegisterScalableBatchLookups(bytes, o);
  // AddBatch of 100 (BF.MADD): RunAdds's batch form with the filter's own
  // batch call in place of prefetch + add per item.
  const std::string batch_key = "scalable/add_batch/" + SizeLabel(bytes);
  Register("scalable/add/batch100_api/" + SizeLabel(bytes),
           [batch_key, make_scalable, capacity](benchmark::State& state) {
             AddFixture<ScalableBloomFilter>& fx =
                 TheSlot().Get<AddFixture<ScalableBloomFilter>>(batch_key, [&] {
                   auto made = std::make_shared<AddFixture<ScalableBloomFilter>>();
                   made->make = make_scalable;
                   made->filter = make_scalable();
                   made->capacity = capacity;
                   return made;
                 });
             constexpr int kBatch = 100;
             KeyHash hashes[kBatch];
             bool added[kBatch];
             uint64_t fresh = 0;
             for (auto _ : state) {
               if (fx.added + kBatch > fx.capacity) {
                 state.PauseTiming();
                 fx.filter.reset();
                 fx.filter = fx.make();
                 fx.added = 0;
                 state.ResumeTiming();
               }
               for (int i = 0; i < kBatch; ++i) hashes[i] = HashItem(fx.next_id++, kPositiveSalt);
               size_t done = 0;
               fx.filter->AddBatch({hashes, kBatch}, added, &done);
               for (int i = 0; i < kBatch; ++i) fresh += added[i];
               fx.added += kBatch;
             }
             benchmark::DoNotOptimize(fresh);
             state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kBatch);
           });
}

// Every layer count of one growth rule, ours and the textbook's, kept
// together (~700 MiB for exp2 at 32M items) so the paired row can alternate.
constexpr uint32_t kLayerCounts[] = {1, 4, 8, 16};

struct LayerSetFixture {
  std::vector<std::shared_ptr<LayeredFixture>> ours;                // by kLayerCounts index
  std::vector<std::shared_ptr<TextbookLayeredFixture>> textbook;
};

LayerSetFixture& GetLayerSet(uint64_t total, uint32_t expansion) {
  return TheSlot().Get<LayerSetFixture>("layers/exp" + std::to_string(expansion), [&] {
    auto set = std::make_shared<LayerSetFixture>();
    for (const uint32_t layers : kLayerCounts) {
      set->ours.push_back(MakeLayeredFixture(total, layers, expansion));
      set->textbook.push_back(MakeTextbookLayeredFixture(total, layers, expansion));
    }
    return set;
  });
}

void RegisterLayers(const Options& o) {
  const uint64_t total = o.layer_items;
  for (const uint32_t expansion : {2u, 1u}) {
    for (size_t index = 0; index < std::size(kLayerCounts); ++index) {
      const uint32_t layers = kLayerCounts[index];
      char label[64];
      std::snprintf(label, sizeof label, "exp%u/L%u", expansion, layers);
      // kBatch100 here is MayContainBatch (the `batch100_api` rows).
      for (const Mode mode : {Mode::kSingle, Mode::kLoop, Mode::kBatch100}) {
        for (const bool positive : {false, true}) {
          const std::string name = std::string("layers/") +
                                   (positive ? "lookup_pos/" : "lookup_neg/") +
                                   (mode == Mode::kBatch100 ? "batch100_api" : ModeName(mode)) +
                                   "/" + label;
          Register(name, [=](benchmark::State& state) {
            LayeredFixture& fx = *GetLayerSet(total, expansion).ours[index];
            if (fx.layers != layers) {
              state.SkipWithError("the filter did not grow to the intended number of layers");
              return;
            }
            const uint64_t universe = positive ? fx.offered : kNegativeUniverse;
            const uint64_t salt = positive ? kPositiveSalt : kNegativeSalt;
            if (mode == Mode::kSingle) {
              RunLookups<Mode::kSingle, ScalableOps>(state, *fx.filter, universe, salt);
            } else if (mode == Mode::kLoop) {
              RunLookups<Mode::kLoop, ScalableOps>(state, *fx.filter, universe, salt);
            } else {
              RunBatchApiLookups(state, *fx.filter, universe, salt);
            }
            state.counters["layers"] = fx.layers;
            state.counters["MiB"] = static_cast<double>(fx.bytes) / kMiB;
          });
        }
      }
      for (const Mode mode : {Mode::kSingle, Mode::kLoop}) {
        Register(std::string("textbook_layers/lookup_neg/") + ModeName(mode) + "/" + label,
                 [=](benchmark::State& state) {
                   TextbookLayeredFixture& fx = *GetLayerSet(total, expansion).textbook[index];
                   if (mode == Mode::kSingle) {
                     RunLookups<Mode::kSingle, TextbookLayeredOps>(state, fx, kNegativeUniverse,
                                                                   kNegativeSalt);
                   } else {
                     RunLookups<Mode::kLoop, TextbookLayeredOps>(state, fx, kNegativeUniverse,
                                                                 kNegativeSalt);
                   }
                   state.counters["layers"] = static_cast<double>(fx.layers.size());
                   state.counters["MiB"] = static_cast<double>(fx.bytes) / kMiB;
                 });
      }
    }
    // Target 4's ratio from one benchmark: blocks of negative lookups on the
    // 1- and 16-layer filters (and the textbook's) in turn, each timed on
    // this thread's CPU clock.
    Register("paired/layers/exp" + std::to_string(expansion), [=](benchmark::State& state) {
      LayerSetFixture& set = GetLayerSet(total, expansion);
      const ScalableBloomFilter& one = *set.ours.front()->filter;
      const ScalableBloomFilter& sixteen = *set.ours.back()->filter;
      const TextbookLayeredFixture& t_one = *set.textbook.front();
      const TextbookLayeredFixture& t_sixteen = *set.textbook.back();
      constexpr int kBlock = 2048;
      enum {
        kOneSingle,
        kSixteenSingle,
        kOneLoop,
        kSixteenLoop,
        kOneBatch,
        kSixteenBatch,
        kTOne,
        kTSixteen,
        kKinds
      };
      KeyHash batch[100];
      bool found[100];
      uint64_t ns[kKinds] = {};
      Rng rng(0x1a7e5 + expansion);
      uint64_t sink = 0;
      auto timed = [&](int kind, auto body) {
        const uint64_t t0 = ThreadCpuNs();
        body();
        ns[kind] += ThreadCpuNs() - t0;
      };
      auto negative = [&] { return HashItem(rng.Below(kNegativeUniverse), kNegativeSalt); };
      for (auto _ : state) {
        timed(kOneSingle, [&] {
          for (int i = 0; i < kBlock; ++i) {
            sink += one.MayContain(negative());
            SerializeExecution();
          }
        });
        timed(kSixteenSingle, [&] {
          for (int i = 0; i < kBlock; ++i) {
            sink += sixteen.MayContain(negative());
            SerializeExecution();
          }
        });
        timed(kOneLoop, [&] {
          for (int i = 0; i < kBlock; ++i) sink += one.MayContain(negative());
        });
        timed(kSixteenLoop, [&] {
          for (int i = 0; i < kBlock; ++i) sink += sixteen.MayContain(negative());
        });
        // MayContainBatch in batches of 100 (BF.MEXISTS's form).
        timed(kOneBatch, [&] {
          for (int b = 0; b < kBlock / 100; ++b) {
            for (auto& h : batch) h = negative();
            one.MayContainBatch(batch, found);
            for (bool f : found) sink += f;
          }
        });
        timed(kSixteenBatch, [&] {
          for (int b = 0; b < kBlock / 100; ++b) {
            for (auto& h : batch) h = negative();
            sixteen.MayContainBatch(batch, found);
            for (bool f : found) sink += f;
          }
        });
        timed(kTOne, [&] {
          for (int i = 0; i < kBlock; ++i) {
            sink += TextbookLayeredOps::MayContain(t_one, negative());
            SerializeExecution();
          }
        });
        timed(kTSixteen, [&] {
          for (int i = 0; i < kBlock; ++i) {
            sink += TextbookLayeredOps::MayContain(t_sixteen, negative());
            SerializeExecution();
          }
        });
      }
      benchmark::DoNotOptimize(sink);
      const double blocks = static_cast<double>(state.iterations()) * kBlock;
      auto per = [&](int kind) { return blocks > 0 ? static_cast<double>(ns[kind]) / blocks : 0.0; };
      state.counters["L1_single_ns"] = per(kOneSingle);
      state.counters["L16_single_ns"] = per(kSixteenSingle);
      state.counters["L1_loop_ns"] = per(kOneLoop);
      state.counters["L16_loop_ns"] = per(kSixteenLoop);
      const double batched = static_cast<double>(state.iterations()) * (kBlock / 100 * 100);
      auto per_batched = [&](int kind) {
        return batched > 0 ? static_cast<double>(ns[kind]) / batched : 0.0;
      };
      state.counters["L1_batch100_ns"] = per_batched(kOneBatch);
      state.counters["L16_batch100_ns"] = per_batched(kSixteenBatch);
      state.counters["L16_vs_L1_batch100"] = per_batched(kSixteenBatch) / per_batched(kOneBatch);
      state.counters["textbook_L1_single_ns"] = per(kTOne);
      state.counters["textbook_L16_single_ns"] = per(kTSixteen);
      state.counters["L16_vs_L1_single"] = per(kSixteenSingle) / per(kOneSingle);
      state.counters["L16_vs_L1_loop"] = per(kSixteenLoop) / per(kOneLoop);
      state.counters["textbook_L16_vs_L1_single"] = per(kTSixteen) / per(kTOne);
    });
  }
}

// ---------------------------------------------------------------------------
// Many writers on one filter (issue 14's target 6): T = 1 .. max(2, nproc)
// threads add distinct new items to one ScalableBloomFilter (NONSCALING,
// 1%, ~16 MiB: bigger than L2, so the bit lines are spread and rarely
// shared), each thread timed on its own CPU clock. Every iteration runs
// each T in turn on the same filter (replaced when it would pass its
// capacity), so the ratios come from blocks milliseconds apart.
//   T<n>_cpu_ns        CPU ns per item in one of the n threads: grows with
//                      contention (a cache line bouncing between cores costs
//                      CPU time in the thread that waits for it);
//   T<n>_rate_vs_T1    n x T1_cpu_ns / T<n>_cpu_ns: n threads' rate against
//                      one thread's, if each had a core of its own (target
//                      6: T2 >= 1.8);
//   T<n>_wall_vs_T1    the same from wall-clock time, meaningful only on an
//                      otherwise idle machine with n free cores.
// `add_single` calls Add per item (the item counter is one atomic add per
// new item); `add_batch100` calls AddBatch with 100 (BF.MADD: one atomic
// add per pass).
void RegisterThreads(const Options& o) {
  const uint32_t max_threads = std::max(2u, std::thread::hardware_concurrency());
  const uint64_t per_thread = o.smoke ? 16 * kKiB : 256 * kKiB;
  const uint64_t capacity = CapacityFor(OnePercentShape(16 * kMiB));
  for (const bool batch : {false, true}) {
    Register(std::string("paired/threads/") + (batch ? "add_batch100" : "add_single"),
             [=](benchmark::State& state) {
               std::unique_ptr<ScalableBloomFilter> filter;
               uint64_t filled = capacity;  // forces a fresh filter first
               uint64_t next_id = 0;
               std::vector<double> cpu_ns(max_threads + 1, 0), wall_ns(max_threads + 1, 0);
               for (auto _ : state) {
                 for (uint32_t t = 1; t <= max_threads; ++t) {
                   const uint64_t items = per_thread * t;
                   if (filled + items > capacity) {
                     state.PauseTiming();
                     filter.reset();
                     filter = MakeScalable(0.01, capacity, /*expansion=*/0);
                     filled = 0;
                     state.ResumeTiming();
                   }
                   std::vector<uint64_t> spent(t, 0);
                   std::vector<std::thread> workers;
                   std::atomic<uint32_t> ready{0};
                   const uint64_t base = next_id;
                   const auto w0 = std::chrono::steady_clock::now();
                   for (uint32_t w = 0; w < t; ++w) {
                     workers.emplace_back([&, w] {
                       // Start together, so the threads do overlap.
                       ready.fetch_add(1);
                       while (ready.load() < t) {
                       }
                       const uint64_t first = base + w * per_thread;
                       const uint64_t t0 = ThreadCpuNs();
                       if (batch) {
                         KeyHash hashes[100];
                         bool added[100];
                         for (uint64_t i = 0; i + 100 <= per_thread; i += 100) {
                           for (int j = 0; j < 100; ++j) {
                             hashes[j] = HashItem(first + i + j, kPositiveSalt);
                           }
                           size_t done = 0;
                           filter->AddBatch({hashes, 100}, added, &done);
                         }
                       } else {
                         bool added = false;
                         for (uint64_t i = 0; i < per_thread; ++i) {
                           filter->Add(HashItem(first + i, kPositiveSalt), &added);
                         }
                       }
                       spent[w] = ThreadCpuNs() - t0;
                     });
                   }
                   for (std::thread& worker : workers) worker.join();
                   wall_ns[t] += static_cast<double>(
                       std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - w0)
                           .count());
                   for (uint64_t ns : spent) cpu_ns[t] += static_cast<double>(ns) / t;
                   next_id += items;
                   filled += items;
                 }
               }
               const double n = static_cast<double>(state.iterations()) * per_thread;
               if (n == 0) return;
               for (uint32_t t = 1; t <= max_threads; ++t) {
                 const std::string label = "T" + std::to_string(t);
                 state.counters[label + "_cpu_ns"] = cpu_ns[t] / n;
                 state.counters[label + "_rate_vs_T1"] = t * cpu_ns[1] / cpu_ns[t];
                 // wall per item of the whole run: T1 does n items in
                 // wall[1], Tt does t*n in wall[t].
                 state.counters[label + "_wall_vs_T1"] = t * wall_ns[1] / wall_ns[t];
               }
               state.counters["threads_max"] = max_threads;
             });
  }
}

// Lookup cost against the number of filters (target 5, at the library's
// level): N empty 1%-filters of capacity 1000 (BF.RESERVE name 0.01 1000,
// ~1.5 KB of bits each), a negative lookup in a random one. Three ways to
// reach the bits, each a chain of dependent loads that misses once N
// filters no longer fit in cache:
//   scalable          vector slot -> ScalableBloomFilter -> layer list ->
//                     layer array -> Layer -> BlockedBloom -> bit line
//   scalable_by_name  the same behind std::unordered_map<std::string, ...>
//                     (a stand-in for the server's keyspace: bucket, node,
//                     key compare)
//   whatif_flat       vector slot -> BlockedBloom -> bit line (what a filter
//                     header holding its first layer inline would cost)
constexpr uint64_t kKeyspaceCounts[] = {1, 100, 10'000, 100'000};

struct KeyspaceFixture {
  std::vector<std::unique_ptr<ScalableBloomFilter>> scalable;
  std::unordered_map<std::string, std::unique_ptr<ScalableBloomFilter>> by_name;
  std::vector<std::string> names;
  std::vector<std::unique_ptr<BlockedBloom>> flat;
};

std::string KeyspaceName(uint64_t i) {
  char name[32];
  std::snprintf(name, sizeof name, "ks:%012" PRIu64, i);  // as redis-benchmark's __rand_int__
  return name;
}

KeyspaceFixture& GetKeyspace(uint64_t count) {
  return TheSlot().Get<KeyspaceFixture>("keyspace/" + std::to_string(count), [&] {
    auto fx = std::make_shared<KeyspaceFixture>();
    const BloomShape shape = ChooseBlockedBloomShape(0.005, 1000);  // a scaling filter's layer 0
    for (uint64_t i = 0; i < count; ++i) {
      fx->scalable.push_back(MakeScalable(0.01, 1000, /*expansion=*/2));
      fx->names.push_back(KeyspaceName(i));
      fx->by_name.emplace(fx->names.back(), MakeScalable(0.01, 1000, /*expansion=*/2));
      fx->flat.push_back(BlockedBloom::Create(shape));
    }
    return fx;
  });
}

void RegisterKeyspace() {
  for (const uint64_t count : kKeyspaceCounts) {
    for (const Mode mode : {Mode::kSingle, Mode::kLoop}) {
      for (const char* way : {"scalable", "scalable_by_name", "whatif_flat"}) {
        const std::string w = way;
        Register("keyspace/" + w + "/lookup_neg/" + ModeName(mode) + "/" + std::to_string(count),
                 [count, mode, w](benchmark::State& state) {
                   KeyspaceFixture& fx = GetKeyspace(count);
                   Rng rng(0x4b5 + count);
                   uint64_t hits = 0;
                   for (auto _ : state) {
                     const uint64_t i = rng.Below(count);
                     const KeyHash h = HashItem(rng.Below(kNegativeUniverse), kNegativeSalt);
                     if (w == "scalable") {
                       hits += fx.scalable[i]->MayContain(h);
                     } else if (w == "scalable_by_name") {
                       hits += fx.by_name.find(fx.names[i])->second->MayContain(h);
                     } else {
                       hits += fx.flat[i]->MayContain(h);
                     }
                     if (mode == Mode::kSingle) SerializeExecution();
                   }
                   benchmark::DoNotOptimize(hits);
                   state.SetItemsProcessed(state.iterations());
                 });
      }
    }
  }
}

// Bits per item against the measured false-positive rate. The textbook
// optimum for a rate p is -log2(p)/ln 2 bits per item (1.44 log2(1/p)); we
// compare at the *measured* rate, so a filter that over-delivers on accuracy
// is not charged for it. One run each (the counters are not timings).
void RegisterAccuracy(const Options& o) {
  for (const double rate : {0.01, 0.001, 0.0001}) {
    char label[32];
    std::snprintf(label, sizeof label, "p=%g", rate);
    const uint64_t n = o.accuracy_items;
    const uint64_t queries = o.accuracy_queries;
    auto report = [](benchmark::State& state, double bits, uint64_t items, uint64_t fps,
                     uint64_t queries_run, double requested) {
      const double fp = static_cast<double>(fps) / static_cast<double>(queries_run);
      const double bits_per_item = bits / static_cast<double>(items);
      const double optimum = fp > 0 ? -std::log2(fp) / std::log(2.0) : 0;
      state.counters["fp_requested"] = requested;
      state.counters["fp_measured"] = fp;
      state.counters["false_positives"] = static_cast<double>(fps);
      state.counters["bits_per_item"] = bits_per_item;
      state.counters["optimum_bits_at_measured_fp"] = optimum;
      state.counters["ratio_to_optimum"] = optimum > 0 ? bits_per_item / optimum : 0;
    };
    // The library: a NONSCALING filter at `rate` (one layer sized by
    // ChooseBlockedBloomShape), filled to capacity.
    Register(std::string("accuracy/scalable_nonscaling/") + label,
             [n, queries, rate, report](benchmark::State& state) {
               for (auto _ : state) {
                 auto filter = MakeScalable(rate, n, /*expansion=*/0);
                 bool added = false;
                 for (uint64_t id = 0; id < n; ++id) filter->Add(HashItem(id, kPositiveSalt), &added);
                 uint64_t fps = 0;
                 for (uint64_t q = 0; q < queries; ++q) {
                   fps += filter->MayContain(HashItem(q, kNegativeSalt));
                 }
                 report(state, static_cast<double>(filter->Layers()[0].bits), n, fps, queries, rate);
                 state.counters["probes"] = filter->Layers()[0].probes;
               }
             })
        ->Iterations(1)
        ->Repetitions(1);
    // The textbook filter with the SAME bits and its optimal k: how close a
    // standard Bloom filter gets to the optimum (a check on the method).
    Register(std::string("accuracy/textbook_same_bits/") + label,
             [n, queries, rate, report](benchmark::State& state) {
               for (auto _ : state) {
                 const BloomShape shape = ChooseBlockedBloomShape(rate, n);
                 const double bpk = static_cast<double>(shape.bits) / static_cast<double>(n);
                 const auto probes =
                     static_cast<uint32_t>(std::max(1L, std::lround(bpk * std::log(2.0))));
                 TextbookBloom filter(shape.bits, probes);
                 for (uint64_t id = 0; id < n; ++id) filter.Add(HashItem(id, kPositiveSalt));
                 uint64_t fps = 0;
                 for (uint64_t q = 0; q < queries; ++q) {
                   fps += filter.MayContain(HashItem(q, kNegativeSalt));
                 }
                 report(state, static_cast<double>(filter.bits()), n, fps, queries, rate);
                 state.counters["probes"] = probes;
               }
             })
        ->Iterations(1)
        ->Repetitions(1);
  }
}

// Issue 14 target 3: BF.RESERVE k <rate> 1000000 (scaling, expansion 2) as
// the server builds it (PreferredBloomLayout picks blocked or classic),
// filled to capacity and probed with layout_queries absent items: the
// measured FP against the requested rate, and the filter's bytes against
// RedisBloom's BF.INFO Size for the same command, computed from its formula
// (redisbloom_layout.h: chain 32 + link 64 + the layer's bits, bpe =
// ln(1/p) / ln(2)^2 at p = rate / 2, rounded up to 64 bits). `bytes` is
// memory_bytes() (filter object, layer, list and bits); BF.INFO Size adds
// the key's entry (server/keyspace, ~200 bytes), which results/memory-*.md
// reads from a live server. One run each (counters, not timings).
void RegisterLayoutAccuracy(const Options& o) {
  for (const double rate : {0.1, 0.01, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-9}) {
    char label[32];
    std::snprintf(label, sizeof label, "e=%g", rate);
    const uint64_t n = o.layout_items;
    const uint64_t queries = o.layout_queries;
    Register(std::string("accuracy/layout/") + label, [n, queries, rate](benchmark::State& state) {
      for (auto _ : state) {
        ScalableBloomOptions options;
        options.error_rate = rate;
        options.capacity = n;
        options.expansion = 2;
        options.layout = PreferredBloomLayout(rate, options.expansion);
        FilterLimits limits;
        limits.max_filter_bytes = 0;
        std::unique_ptr<ScalableBloomFilter> filter;
        if (ScalableBloomFilter::Create(options, limits, nullptr, &filter) != FilterStatus::kOk) {
          state.SkipWithError("create failed");
          return;
        }
        bool added = false;
        for (uint64_t id = 0; id < n; ++id) {
          (void)filter->Add(filter->Hash(std::to_string(id)), &added);
        }
        uint64_t fps = 0;
        for (uint64_t q = 0; q < queries; ++q) {
          fps += filter->MayContain(filter->Hash("absent:" + std::to_string(q)));
        }
        const BlockedShape rb = ChooseRedisBloomShape(rate * kErrorTighteningRatio, n);
        const double rb_size = static_cast<double>(RedisBloomInfoSize(1, rb.cells / 8));
        const double fp = static_cast<double>(fps) / static_cast<double>(queries);
        state.counters["classic"] = filter->layout() == BloomLayout::kClassic ? 1 : 0;
        state.counters["layers"] = filter->num_layers();
        state.counters["probes"] = filter->Layers()[0].probes;
        state.counters["bits_per_item"] =
            static_cast<double>(filter->Layers()[0].bits) / static_cast<double>(n);
        state.counters["bytes"] = static_cast<double>(filter->memory_bytes());
        state.counters["redisbloom_size"] = rb_size;
        state.counters["bytes_vs_redisbloom"] = static_cast<double>(filter->memory_bytes()) / rb_size;
        state.counters["bits_vs_redisbloom"] =
            static_cast<double>(filter->Layers()[0].bits) / static_cast<double>(rb.cells);
        state.counters["fp_requested"] = rate;
        state.counters["fp_measured"] = fp;
        state.counters["false_positives"] = static_cast<double>(fps);
        state.counters["fp_vs_requested"] = fp / rate;
      }
    })
        ->Iterations(1)
        ->Repetitions(1);
  }
}

void RegisterAll(const Options& o) {
  Register("hash/HashKey_16B", [](benchmark::State& state) {
    uint64_t id = 0;
    uint64_t sink = 0;
    for (auto _ : state) sink += HashItem(id++, kPositiveSalt).lo;
    benchmark::DoNotOptimize(sink);
    state.SetItemsProcessed(state.iterations());
  });
  Register("hash/HashKey_16B_single", [](benchmark::State& state) {
    uint64_t id = 0;
    uint64_t sink = 0;
    for (auto _ : state) {
      sink += HashItem(id++, kPositiveSalt).lo;
      SerializeExecution();
    }
    benchmark::DoNotOptimize(sink);
    state.SetItemsProcessed(state.iterations());
  });
  for (uint64_t bytes : o.footprints) RegisterFootprint(bytes, o);
  RegisterLayers(o);
  RegisterThreads(o);
  RegisterKeyspace();
  RegisterAccuracy(o);
  RegisterLayoutAccuracy(o);
}

void PrintUsage() {
  std::printf(
      "filter_bench: Bloomgate filter microbenchmarks (see bench/README.md).\n"
      "Flags of its own (sizes take k/m/g, binary: 1m = 2^20):\n"
      "  --footprints=256k,1m,...  filter and chase sizes (default 256k,1m,4m,16m,64m,256m,1g,2g\n"
      "                            plus 4g when MemAvailable >= 12 GiB)\n"
      "  --max_fill=8m             most items added to a lookup filter\n"
      "  --layer_items=32m         total items of each layered filter\n"
      "  --accuracy_items=2m       items in each accuracy filter\n"
      "  --accuracy_queries=20m    negative queries per accuracy filter\n"
      "  --layout_items=1000000    capacity (= items added) of each accuracy/layout filter\n"
      "  --layout_queries=4m       negative queries per accuracy/layout rate\n"
      "  --smoke                   tiny sizes for CI: 256k,64m footprints, 64k items per\n"
      "                            filter, 64k layer items, 64k accuracy items, 1m queries,\n"
      "                            20,000-item layout filters with 64k queries\n"
      "Then every Google Benchmark flag (--benchmark_filter, --benchmark_out, ...).\n");
}

}  // namespace
}  // namespace bloomgate

int main(int argc, char** argv) {
  using namespace bloomgate;
  Options o;
  std::string footprints;
  std::vector<char*> rest = {argv[0]};
  bool sizes_ok = true;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    auto value_of = [&](std::string_view flag, std::string_view* value) {
      if (arg.rfind(flag, 0) == 0 && arg.size() > flag.size() && arg[flag.size()] == '=') {
        *value = arg.substr(flag.size() + 1);
        return true;
      }
      return false;
    };
    std::string_view value;
    if (arg == "--help" || arg == "-h") {
      PrintUsage();
      rest.push_back(argv[i]);
    } else if (arg == "--smoke") {
      o.smoke = true;
    } else if (value_of("--footprints", &value)) {
      footprints = std::string(value);
    } else if (value_of("--max_fill", &value)) {
      sizes_ok &= ParseSize(value, &o.max_fill);
    } else if (value_of("--layer_items", &value)) {
      sizes_ok &= ParseSize(value, &o.layer_items);
    } else if (value_of("--accuracy_items", &value)) {
      sizes_ok &= ParseSize(value, &o.accuracy_items);
    } else if (value_of("--accuracy_queries", &value)) {
      sizes_ok &= ParseSize(value, &o.accuracy_queries);
    } else if (value_of("--layout_items", &value)) {
      sizes_ok &= ParseSize(value, &o.layout_items);
    } else if (value_of("--layout_queries", &value)) {
      sizes_ok &= ParseSize(value, &o.layout_queries);
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (o.smoke) {
    // 64 MiB is the smallest footprint with every kind of row (2 MiB pages,
    // paired); filled with 64K items only, it builds in well under a second.
    if (footprints.empty()) footprints = "256k,64m";
    o.max_fill = 64 * kKiB;
    o.layer_items = 64 * kKiB;
    o.accuracy_items = 64 * kKiB;
    o.accuracy_queries = 1 * kMiB;
    o.layout_items = 20'000;
    o.layout_queries = 64 * kKiB;
  }
  if (footprints.empty()) {
    footprints = "256k,1m,4m,16m,64m,256m,1g,2g";
    if (MemAvailableBytes() >= 12 * kGiB) footprints += ",4g";
  }
  std::stringstream list(footprints);
  std::string item;
  while (std::getline(list, item, ',')) {
    uint64_t bytes = 0;
    if (!ParseSize(item, &bytes) || bytes < 64 * kKiB) {
      sizes_ok = false;
      break;
    }
    o.footprints.push_back(bytes / 64 * 64);
  }
  if (!sizes_ok) {
    std::fprintf(stderr, "filter_bench: bad size flag (see --help)\n");
    return 2;
  }

  benchmark::AddCustomContext("footprints", footprints);
  benchmark::AddCustomContext("max_fill", std::to_string(o.max_fill));
  benchmark::AddCustomContext("layer_items", std::to_string(o.layer_items));
  benchmark::AddCustomContext("accuracy_items", std::to_string(o.accuracy_items));
  benchmark::AddCustomContext("accuracy_queries", std::to_string(o.accuracy_queries));
  benchmark::AddCustomContext("layout_items", std::to_string(o.layout_items));
  benchmark::AddCustomContext("layout_queries", std::to_string(o.layout_queries));
  benchmark::AddCustomContext("transparent_hugepage",
                              ReadFirstLine("/sys/kernel/mm/transparent_hugepage/enabled"));
  benchmark::AddCustomContext("mem_available_bytes", std::to_string(MemAvailableBytes()));

  RegisterAll(o);
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
