// The replication mark: which stream a snapshot's data belongs to and where
// in it the snapshot's cut fell, so a server restarted with its data resumes
// with PSYNC instead of a full sync (Redis keeps the same in its RDB's aux
// fields repl-id and repl-offset).
//
// It is a small file beside the snapshot, <dbfilename>.repl, replaced whole
// (replace_file.h) after the snapshot it pairs with is in place. It names
// that snapshot's log generation: start-up trusts it only with a snapshot
// that names the same generation, so a crash between the two replacements
// leaves a mark that no longer pairs, and the server syncs in full.
//
// Text, one field a line, then a CRC-64 of the lines before it:
//   bloomgate-replication-mark 1
//   replid <40 hexadecimal characters>
//   offset <decimal: the stream offset at the cut's barrier>
//   log-generation <decimal: the snapshot's>
//   crc64 <16 hexadecimal characters>
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "persistence/file_system.h"
#include "persistence/status.h"

namespace bloomgate {

struct ReplicationMark {
  std::string replid;
  uint64_t offset = 0;
  uint64_t log_generation = 0;

  bool operator==(const ReplicationMark&) const = default;
};

// <dbfilename>.repl
std::string ReplicationMarkFileName(std::string_view dbfilename);

std::string EncodeReplicationMark(const ReplicationMark& mark);
// "" on success, else what is wrong with `text`.
std::string DecodeReplicationMark(std::string_view text, ReplicationMark* mark);

// Replaces dir/ReplicationMarkFileName(dbfilename) with `mark`.
Status WriteReplicationMark(FileSystem& fs, const std::string& dir, std::string_view dbfilename,
                            const ReplicationMark& mark);
// Reads it: *found false (and Ok) when there is none; an error when it
// cannot be read or does not decode.
Status ReadReplicationMark(FileSystem& fs, const std::string& dir, std::string_view dbfilename,
                           ReplicationMark* mark, bool* found);
// Removes it (and syncs the directory), so the data on disk stands for no
// stream position until the next snapshot writes one. Ok if there is none.
Status RemoveReplicationMark(FileSystem& fs, const std::string& dir, std::string_view dbfilename);

}  // namespace bloomgate
