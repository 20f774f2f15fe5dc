// Per-thread event buffers of the recording core, and the writer thread that drains them. Both
// preloads (pmpi_wrap, pvm_wrap) record their trace events through them.
//
// Why this shape: a traced call must cost a few nanoseconds more than a profiled one, so the
// thread that made the call only stores a 64-byte record into its own ring and publishes it
// with one release store. A writer thread appends full stretches of the ring to the thread's
// raw event file (common/event_format.h), so no I/O happens inside the recorded calls. If the
// writer falls behind and a ring fills anyway, the calling thread either writes the ring out itself
// (INVMW_TRACE_ON_FULL=flush, the default; the stretch is marked by a kFlush record) or drops
// events and counts them (INVMW_TRACE_ON_FULL=stop; the trace is then marked partial). Only
// that rare full-ring path takes a lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "common/event_format.h"

namespace invmw::recording {

// Wakes the writer thread early (a ring reached half its capacity).
void NudgeTraceWriter();

// What a ring needs from the preload that owns it; one object per process, alive as long as
// its rings.
struct RingOptions {
  // INVMW_TRACE_ON_FULL=flush (true) or stop (false).
  bool flush_on_full = true;
  // The trace clock of the kFlush mark (the preload's tick source, with its test skew).
  uint64_t (*now)() = nullptr;
  // Counts writes that failed (the preload's error counter, reported in its raw dump).
  std::atomic<uint64_t>* errors = nullptr;
};

class TraceBuffer {
 public:
  // capacity: records in the ring (rounded up to a power of two, at least 1024); fd: the
  // thread's open event file (-1: records are kept but never written); options: see above.
  TraceBuffer(uint32_t capacity, int fd, const RingOptions* options);

  // Hot path: store one record; false when the ring was full and the record was dropped.
  bool Push(const trace::EventRecord& r) {
    uint64_t h = head_.load(std::memory_order_relaxed);
    if (h - tail_.load(std::memory_order_acquire) >= capacity_) return PushFull(r);
    ring_[h & mask_] = r;
    head_.store(h + 1, std::memory_order_release);
    // Wake the writer each time half the ring has filled, so bursts faster than the drain
    // interval are written out before the ring fills.
    if (((h + 1) & half_mask_) == 0) NudgeTraceWriter();
    return true;
  }

  // Writes what is in the ring to the file (writer thread, finalize). Returns records written.
  uint64_t Drain();
  // Async-signal-safe variant for abnormal ends: no lock, no allocation.
  void DrainFromSignal();
  // Abnormal end, after DrainFromSignal: appends r to the file directly (the ring's owner may be
  // another thread, itself stopped inside a call). Async-signal-safe.
  void AppendFromSignal(const trace::EventRecord& r);
  uint64_t pending() const {
    return head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_acquire);
  }
  uint32_t capacity() const { return capacity_; }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t flushes() const { return flushes_.load(std::memory_order_relaxed); }
  uint64_t written() const { return written_.load(std::memory_order_relaxed); }
  // Writer thread: faults the ring's pages in, if the constructor left that to it.
  void TouchInBackground();
  bool untouched() const { return untouched_.load(std::memory_order_relaxed); }

 private:
  bool PushFull(const trace::EventRecord& r);
  uint64_t DrainLocked();

  trace::EventRecord* ring_;
  const RingOptions* options_;
  uint32_t capacity_;
  uint64_t mask_;
  uint64_t half_mask_;
  int fd_;
  std::atomic<uint64_t> head_{0};
  std::atomic<uint64_t> tail_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> flushes_{0};
  std::atomic<uint64_t> written_{0};
  std::atomic<bool> untouched_{false};
  std::mutex drain_mutex_;
};

// Starts the writer thread (drains every buffer at `interval_s`, or sooner when a ring is half
// full) / stops it after a last drain.
void StartTraceWriter(double interval_s);
void StopTraceWriter();
// Registers a buffer with the writer (at a thread's first traced call).
void RegisterTraceBuffer(TraceBuffer* b);
// Drains every registered buffer; from_signal selects the lock-free path.
void DrainAllTraceBuffers(bool from_signal);
uint64_t TotalDroppedEvents();
uint64_t TotalFlushes();

}  // namespace invmw::recording
