#include "server/cluster/cluster_state.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>

#include "server/base/clock.h"
#include "server/cluster/cluster_config_file.h"

namespace bloomgate {

int32_t ClusterView::Find(std::string_view id) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].id.size() == id.size() &&
        std::equal(id.begin(), id.end(), nodes[i].id.begin(), [](char a, char b) {
          return (a | 0x20) == (b | 0x20);  // hex ids: case folds by one bit
        })) {
      return static_cast<int32_t>(i);
    }
  }
  return kNoNode;
}

int32_t ClusterView::Add(ClusterNode node) {
  nodes.push_back(std::move(node));
  return static_cast<int32_t>(nodes.size() - 1);
}

void ClusterView::Remove(int32_t index) {
  if (index < 0 || static_cast<size_t>(index) >= nodes.size() || index == myself) return;
  const std::string removed_id = nodes[static_cast<size_t>(index)].id;
  auto shift = [index](std::array<int32_t, kClusterSlots>& table) {
    for (int32_t& slot : table) {
      if (slot == index) {
        slot = kNoNode;
      } else if (slot > index) {
        --slot;
      }
    }
  };
  shift(owner);
  shift(importing_from);
  shift(migrating_to);
  nodes.erase(nodes.begin() + index);
  if (myself > index) --myself;
  for (ClusterNode& node : nodes) {
    if (node.master_id == removed_id) node.master_id.clear();
    std::erase_if(node.failure_reports,
                  [&](const auto& report) { return report.first == removed_id; });
  }
}

size_t ClusterView::SlotCount(int32_t index) const {
  return static_cast<size_t>(std::count(owner.begin(), owner.end(), index));
}

int32_t ClusterView::MasterOf(int32_t index) const {
  const ClusterNode& node = nodes[static_cast<size_t>(index)];
  if (!node.Has(kNodeSlave) || node.master_id.empty()) return kNoNode;
  return Find(node.master_id);
}

uint64_t ClusterView::EpochOf(int32_t index) const {
  const int32_t master = MasterOf(index);
  return master != kNoNode ? nodes[static_cast<size_t>(master)].config_epoch
                           : nodes[static_cast<size_t>(index)].config_epoch;
}

uint64_t ClusterView::MaxEpoch() const {
  uint64_t max = current_epoch;
  for (const ClusterNode& node : nodes) max = std::max(max, node.config_epoch);
  return max;
}

int64_t ClusterRejoinDelayMs(int64_t node_timeout_ms) {
  return std::clamp(node_timeout_ms, kClusterMinRejoinDelayMs, kClusterMaxRejoinDelayMs);
}

void ClusterView::RefreshHealth(bool require_full_coverage, const HealthClock* clock) {
  bool ok = true;
  std::vector<bool> serving(nodes.size(), false);
  for (size_t slot = 0; slot < kClusterSlots; ++slot) {
    const int32_t index = owner[slot];
    if (index == kNoNode) {
      if (require_full_coverage) ok = false;
      continue;
    }
    serving[static_cast<size_t>(index)] = true;
    if (require_full_coverage && nodes[static_cast<size_t>(index)].Has(kNodeFail)) ok = false;
  }
  int32_t masters = 0, reachable = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!serving[i] || !nodes[i].Has(kNodeMaster)) continue;
    ++masters;
    if (!nodes[i].Has(kNodeFail) && !nodes[i].Has(kNodePFail)) ++reachable;
  }
  size = masters;
  if (reachable < masters / 2 + 1) {
    ok = false;
    if (clock) among_minority_ms = clock->now_ms;
  }
  if (clock && ok && !state_ok && myself != kNoNode && me().Has(kNodeMaster)) {
    if (clock->now_ms - clock->started_ms < kClusterWritableDelayMs) return;
    if (clock->now_ms - among_minority_ms < clock->rejoin_delay_ms) return;
  }
  state_ok = ok;
}

bool ClusterView::BumpEpochWithoutConsensus() {
  const uint64_t max = MaxEpoch();
  ClusterNode& mine = me();
  if (mine.config_epoch != 0 && mine.config_epoch == max) return false;
  ++current_epoch;
  mine.config_epoch = current_epoch;
  return true;
}

std::string RandomNodeId() {
  unsigned char bytes[kNodeIdLength / 2];
  size_t filled = 0;
  while (filled < sizeof(bytes)) {
    const ssize_t got = getrandom(bytes + filled, sizeof(bytes) - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      // Without a secure source two nodes could share an id; refuse.
      throw std::runtime_error("getrandom failed: cannot make a cluster node id");
    }
    filled += static_cast<size_t>(got);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(kNodeIdLength, '0');
  for (size_t i = 0; i < sizeof(bytes); ++i) {
    id[2 * i] = kHex[bytes[i] >> 4];
    id[2 * i + 1] = kHex[bytes[i] & 0xf];
  }
  return id;
}

bool IsValidNodeId(std::string_view id) {
  return id.size() == kNodeIdLength && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

ClusterView FreshView(uint16_t port, uint16_t cport, std::string_view announce_ip) {
  ClusterView view;
  ClusterNode me;
  me.id = RandomNodeId();
  me.ip = std::string(announce_ip);
  me.port = port;
  me.cport = cport;
  me.flags = kNodeMyself | kNodeMaster;
  me.link_connected = true;
  view.myself = view.Add(std::move(me));
  return view;
}

std::string RenderNodeFlags(uint32_t flags) {
  static constexpr std::pair<uint32_t, std::string_view> kNames[] = {
      {kNodeMyself, "myself"},     {kNodeMaster, "master"},       {kNodeSlave, "slave"},
      {kNodePFail, "fail?"},       {kNodeFail, "fail"},           {kNodeHandshake, "handshake"},
      {kNodeNoAddr, "noaddr"},     {kNodeNoFailover, "nofailover"},
  };
  std::string text;
  for (const auto& [flag, name] : kNames) {
    if ((flags & flag) == 0) continue;
    if (!text.empty()) text += ',';
    text += name;
  }
  return text.empty() ? "noflags" : text;
}

namespace {

void AppendRange(std::string* out, size_t start, size_t end) {
  *out += ' ';
  *out += std::to_string(start);
  if (end != start) {
    *out += '-';
    *out += std::to_string(end);
  }
}

}  // namespace

std::string RenderNodeLine(const ClusterView& view, int32_t index) {
  const ClusterNode& node = view.nodes[static_cast<size_t>(index)];
  std::string line = node.id;
  line += ' ';
  line += node.ip;
  line += ':';
  line += std::to_string(node.port);
  line += '@';
  line += std::to_string(node.cport);
  line += ' ';
  line += RenderNodeFlags(node.flags);
  line += ' ';
  line += node.master_id.empty() || !node.Has(kNodeSlave) ? "-" : node.master_id;
  line += ' ';
  line += std::to_string(node.ping_sent_ms);
  line += ' ';
  line += std::to_string(node.pong_received_ms);
  line += ' ';
  line += std::to_string(view.EpochOf(index));
  line += node.link_connected || node.Has(kNodeMyself) ? " connected" : " disconnected";
  // Slot ranges, as runs of consecutive slots the node owns.
  for (size_t slot = 0; slot < kClusterSlots; ++slot) {
    if (view.owner[slot] != index) continue;
    size_t end = slot;
    while (end + 1 < kClusterSlots && view.owner[end + 1] == index) ++end;
    AppendRange(&line, slot, end);
    slot = end;
  }
  // Open slots: only this node's own (Redis keeps them for myself only); a
  // slot both migrating and importing shows as migrating, as in Redis.
  if (index == view.myself) {
    for (size_t slot = 0; slot < kClusterSlots; ++slot) {
      const int32_t to = view.migrating_to[slot];
      if (to != kNoNode) {
        line += " [" + std::to_string(slot) + "->-" + view.nodes[static_cast<size_t>(to)].id + "]";
      }
      const int32_t from = view.importing_from[slot];
      if (to == kNoNode && from != kNoNode) {
        line +=
            " [" + std::to_string(slot) + "-<-" + view.nodes[static_cast<size_t>(from)].id + "]";
      }
    }
  }
  line += '\n';
  return line;
}

std::string RenderClusterNodes(const ClusterView& view, uint32_t skip_flags) {
  std::string text;
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    if ((view.nodes[i].flags & skip_flags) != 0) continue;
    text += RenderNodeLine(view, static_cast<int32_t>(i));
  }
  return text;
}

std::string_view ClusterMessageTypeName(ClusterMessageType type) {
  switch (type) {
    case ClusterMessageType::kPing: return "ping";
    case ClusterMessageType::kPong: return "pong";
    case ClusterMessageType::kMeet: return "meet";
    case ClusterMessageType::kFail: return "fail";
    case ClusterMessageType::kPublish: return "publish";
    case ClusterMessageType::kPublishShard: return "publishshard";
    case ClusterMessageType::kAuthReq: return "auth-req";
    case ClusterMessageType::kAuthAck: return "auth-ack";
    case ClusterMessageType::kUpdate: return "update";
    case ClusterMessageType::kMfStart: return "mfstart";
    case ClusterMessageType::kModule: return "module";
    case ClusterMessageType::kCount: break;
  }
  return "unknown";
}

ClusterViewLock::ClusterViewLock() {
  pthread_rwlockattr_t attributes;
  pthread_rwlockattr_init(&attributes);
  pthread_rwlockattr_setkind_np(&attributes, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&lock_, &attributes);
  pthread_rwlockattr_destroy(&attributes);
}
ClusterViewLock::~ClusterViewLock() { pthread_rwlock_destroy(&lock_); }
void ClusterViewLock::lock() { pthread_rwlock_wrlock(&lock_); }
void ClusterViewLock::unlock() { pthread_rwlock_unlock(&lock_); }
void ClusterViewLock::lock_shared() { pthread_rwlock_rdlock(&lock_); }
void ClusterViewLock::unlock_shared() { pthread_rwlock_unlock(&lock_); }

void ClusterState::Enable(ClusterView view, Saver saver) {
  std::unique_lock lock(mu_);
  view_ = std::move(view);
  view_.RefreshHealth(require_full_coverage_);
  saver_ = std::move(saver);
  enabled_.store(true, std::memory_order_relaxed);
}

void ClusterState::SetRequireFullCoverage(bool require) {
  std::unique_lock lock(mu_);
  require_full_coverage_ = require;
  view_.RefreshHealth(require, HealthClockAt(NowMs()));
}

void ClusterState::StartHealthDelays(int64_t now_ms, int64_t rejoin_delay_ms) {
  std::unique_lock lock(mu_);
  health_clock_ = HealthClock{.now_ms = now_ms, .started_ms = now_ms,
                              .rejoin_delay_ms = rejoin_delay_ms};
  view_.state_ok = false;
  view_.RefreshHealth(require_full_coverage_, HealthClockAt(now_ms));
}

void ClusterState::RefreshHealthAt(int64_t now_ms) {
  {
    std::shared_lock lock(mu_);
    if (view_.state_ok) return;
  }
  std::unique_lock lock(mu_);
  const bool was_ok = view_.state_ok;
  view_.RefreshHealth(require_full_coverage_, HealthClockAt(now_ms));
  if (view_.state_ok != was_ok) version_.fetch_add(1, std::memory_order_acq_rel);
}

const HealthClock* ClusterState::HealthClockAt(int64_t now_ms) {
  if (!health_clock_) return nullptr;
  health_clock_->now_ms = now_ms;
  return &*health_clock_;
}

ClusterView ClusterState::Snapshot() const {
  std::shared_lock lock(mu_);
  return view_;
}

std::string ClusterState::my_id() const {
  std::shared_lock lock(mu_);
  return view_.myself == kNoNode ? std::string() : view_.me().id;
}

std::string ClusterState::Update(const std::function<bool(ClusterView&)>& fn) {
  {
    std::unique_lock lock(mu_);
    if (!fn(view_)) return {};
    view_.RefreshHealth(require_full_coverage_, HealthClockAt(NowMs()));
    version_.fetch_add(1, std::memory_order_acq_rel);
    if (!saver_) return {};
  }
  // The text is made after the exclusive hold: the view rendered may be a
  // later one than this change's, never an earlier one, and SaveText keeps
  // the file from going back to an older version.
  return SaveCurrent(/*force_durable=*/false);
}

std::string ClusterState::Save() { return SaveCurrent(/*force_durable=*/true); }

std::string ClusterState::SaveCurrent(bool force_durable) {
  std::string text;
  uint64_t version = 0;
  Epochs epochs;
  {
    std::shared_lock lock(mu_);
    if (!saver_) return {};
    // Read with the text under one hold: the version names what was rendered.
    version = version_.load(std::memory_order_acquire);
    text = RenderClusterConfig(view_);
    epochs = EpochsOf(view_);
  }
  return SaveText(std::move(text), version, epochs, force_durable);
}

ClusterState::Epochs ClusterState::EpochsOf(const ClusterView& view) {
  return Epochs{.current = view.current_epoch,
                .mine = view.myself == kNoNode ? 0 : view.me().config_epoch,
                .last_vote = view.last_vote_epoch};
}

std::string ClusterState::SaveText(std::string text, uint64_t version, Epochs epochs,
                                   bool force_durable) {
  std::lock_guard lock(save_mu_);
  // A later change already saved a newer view: this one must not replace it.
  if (version < saved_version_) return {};
  const bool durable = force_durable || durable_epochs_ != epochs;
  std::string error = saver_(text, durable);
  if (!error.empty()) return error;
  saved_version_ = version;
  if (durable) durable_epochs_ = epochs;
  return error;
}

}  // namespace bloomgate
