// Start-up over a damaged log that is not the newest one. Only the newest
// log may end in a torn record (a crash mid-write; Redis's
// aof-load-truncated covers only the last file): an older one was closed,
// flushed and fsynced before the next was opened, so damage there is
// damage. Start-up must refuse, name the file and the offset, and leave
// every file as it was.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../../config/temp_dir.h"
#include "../../persistence/fault_file_system.h"
#include "../durable_session.h"
#include "persistence/append_log.h"
#include "server/commands/journal_applier.h"
#include "server/durability/durability.h"

namespace bloomgate::testing {
namespace {

using test_support::FaultFileSystem;
using test_support::FaultOp;
using testutil::TempDir;

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

fs::path LogPath(const TempDir& dir, uint64_t generation) {
  return dir.path() / LogFileName("appendonly.bglog", generation);
}

// A data directory with two live logs: a save whose rename failed cut a new
// generation but left the old snapshot (so the older log still counts).
// Returns the older log's generation; the newer is the next one.
uint64_t TwoLiveLogs(const TempDir& dir) {
  ServerConfig config = DurableConfigIn(dir, ServerConfig::AppendFsync::kAlways);
  FaultFileSystem fault(DefaultFileSystem());
  auto server = StartOn(config, &fault);
  Session s(server.get());
  for (int i = 0; i < 3; ++i) RunDurably(*server, s, {"CBF.ADD", "cbf", "x"});
  RunDurably(*server, s, {"CF.ADD", "cf", "x"});
  const std::string info = s.Run({"INFO", "persistence"});
  const size_t at = info.find("aof_generation:") + 15;
  const uint64_t older = std::stoull(info.substr(at, info.find('\r', at) - at));
  fault.FailNth(FaultOp::kRename, fault.calls(FaultOp::kRename) + 1, "Input/output error");
  EXPECT_TRUE(s.Run({"SAVE"}).starts_with("-ERR ")) << "the save was to fail at its rename";
  RunDurably(*server, s, {"CBF.DEL", "cbf", "x"});
  RunDurably(*server, s, {"CF.ADD", "cf", "y"});
  EXPECT_TRUE(fs::exists(LogPath(dir, older)));
  EXPECT_TRUE(fs::exists(LogPath(dir, older + 1)));
  return older;  // the server "crashes" here (dropped without Shutdown)
}

// Every file of the directory, by name.
std::vector<std::pair<std::string, std::string>> Contents(const TempDir& dir) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    out.emplace_back(entry.path().filename().string(), ReadFile(entry.path()));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status Load(const TempDir& dir) {
  auto server = MakeServer(DurableConfigIn(dir, ServerConfig::AppendFsync::kAlways));
  return LoadDurableState(*server);
}

TEST(DamagedLogStartUp, BothLogsReplayWhenIntact) {
  TempDir dir;
  TwoLiveLogs(dir);
  auto server = StartOn(DurableConfigIn(dir, ServerConfig::AppendFsync::kAlways),
                        DefaultFileSystem());
  Session s(server.get());
  EXPECT_EQ(s.Run({"CBF.COUNT", "cbf", "x"}), Int(2));
  EXPECT_EQ(s.Run({"CF.EXISTS", "cf", "y"}), Int(1));
}

TEST(DamagedLogStartUp, ABadChecksumInAnOlderLogRefusesStartUpNamingFileAndOffset) {
  TempDir dir;
  const uint64_t older = TwoLiveLogs(dir);
  const fs::path path = LogPath(dir, older);
  std::string bytes = ReadFile(path);
  // The last byte is inside the last record's body: in the newest log this
  // would be a torn tail; here it must not be.
  bytes.back() ^= 0x40;
  WriteFile(path, bytes);
  const auto before = Contents(dir);
  Status loaded = Load(dir);
  ASSERT_FALSE(loaded.ok());
  const std::string& message = loaded.message();
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find(" at offset "), std::string::npos) << message;
  EXPECT_NE(message.find("not the newest"), std::string::npos) << message;
  EXPECT_EQ(Contents(dir), before) << "a refused start-up must leave the files as they were";
}

TEST(DamagedLogStartUp, ATruncatedOlderLogRefusesStartUpAndIsNotCut) {
  TempDir dir;
  const uint64_t older = TwoLiveLogs(dir);
  const fs::path path = LogPath(dir, older);
  std::string bytes = ReadFile(path);
  bytes.resize(bytes.size() - 3);  // a torn final record, in a log that is not the newest
  WriteFile(path, bytes);
  const auto before = Contents(dir);
  Status loaded = Load(dir);
  ASSERT_FALSE(loaded.ok());
  const std::string& message = loaded.message();
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find(" at offset "), std::string::npos) << message;
  EXPECT_NE(message.find("not the newest"), std::string::npos) << message;
  EXPECT_EQ(Contents(dir), before) << "the older log must not be truncated";
}

TEST(DamagedLogStartUp, TheSameTruncationOfTheNewestLogIsCutOffAndLoads) {
  TempDir dir;
  const uint64_t older = TwoLiveLogs(dir);
  const fs::path path = LogPath(dir, older + 1);
  std::string bytes = ReadFile(path);
  bytes.resize(bytes.size() - 3);  // the last record (CF.ADD cf y) is torn
  WriteFile(path, bytes);
  auto server = StartOn(DurableConfigIn(dir, ServerConfig::AppendFsync::kAlways),
                        DefaultFileSystem());
  Session s(server.get());
  EXPECT_EQ(s.Run({"CBF.COUNT", "cbf", "x"}), Int(2));
  EXPECT_EQ(s.Run({"CF.EXISTS", "cf", "y"}), Int(0));
}

}  // namespace
}  // namespace bloomgate::testing
