// Replacing a file whole, the one way snapshots and the config file are
// written: a temporary beside it (<name>.tmp.<pid>.<counter>), fsync, rename
// over the old one, fsync of the directory. A crash at any step leaves the
// old file or the new one, never a mix; a failure before the rename removes
// the temporary and leaves the old file.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "persistence/file_system.h"
#include "persistence/status.h"

namespace bloomgate {

// What a temporary's name holds between the file's name and <pid>.<counter>.
inline constexpr std::string_view kReplaceTempInfix = ".tmp.";

// Writes the new contents into the temporary. On failure it names the step
// that failed ("write", ...) in *failed_step.
using ContentsWriter = std::function<Status(WritableFile& file, std::string* failed_step)>;

// Whether a replacement is fsynced. kDurable: the new file survives a crash
// of the machine once the call returns. kProcessCrashSafe: no fsync, so the
// rename still gives the old file or the new one to any reader and after a
// crash of the process, but a crash of the machine may bring the old one
// back (or, on a file system without ext4's replace-on-rename flush, leave
// an empty file).
enum class ReplaceSync { kDurable, kProcessCrashSafe };

// Replaces dir/filename with what `write` writes. Errors read "<context>
// failed at <step>: <why>". A failure of the final directory fsync comes
// after the rename: the new file is then in place, but a crash could still
// bring the old one back, so the error means "not known to be durable".
Status ReplaceFileWith(FileSystem& fs, const std::string& dir, const std::string& filename,
                       const std::string& context, const ContentsWriter& write,
                       ReplaceSync sync = ReplaceSync::kDurable);

// The same with `contents`; errors name `path`.
Status ReplaceFile(FileSystem& fs, const std::string& path, std::string_view contents,
                   ReplaceSync sync = ReplaceSync::kDurable);

}  // namespace bloomgate
