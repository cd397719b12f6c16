#include "persistence/replace_file.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>

namespace bloomgate {
namespace {

// Unique within the process (fetch_add never hands out a value twice); the
// pid makes the name unique across processes.
std::atomic<uint64_t> replace_counter{0};

}  // namespace

Status ReplaceFileWith(FileSystem& fs, const std::string& dir, const std::string& filename,
                       const std::string& context, const ContentsWriter& write,
                       ReplaceSync sync) {
  const bool durable = sync == ReplaceSync::kDurable;
  const std::string final_path = JoinPath(dir, filename);
  const std::string temp_path =
      JoinPath(dir, filename + std::string(kReplaceTempInfix) + std::to_string(::getpid()) + "." +
                        std::to_string(replace_counter.fetch_add(1, std::memory_order_relaxed)));
  std::unique_ptr<WritableFile> file;
  Status step = fs.CreateNew(temp_path, &file);
  // Nothing to remove: a failed exclusive create made no file of ours.
  if (!step.ok()) return step.WithContext(context + " failed at create: ");
  // Every failure before the rename ends here: the temporary goes, the old
  // file was never touched.
  auto abandon = [&](std::string_view what, const Status& why) {
    file.reset();  // closes the descriptor; a close error adds nothing now
    std::string message = context + " failed at " + std::string(what) + ": " + why.message();
    Status removed = fs.Remove(temp_path);
    if (!removed.ok()) message += "; the temporary was not removed: " + removed.message();
    return Status::Error(std::move(message));
  };
  std::string failed_step = "write";
  step = write(*file, &failed_step);
  if (!step.ok()) return abandon(failed_step, step);
  if (durable) {
    step = file->Sync();
    if (!step.ok()) return abandon("fsync", step);
  }
  step = file->Close();
  if (!step.ok()) return abandon("close", step);
  step = fs.Rename(temp_path, final_path);
  if (!step.ok()) return abandon("rename", step);
  if (!durable) return Status::Ok();
  step = fs.SyncDirectory(dir);
  if (!step.ok()) {
    return Status::Error(context + " failed at fsync directory: " + step.message() +
                         "; the new file is in place but may not survive a crash");
  }
  return Status::Ok();
}

Status ReplaceFile(FileSystem& fs, const std::string& path, std::string_view contents,
                   ReplaceSync sync) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const std::string filename = std::filesystem::path(path).filename().string();
  return ReplaceFileWith(fs, dir, filename, path,
                         [contents](WritableFile& file, std::string*) {
                           return file.Append(contents);
                         },
                         sync);
}

}  // namespace bloomgate
