#include "server/cluster/cluster_config_file.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <vector>

#include "persistence/replace_file.h"

namespace bloomgate {
namespace {

std::vector<std::string_view> SplitSpaces(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) words.push_back(line.substr(i, j - i));
    i = j;
  }
  return words;
}

template <typename Int>
bool ParseNumber(std::string_view text, Int* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::optional<uint32_t> ParseFlags(std::string_view text) {
  static constexpr std::pair<std::string_view, uint32_t> kNames[] = {
      {"myself", kNodeMyself},       {"master", kNodeMaster},       {"slave", kNodeSlave},
      {"fail?", kNodePFail},         {"fail", kNodeFail},           {"handshake", kNodeHandshake},
      {"noaddr", kNodeNoAddr},       {"nofailover", kNodeNoFailover}, {"noflags", 0},
  };
  uint32_t flags = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view word = text.substr(start, comma - start);
    bool known = false;
    for (const auto& [name, flag] : kNames) {
      if (word == name) {
        flags |= flag;
        known = true;
      }
    }
    if (!known) return std::nullopt;
    start = comma + 1;
  }
  return flags;
}

// "ip:port@cport[,hostname]"; an address without "@cport" (Redis before
// 4.0) means port + 10000.
bool ParseAddress(std::string_view text, ClusterNode* node) {
  const size_t comma = text.find(',');
  if (comma != std::string_view::npos) text = text.substr(0, comma);
  const size_t at = text.find('@');
  const std::string_view host_port = text.substr(0, at);
  const size_t colon = host_port.rfind(':');
  if (colon == std::string_view::npos) return false;
  uint16_t port = 0;
  if (!ParseNumber(host_port.substr(colon + 1), &port)) return false;
  uint32_t cport = port + kClusterPortOffset;
  if (at != std::string_view::npos) {
    uint16_t parsed = 0;
    if (!ParseNumber(text.substr(at + 1), &parsed)) return false;
    cport = parsed;
  }
  if (cport > 65535) return false;
  node->ip = std::string(host_port.substr(0, colon));
  node->port = port;
  node->cport = static_cast<uint16_t>(cport);
  return true;
}

struct OpenSlot {
  size_t slot;
  bool migrating;
  std::string peer;
  size_t line;
};

bool ParseSlot(std::string_view text, size_t* slot) {
  return ParseNumber(text, slot) && *slot < kClusterSlots;
}

}  // namespace

std::string RenderClusterConfig(const ClusterView& view) {
  std::string text = RenderClusterNodes(view, /*skip_flags=*/kNodeHandshake);
  text += "vars currentEpoch " + std::to_string(view.current_epoch) + " lastVoteEpoch " +
          std::to_string(view.last_vote_epoch) + "\n";
  return text;
}

bool ParseClusterConfig(std::string_view text, ClusterView* out, std::string* error) {
  ClusterView view;
  std::vector<std::pair<int32_t, std::pair<size_t, size_t>>> owned;  // node, [start, end]
  std::vector<OpenSlot> open;
  size_t line_number = 0;
  auto fail = [&](std::string why) {
    *error = "line " + std::to_string(line_number) + ": " + why;
    return false;
  };
  if (!text.empty() && text.back() != '\n') {
    line_number = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
    return fail("truncated (no newline at the end)");
  }
  size_t start = 0;
  while (start < text.size()) {
    const size_t newline = text.find('\n', start);
    std::string_view line = text.substr(start, newline - start);
    start = newline + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::vector<std::string_view> words = SplitSpaces(line);
    if (words.empty()) continue;
    if (words[0] == "vars") {
      if (words.size() % 2 != 1) return fail("vars without a value");
      for (size_t i = 1; i + 1 < words.size(); i += 2) {
        uint64_t value = 0;
        if (!ParseNumber(words[i + 1], &value)) return fail("bad number in vars");
        if (words[i] == "currentEpoch") {
          view.current_epoch = value;
        } else if (words[i] == "lastVoteEpoch") {
          view.last_vote_epoch = value;
        }
        // Other vars are Redis's own (none in 7.0 that Bloomgate keeps).
      }
      continue;
    }
    if (words.size() < 8) return fail("a node line needs at least 8 fields");
    ClusterNode node;
    if (!IsValidNodeId(words[0])) return fail("bad node id");
    node.id = std::string(words[0]);
    if (view.Find(node.id) != kNoNode) return fail("node " + node.id + " listed twice");
    if (!ParseAddress(words[1], &node)) return fail("bad address " + std::string(words[1]));
    std::optional<uint32_t> flags = ParseFlags(words[2]);
    if (!flags) return fail("bad flags " + std::string(words[2]));
    node.flags = *flags;
    if (words[3] != "-") {
      if (!IsValidNodeId(words[3])) return fail("bad master id");
      node.master_id = std::string(words[3]);
    }
    if (!ParseNumber(words[4], &node.ping_sent_ms) ||
        !ParseNumber(words[5], &node.pong_received_ms) ||
        !ParseNumber(words[6], &node.config_epoch)) {
      return fail("bad ping, pong or epoch");
    }
    if (words[7] != "connected" && words[7] != "disconnected") return fail("bad link state");
    if (node.Has(kNodeMyself)) {
      if (view.myself != kNoNode) return fail("two nodes flagged myself");
      node.link_connected = true;
    }
    const int32_t index = view.Add(std::move(node));
    if (view.nodes[static_cast<size_t>(index)].Has(kNodeMyself)) view.myself = index;
    for (size_t w = 8; w < words.size(); ++w) {
      const std::string_view word = words[w];
      if (word.front() == '[') {
        // [slot->-id] migrating to id, [slot-<-id] importing from id.
        const size_t arrow = word.find("->-") != std::string_view::npos ? word.find("->-")
                                                                          : word.find("-<-");
        if (word.back() != ']' || arrow == std::string_view::npos) {
          return fail("bad open slot " + std::string(word));
        }
        size_t slot = 0;
        if (!ParseSlot(word.substr(1, arrow - 1), &slot)) return fail("bad slot");
        const std::string_view peer = word.substr(arrow + 3, word.size() - arrow - 4);
        if (!IsValidNodeId(peer)) return fail("bad node id in open slot");
        open.push_back({slot, word[arrow + 1] == '>', std::string(peer), line_number});
        continue;
      }
      const size_t dash = word.find('-');
      size_t first = 0, last = 0;
      if (!ParseSlot(word.substr(0, dash), &first)) return fail("bad slot " + std::string(word));
      last = first;
      if (dash != std::string_view::npos && !ParseSlot(word.substr(dash + 1), &last)) {
        return fail("bad slot range " + std::string(word));
      }
      if (last < first) return fail("bad slot range " + std::string(word));
      owned.push_back({index, {first, last}});
    }
  }
  if (view.myself == kNoNode) {
    line_number = 0;
    *error = "no node is flagged myself";
    return false;
  }
  for (const auto& [index, range] : owned) {
    for (size_t slot = range.first; slot <= range.second; ++slot) {
      if (view.owner[slot] != kNoNode && view.owner[slot] != index) {
        *error = "slot " + std::to_string(slot) + " has two owners";
        return false;
      }
      view.owner[slot] = index;
    }
  }
  for (const OpenSlot& slot : open) {
    const int32_t peer = view.Find(slot.peer);
    if (peer == kNoNode) {
      line_number = slot.line;
      return fail("open slot toward unknown node " + slot.peer);
    }
    // A slot migrating to this node, or imported from it, would redirect
    // its clients back here with -ASK, forever; SETSLOT never makes one.
    if (peer == view.myself) {
      line_number = slot.line;
      return fail("open slot " + std::to_string(slot.slot) + " names this node itself");
    }
    (slot.migrating ? view.migrating_to : view.importing_from)[slot.slot] = peer;
  }
  // As Redis's loader: currentEpoch is at least every epoch it has seen.
  view.current_epoch = view.MaxEpoch();
  *out = std::move(view);
  return true;
}

ClusterConfigLoad LoadClusterConfigFile(FileSystem& fs, const std::string& path,
                                        ClusterView* view, std::string* error) {
  if (!fs.Exists(path)) return ClusterConfigLoad::kMissing;
  std::unique_ptr<SequentialFile> file;
  Status status = fs.OpenForRead(path, &file);
  std::string text;
  while (status.ok()) {
    std::string chunk;
    status = file->Read(64 << 10, &chunk);
    if (!status.ok() || chunk.empty()) break;
    text += chunk;
  }
  if (!status.ok()) {
    *error = "cluster config file " + path + ": " + status.message();
    return ClusterConfigLoad::kCorrupt;
  }
  if (text.empty()) return ClusterConfigLoad::kMissing;
  std::string why;
  if (!ParseClusterConfig(text, view, &why)) {
    *error = "corrupted cluster config file " + path + ": " + why;
    return ClusterConfigLoad::kCorrupt;
  }
  return ClusterConfigLoad::kLoaded;
}

std::string WriteClusterConfigFile(FileSystem& fs, const std::string& path,
                                   std::string_view text, bool durable) {
  Status status =
      ReplaceFile(fs, path, text, durable ? ReplaceSync::kDurable : ReplaceSync::kProcessCrashSafe);
  return status.ok() ? std::string() : status.message();
}

}  // namespace bloomgate
