// The catalogue is filled by the rooms above it at start-up (main.cc calls
// RegisterAllCommands); in server_test that start-up is this initializer,
// so tests that read the command table or the family registry without a
// ServerContext see every command and family.
#include "server/commands/registry.h"

namespace {

[[maybe_unused]] const bool kRegistered = (bloomgate::RegisterAllCommands(), true);

}  // namespace
