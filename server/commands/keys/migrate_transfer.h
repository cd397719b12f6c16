// MIGRATE's sending side for one key: its payload streamed from the filter
// in pieces (DumpPayloadStream), so the encoding overlaps the send and no
// copy of the whole payload is made, either as one RESTORE-ASKING or, for a
// payload over the 512 MiB a RESTORE argument may have, to a Bloomgate
// target as RESTORE-CHUNK commands (restore_chunk_command.cc) of
// kMigrateChunkBytes each, every one after an ASKING.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "filters/any_filter.h"
#include "persistence/status.h"
#include "server/replication/link_socket.h"

namespace bloomgate {

// Redis's default proto-max-bulk-len: the largest argument a RESTORE takes.
inline constexpr uint64_t kMaxRestorePayloadBytes = uint64_t{512} << 20;
// One RESTORE-CHUNK's payload bytes: what the target's connection buffers
// before staging it, and one chunk's stall of the target's event loop (the
// bytes go into the filter there): 16 MiB chunks took 34 ms each on a
// loaded 2-core machine, 4 MiB ones 4.4 ms.
inline constexpr uint64_t kMigrateChunkBytes = uint64_t{4} << 20;

// The payload size above which MIGRATE sends chunks to a Bloomgate target:
// one chunk. Over it chunks are also the faster way (a 578 MiB filter went
// at 698 MB/s in 4 MiB chunks, a 64 MiB one at ~170 MB/s as one RESTORE,
// whose argument the target buffers, copies and decodes whole). For tests,
// the environment's BLOOMGATE_TEST_MIGRATE_CHUNK_BYTES (at least 1024)
// lowers it and the chunk size; read once.
uint64_t MigrateChunkThreshold();

// What INFO server says of the target: a Bloomgate server (bloomgate_version),
// which takes RESTORE-CHUNK, and one in cluster mode (redis_mode:cluster),
// which takes ASKING. A write or read failure is an error; a target that
// refuses INFO is neither.
struct MigrateTarget {
  bool takes_chunks = false;
  bool cluster = false;
};
Status ProbeMigrateTarget(LinkSocket& socket, MigrateTarget* target);

// Writes `RESTORE-ASKING key ttl_ms <payload of filter> [REPLACE]`: one
// reply to read. The filter must not change meanwhile.
Status SendRestoreAsking(LinkSocket& socket, std::string_view key, int64_t ttl_ms,
                         const AnyFilter& filter, bool replace);

// Writes the payload as `RESTORE-CHUNK key offset chunk` commands, each
// after an ASKING when `asking` (a cluster target, which may be importing
// the key's slot), the last with `COMMIT ttl [REPLACE]`: *replies to read.
// The TTL is what is left of `expire_at_ms` (0: none) when COMMIT is
// written, so a long transfer does not lengthen it (at least 1 ms: the
// caller sends no key that had expired when it began). The filter must not
// change meanwhile.
Status SendRestoreChunks(LinkSocket& socket, std::string_view key, int64_t expire_at_ms,
                         const AnyFilter& filter, bool replace, bool asking,
                         uint64_t chunk_bytes, size_t* replies);

// Reads one key's `replies`: *error is the first error among them without
// its '-', empty if none. A read failure is the status.
Status ReadKeyReplies(LinkSocket& socket, size_t replies, std::string* error);

}  // namespace bloomgate
