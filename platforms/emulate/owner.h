// Who owns an emulation resource (a cgroup or network namespace named invmw-*).
//
// A killed `platform exec` cannot tear down what it made, so the next start must find and
// remove its leftovers, without touching those of runs still going on at the same time. The
// name of every resource therefore carries its owner: invmw-<pid>-<start>, where <start> is the
// owner's start time in clock ticks since boot (/proc/PID/stat field 22). A resource is stale
// when no process with that pid and that start time exists, which stays right when the pid has
// been reused.
#pragma once

#include <string>

namespace invmw::emulate {

struct Owner {
  long pid = 0;
  unsigned long long start = 0;
};

// The calling process as an owner.
Owner SelfOwner();
// "invmw-<pid>-<start>".
std::string ResourceName(const Owner& o);
// Parses a resource name; false when it is not of the form invmw-<pid>-<start>.
bool ParseResourceName(const std::string& name, Owner* o);
// True when the owner process still runs (same pid and same start time).
bool OwnerAlive(const Owner& o);
// Start time of a process in clock ticks since boot; false when it does not exist.
bool ProcessStartTime(long pid, unsigned long long* start);

}  // namespace invmw::emulate
