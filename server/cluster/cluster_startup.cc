#include "server/cluster/cluster_startup.h"

#include "server/cluster/cluster_config_file.h"

namespace bloomgate {

uint16_t ClusterBusPort(const ServerConfig& config) {
  if (config.cluster_port != 0) return config.cluster_port;
  const uint32_t port = config.port != 0 ? config.port : config.tls_port;
  // StartCluster refuses a port whose sum does not fit.
  return static_cast<uint16_t>(port + kClusterPortOffset);
}

bool StartCluster(const ServerConfig& config, FileSystem& fs, ClusterState* state,
                  std::string* error) {
  if (!config.cluster_enabled) return true;
  const uint32_t client_port = config.port != 0 ? config.port : config.tls_port;
  if (config.cluster_port == 0 && client_port + kClusterPortOffset > 65535) {
    // Redis's refusal: the default bus port would not exist.
    *error = "port " + std::to_string(client_port) +
             " is too high for the default cluster bus port (port + 10000): use a port of "
             "55535 or less, or set cluster-port";
    return false;
  }
  const std::string path = JoinPath(config.dir, config.cluster_config_file);
  const uint16_t port = config.port != 0 ? config.port : config.tls_port;
  ClusterView view;
  const ClusterConfigLoad load = LoadClusterConfigFile(fs, path, &view, error);
  if (load == ClusterConfigLoad::kCorrupt) {
    *error = "Unrecoverable error: " + *error +
             ". Fix or remove it (a removed file gives this node a new id and no slots)";
    return false;
  }
  if (load == ClusterConfigLoad::kMissing) {
    view = FreshView(port, ClusterBusPort(config), config.cluster_announce_ip);
  } else {
    // The ports and announced address are this start's, as Redis updates
    // myself from its configuration after loading nodes.conf.
    view.me().port = port;
    view.me().cport = ClusterBusPort(config);
    if (!config.cluster_announce_ip.empty()) view.me().ip = config.cluster_announce_ip;
  }
  const std::string text = RenderClusterConfig(view);
  if (std::string failed = WriteClusterConfigFile(fs, path, text); !failed.empty()) {
    *error = "cannot write the cluster config file: " + failed;
    return false;
  }
  state->Enable(std::move(view), [&fs, path](const std::string& config_text, bool durable) {
    return WriteClusterConfigFile(fs, path, config_text, durable);
  });
  return true;
}

}  // namespace bloomgate
