// bloomgate import-rdb: loads the RedisBloom keys of a Redis RDB file (a
// RedisBloom server's dump.rdb, or what `redis-cli --rdb` fetched) into a
// running Bloomgate, or into a snapshot file. See kImportRdbHelp in
// import_rdb.cc for the options.
#pragma once

namespace bloomgate {

// argv[1] is "import-rdb"; returns the process exit status: 0 if every
// RedisBloom key was loaded (keys of other types are listed and skipped),
// 1 if one was not (each is named with its reason) or the file was refused,
// 2 for bad usage, 3 if the server could not be reached or stopped answering.
int RunImportRdb(int argc, char** argv);

}  // namespace bloomgate
