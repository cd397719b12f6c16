#include "server/data_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "persistence/file_system.h"

namespace bloomgate {
namespace {

std::string ErrnoText(int error) { return std::strerror(error); }

// The pid the holder wrote into the file, or "" when it is not readable yet
// (the holder writes it right after taking the lock).
std::string ReadHolderPid(int fd) {
  char buffer[32] = {};
  ssize_t n = pread(fd, buffer, sizeof(buffer) - 1, 0);
  if (n <= 0) return "";
  std::string_view text(buffer, static_cast<size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  for (char c : text) {
    if (c < '0' || c > '9') return "";
  }
  return std::string(text);
}

}  // namespace

std::string CheckDataDir(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return "the data directory '" + dir + "' does not exist: create it (mkdir -p) or point "
             "--dir / the config's dir at an existing one";
    }
    return "the data directory '" + dir + "' cannot be examined: " + ErrnoText(errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return "the data directory '" + dir + "' is not a directory";
  }
  // W_OK | X_OK: the server creates, renames and removes files in it.
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    int error = errno;
    return "the data directory '" + dir + "' is not writable by this process (uid " +
           std::to_string(getuid()) + "): " + ErrnoText(error) +
           "; the snapshot and the append-only log are written there";
  }
  return "";
}

bool DataDirHeld(const std::string& dir, std::string* holder) {
  const std::string path = JoinPath(dir, kDataDirLockName);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // no lock file: no server (a clean stop removes it)
  // Shared and at once: held exclusively by a server, this fails; taken,
  // it is released by the close below.
  const bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  if (held) {
    std::string pid = ReadHolderPid(fd);
    *holder = (pid.empty() ? std::string("pid unknown") : "pid " + pid) + ", lock " + path;
  }
  close(fd);
  return held;
}

DataDirLock::~DataDirLock() { Release(); }

bool DataDirLock::Acquire(const std::string& dir, std::string* error) {
  Release();
  const std::string path = JoinPath(dir, kDataDirLockName);
  // A holder that stops removes the file while it still holds the lock, so
  // a file we opened may be unlinked by the time we lock it: then the lock
  // protects nothing and we try again on the new file. Three rounds are
  // plenty (each needs another server to stop between two syscalls).
  for (int attempt = 0; attempt < 3; ++attempt) {
    // No O_TRUNC: the holder's pid must survive our open.
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      *error = "cannot create the lock file " + path + ": " + ErrnoText(errno);
      return false;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int lock_error = errno;
      std::string pid = ReadHolderPid(fd);
      close(fd);
      if (lock_error == EWOULDBLOCK) {
        *error = "the data directory '" + dir + "' is in use by another bloomgate (" +
                 (pid.empty() ? std::string("pid unknown") : "pid " + pid) + ", lock " + path +
                 "); stop it first or give this server another --dir";
      } else {
        *error = "cannot lock " + path + ": " + ErrnoText(lock_error);
      }
      return false;
    }
    struct stat held {};
    struct stat named {};
    if (fstat(fd, &held) == 0 && stat(path.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev) {
      // A file with a pid in it that nobody locks: its server never got to
      // Release (ours is empty until the pwrite below).
      stale_pid_ = ReadHolderPid(fd);
      found_stale_ = held.st_size > 0;
      std::string pid = std::to_string(getpid()) + "\n";
      if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) !=
                                       static_cast<ssize_t>(pid.size())) {
        int write_error = errno;
        close(fd);
        *error = "cannot write the lock file " + path + ": " + ErrnoText(write_error);
        return false;
      }
      fd_ = fd;
      path_ = path;
      return true;
    }
    close(fd);  // the file we locked was removed meanwhile
  }
  *error = "cannot lock " + path + ": it keeps being replaced";
  return false;
}

void DataDirLock::Release() {
  if (fd_ < 0) return;
  // Unlink before unlocking: a server that locks the old inode after this
  // sees that it is no longer the named file and retries (Acquire).
  (void)unlink(path_.c_str());
  close(fd_);
  fd_ = -1;
  path_.clear();
}

}  // namespace bloomgate
