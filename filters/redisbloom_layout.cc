#include "filters/redisbloom_layout.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

#include "filters/block_words.h"
#include "filters/limits.h"
#include "filters/murmur_hash64a.h"

namespace bloomgate {

namespace {
// RedisBloom's seed for the first 64-bit hash: the MurmurHash64A multiplier.
constexpr uint64_t kRedisBloomSeed = 0xc6a4a7935bd1e995ull;
// The two constants as RedisBloom's bloom.c writes them (not std::log(2)):
// its bpe and hash count come from exactly these doubles.
constexpr double kRedisBloomLn2Squared = 0.480453013918201;
constexpr double kRedisBloomLn2 = 0.693147180559945;
// RedisBloom's chain and link structs as BF.INFO counts them (x86-64).
constexpr uint64_t kRedisBloomChainBytes = 32;
constexpr uint64_t kRedisBloomLinkBytes = 64;
}  // namespace

KeyHash RedisBloomHash(std::string_view item) {
  const uint64_t a = MurmurHash64A(item, kRedisBloomSeed);
  const uint64_t b = MurmurHash64A(item, a);
  return KeyHash{/*lo=*/a, /*hi=*/b};
}

double RedisBloomBitsPerEntry(double error_rate) {
  return std::fabs(-(std::log(error_rate) / kRedisBloomLn2Squared));
}

uint32_t RedisBloomHashes(double bits_per_entry) {
  // A dump's bpe is client input (LOADCHUNK): outside [0, 2^32), or NaN, the
  // cast would be undefined (dump_chunk_fuzz found 2.8e247). 0 is no valid
  // hash count, so every caller refuses it.
  const double hashes = std::ceil(kRedisBloomLn2 * bits_per_entry);
  if (!(hashes >= 0 && hashes < 4294967296.0)) return 0;
  return static_cast<uint32_t>(hashes);
}

BlockedShape ChooseRedisBloomShape(double error_rate, uint64_t capacity) {
  const double bpe = RedisBloomBitsPerEntry(error_rate);
  const uint32_t hashes = RedisBloomHashes(bpe);
  const uint64_t max_cells = MaxBlockedCells(kRedisBloomWordBits);
  const double raw = static_cast<double>(capacity) * bpe;
  BlockedShape shape{max_cells, kRedisBloomWordBits, 1, bpe, 1.0};
  // Past the cap (or NaN) the cast would be undefined: saturate instead.
  if (!(raw < static_cast<double>(max_cells - kRedisBloomWordBits)) || hashes < 1 ||
      hashes > kMaxBloomProbes) {
    return shape;
  }
  const uint64_t bits = static_cast<uint64_t>(raw);
  shape.cells = (bits / 64 + (bits % 64 != 0 ? 1 : 0)) * 64;
  if (shape.cells == 0) shape.cells = 64;  // RedisBloom refuses 0 bits; never reached for entries >= 1
  shape.probes = hashes;
  shape.predicted_fp = error_rate;
  return shape;
}

BlockedShape ChooseClassicBloomShape(double error_rate, uint64_t capacity) {
  // Where RedisBloom would take more than kMaxBloomProbes hashes (layer rates
  // under ~5e-20: BF.RESERVE k 1e-19 1, or layer 14 of BF.RESERVE k 1e-15 1
  // EXPANSION 1) its sizing has no shape of ours; take 64 probes and the
  // cells they need instead (bloom_math.h's ChooseClassicShape: 96 bits/key at
  // 1e-20, the optimum there being 96.0), so the probe cap never refuses a
  // rate and only the memory limits bound how low one may go.
  if (error_rate > 0 && error_rate < 1 &&
      RedisBloomHashes(RedisBloomBitsPerEntry(error_rate)) > kMaxBloomProbes) {
    return ChooseClassicShape(error_rate, capacity, kClassicBloomGranuleBits);
  }
  const BlockedShape redisbloom = ChooseRedisBloomShape(error_rate, capacity);
  const uint64_t max_cells = MaxBlockedCells(kClassicBloomGranuleBits);
  BlockedShape shape{max_cells, kClassicBloomGranuleBits, 1, redisbloom.cells_per_key, 1.0};
  if (redisbloom.cells >= MaxBlockedCells(kRedisBloomWordBits) || redisbloom.cells >= max_cells) {
    return shape;
  }
  const uint64_t granules = std::max<uint64_t>(redisbloom.cells / kClassicBloomGranuleBits, 1);
  shape.cells = granules * kClassicBloomGranuleBits;
  const double keys = static_cast<double>(std::max<uint64_t>(capacity, 1));
  shape.cells_per_key = static_cast<double>(shape.cells) / keys;
  // The two whole hash counts around the real optimum ln 2 x bits/entry.
  const double optimum = kRedisBloomLn2 * shape.cells_per_key;
  const auto clamp_k = [](double k) {
    return static_cast<uint32_t>(std::clamp(k, 1.0, static_cast<double>(kMaxBloomProbes)));
  };
  const uint32_t lower = clamp_k(std::floor(optimum));
  const uint32_t upper = clamp_k(std::ceil(optimum));
  const double fp_lower = StandardBloomFpRate(shape.cells_per_key, static_cast<int>(lower));
  const double fp_upper = StandardBloomFpRate(shape.cells_per_key, static_cast<int>(upper));
  shape.probes = fp_lower < fp_upper ? lower : upper;
  shape.predicted_fp = std::min(fp_lower, fp_upper);
  return shape;
}

uint64_t RedisBloomInfoSize(uint32_t layers, uint64_t bit_array_bytes) {
  return kRedisBloomChainBytes + kRedisBloomLinkBytes * layers + bit_array_bytes;
}

std::unique_ptr<ClassicBloom> ClassicBloom::Create(uint64_t bits, uint32_t probes,
                                                   ClassicProbing probing) {
  if (bits == 0 || bits % 64 != 0 || bits >= MaxBlockedCells(kRedisBloomWordBits) || probes < 1 ||
      probes > kMaxBloomProbes) {
    return nullptr;
  }
  const uint64_t num_words = bits / 64;
  std::atomic<uint64_t>* words = internal::NewZeroedBlockWords(BytesFor(bits));
  if (words == nullptr) return nullptr;
  auto* filter =
      new (std::nothrow) ClassicBloom(words, num_words, probes, probing, /*owns_words=*/true);
  if (filter == nullptr) {
    internal::DeleteBlockWords(words, BytesFor(bits));
    return nullptr;
  }
  return std::unique_ptr<ClassicBloom>(filter);
}

ClassicBloom::ClassicBloom(std::atomic<uint64_t>* words, uint64_t num_words, uint32_t probes,
                           ClassicProbing probing, bool owns_words)
    : words_(words), num_words_(num_words), probes_(probes), probing_(probing),
      owns_words_(owns_words) {}

ClassicBloom::~ClassicBloom() {
  if (owns_words_) internal::DeleteBlockWords(words_, BytesFor(num_words_ * 64));
}

static_assert(sizeof(ClassicBloom) == 24);

}  // namespace bloomgate
