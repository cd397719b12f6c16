#include "server/cluster_bus/cluster_bus.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <future>

#include "server/base/clock.h"
#include "server/cluster_bus/bus_codec.h"
#include "server/cluster_bus/bus_sender.h"

namespace bloomgate {
namespace {

std::atomic<ClusterBus*> installed{nullptr};

// A handshake that got no PONG within this is dropped (Redis: the node
// timeout, at least 1 s).
int64_t HandshakeTimeoutMs(int64_t node_timeout_ms) {
  return std::max<int64_t>(node_timeout_ms, 1000);
}

ClusterMessageType CountedType(BusMessageType type) {
  switch (type) {
    case BusMessageType::kPing: return ClusterMessageType::kPing;
    case BusMessageType::kPong: return ClusterMessageType::kPong;
    case BusMessageType::kMeet: return ClusterMessageType::kMeet;
    case BusMessageType::kUpdate: return ClusterMessageType::kUpdate;
    case BusMessageType::kAuthRequest: return ClusterMessageType::kAuthReq;
    case BusMessageType::kAuthAck: return ClusterMessageType::kAuthAck;
    case BusMessageType::kMfStart: return ClusterMessageType::kMfStart;
  }
  return ClusterMessageType::kPing;
}

// What the cron needs of one node, read under the shared lock.
struct NodeBrief {
  std::string id;
  std::string ip;
  uint16_t cport = 0;
  bool handshake = false;
  bool no_addr = false;
  bool failing = false;  // flagged fail? or fail already
  int64_t ping_sent_ms = 0;
  int64_t pong_received_ms = 0;
};

}  // namespace

ClusterBus::ClusterBus(ClusterState* state, ClusterBusOptions options)
    : state_(state),
      options_(std::move(options)),
      cron_timer_(loop_),
      random_(std::random_device{}()) {}

ClusterBus::~ClusterBus() { Stop(); }

bool ClusterBus::Start(std::string* error) {
  for (const std::string& address : options_.bind) {
    boost::system::error_code ec;
    const auto ip = bus::asio::ip::make_address(address, ec);
    if (ec) {
      *error = "cluster bus: invalid bind address '" + address + "'";
      acceptors_.clear();
      return false;
    }
    auto acceptor = std::make_unique<bus::tcp::acceptor>(loop_);
    const bus::tcp::endpoint endpoint(ip, options_.cport);
    acceptor->open(endpoint.protocol(), ec);
    if (!ec) acceptor->set_option(bus::tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor->bind(endpoint, ec);
    if (!ec) acceptor->listen(bus::asio::socket_base::max_listen_connections, ec);
    if (ec) {
      *error = "cluster bus: cannot listen on " + address + ":" +
               std::to_string(options_.cport) + ": " + ec.message();
      acceptors_.clear();
      return false;
    }
    if (options_.cport == 0) options_.cport = acceptor->local_endpoint(ec).port();
    spdlog::info("cluster bus listening on {}:{}", address, options_.cport);
    acceptors_.push_back(std::move(acceptor));
  }
  state_->Update([this](ClusterView& view) {
    if (view.me().cport == options_.cport) return false;
    view.me().cport = options_.cport;
    return true;
  });
  state_->StartHealthDelays(NowMs(), ClusterRejoinDelayMs(options_.node_timeout_ms));
  for (auto& acceptor : acceptors_) DoAccept(*acceptor);
  last_claim_digest_ = MyClaimDigest();
  running_ = true;
  ScheduleCron();
  thread_ = std::thread([this] { loop_.run(); });
  return true;
}

void SetClusterBus(ClusterBus* bus) { installed.store(bus, std::memory_order_release); }

ClusterBus* CurrentClusterBus() { return installed.load(std::memory_order_acquire); }

void ClusterBus::Stop() {
  ClusterBus* expected = this;
  installed.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  if (!running_.exchange(false)) return;
  bus::asio::post(loop_, [this] {
    boost::system::error_code ignored;
    cron_timer_.cancel();
    for (auto& acceptor : acceptors_) acceptor->close(ignored);
    // Close() calls OnClosed, which erases: walk copies.
    auto to = to_links_;
    for (auto& [id, link] : to) link->Close();
    auto from = from_links_;
    for (const auto& link : from) link->Close();
    loop_.stop();
  });
  if (thread_.joinable()) thread_.join();
}

void ClusterBus::DoAccept(bus::tcp::acceptor& acceptor) {
  acceptor.async_accept([this, &acceptor](const boost::system::error_code& ec,
                                          bus::tcp::socket socket) {
    if (!running_ || !acceptor.is_open()) return;
    if (!ec) {
      auto link = std::make_shared<BusLink>(std::move(socket), NowMs(),
                                            options_.node_timeout_ms, MakeCallbacks());
      from_links_.insert(link);
      link->Start();
    }
    if (!ec || ec == bus::asio::error::connection_aborted) {
      DoAccept(acceptor);
      return;
    }
    // Out of descriptors or another lasting error: again in 100 ms, not in
    // a tight loop.
    auto backoff = std::make_shared<bus::asio::steady_timer>(loop_, std::chrono::milliseconds(100));
    backoff->async_wait([this, &acceptor, backoff](const boost::system::error_code&) {
      if (running_ && acceptor.is_open()) DoAccept(acceptor);
    });
  });
}

BusLink::Callbacks ClusterBus::MakeCallbacks() {
  BusLink::Callbacks callbacks;
  callbacks.on_message = [this](const std::shared_ptr<BusLink>& link, const BusMessage& m) {
    OnMessage(link, m);
  };
  callbacks.on_connected = [this](const std::shared_ptr<BusLink>& link) { OnConnected(link); };
  callbacks.on_closed = [this](const std::shared_ptr<BusLink>& link) { OnClosed(link); };
  return callbacks;
}

bool ClusterBus::Banned(std::string_view id) {
  std::lock_guard lock(ban_mu_);
  auto it = banned_until_ms_.find(id);
  return it != banned_until_ms_.end() && it->second > NowMs();
}

void ClusterBus::OnMessage(const std::shared_ptr<BusLink>& link, const BusMessage& message) {
  state_->counters().CountReceived(CountedType(message.type));
  BusLinkContext context;
  context.peer_ip = link->peer_ip();
  context.local_ip = link->local_ip();
  if (link->direction() == BusLink::Direction::kTo) context.outbound_node_id = link->node_id();
  context.announce_ip_set = !options_.announce_ip.empty();
  context.node_timeout_ms = options_.node_timeout_ms;
  context.allow_replica_migration = state_->allow_replica_migration();
  if (!message.fail_about.empty()) state_->counters().CountReceived(ClusterMessageType::kFail);
  std::string failure;
  const BusReceiveResult result = ReceiveBusMessage(
      state_, message, context, NowMs(), [this](std::string_view id) { return Banned(id); },
      &failure);
  if (result.nodes_refused != 0) {
    state_->counters().nodes_refused.fetch_add(result.nodes_refused, std::memory_order_relaxed);
  }
  if (!failure.empty()) spdlog::warn("cluster bus: cannot save the cluster config: {}", failure);
  if (result.dropped) {
    link->Close();
    return;
  }
  if (link->direction() == BusLink::Direction::kFrom) {
    link->set_node_id(result.sender_id);
  } else if (link->node_id() != result.sender_id) {
    // A handshake node took its real id (or was a node known already, and
    // left the view): the link follows the id.
    to_links_.erase(link->node_id());
    link->set_node_id(result.sender_id);
    if (to_links_.count(result.sender_id) == 0) {
      to_links_[result.sender_id] = link;
    } else {
      link->Close();
      return;
    }
  }
  if (message.type == BusMessageType::kAuthRequest) {
    OnVoteRequest(link, message);
    return;
  }
  if (message.type == BusMessageType::kAuthAck) {
    OnVote(message);
    return;
  }
  if (message.type == BusMessageType::kPing || message.type == BusMessageType::kMeet) {
    SendHeartbeat(link, BusMessageType::kPong);
  }
  if (message.type == BusMessageType::kMfStart) OnMfStart(result.sender_id);
  if ((message.message_flags & kBusMessagePaused) != 0 && manual_failover_.in_progress()) {
    OnPausedMaster(message);
  }
  if (result.update_about) SendUpdate(link, *result.update_about);
  if (!result.fail_broadcast.empty()) {
    // Redis's clusterSendFail: every peer flags it now, whatever it saw.
    for (auto& [id, to] : to_links_) {
      if (to->connected()) SendHeartbeat(to, BusMessageType::kPong, result.fail_broadcast);
    }
  }
  if (result.my_claim_changed) broadcast_due_ = true;
}

void ClusterBus::OnConnected(const std::shared_ptr<BusLink>& link) {
  SetLinkConnected(link->node_id(), true);
  const bool handshake = state_->Read([&](const ClusterView& view) {
    const int32_t index = view.Find(link->node_id());
    return index != kNoNode && view.nodes[static_cast<size_t>(index)].Has(kNodeHandshake);
  });
  SendHeartbeat(link, handshake ? BusMessageType::kMeet : BusMessageType::kPing);
}

void ClusterBus::OnClosed(const std::shared_ptr<BusLink>& link) {
  if (link->direction() == BusLink::Direction::kFrom) {
    from_links_.erase(link);
    return;
  }
  auto it = to_links_.find(link->node_id());
  if (it != to_links_.end() && it->second == link) {
    to_links_.erase(it);
    SetLinkConnected(link->node_id(), false, !link->ever_connected());
  }
}

void ClusterBus::SetLinkConnected(const std::string& node_id, bool connected,
                                  bool unreachable) {
  // Not saved: the link state is not part of cluster-config-file's claims.
  state_->Update([&](ClusterView& view) {
    const int32_t index = view.Find(node_id);
    if (index == kNoNode || index == view.myself) return false;
    ClusterNode& node = view.nodes[static_cast<size_t>(index)];
    // A pending PING's time survives the link: it is what fail? is judged by.
    node.link_connected = connected;
    // A node that refuses the connection is not reachable: its failure
    // detection starts now, as if a PING had been sent (Redis's
    // clusterNodeCronHandleReconnect on a failed connect); its PONG clears it.
    if (unreachable && node.ping_sent_ms == 0 && !node.Has(kNodeHandshake)) {
      node.ping_sent_ms = NowMs();
    }
    return false;
  });
}

void ClusterBus::Send(const std::shared_ptr<BusLink>& link, const BusMessage& message) {
  std::string bytes;
  EncodeBusMessage(message, &bytes);
  state_->counters().CountSent(CountedType(message.type));
  link->Send(std::move(bytes));
}

void ClusterBus::SendHeartbeat(const std::shared_ptr<BusLink>& link, BusMessageType type,
                               const std::string& fail_about) {
  BusMessage message;
  const int64_t now = NowMs();
  auto describe = [&](const ClusterView& view) {
    message = DescribeMyself(view, type, options_.announce_ip);
    const int32_t receiver = view.Find(link->node_id());
    AddGossip(view, receiver, &random_, &message);
    return receiver;
  };
  if (type == BusMessageType::kPong) {
    // A PONG marks nothing: the shared lock is enough.
    state_->Read(describe);
  } else {
    state_->Update([&](ClusterView& view) {
      const int32_t receiver = describe(view);
      if (receiver != kNoNode && receiver != view.myself) {
        ClusterNode& node = view.nodes[static_cast<size_t>(receiver)];
        if (node.ping_sent_ms == 0) node.ping_sent_ms = now;
      }
      return false;
    });
  }
  if (options_.repl_offset) message.repl_offset = options_.repl_offset();
  // Redis's CLUSTERMSG_FLAG0_PAUSED: a master paused for a manual failover.
  if (manual_failover_.SaysPaused(now)) message.message_flags |= kBusMessagePaused;
  message.fail_about = fail_about;
  if (!fail_about.empty()) state_->counters().CountSent(ClusterMessageType::kFail);
  Send(link, message);
}

void ClusterBus::SendUpdate(const std::shared_ptr<BusLink>& link, const std::string& about_id) {
  std::optional<BusMessage> message = state_->Read([&](const ClusterView& view) {
    const int32_t owner = view.Find(about_id);
    return owner == kNoNode ? std::optional<BusMessage>()
                            : std::optional<BusMessage>(
                                  DescribeUpdate(view, owner, options_.announce_ip));
  });
  if (message) Send(link, *message);
}

uint64_t ClusterBus::MyClaimDigest() {
  return state_->Read([](const ClusterView& view) {
    // FNV-1a over the epoch and the owned slots' numbers.
    uint64_t digest = 1469598103934665603ull;
    auto mix = [&digest](uint64_t v) {
      digest ^= v;
      digest *= 1099511628211ull;
    };
    mix(view.me().config_epoch);
    mix(view.me().flags);
    // Whom a replica follows: a failover or a migration is heard at once.
    mix(std::hash<std::string>{}(view.me().master_id));
    for (size_t slot = 0; slot < view.owner.size(); ++slot) {
      if (view.owner[slot] == view.myself) mix(slot);
    }
    return digest;
  });
}

void ClusterBus::ScheduleCron() {
  cron_timer_.expires_after(std::chrono::milliseconds(kBusCronMs));
  cron_timer_.async_wait([this](const boost::system::error_code& error) {
    if (error == bus::asio::error::operation_aborted || !running_) return;
    Cron();
    ScheduleCron();
  });
}

void ClusterBus::Cron() {
  const int64_t now = NowMs();
  ++cron_ticks_;
  std::vector<NodeBrief> nodes;
  std::string my_id;
  state_->Read([&](const ClusterView& view) {
    my_id = view.me().id;
    for (size_t i = 0; i < view.nodes.size(); ++i) {
      if (static_cast<int32_t>(i) == view.myself) continue;
      const ClusterNode& node = view.nodes[i];
      nodes.push_back({node.id, node.ip, node.cport, node.Has(kNodeHandshake),
                       node.Has(kNodeNoAddr), node.Has(kNodePFail) || node.Has(kNodeFail),
                       node.ping_sent_ms, node.pong_received_ms});
    }
    return 0;
  });

  // Handshakes that never got their PONG are given up.
  std::vector<std::string> expired;
  std::set<std::string> live;
  for (const NodeBrief& node : nodes) {
    live.insert(node.id);
    if (!node.handshake) continue;
    auto [it, fresh] = handshake_started_ms_.emplace(node.id, now);
    if (!fresh && now - it->second > HandshakeTimeoutMs(options_.node_timeout_ms)) {
      expired.push_back(node.id);
    }
  }
  std::erase_if(handshake_started_ms_, [&](const auto& entry) {
    return live.count(entry.first) == 0 ||
           std::find(expired.begin(), expired.end(), entry.first) != expired.end();
  });
  if (!expired.empty()) {
    state_->Update([&](ClusterView& view) {
      bool removed = false;
      for (const std::string& id : expired) {
        const int32_t index = view.Find(id);
        if (index != kNoNode && view.nodes[static_cast<size_t>(index)].Has(kNodeHandshake)) {
          view.Remove(index);
          removed = true;
        }
      }
      return removed;
    });
  }

  // Links to nodes that left the view close; nodes without a link get one.
  for (auto it = to_links_.begin(); it != to_links_.end();) {
    auto next = std::next(it);
    if (live.count(it->first) == 0 ||
        std::find(expired.begin(), expired.end(), it->first) != expired.end()) {
      it->second->Close();
    }
    it = next;
  }
  for (const NodeBrief& node : nodes) {
    if (node.no_addr || node.ip.empty() || node.cport == 0 || to_links_.count(node.id) != 0 ||
        std::find(expired.begin(), expired.end(), node.id) != expired.end()) {
      continue;
    }
    auto link = std::make_shared<BusLink>(loop_, BusLink::Direction::kTo, node.id, now,
                                          options_.node_timeout_ms, MakeCallbacks());
    to_links_[node.id] = link;
    link->Connect(node.ip, node.cport);
  }

  // Once a second, the node with the oldest PONG among five picked at
  // random (Redis's clusterCron), so every pair hears from each other often.
  const int64_t half_timeout = options_.node_timeout_ms / 2;
  std::vector<const NodeBrief*> pingable;
  for (const NodeBrief& node : nodes) {
    auto it = to_links_.find(node.id);
    if (node.handshake || it == to_links_.end() || !it->second->connected()) continue;
    pingable.push_back(&node);
  }
  if (cron_ticks_ % 10 == 0 && !pingable.empty()) {
    const NodeBrief* oldest = nullptr;
    for (int i = 0; i < 5; ++i) {
      std::uniform_int_distribution<size_t> pick(0, pingable.size() - 1);
      const NodeBrief* candidate = pingable[pick(random_)];
      if (candidate->ping_sent_ms != 0) continue;
      if (oldest == nullptr || candidate->pong_received_ms < oldest->pong_received_ms) {
        oldest = candidate;
      }
    }
    if (oldest != nullptr) SendHeartbeat(to_links_[oldest->id], BusMessageType::kPing);
  }
  for (const NodeBrief* node : pingable) {
    auto& link = to_links_[node->id];
    if (node->ping_sent_ms == 0 && now - node->pong_received_ms > half_timeout) {
      SendHeartbeat(link, BusMessageType::kPing);
    } else if (node->ping_sent_ms != 0 && now - node->ping_sent_ms > half_timeout &&
               now - link->create_time_ms() > options_.node_timeout_ms) {
      // No PONG for half the timeout on an old link: reconnect, as Redis
      // does, in case only the link is broken.
      link->Close();
    }
  }

  // A node whose PING has waited longer than the node timeout is
  // suspected: fail? (Redis's clusterCron). Its link may have been closed
  // and opened again meanwhile: the pending PING's time is kept.
  std::vector<std::string> suspected;
  for (const NodeBrief& node : nodes) {
    if (!node.handshake && !node.failing && node.ping_sent_ms != 0 &&
        now - node.ping_sent_ms > options_.node_timeout_ms) {
      suspected.push_back(node.id);
    }
  }
  if (!suspected.empty()) {
    state_->Update([&](ClusterView& view) {
      bool changed = false;
      for (const std::string& id : suspected) {
        const int32_t index = view.Find(id);
        if (index == kNoNode || index == view.myself) continue;
        ClusterNode& node = view.nodes[static_cast<size_t>(index)];
        if (node.Has(kNodePFail) || node.Has(kNodeFail) || node.ping_sent_ms == 0) continue;
        node.flags |= kNodePFail;
        changed = true;
      }
      return changed;  // the state is recomputed: a majority may be unreachable
    });
  }

  // Our own claim changed (ADDSLOTS, SETSLOT, an epoch bump): every peer
  // hears it now rather than at its next ping.
  const uint64_t digest = MyClaimDigest();
  if (digest != last_claim_digest_) {
    last_claim_digest_ = digest;
    broadcast_due_ = true;
  }
  if (broadcast_due_) {
    broadcast_due_ = false;
    for (auto& [id, link] : to_links_) {
      if (link->connected()) SendHeartbeat(link, BusMessageType::kPong);
    }
  }

  // A delay before the state may turn ok is measured here (HealthClock).
  state_->RefreshHealthAt(now);

  ManualFailoverCron(now);
  HandleElection();
  ReplicaMigrationCron(now);
  FollowMyMaster();

  std::lock_guard lock(ban_mu_);
  std::erase_if(banned_until_ms_, [now](const auto& entry) { return entry.second <= now; });
}

void ClusterBus::FollowMyMaster() {
  if (!options_.follow_master) return;
  std::string host;
  uint16_t port = 0;
  state_->Read([&](const ClusterView& view) {
    const int32_t master = view.MasterOf(view.myself);
    if (master == kNoNode) return 0;
    const ClusterNode& node = view.nodes[static_cast<size_t>(master)];
    if (node.Has(kNodeNoAddr) || node.ip.empty() || node.port == 0) return 0;
    host = node.ip;
    port = node.port;
    return 0;
  });
  if (host.empty()) {
    followed_.clear();  // a master again (or its master unknown): follow anew later
    return;
  }
  const std::string target = host + ":" + std::to_string(port);
  if (target == followed_) return;
  if (options_.follow_master(host, port)) followed_ = target;
}

void ClusterBus::BroadcastPong(const std::set<std::string>* only) {
  for (auto& [id, link] : to_links_) {
    if (!link->connected() || (only != nullptr && only->count(id) == 0)) continue;
    SendHeartbeat(link, BusMessageType::kPong);
  }
}

void ClusterBus::SyncNoFailoverFlag(bool no_failover) {
  // Redis's clusterUpdateMyselfFlags: the flag tells the other replicas
  // not to count this one in their rank; its change is saved and, through
  // the claim digest, told to every peer.
  const bool flagged = state_->Read(
      [](const ClusterView& view) { return view.me().Has(kNodeNoFailover); });
  if (flagged == no_failover) return;
  state_->Update([no_failover](ClusterView& view) {
    ClusterNode& me = view.me();
    if (me.Has(kNodeNoFailover) == no_failover) return false;
    me.flags = no_failover ? (me.flags | kNodeNoFailover) : (me.flags & ~kNodeNoFailover);
    return true;
  });
}

void ClusterBus::HandleElection() {
  const ElectionSettings settings =
      options_.election_settings ? options_.election_settings() : ElectionSettings{};
  SyncNoFailoverFlag(settings.no_failover);
  ElectionInputs in;
  in.now_ms = NowMs();
  in.node_timeout_ms = options_.node_timeout_ms;
  in.my_offset = options_.repl_offset ? static_cast<int64_t>(options_.repl_offset()) : 0;
  in.data_age_ms = settings.data_age_ms;
  in.repl_ping_period_ms = settings.repl_ping_period_ms;
  in.validity_factor = settings.validity_factor;
  in.no_failover = settings.no_failover;
  in.random_delay_ms = std::uniform_int_distribution<int64_t>(0, 499)(random_);
  ElectionAction action =
      state_->Read([&](const ClusterView& view) { return election_.Tick(view, in); });
  if (election_.wait() != logged_wait_) {
    logged_wait_ = election_.wait();
    if (logged_wait_ == ElectionWait::kDataTooOld) {
      spdlog::warn("cluster: not failing over: my data is too old (disconnected from my master "
                   "for {} ms; cluster-replica-validity-factor {})",
                   in.data_age_ms, in.validity_factor);
    } else if (logged_wait_ == ElectionWait::kExpired) {
      spdlog::warn("cluster: the failover election for epoch {} expired with {} votes",
                   election_.epoch(), election_.votes());
    }
  }
  if (action == ElectionAction::kScheduled) {
    spdlog::warn("cluster: start of election delayed for {} ms (rank #{}, offset {}){}",
                 election_.auth_time_ms() - in.now_ms, election_.rank(), in.my_offset,
                 election_.manual() ? ", manual failover" : "");
    // The other replicas of my master hear my offset now and rank
    // themselves against it (Redis's CLUSTER_BROADCAST_LOCAL_SLAVES).
    std::set<std::string> siblings = state_->Read([](const ClusterView& view) {
      std::set<std::string> ids;
      const std::string& master_id = view.me().master_id;
      for (const ClusterNode& node : view.nodes) {
        if (node.Has(kNodeSlave) && node.master_id == master_id && node.id != view.me().id) {
          ids.insert(node.id);
        }
      }
      return ids;
    });
    BroadcastPong(&siblings);
    // A manual one has no delay: its votes are asked for at once.
    if (!election_.manual()) return;
    action = state_->Read([&](const ClusterView& view) { return election_.Tick(view, in); });
  }
  if (action == ElectionAction::kRequestVotes) RequestVotes();
  if (action == ElectionAction::kPromote) PromoteMyself();
}

void ClusterBus::RequestVotes() {
  uint64_t epoch = 0;
  // Saved durably (currentEpoch moved) before any request goes out.
  const std::string failure = state_->Update([&epoch](ClusterView& view) {
    epoch = ++view.current_epoch;
    return true;
  });
  if (!failure.empty()) spdlog::warn("cluster bus: cannot save the cluster config: {}", failure);
  election_.VotesRequested(epoch);
  BusMessage request = state_->Read([this](const ClusterView& view) {
    return DescribeMyself(view, BusMessageType::kAuthRequest, options_.announce_ip);
  });
  request.current_epoch = epoch;
  if (options_.repl_offset) request.repl_offset = options_.repl_offset();
  if (election_.manual()) request.message_flags |= kBusMessageForceAck;
  spdlog::warn("cluster: starting a failover election for epoch {}{}", epoch,
               election_.manual() ? " (manual failover)" : "");
  for (auto& [id, link] : to_links_) {
    if (link->connected()) Send(link, request);
  }
}

void ClusterBus::PromoteMyself() {
  const uint64_t epoch = election_.epoch();
  spdlog::warn("cluster: failover election won for epoch {} with {} votes: I'm the new master",
               epoch, election_.votes());
  // Replication first: a write routed here once the view names this node
  // master must not be refused as a replica's.
  if (options_.promote) options_.promote();
  const std::string failure = state_->Update(
      [epoch](ClusterView& view) { return ReplaceMyMaster(&view, epoch); });
  if (!failure.empty()) spdlog::warn("cluster bus: cannot save the cluster config: {}", failure);
  election_.Finish();
  followed_.clear();
  last_claim_digest_ = MyClaimDigest();
  broadcast_due_ = false;
  BroadcastPong();
}

void ClusterBus::OnVoteRequest(const std::shared_ptr<BusLink>& link, const BusMessage& request) {
  const int64_t now = NowMs();
  VoteRefusal refusal = VoteRefusal::kNotAVoter;
  uint64_t epoch = 0;
  // lastVoteEpoch moved: Update returns once the view is fsynced, and only
  // then does the vote leave (a node that crashes after voting never votes
  // twice in one epoch).
  const std::string failure = state_->Update([&](ClusterView& view) {
    refusal = CastFailoverVote(&view, request, now, options_.node_timeout_ms);
    epoch = view.current_epoch;
    return refusal == VoteRefusal::kGranted;
  });
  if (refusal != VoteRefusal::kGranted) {
    // A replica asks every node: only a master serving slots has a say.
    if (refusal != VoteRefusal::kNotAVoter) {
      spdlog::warn("cluster: failover auth denied to {}: {}", request.sender_id,
                   ToString(refusal));
    }
    return;
  }
  if (!failure.empty()) {
    spdlog::warn("cluster: failover auth for {} not sent: cannot save the cluster config: {}",
                 request.sender_id, failure);
    return;
  }
  BusMessage ack = state_->Read([this](const ClusterView& view) {
    return DescribeMyself(view, BusMessageType::kAuthAck, options_.announce_ip);
  });
  if (options_.repl_offset) ack.repl_offset = options_.repl_offset();
  spdlog::warn("cluster: failover auth granted to {} for epoch {}", request.sender_id, epoch);
  Send(link, ack);
}

void ClusterBus::OnVote(const BusMessage& ack) {
  // Only a master serving slots counts: the quorum is a majority of them.
  const bool voter = state_->Read([&](const ClusterView& view) {
    const int32_t index = view.Find(ack.sender_id);
    return index != kNoNode && view.nodes[static_cast<size_t>(index)].Has(kNodeMaster) &&
           view.SlotCount(index) > 0;
  });
  if (!voter) return;
  election_.OnAck(ack.sender_id, ack.current_epoch);
  HandleElection();  // a majority may be there now
}

bool ClusterBus::StartManualElection(int64_t deadline_ms) {
  if (!running_) return false;
  const bool eligible = state_->Read([](const ClusterView& view) {
    const int32_t master = view.MasterOf(view.myself);
    return view.me().Has(kNodeSlave) && master != kNoNode && view.SlotCount(master) > 0;
  });
  if (!eligible) return false;
  bus::asio::post(loop_, [this, deadline_ms] {
    election_.StartManual(deadline_ms);
    HandleElection();
  });
  return true;
}

void ClusterBus::UnpauseWrites() {
  if (options_.unpause_writes) options_.unpause_writes();
}

void ClusterBus::StartManualFailover(bool force) {
  bus::asio::post(loop_, [this, force] {
    if (manual_failover_.StartOnReplica(force, NowMs())) UnpauseWrites();
    if (force) return;
    // Redis's clusterSendMFStart: a header, to the master's link.
    std::string master_id;
    BusMessage message;
    state_->Read([&](const ClusterView& view) {
      const int32_t master = view.MasterOf(view.myself);
      if (master == kNoNode) return 0;
      master_id = view.nodes[static_cast<size_t>(master)].id;
      message = DescribeMyself(view, BusMessageType::kMfStart, options_.announce_ip);
      return 0;
    });
    auto it = to_links_.find(master_id);
    if (master_id.empty() || it == to_links_.end() || !it->second->connected()) return;
    Send(it->second, message);
  });
}

void ClusterBus::OnMfStart(const std::string& sender_id) {
  // Only from a replica of myself, a master (Redis's MFSTART handling).
  const bool mine = state_->Read([&](const ClusterView& view) {
    const int32_t sender = view.Find(sender_id);
    return view.me().Has(kNodeMaster) && sender != kNoNode &&
           view.nodes[static_cast<size_t>(sender)].Has(kNodeSlave) &&
           view.nodes[static_cast<size_t>(sender)].master_id == view.me().id;
  });
  if (!mine) return;
  const int64_t pause_end = manual_failover_.StartOnMaster(sender_id, NowMs());
  spdlog::info("Manual failover requested by replica {}.", sender_id);
  if (options_.pause_writes) options_.pause_writes(pause_end);
}

void ClusterBus::OnPausedMaster(const BusMessage& message) {
  const bool from_my_master = state_->Read([&](const ClusterView& view) {
    const int32_t master = view.MasterOf(view.myself);
    return master != kNoNode && view.nodes[static_cast<size_t>(master)].id == message.sender_id;
  });
  if (from_my_master) manual_failover_.OnMasterPaused(message.repl_offset);
}

void ClusterBus::ResetManualFailover() {
  bus::asio::post(loop_, [this] {
    if (manual_failover_.Reset()) UnpauseWrites();
  });
}

void ClusterBus::ManualFailoverCron(int64_t now_ms) {
  if (!manual_failover_.in_progress()) return;
  const bool i_am_master =
      state_->Read([](const ClusterView& view) { return view.me().Has(kNodeMaster); });
  const uint64_t offset = options_.repl_offset ? options_.repl_offset() : 0;
  const ManualFailover::Step step = manual_failover_.Tick(now_ms, i_am_master, offset);
  if (step.timed_out) spdlog::warn("Manual failover timed out.");
  if (step.unpause_writes) UnpauseWrites();
  // Redis's clusterHandleManualFailover: caught up (or FORCE), the
  // election starts at once with FORCEACK, until the failover's deadline.
  if (step.start_election) {
    spdlog::warn("All master replication stream processed, manual failover can start.");
    if (!StartManualElection(manual_failover_.end_ms())) {
      spdlog::warn("Manual failover: no election, myself is no replica of a master with slots.");
    }
  }
  // A paused master tells its replica its final offset at every tick
  // rather than waiting for the next regular PING.
  if (manual_failover_.SaysPaused(now_ms)) {
    auto it = to_links_.find(manual_failover_.replica_id());
    if (it != to_links_.end() && it->second->connected()) {
      SendHeartbeat(it->second, BusMessageType::kPing);
    }
  }
}

void ClusterBus::ReplicaMigrationCron(int64_t now_ms) {
  const uint32_t barrier = state_->migration_barrier();
  const bool allow = state_->allow_replica_migration();
  std::string target;
  state_->Read([&](const ClusterView& view) {
    const int32_t index = ReplicaMigrationTarget(view, barrier, allow, now_ms, &migration_memory_);
    if (index != kNoNode) target = view.nodes[static_cast<size_t>(index)].id;
    return 0;
  });
  if (target.empty()) return;
  bool moved = false;
  state_->Update([&](ClusterView& view) {
    const int32_t index = view.Find(target);
    ClusterNode& me = view.me();
    if (index == kNoNode || !me.Has(kNodeSlave) ||
        !view.nodes[static_cast<size_t>(index)].Has(kNodeMaster)) {
      return false;
    }
    me.master_id = target;
    moved = true;
    return true;
  });
  if (!moved) return;
  spdlog::info("Migrating to orphaned master {}", target);
  if (manual_failover_.Reset()) UnpauseWrites();
  migration_memory_.orphaned_since_ms.clear();
}

MeetOutcome ClusterBus::Meet(std::string_view ip_text, uint16_t port, uint16_t cport) {
  boost::system::error_code ec;
  const auto address = bus::asio::ip::make_address(std::string(ip_text), ec);
  if (ec || port == 0 || cport == 0) return MeetOutcome::kBadAddress;
  const std::string ip = address.to_string();  // normalised, as Redis's inet_ntop
  MeetOutcome outcome = MeetOutcome::kOk;
  state_->Update([&](ClusterView& view) {
    for (const ClusterNode& node : view.nodes) {
      if (node.Has(kNodeHandshake) && node.ip == ip && node.port == port &&
          node.cport == cport) {
        return false;  // under way already
      }
    }
    if (view.nodes.size() >= kMaxClusterNodes) {
      outcome = MeetOutcome::kTooManyNodes;
      return false;
    }
    ClusterNode node;
    node.id = RandomNodeId();
    node.ip = ip;
    node.port = port;
    node.cport = cport;
    node.flags = kNodeHandshake | kNodeMaster;
    view.Add(std::move(node));
    return false;  // handshake nodes are not saved (Redis leaves them out)
  });
  if (outcome == MeetOutcome::kTooManyNodes) {
    state_->counters().nodes_refused.fetch_add(1, std::memory_order_relaxed);
  }
  return outcome;
}

ForgetOutcome ClusterBus::Forget(std::string_view id) {
  ForgetOutcome outcome = ForgetOutcome::kOk;
  std::string forgotten;
  state_->Update([&](ClusterView& view) {
    const int32_t index = view.Find(id);
    if (index == kNoNode) {
      outcome = ForgetOutcome::kUnknownNode;
      return false;
    }
    if (index == view.myself) {
      outcome = ForgetOutcome::kMyself;
      return false;
    }
    if (view.MasterOf(view.myself) == index) {
      outcome = ForgetOutcome::kMyMaster;
      return false;
    }
    forgotten = view.nodes[static_cast<size_t>(index)].id;
    view.Remove(index);
    return true;
  });
  if (outcome == ForgetOutcome::kOk) {
    std::lock_guard lock(ban_mu_);
    banned_until_ms_[forgotten] = NowMs() + kBusForgetBanMs;
  }
  return outcome;
}

std::vector<BusLinkInfo> ClusterBus::Links() {
  if (!running_) return {};
  auto promise = std::make_shared<std::promise<std::vector<BusLinkInfo>>>();
  auto future = promise->get_future();
  bus::asio::post(loop_, [this, promise] {
    std::vector<BusLinkInfo> rows;
    auto add = [&rows](const std::shared_ptr<BusLink>& link) {
      if (!link->connected() || link->node_id().empty()) return;
      rows.push_back({link->direction() == BusLink::Direction::kTo ? "to" : "from",
                      link->node_id(), link->create_time_ms(), link->writing() ? "rw" : "r",
                      link->send_buffer_allocated(), link->send_buffer_used()});
    };
    for (const auto& [id, link] : to_links_) add(link);
    for (const auto& link : from_links_) add(link);
    promise->set_value(std::move(rows));
  });
  // The bus's loop answers within a cron tick; a stopped loop never does.
  if (future.wait_for(std::chrono::seconds(2)) != std::future_status::ready) return {};
  return future.get();
}

}  // namespace bloomgate
