// The data directory at start-up: is it usable, and is it ours.
//
// Two servers on one directory corrupt each other: the second one's log
// generation N+1 makes every later save of the first fail with "File
// exists". So the server takes an exclusive flock(2) on <dir>/bloomgate.lock
// before it opens anything else there, holds it for its whole life, and a
// second server refuses to start, naming the pid that holds it.
#pragma once

#include <string>

namespace bloomgate {

// The lock file's name inside the data directory.
inline constexpr const char* kDataDirLockName = "bloomgate.lock";

// Empty if `dir` exists, is a directory and this process may create files
// in it; otherwise one sentence saying which of these is wrong and what to
// do about it.
std::string CheckDataDir(const std::string& dir);

// Whether a running server holds `dir` (its lock file exists and is
// flock(2)ed), for the offline tools that write there; *holder then gets
// "pid 1234, lock <dir>/bloomgate.lock". Never creates the lock file.
bool DataDirHeld(const std::string& dir, std::string* holder);

class DataDirLock {
 public:
  DataDirLock() = default;
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

  // Takes the lock without waiting. False with *error ("... is in use by
  // bloomgate pid 1234 ...") when another process holds it or the file
  // cannot be made.
  bool Acquire(const std::string& dir, std::string* error);
  // Removes the lock file (so a clean stop leaves the directory as it found
  // it) and releases the lock. Idempotent; the destructor calls it.
  void Release();
  // After Acquire: whether the lock file was already there, unlocked. A
  // server that stops removes it, so one left behind means the last server
  // on this directory did not stop cleanly (killed, crashed, power lost).
  bool found_stale() const { return found_stale_; }
  // The pid that stale file named ("" if none was readable).
  const std::string& stale_pid() const { return stale_pid_; }

 private:
  int fd_ = -1;
  std::string path_;
  bool found_stale_ = false;
  std::string stale_pid_;
};

}  // namespace bloomgate
