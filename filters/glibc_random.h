// The C library's rand() as glibc computes it (TYPE_3, the default): an
// additive lagged Fibonacci generator over 31 words,
//
//   r[0] = seed, r[i] = 16807 r[i-1] mod (2^31 - 1)  for i in 1..30
//   r[i] = r[i-31]                                    for i in 31..33
//   r[i] = r[i-31] + r[i-3]  (mod 2^32)               for i >= 34
//   the k-th rand() (k from 0) = r[k + 344] >> 1      (310 values discarded)
//
// RedisBloom's top-k decides every decay with rand() / RAND_MAX, and a fresh
// redis-server process has never seeded it, which is srand(1): seed 1 gives
// 1804289383, 846930886, 1681692777, ... (glibc_random_test.cc).
//
// Here the generator is a value: a top-k of SketchScheme::kRedisBloom owns
// one, started where a fresh RedisBloom process starts, and its codec saves
// the 31 words, so a replay of the log or a loaded snapshot continues the
// same sequence. (RedisBloom's is one per process, shared by every key.)
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace bloomgate {

class GlibcRandom {
 public:
  static constexpr size_t kWords = 31;
  static constexpr int32_t kRandMax = 2147483647;  // glibc's RAND_MAX

  // The state srand(seed) leaves (seed 0 is taken as 1, as glibc does).
  static GlibcRandom Seeded(uint32_t seed);
  // A fresh process's state: srand(1).
  static GlibcRandom FreshProcess() { return Seeded(1); }
  // A saved state: the last 31 words of the sequence, oldest first. Every
  // value is a state the generator can continue from.
  static GlibcRandom FromWords(std::span<const uint32_t, kWords> words);

  // The next rand(): in [0, kRandMax].
  int32_t Next();
  // The state as FromWords takes it.
  std::array<uint32_t, kWords> Words() const;

  bool operator==(const GlibcRandom& other) const { return Words() == other.Words(); }

 private:
  uint32_t Step();

  std::array<uint32_t, kWords> ring_{};  // r[n-31..n-1], r[n-31] at oldest_
  uint32_t oldest_ = 0;
};

}  // namespace bloomgate
