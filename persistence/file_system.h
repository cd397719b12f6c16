// The file operations persistence needs, behind an interface so tests can
// inject failures (disk full, a failing fsync or rename) at any step without
// root, tmpfs or a real broken disk. PosixFileSystem is the real one.
//
// Every error message names the path and the step ("fsync /d/dump.bgs.tmp:
// No space left on device").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "persistence/status.h"

namespace bloomgate {

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Writes all of `data` at the end of the file (retrying short writes).
  virtual Status Append(std::string_view data) = 0;
  // fdatasync(2): everything appended so far is on stable storage.
  virtual Status Sync() = 0;
  // Closes the descriptor; later calls fail. The destructor closes too.
  virtual Status Close() = 0;
};

class SequentialFile {
 public:
  virtual ~SequentialFile() = default;
  // Reads up to `n` bytes into *out (replacing it); fewer only at the end of
  // the file, and an empty *out means the end.
  virtual Status Read(size_t n, std::string* out) = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Creates `path`, failing if it exists (O_CREAT | O_EXCL), for writing.
  virtual Status CreateNew(const std::string& path, std::unique_ptr<WritableFile>* out) = 0;
  // Opens an existing file for appending at its end.
  virtual Status OpenForAppend(const std::string& path, std::unique_ptr<WritableFile>* out) = 0;
  virtual Status OpenForRead(const std::string& path, std::unique_ptr<SequentialFile>* out) = 0;
  // rename(2): atomically replaces `to`.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // fsync(2) of a directory, so a rename or a new file in it is durable.
  virtual Status SyncDirectory(const std::string& dir) = 0;
  virtual Status Remove(const std::string& path) = 0;
  // truncate(2) to `size` bytes.
  virtual Status Truncate(const std::string& path, uint64_t size) = 0;
  virtual Status FileSize(const std::string& path, uint64_t* size) = 0;
  virtual bool Exists(const std::string& path) = 0;
  // Names (not paths) of the directory's entries, "." and ".." left out.
  virtual Status ListDirectory(const std::string& dir, std::vector<std::string>* names) = 0;
};

// The process-wide real file system.
FileSystem* DefaultFileSystem();

// "dir/name", without doubling a trailing slash.
std::string JoinPath(std::string_view dir, std::string_view name);

}  // namespace bloomgate
