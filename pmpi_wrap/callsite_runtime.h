// Call sites in the MPI preload: the configuration (INVMW_WRAP_CALLSITE_*), the per-rank file
// and the rare paths of the per-call recording (recording/callsite_table.h holds the table).
//
// The per-rank file DIR/callsites/rank-NNNNNN.txt is written by its rank alone, with no MPI
// communication: header and mappings at MPI_Init, mappings again when a call comes from an
// object that was not mapped before (dlopen), the table and the mappings at MPI_Finalize. Until
// then the tables live in DIR/callsites/live-NNNNNN.bin (removed once the table is written).
#pragma once

#include <cstdint>

// The application's frame pointer (rbp) at its latest call of a C entry, stored by the x86-64
// entry stubs (gen_wrappers.py) for the frame-pointer walk (INVMW_WRAP_CALLSITE_UNWIND=fp).
extern "C" __thread uintptr_t invmw_app_fp;

namespace invmw::wrap {

struct ThreadState;

// 0 off, 1 return address only, up to 8 frames. Set at MPI_Init.
extern int g_callsite_depth;

// At MPI_Init, after the output directory and the thread slots (max_threads) are known (no
// directory: call sites stay off). The tables go to the live call-site file when it can be
// made (recording/callsite_live.h), else to private memory.
void CallSitesInit(int max_threads);
// A thread's first call: its table (nothing when call sites are off or memory is short).
void CallSitesAttach(ThreadState* ts);
// Frames 2..depth above the return address ra (depth >= 2), into ts->site_pcs.
void CallSitesCaptureDeep(ThreadState* ts, uint64_t ra, bool fortran);
// A site seen for the first time by its thread: new mappings are recorded when its address lies
// in no object known so far.
void CallSitesNewSite(uint64_t pc);
// At MPI_Finalize, before invmw's own collectives: the tables and the final mappings.
void CallSitesFinalize();

}  // namespace invmw::wrap
