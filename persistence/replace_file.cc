#include "persistence/replace_file.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>

namespace bloomgate {
namespace {

// Unique within the process; the pid makes it unique across processes.
std::atomic<uint64_t> replace_counter{0};

}  // namespace

Status ReplaceFile(FileSystem& fs, const std::string& path, std::string_view contents) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const std::string temp_path =
      path + ".tmp." + std::to_string(::getpid()) + "." +
      std::to_string(replace_counter.fetch_add(1, std::memory_order_relaxed));
  std::unique_ptr<WritableFile> file;
  Status step = fs.CreateNew(temp_path, &file);
  if (!step.ok()) return step.WithContext(path + " failed at create: ");
  auto abandon = [&](std::string_view what, const Status& why) {
    file.reset();
    std::string message = path + " failed at " + std::string(what) + ": " + why.message();
    Status removed = fs.Remove(temp_path);
    if (!removed.ok()) message += "; the temporary was not removed: " + removed.message();
    return Status::Error(std::move(message));
  };
  step = file->Append(contents);
  if (!step.ok()) return abandon("write", step);
  step = file->Sync();
  if (!step.ok()) return abandon("fsync", step);
  step = file->Close();
  if (!step.ok()) return abandon("close", step);
  step = fs.Rename(temp_path, path);
  if (!step.ok()) return abandon("rename", step);
  step = fs.SyncDirectory(dir);
  if (!step.ok()) return step.WithContext(path + " is replaced but failed at fsync directory: ");
  return Status::Ok();
}

}  // namespace bloomgate
