// Replacing a small file whole, the way snapshots are written: a temporary
// beside it (<name>.tmp.<pid>.<counter>), fsync, rename over the old one,
// fsync of the directory. A crash at any step leaves the old file or the new
// one, never a mix; a failure removes the temporary and leaves the old file.
#pragma once

#include <string>
#include <string_view>

#include "persistence/file_system.h"
#include "persistence/status.h"

namespace bloomgate {

// Errors name the step: "<path> failed at fsync: ...".
Status ReplaceFile(FileSystem& fs, const std::string& path, std::string_view contents);

}  // namespace bloomgate
