// Helpers for durability tests in-process: a server context that loaded a
// data directory (snapshot + logs) through a chosen file system, and a
// command run the way a connection runs it, with its log records made
// durable before the "reply". A test "crashes" by dropping the context
// without Shutdown, as kill -9 would.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "../config/temp_dir.h"
#include "server/commands/journal_applier.h"
#include "server/durability/durability.h"
#include "session.h"

namespace bloomgate::testing {

// A config on `dir` with only explicit saves and the given fsync policy.
inline ServerConfig DurableConfigIn(const testutil::TempDir& dir,
                                    ServerConfig::AppendFsync fsync) {
  ServerConfig config;
  config.dir = dir.path().string();
  config.save = {};
  config.appendfsync = fsync;
  return config;
}

// A context that has loaded config.dir through `fs`.
inline std::unique_ptr<ServerContext> StartOn(const ServerConfig& config, FileSystem* fs) {
  auto server = MakeServer(config);
  server->UseFileSystem(fs);
  Status loaded = LoadDurableState(*server);
  EXPECT_TRUE(loaded.ok()) << loaded.message();
  return server;
}

inline std::string RunDurably(ServerContext& server, Session& session, const Args& args) {
  std::string reply = session.Run(args);
  Status flushed = server.journal.AwaitForReply(session.client().journal);
  EXPECT_TRUE(flushed.ok()) << flushed.message();
  return reply;
}

}  // namespace bloomgate::testing
