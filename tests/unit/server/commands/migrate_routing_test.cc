// A MIGRATE's second run only replies what its transfer came to: the keys
// have moved, so a slot settled meanwhile (SETSLOT NODE, as redis-cli
// --cluster does right after the last MIGRATE) must not turn the finished
// move into -MOVED.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "server/base/key_slot.h"
#include "server/cluster/cluster_state.h"
#include "server/commands/command_dispatcher.h"
#include "server/keyspace/filter_maker.h"
#include "../cluster_peer.h"
#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

constexpr std::string_view kPeer = "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca";

// A target that answers +OK to every command it reads (SELECT,
// RESTORE-ASKING): all MIGRATE needs of a Redis. One connection.
class OkTarget {
 public:
  OkTarget() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        listen(listen_fd_, 1) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ADD_FAILURE() << "no listening socket";
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~OkTarget() {
    shutdown(listen_fd_, SHUT_RDWR);  // wakes an accept still waiting
    thread_.join();
    close(listen_fd_);
  }
  uint16_t port() const { return port_; }

 private:
  void Serve() {
    const int fd = accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) return;
    std::string in;
    std::vector<char> chunk(1 << 16);
    for (;;) {
      const ssize_t n = recv(fd, chunk.data(), chunk.size(), 0);
      if (n <= 0) break;
      in.append(chunk.data(), static_cast<size_t>(n));
      for (size_t used = CommandBytes(in); used != 0; used = CommandBytes(in)) {
        in.erase(0, used);
        if (send(fd, "+OK\r\n", 5, MSG_NOSIGNAL) != 5) break;
      }
    }
    close(fd);
  }
  // The bytes of the first whole RESP command in `in` (an array of bulk
  // strings), or 0 while it is incomplete.
  static size_t CommandBytes(const std::string& in) {
    size_t end = in.find("\r\n");
    if (in.empty() || in[0] != '*' || end == std::string::npos) return 0;
    const long count = std::stol(in.substr(1, end - 1));
    size_t at = end + 2;
    for (long i = 0; i < count; ++i) {
      end = in.find("\r\n", at);
      if (at >= in.size() || in[at] != '$' || end == std::string::npos) return 0;
      at = end + 2 + std::stoul(in.substr(at + 1, end - at - 1)) + 2;
      if (at > in.size()) return 0;
    }
    return at;
  }

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

CommandOutcome DispatchOnce(ServerContext& server, ClientState& client, const Args& args,
                            std::string* out) {
  std::vector<std::string_view> views(args.begin(), args.end());
  ReplyBuilder reply(out);
  return DispatchCommand(server, client, views, reply);
}

TEST(MigrateRouting, AMoveFinishedBeforeItsSlotWasSettledAnswersOkNotMoved) {
  auto server = MakeServer();
  server->cluster.Enable(FreshView(7000, 17000, "127.0.0.1"), nullptr);
  server->cluster.Update([](ClusterView& view) {
    view.Add(MasterPeer(kPeer, 7001));
    for (size_t s = 0; s < kClusterSlots; ++s) view.owner[s] = view.myself;
    return true;
  });
  FilterMaker maker;  // MIGRATE parks only where a maker is installed
  SetFilterMaker(&maker);
  const std::string slot = std::to_string(KeySlot("k"));
  Session admin(server.get());
  ASSERT_EQ(admin.Run({"BF.ADD", "k", "x"}), Int(1));
  ASSERT_EQ(admin.Run({"CLUSTER", "SETSLOT", slot, "MIGRATING", std::string(kPeer)}), kOk);

  OkTarget target;
  Session mover(server.get(), /*worker=*/1);
  const Args migrate = {"MIGRATE", "127.0.0.1", std::to_string(target.port()), "k", "0", "5000"};
  std::string out;
  ASSERT_EQ(DispatchOnce(*server, mover.client(), migrate, &out), CommandOutcome::kParked);
  mover.client().making->Make();  // the transfer, here rather than on a transfer worker
  ASSERT_EQ(server->keyspace.Peek(MakeKeyRef("k"), NowMs()), nullptr) << "the key moved";
  // The operator settles the slot before the MIGRATE's client hears back.
  ASSERT_EQ(admin.Run({"CLUSTER", "SETSLOT", slot, "NODE", std::string(kPeer)}), kOk);

  out.clear();
  EXPECT_NE(DispatchOnce(*server, mover.client(), migrate, &out), CommandOutcome::kParked);
  EXPECT_EQ(out, kOk);
  EXPECT_EQ(mover.client().making, nullptr) << "the second run took the outcome";
  // A new command on the key is routed as ever.
  EXPECT_EQ(mover.Run({"BF.EXISTS", "k", "x"}), Err("MOVED " + slot + " 127.0.0.1:7001"));
}

}  // namespace
}  // namespace bloomgate
