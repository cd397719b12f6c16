// bloomgate migrate: copies the filters of a live Redis + RedisBloom (or a
// Bloomgate) into a running Bloomgate through SCANDUMP / LOADCHUNK, reading
// only from the source. See kMigrateHelp in migrate.cc for the options.
#pragma once

namespace bloomgate {

// argv[1] is "migrate"; returns the process exit status: 0 if no key
// failed, 1 if one did (each is named with its reason), 2 for bad usage,
// 3 if a server could not be reached or the run was cut short.
int RunMigrate(int argc, char** argv);

}  // namespace bloomgate
