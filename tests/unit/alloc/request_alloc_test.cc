// The request path allocates nothing per command once a connection is warm:
// parsing a pipelined batch and dispatching single-item reads (issue 14:
// BF.EXISTS made 3 heap allocations per request, ~450 instructions of its
// ~3,800 under callgrind, in the key and stripe vectors of RunCommand).
//
// Its own binary, because it replaces the global operator new to count the
// allocations this thread makes; the count is per thread, so the server's
// background threads do not disturb it.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "../server/session.h"
#include "counting_new.h"
#include "server/base/key_slot.h"
#include "server/cluster/cluster_state.h"
#include "server/resp/resp_parser.h"

namespace {
uint64_t AllocationCount() { return bloomgate::testing::AllocationsOnThisThread().count; }
}  // namespace

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

class RequestAllocations : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!BLOOMGATE_COUNTING_NEW) GTEST_SKIP() << "operator new is the sanitizer's";
    server_ = MakeServer();
    client_.authenticated = true;
    out_.reserve(1 << 16);
  }

  // Heap allocations one run of `args` makes on this thread, after `warm`
  // runs of it (the first ones create the key, size the reply buffer).
  uint64_t AllocationsOf(const std::vector<std::string>& args, int warm = 3) {
    std::vector<std::string_view> views(args.begin(), args.end());
    ReplyBuilder reply(&out_);
    for (int i = 0; i < warm; ++i) {
      out_.clear();
      DispatchCommand(*server_, client_, views, reply);
    }
    out_.clear();
    const uint64_t before = AllocationCount();
    DispatchCommand(*server_, client_, views, reply);
    const uint64_t made = AllocationCount() - before;
    EXPECT_EQ(out_.substr(0, 1), ":") << out_;  // the command ran and answered
    return made;
  }

  std::unique_ptr<ServerContext> server_;
  ClientState client_;
  std::string out_;
};

TEST_F(RequestAllocations, TheCounterSeesAnAllocation) {
  const uint64_t before = AllocationCount();
  auto* p = new std::vector<int>(100);
  delete p;
  EXPECT_GE(AllocationCount() - before, 2u);
}

TEST_F(RequestAllocations, ABloomLookupAllocatesNothing) {
  Session(server_.get()).Run({"BF.RESERVE", "bf", "0.01", "1000"});
  EXPECT_EQ(AllocationsOf({"BF.EXISTS", "bf", "item"}), 0u);
  EXPECT_EQ(AllocationsOf({"bf.exists", "bf", "absent"}), 0u);
}

TEST_F(RequestAllocations, CuckooAndCountingLookupsAllocateNothing) {
  Session s(server_.get());
  s.Run({"CF.ADD", "cf", "item"});
  s.Run({"CBF.ADD", "cbf", "item"});
  EXPECT_EQ(AllocationsOf({"CF.EXISTS", "cf", "item"}), 0u);
  EXPECT_EQ(AllocationsOf({"CBF.EXISTS", "cbf", "item"}), 0u);
}

TEST_F(RequestAllocations, ParsingAWarmPipelinedBatchAllocatesNothing) {
  std::string batch;
  for (int i = 0; i < 16; ++i) {
    const std::string item = "item:" + std::to_string(i * 7919);
    batch += "*3\r\n$9\r\nBF.EXISTS\r\n$2\r\nbf\r\n$" + std::to_string(item.size()) + "\r\n" +
             item + "\r\n";
  }
  RespParser parser;
  std::vector<std::string_view> args;
  auto parse_all = [&] {
    size_t at = 0, commands = 0, consumed = 0;
    while (parser.Parse(std::string_view(batch).substr(at), &args, &consumed) ==
           ParseStatus::kCommand) {
      at += consumed;
      ++commands;
    }
    return commands;
  };
  ASSERT_EQ(parse_all(), 16u);  // warm: the argument vectors reach their size
  const uint64_t before = AllocationCount();
  EXPECT_EQ(parse_all(), 16u);
  EXPECT_EQ(AllocationCount() - before, 0u);
}

}  // namespace
}  // namespace bloomgate

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

// Redis Cluster's routing gate runs before every keyed command: with the
// cluster on, a command served here (all slots ours; or a migrating slot
// whose key is still here) allocates no more than with it off.
TEST_F(RequestAllocations, ClusterRoutingOfAServedCommandAllocatesNothing) {
  ClusterView view = FreshView(7000, 17000, "127.0.0.1");
  view.owner.fill(view.myself);
  ClusterNode peer;
  peer.id = RandomNodeId();
  peer.ip = "127.0.0.1";
  peer.port = 7001;
  peer.flags = kNodeMaster;
  const int32_t to = view.Add(peer);
  server_->cluster.Enable(std::move(view), nullptr);
  Session(server_.get()).Run({"BF.RESERVE", "bf", "0.01", "1000"});
  server_->cluster.Update([to](ClusterView& v) {
    v.migrating_to[KeySlot("bf")] = to;
    return true;
  });
  EXPECT_EQ(AllocationsOf({"BF.EXISTS", "bf", "item"}), 0u);  // migrating, key here
  Session(server_.get()).Run({"CF.ADD", "cf", "item"});
  EXPECT_EQ(AllocationsOf({"CF.EXISTS", "cf", "item"}), 0u);  // a stable slot of ours
}

}  // namespace
}  // namespace bloomgate
