// profile.txt's call-site tables, rendered from profile.json's "callsites" (callsites/ builds
// it offline): mpiP's layout, top call sites by time over all ranks with the min/mean/max of a
// rank's time at each, then each function's call sites.
#pragma once

#include <sstream>

#include <nlohmann/json.hpp>

namespace invmw::profile {

// Appends the tables when p has "callsites"; nothing otherwise.
void RenderCallSites(const nlohmann::json& p, std::ostringstream& os);

}  // namespace invmw::profile
