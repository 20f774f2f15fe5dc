// The per-rank raw trace: what the preload runtime writes while the job runs, and what
// otf2_writer turns into an OTF2 archive (at the end of a run, or after a crash by
// `invmw trace recover`).
//
// Why not write OTF2 directly from the ranks: OTF2 writes its global definitions only when the
// archive is closed by all ranks together, so a job that dies leaves nothing readable. Each
// rank instead appends fixed-size records to its own files with plain write(2) (also from a
// signal handler), and one converter builds the archive from whatever was written. The same
// converter serves the normal and the crash path.
//
// Files of rank R in <run dir>/raw/:
//   events-R-T.bin  (R six digits, T three digits: thread index) EventFileHeader, then
//                   EventRecord entries in the order the thread produced them. Appended by a
//                   drain thread; the last block may be cut short by a crash (readers drop a
//                   trailing partial record).
//   defs-R.jsonl    one JSON object per line, appended as facts become known (see below).
//
// defs-R.jsonl lines ("type" field first):
//   {"type":"rank", "rank":R, "world_size":N, "host":"...", "pid":P, "flavor":"openmpi",
//    "ticks_per_second":F, "init_ticks":T, "init_realtime_ns":NS}
//   {"type":"functions", "names":["MPI_Init",...], "kinds":["special","send",...],
//    "classes":["env","p2p",...]}                  index = EventRecord::func
//   {"type":"comm", "id":C, "members":[world ranks...], "remote_members":[...] (intercomms),
//    "inter":false, "seq":S}   seq: creation order among this rank's communicators
//   {"type":"clock", "phase":"init"|"finalize", "ticks":T, "offset_ticks":O,
//    "uncertainty_ticks":U}   this rank's clock minus rank 0's at local tick T
//   {"type":"thread", "index":T, "location":"main"|"thread T"}
//   {"type":"counters", "names":["counters.task_clock",...], "units":["ns",...]}
//                                    what kCounters records hold (INVMW_TRACE_COUNTERS=1)
//   {"type":"end", "reason":"finalize"|"signal"|..., "end_ticks":T, "ticks_per_second":F,
//    "dropped_events":D, "dropped_calls":C, "dropped_requests":R, "flushes":K}
//                                    C: calls from threads beyond INVMW_WRAP_MAX_THREADS, R:
//                                    requests whose completion could not be recorded
//                                    (INVMW_WRAP_MAX_REQUESTS); missing counts as 0
#pragma once

#include <cstddef>
#include <cstdint>

namespace invmw::trace {

constexpr uint32_t kEventMagic = 0x56454d49;  // "IMEV"
// 2: kCall records may carry their call-site slot (kFlagCallSite); readers of version 1 files
// find the flag clear.
constexpr uint32_t kEventVersion = 2;

struct EventFileHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t header_size;  // sizeof(EventFileHeader)
  uint32_t record_size;  // sizeof(EventRecord)
  int32_t rank;
  int32_t thread;
  uint64_t reserved[5];
};

enum RecordType : uint8_t {
  kCall = 0,        // one MPI call: Enter at t_enter, Leave at t_leave
  kCompletion = 1,  // a nonblocking operation completed inside the next kCall record of the
                    // same thread (a Wait/Test): at t_enter; request = its id
  kTestFail = 2,    // an unsuccessful Test/Iprobe (coalesced: bytes_sent = number of calls,
                    // bytes_recv = ticks inside them, t_enter/t_leave the first entry and the
                    // last exit; 0 in files of older versions)
  kFlush = 3,       // the runtime flushed buffers inside a call: t_enter..t_leave
  kCancelled = 4,   // a request was cancelled (request = its id)
  kPause = 5,       // MPI_Pcontrol(0): recording paused at t_enter, resumed at t_leave
  kCounters = 6,    // a CounterRecord: counter values at the entry and exit of the next kCall
                    // record of the same thread (INVMW_TRACE_COUNTERS=1)
  kSendPart = 7,    // one message sent inside the next kCall record of the same thread, at
                    // t_enter to peer with tag and bytes_sent (PVM: pvm_mcast, and what the
                    // group library sends inside pvm_bcast/pvm_reduce)
  kRecvPart = 8,    // one message received inside the next kCall record, at t_enter from
                    // peer with tag and bytes_recv (PVM group calls)
  kCutOff = 9,      // the call the thread was inside when the run ended abnormally (written
                    // last, by the signal/exit path): entered at t_enter, cut off at t_leave;
                    // peer/tag what it waited for (-1 unknown), comm its id (0xffffffff
                    // unknown). Converted to an Enter and a Leave carrying invmw:cut_off.
  kInit = 10,       // invmw's own start-up inside the next kCall record (MPI_Init or
                    // MPI_Init_thread): t_enter (the MPI library's PMPI_Init returned) ..
                    // t_leave (the application's MPI_Init returns); an invmw:init region
};

enum RecordFlags : uint8_t {
  kFlagPersistent = 1,  // the request is persistent
  kFlagAnySource = 2,   // the receive was posted with MPI_ANY_SOURCE
  kFlagCallSite = 4,    // kCall only (version >= 2): request's high kCallSiteSlotBits hold the
                        // call's slot + 1 in its thread's call-site table (see below)
};

// The call site of a kCall record, without a record of its own (a separate record whenever a
// thread's site changes made a ping-pong's raw trace 47% larger): request ids count a rank's
// nonblocking requests from 1, so their high bits are zero until 2^40 requests; the slot of the
// call's (function, call site) entry in its thread's table (INVMW_WRAP_CALLSITE_SLOTS <= 2^20)
// goes there, and kFlagCallSite says so. A call whose request id or slot does not fit carries
// no site (flag clear, request as is), so no request id is ever changed. The per-rank call-site
// file (DIR/callsites/rank-NNNNNN.txt) maps (thread, slot) to the site's addresses; readers
// strip the slot with CallRequest() before using the request.
constexpr int kCallSiteSlotShift = 40;
constexpr uint64_t kCallSiteRequestMask = (uint64_t(1) << kCallSiteSlotShift) - 1;
constexpr uint32_t kCallSiteMaxSlot1 = (1u << (64 - kCallSiteSlotShift)) - 1;

// 64 bytes, naturally aligned. Peers are world ranks; -1 none, -2 MPI_PROC_NULL.
struct EventRecord {
  uint64_t t_enter;  // ticks of this rank's clock
  uint64_t t_leave;
  uint64_t bytes_sent;  // for kCall: as in the profile; for kCompletion: bytes received
  uint64_t bytes_recv;
  uint64_t request;  // invmw's id of the nonblocking request (per rank, from 1), else 0
  int32_t peer;      // destination, source, or root (collectives)
  int32_t tag;
  uint32_t comm;  // communicator id from defs ("comm" lines); 0 = MPI_COMM_WORLD
  uint16_t func;  // index into the "functions" line of defs
  uint8_t type;   // RecordType
  uint8_t flags;  // RecordFlags
  int32_t peer2;  // second peer: MPI_Sendrecv's source
  int32_t tag2;   // MPI_Sendrecv's receive tag
};
static_assert(sizeof(EventRecord) == 64, "EventRecord must stay 64 bytes");

// kCall records: the call-site slot + 1 (0: none), and the request id without it.
inline uint32_t CallSiteSlot1(const EventRecord& r) {
  return r.type == kCall && (r.flags & kFlagCallSite) ? uint32_t(r.request >> kCallSiteSlotShift)
                                                      : 0;
}
inline uint64_t CallRequest(const EventRecord& r) {
  return r.type == kCall && (r.flags & kFlagCallSite) ? r.request & kCallSiteRequestMask
                                                      : r.request;
}
// The writer's side (hot path): packs slot1 when both fit.
inline void PackCallSite(EventRecord* r, uint32_t slot1) {
  if (slot1 && slot1 <= kCallSiteMaxSlot1 && r->request <= kCallSiteRequestMask) {
    r->request |= uint64_t(slot1) << kCallSiteSlotShift;
    r->flags |= kFlagCallSite;
  }
}

// The same 64 bytes for type kCounters; `type` sits where EventRecord has it. Values are
// the counters named by the defs "counters" line, in its order.
struct CounterRecord {
  uint64_t enter[3];
  uint64_t leave[3];
  uint32_t reserved0;
  uint16_t func;  // the call's function (a consistency check for readers)
  uint8_t type;   // kCounters
  uint8_t count;  // values used (<= 3)
  uint64_t reserved1;
};
static_assert(sizeof(CounterRecord) == 64, "CounterRecord must stay 64 bytes");
static_assert(offsetof(CounterRecord, type) == offsetof(EventRecord, type),
              "CounterRecord::type must overlay EventRecord::type");

}  // namespace invmw::trace
