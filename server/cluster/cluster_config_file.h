// cluster-config-file: the node's id, its epochs and its view of the
// cluster, in Redis 7.0's nodes.conf format, so an operator reads it as
// they read Redis's:
//
//   <CLUSTER NODES line of every node but those in handshake>
//   ...
//   vars currentEpoch <n> lastVoteEpoch <n>
//
// Written whole through persistence/replace_file (temporary, fsync, rename,
// fsync of the directory) on every change, so a crash leaves the old view
// or the new one. A file that does not parse is refused with the line and
// the reason: a node must never come back under a new id by accident.
#pragma once

#include <string>
#include <string_view>

#include "persistence/file_system.h"
#include "server/cluster/cluster_state.h"

namespace bloomgate {

std::string RenderClusterConfig(const ClusterView& view);

// Parses the file's text into *view. On failure returns false and sets
// *error to "line <n>: <why>" (or a whole-file reason) and leaves *view
// as it was.
bool ParseClusterConfig(std::string_view text, ClusterView* view, std::string* error);

enum class ClusterConfigLoad { kLoaded, kMissing, kCorrupt };

// Reads `path`. kMissing: no file, or an empty one (Redis starts afresh
// from a zero-length nodes.conf); kCorrupt: *error says why, naming the file.
ClusterConfigLoad LoadClusterConfigFile(FileSystem& fs, const std::string& path,
                                        ClusterView* view, std::string* error);

// Writes `text` to `path` atomically, fsynced when `durable`; the failure's
// text or empty.
std::string WriteClusterConfigFile(FileSystem& fs, const std::string& path,
                                   std::string_view text, bool durable = true);

}  // namespace bloomgate
