// The default maxmemory's source: physical memory, or a cgroup v2 / v1
// limit found through the path seam (a directory of fake cgroup files).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "../../config/temp_dir.h"
#include "server/base/memory_limit.h"

namespace bloomgate {
namespace {

constexpr uint64_t kPhysical = 16ull << 30;

class MemoryLimitTest : public ::testing::Test {
 protected:
  // Writes `contents` to root/relative, creating the directories.
  void Write(const std::string& relative, const std::string& contents) {
    std::filesystem::path path = dir_.path() / relative;
    std::filesystem::create_directories(path.parent_path());
    dir_.WriteFile(std::filesystem::relative(path, dir_.path()).string(), contents);
  }
  MemoryLimitPaths Paths() const {
    MemoryLimitPaths paths;
    paths.proc_self_cgroup = (dir_.path() / "proc-self-cgroup").string();
    paths.cgroup_root = (dir_.path() / "cgroup").string();
    return paths;
  }
  std::string Root() const { return (dir_.path() / "cgroup").string(); }
  testutil::TempDir dir_;
};

TEST_F(MemoryLimitTest, WithoutCgroupFilesPhysicalMemoryIsUsed) {
  MemoryLimit limit = FindMemoryLimit(Paths(), kPhysical);
  EXPECT_EQ(limit.bytes, kPhysical);
  EXPECT_EQ(limit.source, "physical memory");
}

TEST_F(MemoryLimitTest, ACgroupV2LimitBelowRamWins) {
  Write("proc-self-cgroup", "0::/\n");
  Write("cgroup/memory.max", "2147483648\n");
  MemoryLimit limit = FindMemoryLimit(Paths(), kPhysical);
  EXPECT_EQ(limit.bytes, 2147483648u);
  EXPECT_EQ(limit.source, "cgroup v2 " + Root() + "/memory.max");
}

TEST_F(MemoryLimitTest, ACgroupV2MaxMeansNoLimit) {
  Write("proc-self-cgroup", "0::/\n");
  Write("cgroup/memory.max", "max\n");
  EXPECT_EQ(FindMemoryLimit(Paths(), kPhysical).source, "physical memory");
}

TEST_F(MemoryLimitTest, TheSmallestLimitOnTheWayToTheRootWins) {
  Write("proc-self-cgroup", "0::/system.slice/bloomgate.service\n");
  Write("cgroup/system.slice/bloomgate.service/memory.max", "max\n");
  Write("cgroup/system.slice/memory.max", "1073741824\n");
  MemoryLimit limit = FindMemoryLimit(Paths(), kPhysical);
  EXPECT_EQ(limit.bytes, 1073741824u);
  EXPECT_EQ(limit.source, "cgroup v2 " + Root() + "/system.slice/memory.max");
}

TEST_F(MemoryLimitTest, ACgroupV1LimitIsReadFromTheMemoryController) {
  Write("proc-self-cgroup", "5:cpuacct,cpu:/\n4:memory:/docker/abc\n0::/\n");
  Write("cgroup/memory/docker/abc/memory.limit_in_bytes", "536870912\n");
  MemoryLimit limit = FindMemoryLimit(Paths(), kPhysical);
  EXPECT_EQ(limit.bytes, 536870912u);
  EXPECT_EQ(limit.source, "cgroup v1 " + Root() + "/memory/docker/abc/memory.limit_in_bytes");
}

TEST_F(MemoryLimitTest, CgroupV1UnlimitedLosesToRam) {
  Write("proc-self-cgroup", "4:memory:/\n");
  Write("cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_EQ(FindMemoryLimit(Paths(), kPhysical).bytes, kPhysical);
}

TEST_F(MemoryLimitTest, AnUnknownRamTakesTheCgroupLimit) {
  Write("proc-self-cgroup", "0::/\n");
  Write("cgroup/memory.max", "4096\n");
  EXPECT_EQ(FindMemoryLimit(Paths(), /*physical_bytes=*/0).bytes, 4096u);
}

}  // namespace
}  // namespace bloomgate
