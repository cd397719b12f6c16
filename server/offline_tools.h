// The offline modes of the bloomgate binary, which never open a socket:
//   bloomgate check-snapshot FILE
//       verifies every checksum and parameter of a snapshot and prints a
//       summary of its keys; exit status 0 if it would load, 1 if not.
//   bloomgate check-log FILE
//       the same for an append-only log: its records by command and type,
//       the first and last record's time, where it is damaged.
//   bloomgate build --output FILE [--input FILE|-] [--key NAME]
//                   [--error-rate P] [--capacity N] [--expansion E] [--force]
//       reads items, one per line, and writes a snapshot holding one Bloom
//       filter under NAME, for a batch job or a storage engine that builds
//       filters without a server. Start a server on it by putting it in the
//       server's dir as its dbfilename. Reports progress on stderr every
//       few seconds while it reads. Refuses a directory a running server
//       holds (data_dir.h) and an existing FILE unless --force.
//   bloomgate import-rdb FILE --to HOST:PORT | --output SNAPSHOT
//       loads the RedisBloom keys of a Redis RDB file into a running Bloomgate
//       or a snapshot file (server/tools/import_rdb.h).
//   bloomgate migrate --from HOST:PORT ...
//       the one that talks to servers: copies a running RedisBloom's (or
//       Bloomgate's) filters into a running Bloomgate (server/tools/migrate.h).
// Each takes --help.
#pragma once

#include <string_view>

namespace bloomgate {

// The sub-commands' usage lines, for the server's --help.
std::string_view OfflineModesUsage();
// Whether argv names an offline mode (argv[1] is "check-snapshot", "check-log", "build",
// "migrate" or "import-rdb").
bool IsOfflineMode(int argc, char** argv);
// Runs it; returns the process exit status.
int RunOfflineMode(int argc, char** argv);

}  // namespace bloomgate
