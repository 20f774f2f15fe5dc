// Running the system's network tools (ip, tc) for the emulation set-up. iproute2 is the
// interface administrators know and the kernel's netlink API changes under it, so the platform
// drives it rather than speaking netlink itself.
#pragma once

#include <string>
#include <vector>

namespace invmw::emulate {

struct ToolResult {
  int status = -1;     // exit status, or -1 when it could not be run or died of a signal
  std::string output;  // stdout and stderr together, trimmed
};

// Runs argv[0] (looked up in PATH) without a shell and waits for it.
ToolResult RunTool(const std::vector<std::string>& argv);

// Same, but throws PlatformError("<what>: `<command>` failed: <output>") on a non-zero status.
std::string RunToolOrThrow(const std::vector<std::string>& argv, const std::string& what);

}  // namespace invmw::emulate
