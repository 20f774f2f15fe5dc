// The network of a tcp platform: a private network namespace whose loopback is the only link,
// optionally rate-limited by a token bucket (tc tbf).
//
// Every rank and the launcher run inside the namespace and talk over its lo, so one bucket
// carries all traffic between all virtual nodes in both directions: the emulated network is a
// shared medium (like a hub or the shared Ethernet of the paper's slow CoPs), not a switch with
// a full-rate link per node. This kernel has no netem, so there is no added latency either:
// only the rate and the bucket's queue shape the traffic.
#pragma once

#include <string>
#include <vector>

#include "platforms/emulate/platform.h"

namespace invmw::emulate {

// Throws PlatformError when network namespaces cannot be used here (no ip tool, no kernel
// support, no privileges).
void CheckNetnsSupport();

// Creates namespace `name` (as `ip netns add` does, so `ip netns` lists it), brings its lo up
// and installs the platform's rate limit. On failure removes it and throws PlatformError.
void CreateNetns(const std::string& name, const Platform& p);

// Moves the calling process into the namespace (for the launcher, before exec). Returns false
// and sets *error on failure.
bool EnterNetns(const std::string& name, std::string* error);

// Kills every process still inside the namespace, then deletes it. Returns false and sets
// *error when it could not be deleted.
bool RemoveNetns(const std::string& name, std::string* error);

// Names of the namespaces named invmw-* (from /run/netns).
std::vector<std::string> ListNetns();

// The tc command line that limits the namespace's loopback (empty without a rate).
std::vector<std::string> TbfCommand(const std::string& name, const Platform& p);

}  // namespace invmw::emulate
