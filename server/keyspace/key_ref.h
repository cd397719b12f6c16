// A key name with its 64-bit hash, computed once per command.
//
// Three places need a key's hash: its key-lock stripe (low 10 bits), its
// keyspace shard (top 6 bits) and its bucket in the shard's map (all 64).
// The dispatcher hashes each key of a command once (XXH3-64, ~20 ns for a
// 30-byte name) and passes the KeyRef down, instead of each layer hashing
// the name again.
#pragma once

#include <cstdint>
#include <string_view>

namespace bloomgate {

struct KeyRef {
  std::string_view name;
  uint64_t hash = 0;
};

// XXH3-64 of a key name: the one function that hashes key names.
uint64_t HashKeyName(std::string_view name);

inline KeyRef MakeKeyRef(std::string_view name) { return KeyRef{name, HashKeyName(name)}; }

// Key names hashed by this thread since it started: lets a test count the
// hashes one command costs. Per thread, so counting costs no shared write.
uint64_t KeyHashesOnThisThread();

}  // namespace bloomgate
