#include "filters/hash_seed.h"

#include <sys/random.h>

#include <xxhash.h>

#include <cerrno>
#include <random>

namespace bloomgate {
namespace {

uint64_t DrawSeed() {
  uint64_t seed = 0;
  // 8 bytes from the urandom pool: never blocks once the pool is
  // initialised at boot, and a request this small is never cut short.
  ssize_t got = -1;
  do {
    got = getrandom(&seed, sizeof(seed), 0);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof(seed))) return seed;
  std::random_device device;
  return (uint64_t{device()} << 32) ^ device();
}

}  // namespace

uint64_t NewHashSeed() {
  uint64_t seed = DrawSeed();
  while (seed == 0) seed = DrawSeed();  // 2^-64 per draw
  return seed;
}

uint64_t SeedFromBytes(std::string_view bytes) {
  const uint64_t seed = XXH3_64bits(bytes.data(), bytes.size());
  return seed == 0 ? 1 : seed;
}

}  // namespace bloomgate
