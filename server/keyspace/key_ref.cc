#include "server/keyspace/key_ref.h"

#include <xxhash.h>

namespace bloomgate {
namespace {
thread_local uint64_t key_hashes = 0;
}  // namespace

uint64_t HashKeyName(std::string_view name) {
  ++key_hashes;
  return XXH3_64bits(name.data(), name.size());
}

uint64_t KeyHashesOnThisThread() { return key_hashes; }

}  // namespace bloomgate
