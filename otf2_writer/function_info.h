// What each recorded MPI function means for the trace: the OTF2 region role, the collective
// operation, and which MPI event records a call produces.
//
// Why here and not in the raw format: the runtime only writes each function's name, kind and
// class (the vocabulary of pmpi_wrap/functions.list) into defs; turning those into OTF2
// semantics is the trace writer's business, and readers of the archive need none of it.
#pragma once

#include <otf2/otf2.h>

#include <string>

namespace invmw::otf2 {

enum class Op {
  kPlain,         // Enter/Leave only
  kSend,          // blocking send: MpiSend at enter
  kRecv,          // blocking receive (also Mrecv): MpiRecv at leave
  kSendrecv,      // both
  kIsend,         // MpiIsend, completion later
  kIrecv,         // MpiIrecvRequest, MpiIrecv at completion
  kSendInit,      // persistent send set up: events at each start
  kRecvInit,      // persistent receive set up
  kStart,         // starts persistent requests
  kCollective,    // MpiCollectiveBegin/End
  kNbCollective,  // NonBlockingCollectiveRequest, ...Complete at completion
  kCommNew,       // CommCreate inside a collective pair
  kCommFree,      // CommDestroy inside a collective pair
  kOtherRequest,  // nonblocking RMA, I/O, Comm_idup: completion carries no MPI record
};

struct FunctionInfo {
  std::string name, kind, cls;
  Op op = Op::kPlain;
  OTF2_CollectiveOp coll = OTF2_COLLECTIVE_OP_BARRIER;
  bool rooted = false;
  OTF2_RegionRole role = OTF2_REGION_ROLE_FUNCTION;
};

// name: "MPI_Bcast" (or a large-count "MPI_Bcast_c"); kind: "bcast+req" etc.; cls: "collective".
FunctionInfo ClassifyFunction(const std::string& name, const std::string& kind,
                              const std::string& cls);

}  // namespace invmw::otf2
