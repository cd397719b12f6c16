#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace bloomgate {

// A fresh per-filter hash seed from the kernel's CSPRNG (getrandom(2); if
// that is unavailable, std::random_device, which libstdc++ backs with the
// same source or RDRAND). Never 0: 0 is the legacy seed that filters saved
// before per-filter seeds hash with (XXH3 with seed 0 is plain XXH3), so a
// seed of 0 always means "written before seeds existed", never "drew 0".
//
// Why: items are attacker-chosen (a CDN edge adds URLs it is sent). With one
// public hash, anyone can search offline for items that land in the same
// Bloom block or cuckoo bucket and degrade a production filter (FP rate,
// failed inserts, long kick chains). With a secret 64-bit seed per filter
// that search needs the seed, which never leaves the server except in its
// own snapshots, logs and SCANDUMP chunks.
uint64_t NewHashSeed();

// valkey-bloom's SEED is 32 raw bytes (the SipHash keys of its filters);
// ours is 64 bits. A seed given that way becomes XXH3-64 of the 32 bytes
// (0 becomes 1, see above), so one SEED always gives one hashing: two
// filters made with it hash alike (BF.MERGE), and the 64-bit result is what
// the filter saves, so it answers the same after a restart.
inline constexpr size_t kValkeySeedBytes = 32;
uint64_t SeedFromBytes(std::string_view bytes);

// The seed a Create was given, else a fresh one.
inline uint64_t SeedOrNew(const std::optional<uint64_t>& seed) {
  return seed ? *seed : NewHashSeed();
}

}  // namespace bloomgate
