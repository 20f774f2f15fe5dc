// Clock offsets between PVM tasks, measured through PVM messages.
//
// Why at spawn: PVM has no collective start-up where all tasks meet, but every task except
// the first is started by a parent's pvm_spawn, and the parent is inside our pvm_spawn wrapper
// right then. The child measures its clock against the parent's with ping-pongs (the round
// trip with the smallest duration wins, offset = midpoint of the child's send and receive
// minus the parent's stamp) as soon as the preload is loaded into it; the parent answers
// before its pvm_spawn returns. Offsets chain: a grandchild's offset to the first task is its
// offset to its parent plus the parent's (pvm_wrap/merge.cc).
//
// Isolation: the exchange runs in a message context of its own (pvm_newcontext, passed to the
// children in INVMW_PVM_SYNC_CONTEXT through PVM_EXPORT), with the application's active send
// and receive buffers set aside, so no application receive can ever see these messages and no
// application buffer is disturbed. Both sides give up after INVMW_PVM_SYNC_TIMEOUT; a task
// without a measured offset is placed on the first task's clock as is (same host: same TSC).
#pragma once

#include <cstdint>

namespace invmw::pvm {

struct ClockOffset {
  bool ok = false;
  uint64_t ticks = 0;            // child's tick at the best round trip's midpoint
  double offset_ticks = 0;       // child's clock minus the parent's
  double uncertainty_ticks = 0;  // half the best round trip
};

// Child side: rounds ping-pongs with parent in context ctx.
ClockOffset SyncWithParent(int parent, int ctx, int rounds, double timeout_s);

// Parent side: answers the children among tids[0..n) (tids < 0 are failed spawns) until each
// has finished or the timeout has passed. Returns the number of children served.
int ServeChildren(int ctx, const int* tids, int n, double timeout_s);

}  // namespace invmw::pvm
