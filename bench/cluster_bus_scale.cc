// Runs N real cluster buses in one process, on loopback (each its own
// thread, io_context and port), and measures the wall time until they all
// agree, in the two cases of bench/cluster_bus_sim.py:
//
//   create  N masters, each holding 16384/N slots at config epoch i + 1,
//           nodes 1..N-1 MEET node 0 (what `redis-cli --cluster create`
//           does): until every node knows every node past its handshake
//           and every slot's owner.
//   move    node 1 takes slot 0 at a higher config epoch: until every node
//           sees it.
//
// Messages are counted from the buses' CLUSTER INFO counters. Usage:
//   cluster_bus_scale 10 50 100
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/cluster_bus/cluster_bus.h"

namespace bloomgate {
namespace {

using Clock = std::chrono::steady_clock;

// User + system CPU seconds of the whole process (every bus's thread).
double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

struct Node {
  ClusterState state;
  std::unique_ptr<ClusterBus> bus;
};

uint64_t Messages(Node& node) {
  uint64_t total = 0;
  for (const auto& counter : node.state.counters().sent) total += counter.load();
  return total;
}

// Cheap enough to poll while the buses run on the same cores: one id
// lookup per node, then integer compares per slot.
bool AllAgree(std::vector<std::unique_ptr<Node>>& nodes, const std::vector<int>& owner_of,
              const std::vector<std::string>& ids) {
  for (auto& node : nodes) {
    const bool agrees = node->state.Read([&](const ClusterView& view) {
      if (view.nodes.size() != nodes.size()) return false;
      std::vector<int32_t> index_of(ids.size());
      for (size_t i = 0; i < ids.size(); ++i) {
        index_of[i] = view.Find(ids[i]);
        if (index_of[i] == kNoNode || view.nodes[index_of[i]].Has(kNodeHandshake)) return false;
      }
      for (size_t slot = 0; slot < owner_of.size(); ++slot) {
        if (view.owner[slot] != index_of[owner_of[slot]]) return false;
      }
      return true;
    });
    if (!agrees) return false;
  }
  return true;
}

double WaitAgreement(std::vector<std::unique_ptr<Node>>& nodes, const std::vector<int>& owner_of,
                     const std::vector<std::string>& ids, Clock::time_point start) {
  const auto deadline = start + std::chrono::seconds(120);
  while (Clock::now() < deadline) {
    if (AllAgree(nodes, owner_of, ids)) {
      return std::chrono::duration<double>(Clock::now() - start).count();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

void Run(size_t n) {
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<int> owner_of(kClusterSlots);  // index into ids
  std::vector<std::string> ids;
  for (size_t i = 0; i < n; ++i) {
    auto node = std::make_unique<Node>();
    node->state.Enable(FreshView(static_cast<uint16_t>(20000 + i), 0, ""), nullptr);
    const size_t first = kClusterSlots * i / n, last = kClusterSlots * (i + 1) / n - 1;
    node->state.Update([&](ClusterView& view) {
      for (size_t slot = first; slot <= last; ++slot) view.owner[slot] = view.myself;
      view.me().config_epoch = i + 1;
      view.current_epoch = i + 1;
      return false;
    });
    for (size_t slot = first; slot <= last; ++slot) owner_of[slot] = static_cast<int>(i);
    ids.push_back(node->state.my_id());
    node->bus = std::make_unique<ClusterBus>(
        &node->state, ClusterBusOptions{{"127.0.0.1"}, 0, /*node_timeout_ms=*/15000, ""});
    std::string error;
    if (!node->bus->Start(&error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      std::exit(1);
    }
    nodes.push_back(std::move(node));
  }
  const auto start = Clock::now();
  for (size_t i = 1; i < n; ++i) {
    nodes[i]->bus->Meet("127.0.0.1", 20000, nodes[0]->bus->bound_port());
  }
  const double cpu_before = CpuSeconds();
  const double create_s = WaitAgreement(nodes, owner_of, ids, start);
  const double create_cpu = CpuSeconds() - cpu_before;
  uint64_t create_messages = 0;
  for (auto& node : nodes) create_messages += Messages(*node);

  const auto move_start = Clock::now();
  nodes[1]->state.Update([&](ClusterView& view) {
    view.owner[0] = view.myself;
    view.current_epoch = n + 1;
    view.me().config_epoch = n + 1;
    return false;
  });
  owner_of[0] = 1;
  const double move_s = WaitAgreement(nodes, owner_of, ids, move_start);
  uint64_t move_messages = 0;
  for (auto& node : nodes) move_messages += Messages(*node);
  std::printf("| %zu | %.2f | %.2f | %llu | %.2f | %llu |\n", n, create_s, create_cpu,
              static_cast<unsigned long long>(create_messages), move_s,
              static_cast<unsigned long long>(move_messages - create_messages));
  std::fflush(stdout);
  for (auto& node : nodes) node->bus->Stop();
}

}  // namespace
}  // namespace bloomgate

int main(int argc, char** argv) {
  std::printf("| buses | create: s to agree | CPU s | messages | slot move: s to agree | "
              "messages |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (int i = 1; i < argc; ++i) bloomgate::Run(static_cast<size_t>(std::atoi(argv[i])));
  return 0;
}
