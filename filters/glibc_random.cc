#include "filters/glibc_random.h"

namespace bloomgate {

GlibcRandom GlibcRandom::Seeded(uint32_t seed) {
  std::array<int64_t, 34> r{};
  r[0] = seed == 0 ? 1 : static_cast<int32_t>(seed);
  for (size_t i = 1; i < 31; ++i) {
    // Park and Miller's minimal standard, as glibc's srandom_r computes it
    // (Schrage's method, 127773 = (2^31 - 1) / 16807); exact in 64 bits.
    const int64_t hi = r[i - 1] / 127773;
    const int64_t lo = r[i - 1] % 127773;
    int64_t word = 16807 * lo - 2836 * hi;
    if (word < 0) word += 2147483647;
    r[i] = word;
  }
  for (size_t i = 31; i < 34; ++i) r[i] = r[i - 31];
  GlibcRandom g;
  // The ring holds r[3..33]: the 31 words before r[34].
  for (size_t i = 0; i < kWords; ++i) g.ring_[i] = static_cast<uint32_t>(r[3 + i]);
  g.oldest_ = 0;
  for (int i = 0; i < 310; ++i) g.Step();  // r[34..343], discarded by srand
  return g;
}

GlibcRandom GlibcRandom::FromWords(std::span<const uint32_t, kWords> words) {
  GlibcRandom g;
  for (size_t i = 0; i < kWords; ++i) g.ring_[i] = words[i];
  g.oldest_ = 0;
  return g;
}

uint32_t GlibcRandom::Step() {
  // r[n] = r[n-31] + r[n-3]: r[n-31] is the oldest word, r[n-3] sits 28
  // places after it; r[n] takes the oldest word's place.
  const uint32_t lag3 = ring_[(oldest_ + 28) % kWords];
  const uint32_t next = ring_[oldest_] + lag3;
  ring_[oldest_] = next;
  oldest_ = (oldest_ + 1) % kWords;
  return next;
}

int32_t GlibcRandom::Next() { return static_cast<int32_t>(Step() >> 1); }

std::array<uint32_t, GlibcRandom::kWords> GlibcRandom::Words() const {
  std::array<uint32_t, kWords> out{};
  for (size_t i = 0; i < kWords; ++i) out[i] = ring_[(oldest_ + i) % kWords];
  return out;
}

}  // namespace bloomgate
