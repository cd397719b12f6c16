#include "persistence/replace_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/unit/config/temp_dir.h"
#include "tests/unit/persistence/fault_file_system.h"

namespace bloomgate {
namespace {

using test_support::FaultFileSystem;
using test_support::FaultOp;

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  EXPECT_TRUE(DefaultFileSystem()->ListDirectory(dir, &names).ok());
  return names;
}

TEST(ReplaceFile, ReplacesTheWholeFileAndLeavesNoTemporary) {
  testutil::TempDir dir;
  const std::string path = dir.WriteFile("bloomgate.yaml", "port: 1\n# long comment\n");
  ASSERT_TRUE(ReplaceFile(*DefaultFileSystem(), path, "port: 2\n").ok());
  EXPECT_EQ(Contents(path), "port: 2\n");
  EXPECT_EQ(Names(dir.path().string()), std::vector<std::string>{"bloomgate.yaml"});
}

TEST(ReplaceFile, AFailureAtAnyStepBeforeTheRenameKeepsTheOldFile) {
  for (FaultOp op : {FaultOp::kAppend, FaultOp::kSync, FaultOp::kClose, FaultOp::kRename}) {
    testutil::TempDir dir;
    const std::string path = dir.WriteFile("bloomgate.yaml", "port: 1\n");
    FaultFileSystem fs(DefaultFileSystem());
    fs.FailNth(op, 1, "Input/output error");
    Status status = ReplaceFile(fs, path, "port: 2\n");
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.message().find(path), std::string::npos) << status.message();
    EXPECT_EQ(Contents(path), "port: 1\n");
    EXPECT_EQ(Names(dir.path().string()), std::vector<std::string>{"bloomgate.yaml"});
  }
}

TEST(ReplaceFile, SyncsTheFileBeforeTheRenameAndTheDirectoryAfter) {
  testutil::TempDir dir;
  const std::string path = dir.WriteFile("bloomgate.yaml", "port: 1\n");
  FaultFileSystem fs(DefaultFileSystem());
  ASSERT_TRUE(ReplaceFile(fs, path, "port: 2\n").ok());
  EXPECT_EQ(fs.calls(FaultOp::kSync), 1u);
  EXPECT_EQ(fs.calls(FaultOp::kSyncDirectory), 1u);
}

TEST(ReplaceFile, ProcessCrashSafeReplacesWholeWithoutAnyFsync) {
  testutil::TempDir dir;
  const std::string path = dir.WriteFile("nodes.conf", "old\n");
  FaultFileSystem fs(DefaultFileSystem());
  ASSERT_TRUE(ReplaceFile(fs, path, "new\n", ReplaceSync::kProcessCrashSafe).ok());
  EXPECT_EQ(Contents(path), "new\n");
  EXPECT_EQ(Names(dir.path().string()), std::vector<std::string>{"nodes.conf"});
  EXPECT_EQ(fs.calls(FaultOp::kSync), 0u);
  EXPECT_EQ(fs.calls(FaultOp::kSyncDirectory), 0u);
  EXPECT_EQ(fs.calls(FaultOp::kRename), 1u);
}

}  // namespace
}  // namespace bloomgate
