#include "persistence/file_system.h"

#include <cerrno>
#include <cstring>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace bloomgate {
namespace {

Status ErrnoError(std::string_view step, const std::string& path, int error) {
  return Status::Error(std::string(step) + " " + path + ": " + std::strerror(error));
}

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Append(std::string_view data) override {
    while (!data.empty()) {
      if (fd_ < 0) return Status::Error("write " + path_ + ": file is closed");
      ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoError("write", path_, errno);
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return Status::Ok();
  }

  Status Sync() override {
    if (fd_ < 0) return Status::Error("fsync " + path_ + ": file is closed");
    if (::fdatasync(fd_) != 0) return ErrnoError("fsync", path_, errno);
    return Status::Ok();
  }

  Status Close() override {
    if (fd_ < 0) return Status::Ok();
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return ErrnoError("close", path_, errno);
    return Status::Ok();
  }

 private:
  std::string path_;
  int fd_;
};

class PosixSequentialFile : public SequentialFile {
 public:
  PosixSequentialFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixSequentialFile() override { ::close(fd_); }

  Status Read(size_t n, std::string* out) override {
    out->resize(n);
    size_t filled = 0;
    while (filled < n) {
      ssize_t got = ::read(fd_, out->data() + filled, n - filled);
      if (got < 0) {
        if (errno == EINTR) continue;
        out->clear();
        return ErrnoError("read", path_, errno);
      }
      if (got == 0) break;
      filled += static_cast<size_t>(got);
    }
    out->resize(filled);
    return Status::Ok();
  }

 private:
  std::string path_;
  int fd_;
};

class PosixFileSystem : public FileSystem {
 public:
  Status CreateNew(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoError("create", path, errno);
    *out = std::make_unique<PosixWritableFile>(path, fd);
    return Status::Ok();
  }

  Status OpenForAppend(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return ErrnoError("open", path, errno);
    *out = std::make_unique<PosixWritableFile>(path, fd);
    return Status::Ok();
  }

  Status OpenForRead(const std::string& path, std::unique_ptr<SequentialFile>* out) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoError("open", path, errno);
    *out = std::make_unique<PosixSequentialFile>(path, fd);
    return Status::Ok();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoError("rename", from + " to", errno);
    return Status::Ok();
  }

  Status SyncDirectory(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoError("open directory", dir, errno);
    int rc = ::fsync(fd);
    int error = errno;
    ::close(fd);
    if (rc != 0) return ErrnoError("fsync directory", dir, error);
    return Status::Ok();
  }

  Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return ErrnoError("remove", path, errno);
    return Status::Ok();
  }

  Status Truncate(const std::string& path, uint64_t size) override {
    if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) {
      return ErrnoError("truncate", path, errno);
    }
    return Status::Ok();
  }

  Status FileSize(const std::string& path, uint64_t* size) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ErrnoError("stat", path, errno);
    *size = static_cast<uint64_t>(st.st_size);
    return Status::Ok();
  }

  bool Exists(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
  }

  Status ListDirectory(const std::string& dir, std::vector<std::string>* names) override {
    names->clear();
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return ErrnoError("list directory", dir, errno);
    while (dirent* entry = ::readdir(d)) {
      std::string_view name = entry->d_name;
      if (name != "." && name != "..") names->emplace_back(name);
    }
    ::closedir(d);
    return Status::Ok();
  }
};

}  // namespace

FileSystem* DefaultFileSystem() {
  static PosixFileSystem file_system;
  return &file_system;
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  std::string path(dir);
  if (!path.empty() && path.back() != '/') path += '/';
  path += name;
  return path;
}

}  // namespace bloomgate
