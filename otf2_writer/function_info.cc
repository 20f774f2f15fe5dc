#include "otf2_writer/function_info.h"

#include <cctype>
#include <map>

namespace invmw::otf2 {
namespace {

struct CollKind {
  OTF2_CollectiveOp op;
  bool rooted;
  OTF2_RegionRole role;
};

const std::map<std::string, CollKind>& Collectives() {
  static const std::map<std::string, CollKind> m = {
      {"barrier", {OTF2_COLLECTIVE_OP_BARRIER, false, OTF2_REGION_ROLE_BARRIER}},
      {"bcast", {OTF2_COLLECTIVE_OP_BCAST, true, OTF2_REGION_ROLE_COLL_ONE2ALL}},
      {"reduce", {OTF2_COLLECTIVE_OP_REDUCE, true, OTF2_REGION_ROLE_COLL_ALL2ONE}},
      {"allreduce", {OTF2_COLLECTIVE_OP_ALLREDUCE, false, OTF2_REGION_ROLE_COLL_ALL2ALL}},
      {"reduce_scatter", {OTF2_COLLECTIVE_OP_REDUCE_SCATTER, false, OTF2_REGION_ROLE_COLL_ALL2ALL}},
      {"reduce_scatter_block",
       {OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK, false, OTF2_REGION_ROLE_COLL_ALL2ALL}},
      {"gather", {OTF2_COLLECTIVE_OP_GATHER, true, OTF2_REGION_ROLE_COLL_ALL2ONE}},
      {"gatherv", {OTF2_COLLECTIVE_OP_GATHERV, true, OTF2_REGION_ROLE_COLL_ALL2ONE}},
      {"scatter", {OTF2_COLLECTIVE_OP_SCATTER, true, OTF2_REGION_ROLE_COLL_ONE2ALL}},
      {"scatterv", {OTF2_COLLECTIVE_OP_SCATTERV, true, OTF2_REGION_ROLE_COLL_ONE2ALL}},
      {"allgather", {OTF2_COLLECTIVE_OP_ALLGATHER, false, OTF2_REGION_ROLE_COLL_ALL2ALL}},
      {"allgatherv", {OTF2_COLLECTIVE_OP_ALLGATHERV, false, OTF2_REGION_ROLE_COLL_ALL2ALL}},
      {"alltoall", {OTF2_COLLECTIVE_OP_ALLTOALL, false, OTF2_REGION_ROLE_COLL_ALL2ALL}},
      {"alltoallv", {OTF2_COLLECTIVE_OP_ALLTOALLV, false, OTF2_REGION_ROLE_COLL_ALL2ALL}},
      {"alltoallw", {OTF2_COLLECTIVE_OP_ALLTOALLW, false, OTF2_REGION_ROLE_COLL_ALL2ALL}},
      // OTF2 has no neighbourhood operations; the nearest global pattern keeps byte counts.
      {"neighbor_allgather", {OTF2_COLLECTIVE_OP_ALLGATHER, false, OTF2_REGION_ROLE_COLL_OTHER}},
      {"neighbor_allgatherv", {OTF2_COLLECTIVE_OP_ALLGATHERV, false, OTF2_REGION_ROLE_COLL_OTHER}},
      {"neighbor_alltoall", {OTF2_COLLECTIVE_OP_ALLTOALL, false, OTF2_REGION_ROLE_COLL_OTHER}},
      {"neighbor_alltoallv", {OTF2_COLLECTIVE_OP_ALLTOALLV, false, OTF2_REGION_ROLE_COLL_OTHER}},
      {"neighbor_alltoallw", {OTF2_COLLECTIVE_OP_ALLTOALLW, false, OTF2_REGION_ROLE_COLL_OTHER}},
  };
  return m;
}

bool ContainsNoCase(std::string s, const char* part) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s.find(part) != std::string::npos;
}

}  // namespace

FunctionInfo ClassifyFunction(const std::string& name, const std::string& kind,
                              const std::string& cls) {
  FunctionInfo f;
  f.name = name;
  f.kind = kind;
  f.cls = cls;
  const bool req = kind.size() > 4 && kind.compare(kind.size() - 4, 4, "+req") == 0;
  const std::string base = req ? kind.substr(0, kind.size() - 4) : kind;

  if (cls == "p2p" || cls == "probe" || cls == "completion")
    f.role = OTF2_REGION_ROLE_POINT2POINT;
  else if (cls == "rma")
    f.role = OTF2_REGION_ROLE_RMA;
  else if (cls == "io")
    f.role = base == "plain" ? OTF2_REGION_ROLE_FILE_IO_METADATA : OTF2_REGION_ROLE_FILE_IO;
  else if (cls == "barrier")
    f.role = OTF2_REGION_ROLE_BARRIER;

  if (base == "send")
    f.op = Op::kSend;
  else if (base == "recv" || base == "mrecv")
    f.op = Op::kRecv;
  else if (base == "sendrecv" || base == "sendrecv_replace")
    f.op = Op::kSendrecv;
  else if (base == "isend")
    f.op = Op::kIsend;
  else if (base == "irecv" || base == "imrecv")
    f.op = Op::kIrecv;
  else if (base == "send_init")
    f.op = Op::kSendInit;
  else if (base == "recv_init")
    f.op = Op::kRecvInit;
  else if (base == "start" || base == "startall")
    f.op = Op::kStart;
  else if (base == "comm_new")
    f.op = Op::kCommNew;
  else if (base == "comm_new_req")
    f.op = Op::kOtherRequest;
  else if (base == "comm_free")
    f.op = Op::kCommFree;
  else if (auto it = Collectives().find(base); it != Collectives().end()) {
    f.op = req ? Op::kNbCollective : Op::kCollective;
    f.coll = it->second.op;
    f.rooted = it->second.rooted;
    f.role = it->second.role;
    // Scan and Exscan share the allreduce layout; only the name tells them apart.
    if (base == "allreduce" && ContainsNoCase(name, "exscan"))
      f.coll = OTF2_COLLECTIVE_OP_EXSCAN;
    else if (base == "allreduce" && ContainsNoCase(name, "scan"))
      f.coll = OTF2_COLLECTIVE_OP_SCAN;
    if (f.coll == OTF2_COLLECTIVE_OP_SCAN || f.coll == OTF2_COLLECTIVE_OP_EXSCAN)
      f.role = OTF2_REGION_ROLE_COLL_OTHER;
  } else if (req)
    f.op = Op::kOtherRequest;
  return f;
}

}  // namespace invmw::otf2
