// The offline modes of the bloomgate binary, which never open a socket:
//   bloomgate check-snapshot FILE
//       verifies every checksum and parameter of a snapshot and prints a
//       summary of its keys; exit status 0 if it would load, 1 if not.
//   bloomgate build --output FILE [--input FILE|-] [--key NAME]
//                   [--error-rate P] [--capacity N] [--expansion E]
//       reads items, one per line, and writes a snapshot holding one Bloom
//       filter under NAME, for a batch job or a storage engine that builds
//       filters without a server. Start a server on it by putting it in the
//       server's dir as its dbfilename. Reports progress on stderr every
//       few seconds while it reads.
//   bloomgate migrate --from HOST:PORT ...
//       the one that talks to servers: copies a running RedisBloom's (or
//       Bloomgate's) filters into a running Bloomgate (server/tools/migrate.h).
// Each takes --help.
#pragma once

#include <string_view>

namespace bloomgate {

// The sub-commands' usage lines, for the server's --help.
std::string_view OfflineModesUsage();
// Whether argv names an offline mode (argv[1] is "check-snapshot", "build" or "migrate").
bool IsOfflineMode(int argc, char** argv);
// Runs it; returns the process exit status.
int RunOfflineMode(int argc, char** argv);

}  // namespace bloomgate
