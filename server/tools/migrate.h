// bloomgate migrate: copies the filters of a live Redis + RedisBloom (or a
// Bloomgate) into a running Bloomgate through SCANDUMP / LOADCHUNK, or DUMP /
// RESTORE for the families without SCANDUMP, reading only from the source.
// See kMigrateHelp in migrate.cc for the options.
#pragma once

namespace bloomgate {

// argv[1] is "migrate"; returns the process exit status: 0 if every filter
// key was copied, 1 if one was not (each is named with its reason) or the
// source has no filter module, 2 for bad usage, 3 if a server could not be
// reached or the run was cut short.
int RunMigrate(int argc, char** argv);

}  // namespace bloomgate
