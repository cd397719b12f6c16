// ByteProgress's figures and log cadence, and ProgressFileSystem's counting
// and cancelling of the reads and writes that go through it.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "../../config/temp_dir.h"
#include "persistence/file_system.h"
#include "server/durability/progress.h"
#include "server/durability/progress_file_system.h"

namespace bloomgate {
namespace {

TEST(ByteProgress, HalfOfTheBytesInTwoSecondsLeavesTwoSecondsAtHalfTheTotal) {
  ByteProgress progress;
  progress.Begin(/*total_bytes=*/1000, /*now_ms=*/10'000);
  progress.Add(500);
  ByteProgress::Figures f = progress.Read(/*now_ms=*/12'000);
  EXPECT_EQ(f.done_bytes, 500u);
  EXPECT_DOUBLE_EQ(f.percent, 50.0);
  EXPECT_DOUBLE_EQ(f.bytes_per_second, 250.0);
  EXPECT_EQ(f.eta_seconds, 2);
  EXPECT_EQ(ByteProgress::Describe(f), "0.0 MB of 0.0 MB (50.0%), 0.0 MB/s, about 2 s left");
}

TEST(ByteProgress, AnUnknownTotalHasNoPercentOrEta) {
  ByteProgress progress;
  progress.Begin(/*total_bytes=*/0, /*now_ms=*/0);
  progress.Add(3'000'000);
  ByteProgress::Figures f = progress.Read(/*now_ms=*/1000);
  EXPECT_EQ(f.percent, 0);
  EXPECT_EQ(f.eta_seconds, -1);
  EXPECT_EQ(ByteProgress::Describe(f), "3.0 MB, 3.0 MB/s");
}

TEST(ByteProgress, AnEstimatedTotalThatIsPassedShowsOneHundredPercent) {
  ByteProgress progress;
  progress.Begin(/*total_bytes=*/100, /*now_ms=*/0);
  progress.Add(150);
  EXPECT_DOUBLE_EQ(progress.Read(/*now_ms=*/1).percent, 100.0);
  EXPECT_EQ(progress.Read(/*now_ms=*/1).eta_seconds, 0);
}

TEST(ByteProgress, ALogLineIsDueOncePerInterval) {
  ByteProgress progress;
  progress.Begin(/*total_bytes=*/10, /*now_ms=*/0);
  EXPECT_FALSE(progress.LogDue(ByteProgress::kLogIntervalMs - 1));
  EXPECT_TRUE(progress.LogDue(ByteProgress::kLogIntervalMs));
  EXPECT_FALSE(progress.LogDue(ByteProgress::kLogIntervalMs + 1));
  EXPECT_TRUE(progress.LogDue(2 * ByteProgress::kLogIntervalMs + 5));
}

TEST(ProgressFileSystem, CountsEveryByteReadAndWrittenThroughIt) {
  testutil::TempDir dir;
  ByteProgress progress;
  progress.Begin(0, 0);
  int reports = 0;
  ProgressFileSystem::Options options;
  options.progress = &progress;
  options.on_progress = [&reports] { ++reports; };
  ProgressFileSystem fs(DefaultFileSystem(), options);
  const std::string path = (dir.path() / "f").string();
  std::unique_ptr<WritableFile> out;
  ASSERT_TRUE(fs.CreateNew(path, &out).ok());
  ASSERT_TRUE(out->Append(std::string(70'000, 'x')).ok());
  ASSERT_TRUE(out->Close().ok());
  EXPECT_EQ(progress.Read(1).done_bytes, 70'000u);
  std::unique_ptr<SequentialFile> in;
  ASSERT_TRUE(fs.OpenForRead(path, &in).ok());
  std::string chunk;
  uint64_t read = 0;
  do {
    ASSERT_TRUE(in->Read(32'768, &chunk).ok());
    read += chunk.size();
  } while (!chunk.empty());
  EXPECT_EQ(read, 70'000u);
  EXPECT_EQ(progress.Read(1).done_bytes, 140'000u);
  EXPECT_GE(reports, 4);  // one write, three non-empty reads (and the empty one)
}

TEST(ProgressFileSystem, AThrottledReadStillReturnsWhatWasAskedFor) {
  testutil::TempDir dir;
  const std::string path = dir.WriteFile("f", std::string(40'000, 'y'));
  ByteProgress progress;
  progress.Begin(0, 0);
  ProgressFileSystem::Options options;
  options.progress = &progress;
  options.max_read_bytes_per_second = 1'000'000'000;  // a cap that never sleeps long
  ProgressFileSystem fs(DefaultFileSystem(), options);
  std::unique_ptr<SequentialFile> in;
  ASSERT_TRUE(fs.OpenForRead(path, &in).ok());
  std::string chunk;
  ASSERT_TRUE(in->Read(35'000, &chunk).ok());
  EXPECT_EQ(chunk.size(), 35'000u);  // joined from 16 KiB pieces
  ASSERT_TRUE(in->Read(35'000, &chunk).ok());
  EXPECT_EQ(chunk.size(), 5'000u);
}

TEST(ProgressFileSystem, ACancelledJobFailsItsNextRead) {
  testutil::TempDir dir;
  const std::string path = dir.WriteFile("f", std::string(1000, 'z'));
  ByteProgress progress;
  progress.Begin(0, 0);
  std::atomic<bool> cancel{false};
  ProgressFileSystem::Options options;
  options.progress = &progress;
  options.cancel = &cancel;
  ProgressFileSystem fs(DefaultFileSystem(), options);
  std::unique_ptr<SequentialFile> in;
  ASSERT_TRUE(fs.OpenForRead(path, &in).ok());
  std::string chunk;
  ASSERT_TRUE(in->Read(100, &chunk).ok());
  cancel.store(true);
  Status status = in->Read(100, &chunk);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("stopping"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace bloomgate
