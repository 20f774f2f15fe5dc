// Per-thread call-site counters: (function, call site) -> the counters a function has.
//
// Why a fixed open-addressing table: the wrappers may not allocate or lock, yet the number of
// call sites is unknown until the run. Each thread owns one table, allocated when the thread
// attaches, with a bounded probe sequence; a call whose site finds no slot within kMaxProbe is
// counted in its function's unattributed row, so per-function sums over the table stay equal
// to the per-function counters and nothing is lost, only not attributed.
//
// A call site is the return address of the exported MPI entry (the application's instruction
// after the call) and, at depth > 1, the return addresses of the frames above it. Resolution to
// file:line happens after the run (callsites/), from the mappings written next to the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace invmw::recording {

constexpr int kMaxCallSiteDepth = 8;

struct CallSiteCounters {
  uint64_t calls;
  uint64_t ticks;
  uint64_t max_ticks;
  uint64_t bytes_sent;
  uint64_t bytes_recv;
};

struct CallSiteEntry {
  uint32_t func1;  // function + 1; 0: free slot
  uint32_t depth;  // frames in pcs
  uint64_t pcs[kMaxCallSiteDepth];
  CallSiteCounters c;
};

class CallSiteTable {
 public:
  static constexpr uint32_t kMaxProbe = 32;
  // capacity is rounded up to a power of two. Returns nullptr when memory is short.
  static CallSiteTable* Create(uint32_t capacity, uint32_t num_funcs);
  // The capacity Create and Place use for a requested one (a power of two, 16..2^20).
  static uint32_t RoundCapacity(uint32_t capacity);
  // Bytes of the entries and unattributed rows of a table of RoundCapacity(capacity) entries.
  static uint64_t ArrayBytes(uint32_t capacity, uint32_t num_funcs);
  // A table whose entries and unattributed rows are the zeroed ArrayBytes at mem (8-aligned):
  // the live call-site file's slot (callsite_live.h), so the counts outlive a SIGKILL. The
  // layout there is: capacity entries, then num_funcs unattributed rows.
  static CallSiteTable* Place(void* mem, uint32_t capacity, uint32_t num_funcs);
  // Frees a table of Create or Place (not Place's memory). The preload keeps its threads'
  // tables to the end of the process (a thread's counts are read at finalize or on a signal);
  // tests and tools free theirs.
  static void Destroy(CallSiteTable* t);

  // Add's result: the entry's slot + 1 (0: the unattributed row), and kAdded when the site had
  // no slot before (the caller may check its address).
  static constexpr uint32_t kAdded = 1u << 31;
  static constexpr uint32_t kSlot1Mask = kAdded - 1;
  // The hot path: no allocation, no lock, no system call. pcs[0..depth) with depth >= 1.
  inline uint32_t Add(uint32_t func, const uint64_t* pcs, uint32_t depth, uint64_t ticks,
                      uint64_t sent, uint64_t recv) {
    uint64_t h = func * 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < depth; ++i) h = (h ^ pcs[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    bool added = false;
    for (uint32_t p = 0; p < kMaxProbe; ++p) {
      const uint32_t slot = uint32_t(h + p) & mask_;
      CallSiteEntry& e = entries_[slot];
      if (e.func1 == 0) {
        e.depth = depth;
        for (uint32_t i = 0; i < depth; ++i) e.pcs[i] = pcs[i];
        // Readers of another thread (a final report) see the slot only once it is complete.
        __atomic_store_n(&e.func1, func + 1, __ATOMIC_RELEASE);
        ++used_;
        added = true;
      } else if (e.func1 != func + 1 || e.depth != depth || !Same(e.pcs, pcs, depth)) {
        continue;
      }
      Count(e.c, ticks, sent, recv);
      return (slot + 1) | (added ? kAdded : 0);
    }
    Count(unattributed_[func], ticks, sent, recv);
    return 0;
  }

  uint32_t capacity() const { return mask_ + 1; }
  uint32_t num_funcs() const { return num_funcs_; }
  uint32_t used() const { return used_; }
  const CallSiteEntry& entry(uint32_t i) const { return entries_[i]; }
  const CallSiteCounters& unattributed(uint32_t f) const { return unattributed_[f]; }

 private:
  static bool Same(const uint64_t* a, const uint64_t* b, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  static void Count(CallSiteCounters& c, uint64_t ticks, uint64_t sent, uint64_t recv) {
    c.calls++;
    c.ticks += ticks;
    if (ticks > c.max_ticks) c.max_ticks = ticks;
    c.bytes_sent += sent;
    c.bytes_recv += recv;
  }

  uint32_t mask_ = 0;
  uint32_t num_funcs_ = 0;
  uint32_t used_ = 0;
  bool placed_ = false;  // the arrays belong to the caller of Place
  CallSiteEntry* entries_ = nullptr;
  CallSiteCounters* unattributed_ = nullptr;
};

// Up to max frames of the calling thread's stack above the frame whose return address is
// `first` (found by _Unwind_Backtrace), first included; 1 (just `first`) when it is not found.
int UnwindCallSite(uint64_t first, uint64_t* pcs, int max);
// The same with a frame-pointer walk from app_fp, the application's frame pointer at its call
// (rbp as the exported entry found it), bounded by the thread's stack [lo, hi).
int FramePointerCallSite(uint64_t first, uintptr_t app_fp, uint64_t* pcs, int max, uintptr_t lo,
                         uintptr_t hi);
// The calling thread's stack bounds; false when unknown.
bool ThreadStackBounds(uintptr_t* lo, uintptr_t* hi);

// ---- the per-rank call-site file (DIR/callsites/rank-NNNNNN.txt, text, format in
// docs/callsites.md): a header, snapshots of the executable mappings, the table. ----

// Snapshots of /proc/self/maps: the executable file mappings with their build ids. The ranges
// are kept (up to kMaxRanges) to tell whether a new address lies in a known object. Not for
// signal handlers; allocation-free after Init.
class MappingLog {
 public:
  static constexpr int kMaxRanges = 1024;
  // fd: the open per-rank file (append-only); reason: "init", "finalize", "new-object".
  bool Snapshot(int fd, const char* reason);
  bool Known(uint64_t pc) const;

 private:
  struct Range {
    uint64_t lo, hi;
  };
  Range ranges_[kMaxRanges];
  int n_ = 0;
};

// Writes the header lines. False when a write failed.
bool WriteCallSiteHeader(int fd, int rank, int depth, double ticks_per_second);
// Writes one table's rows (a "thread" line, then "site" and "unattributed" lines); thread: the
// index of the thread slot that owns the table (its raw events file); names[f] names function f.
bool WriteCallSiteRows(int fd, const CallSiteTable& t, int thread, const char* const* names);
// The closing line with the dropped-site count (calls in unattributed rows over all threads).
bool WriteCallSiteEnd(int fd, uint64_t unattributed_calls);

std::string CallSiteFilePath(const std::string& dir, int rank);

}  // namespace invmw::recording
