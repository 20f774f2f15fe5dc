// The live call-site file DIR/callsites/live-NNNNNN.bin: a rank's per-thread call-site tables
// themselves (CallSiteTable::Place), mapped MAP_SHARED from the file like the live counters
// (common/raw_format.h LiveHeader), so that a rank that never writes its table (SIGKILL, a time
// limit, MPI_Abort, a signal: the table is written only at MPI_Finalize) still leaves every
// call it completed in the page cache. The mappings the addresses need are in the rank's text
// file, written at MPI_Init. The runtime removes the file once the text file holds the table.
//
// Layout: LiveSitesHeader, num_funcs names (char[48]) at names_offset, then slot_count slots
// of slot_size bytes at slots_offset, one per thread slot: capacity CallSiteEntry, then
// num_funcs CallSiteCounters (the unattributed rows). slots_used says how many slots may hold
// counts. All little-endian as in memory.
//
// What a kill leaves: an entry's pcs and depth are stored before its func1 (a release store),
// so an entry with func1 != 0 is whole; its counters are updated one field after the other,
// so an entry of the call in flight may have calls counted and ticks or bytes not yet (or
// func1 set and no call yet): at most one call per thread is off, as with the per-function
// counters. Anything else (func1 or depth out of range) is damage; readers skip such entries
// and count them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "recording/callsite_table.h"

namespace invmw::recording {

constexpr uint32_t kLiveSitesMagic = 0x53564e49;  // "INVS"
constexpr uint32_t kLiveSitesVersion = 1;

struct LiveSitesHeader {
  uint32_t magic;  // kLiveSitesMagic, stored last at MPI_Init: no magic = unfinished
  uint32_t version;
  uint32_t header_size;    // sizeof(LiveSitesHeader)
  uint32_t entry_size;     // sizeof(CallSiteEntry)
  uint32_t counters_size;  // sizeof(CallSiteCounters)
  uint32_t num_funcs;
  uint32_t capacity;    // entries per slot (a power of two, 16..2^20)
  uint32_t slot_count;  // slots the file has room for
  uint32_t slots_used;  // slots taken so far (atomic store by the runtime)
  int32_t rank;
  uint32_t depth;  // INVMW_WRAP_CALLSITE_DEPTH, 1..8
  uint32_t reserved;
  uint64_t names_offset;
  uint64_t slots_offset;
  uint64_t slot_size;  // >= capacity * entry_size + num_funcs * counters_size
};

// The slot layout for a table of `capacity` entries (rounded) and num_funcs functions.
inline uint64_t LiveSitesSlotSize(uint32_t capacity, uint32_t num_funcs) {
  return (CallSiteTable::ArrayBytes(capacity, num_funcs) + 4095) & ~uint64_t(4095);
}

// DIR/callsites/live-NNNNNN.bin
inline std::string LiveSitesPath(const std::string& dir, int rank) {
  char name[64];
  std::snprintf(name, sizeof name, "/callsites/live-%06d.bin", rank);
  return dir + name;
}

}  // namespace invmw::recording
