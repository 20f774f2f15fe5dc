// The call-site part of a run's profile: the per-rank call-site files the MPI preload wrote
// (DIR/callsites/), resolved offline (resolve.h) and merged over ranks into profile.json's
// "callsites" (keys in docs/callsites.md), which profile.txt renders as mpiP-style tables.
// Run by `invmw profile` and at the end of `invmw run`; needs no MPI.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace invmw::callsites {

// Builds the "callsites" object from dir/callsites/rank-*.txt. False when the run has no
// call-site files (call sites off, or a run of an older invmw). Files that cannot be read or
// parsed are left out and listed in "problems" (and in *problems).
bool Build(const std::string& dir, nlohmann::json* out, std::vector<std::string>* problems);

// Adds "callsites" to dir/profile.json and rewrites profile.json and profile.txt (through a
// temporary file and rename). A profile that has "callsites" already is left alone unless
// again. *attached: whether they were added. False with an error when the profile cannot be
// read or written.
bool AttachToProfile(const std::string& dir, bool* attached, std::string* error,
                     std::vector<std::string>* problems, bool again = false);

}  // namespace invmw::callsites
