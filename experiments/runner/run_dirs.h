// Run directories of the experiment runner: <runs>/<design>/<platform>/p<K>-r<R>, and the names
// that become those path components.
//
// Why a marker file: `experiment reset` and a run's retry delete directories, and a deletion
// must only ever reach what the runner itself made. Design and platform names are therefore
// plain names (CheckPathName), every directory the runner creates below the runs directory gets
// an ownership marker (kOwnerMarker) at creation, and removal walks the tree with O_NOFOLLOW
// directory descriptors: it never follows a symbolic link, never leaves the runs directory and
// never deletes a directory without the marker (one made by hand, or by an invmw before the
// marker existed, stays; the report lists it).
//
// Contract: MakeRunDir returns the run directory, empty and marked, creating and marking the
// levels that are missing; an existing run directory is emptied only when it carries the marker
// (or is empty), otherwise, and for a symbolic link or non-directory on the way, it throws
// std::runtime_error naming the path. RemoveRunDirs removes <runs>/<design>/<platform>'s marked
// run directories, then that directory and <runs>/<design> when they are marked and nothing
// else is left in them; everything else stays and is reported.
#pragma once

#include <string>
#include <vector>

namespace invmw::experiment {

extern const char kOwnerMarker[];  // ".invmw-runner-owned"

// "" when `name` may be a path component (letters, digits, '.', '_', '-'; not "." or ".."; at
// most 128 characters), else why not.
std::string CheckPathName(const std::string& name);

std::string MakeRunDir(const std::string& runs_dir, const std::string& design,
                       const std::string& platform, const std::string& run);

struct RemoveReport {
  int removed = 0;                // run directories removed
  std::vector<std::string> kept;  // what stayed and why ("PATH: why")
};
RemoveReport RemoveRunDirs(const std::string& runs_dir, const std::string& design,
                           const std::string& platform);

}  // namespace invmw::experiment
