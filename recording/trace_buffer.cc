#include "recording/trace_buffer.h"

#include <pthread.h>
#include <sys/mman.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/clock.h"
#include "recording/io.h"

namespace invmw::recording {
namespace {

constexpr int kMaxBuffers = 4096;
std::atomic<TraceBuffer*> g_buffers[kMaxBuffers];
std::atomic<int> g_nbuffers{0};

// Never destroyed: a child the application forks while the writer thread waits here inherits
// the condition variable with a waiter that does not exist in the child, and destroying it at
// the child's exit() would wait for that waiter forever.
// Made at first use, not by a static initializer: pvm_wrap starts the writer from its own load-time
// initializer, which may run before this file's.
std::mutex& WriterMutex() {
  static std::mutex& m = *new std::mutex;
  return m;
}
std::condition_variable& WriterCv() {
  static std::condition_variable& cv = *new std::condition_variable;
  return cv;
}
bool g_writer_stop = false;
bool g_writer_nudged = false;
std::thread* g_writer = nullptr;
std::atomic<bool> g_writer_running{false};  // read by threads that make their ring

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL
#endif

}  // namespace

TraceBuffer::TraceBuffer(uint32_t capacity, int fd, const RingOptions* options)
    : options_(options), fd_(fd) {
  uint32_t cap = 1024;
  while (cap < capacity && cap < (1u << 30)) cap <<= 1;
  capacity_ = cap;
  mask_ = cap - 1;
  half_mask_ = cap / 2 - 1;
  // Written once up front, not in the MPI calls: the first write to each page is slow, and on
  // virtual machines MAP_POPULATE did not help (measured: the first pass over a populated ring
  // cost 90 ns per record, later passes 11 ns; after a memset, 11 ns at once). The memset of a
  // 4 MB ring took 2.5 ms, inside the application's MPI_Init for the main thread: with a
  // writer thread, that thread faults the pages in instead (MADV_POPULATE_WRITE, which leaves
  // their contents alone, so the owner may write into the ring meanwhile).
  const size_t bytes = size_t(cap) * sizeof(trace::EventRecord);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ring_ = p == MAP_FAILED ? nullptr : static_cast<trace::EventRecord*>(p);
  if (!ring_) {
    capacity_ = 0;  // every Push then takes the full path and counts a drop
    return;
  }
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  if (g_writer_running.load() && bytes > page && madvise(p, page, MADV_POPULATE_WRITE) == 0)
    untouched_.store(true, std::memory_order_relaxed);
  else
    std::memset(p, 0, bytes);
}

void TraceBuffer::TouchInBackground() {
  if (!untouched_.exchange(false)) return;
  const size_t bytes = size_t(capacity_) * sizeof(trace::EventRecord);
  madvise(ring_, bytes, MADV_POPULATE_WRITE);  // a failure costs speed, never records
}

uint64_t TraceBuffer::DrainLocked() {
  uint64_t t = tail_.load(std::memory_order_relaxed);
  uint64_t h = head_.load(std::memory_order_acquire);
  uint64_t n = h - t;
  if (n == 0 || fd_ < 0) return 0;
  // The stretch [t, h) may wrap around the end of the ring: write it in at most two pieces.
  uint64_t first = t & mask_;
  uint64_t part = std::min<uint64_t>(n, capacity_ - first);
  bool ok = WriteAll(fd_, ring_ + first, part * sizeof(trace::EventRecord));
  if (ok && part < n) ok = WriteAll(fd_, ring_, (n - part) * sizeof(trace::EventRecord));
  if (!ok && options_->errors) options_->errors->fetch_add(1, std::memory_order_relaxed);
  tail_.store(h, std::memory_order_release);
  written_.fetch_add(n, std::memory_order_relaxed);
  return n;
}

uint64_t TraceBuffer::Drain() {
  std::lock_guard<std::mutex> lock(drain_mutex_);
  return DrainLocked();
}

void TraceBuffer::DrainFromSignal() {
  // The writer thread may hold the lock mid-write; try once, and if it is busy write anyway:
  // a duplicated stretch is better than a lost one, and the converter drops exact duplicates.
  bool locked = drain_mutex_.try_lock();
  DrainLocked();
  if (locked) drain_mutex_.unlock();
}

void TraceBuffer::AppendFromSignal(const trace::EventRecord& r) {
  if (fd_ < 0) return;
  bool locked = drain_mutex_.try_lock();
  if (WriteAll(fd_, &r, sizeof r)) written_.fetch_add(1, std::memory_order_relaxed);
  if (locked) drain_mutex_.unlock();
}

bool TraceBuffer::PushFull(const trace::EventRecord& r) {
  if (capacity_ == 0 || !options_->flush_on_full) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // Flush inside the call: write the ring out, and say so in the trace.
  trace::EventRecord mark{};
  mark.type = trace::kFlush;
  mark.t_enter = options_->now ? options_->now() : clock::Ticks();
  {
    std::lock_guard<std::mutex> lock(drain_mutex_);
    DrainLocked();
  }
  mark.t_leave = options_->now ? options_->now() : clock::Ticks();
  flushes_.fetch_add(1, std::memory_order_relaxed);
  uint64_t h = head_.load(std::memory_order_relaxed);
  ring_[h & mask_] = mark;
  ring_[(h + 1) & mask_] = r;
  head_.store(h + 2, std::memory_order_release);
  return true;
}

void RegisterTraceBuffer(TraceBuffer* b) {
  int i = g_nbuffers.fetch_add(1);
  if (i < kMaxBuffers) g_buffers[i].store(b, std::memory_order_release);
  // The writer touches the new ring at its next round (TRACE_DRAIN_INTERVAL), not at once: the
  // main thread's ring is made inside MPI_Init, and a writer woken there took the core from it
  // while faulting the ring in (issue 17: 1.1-1.5 ms of MPI_Init per rank with 2 ranks on 2
  // cores); until then the owner faults in the few pages it writes itself.
}

void DrainAllTraceBuffers(bool from_signal) {
  int n = std::min(g_nbuffers.load(), kMaxBuffers);
  for (int i = 0; i < n; ++i) {
    TraceBuffer* b = g_buffers[i].load(std::memory_order_acquire);
    if (!b) continue;
    if (from_signal)
      b->DrainFromSignal();
    else
      b->Drain();
  }
}

uint64_t TotalDroppedEvents() {
  uint64_t d = 0;
  int n = std::min(g_nbuffers.load(), kMaxBuffers);
  for (int i = 0; i < n; ++i)
    if (TraceBuffer* b = g_buffers[i].load()) d += b->dropped();
  return d;
}

uint64_t TotalFlushes() {
  uint64_t d = 0;
  int n = std::min(g_nbuffers.load(), kMaxBuffers);
  for (int i = 0; i < n; ++i)
    if (TraceBuffer* b = g_buffers[i].load()) d += b->flushes();
  return d;
}

// Wakes the writer early (a ring reached half its capacity).
void NudgeTraceWriter() {
  {
    std::lock_guard<std::mutex> lock(WriterMutex());
    g_writer_nudged = true;
  }
  WriterCv().notify_one();
}

void StartTraceWriter(double interval_s) {
  if (g_writer) return;
  g_writer_stop = false;
  auto period = std::chrono::microseconds(int64_t(interval_s * 1e6));
  // The writer must not receive the application's signals (they belong to its threads).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  g_writer = new std::thread([period] {
    std::unique_lock<std::mutex> lock(WriterMutex());
    while (!g_writer_stop) {
      WriterCv().wait_for(lock, period, [] { return g_writer_stop || g_writer_nudged; });
      g_writer_nudged = false;
      lock.unlock();
      const int n = std::min(g_nbuffers.load(), kMaxBuffers);
      for (int i = 0; i < n; ++i)
        if (TraceBuffer* b = g_buffers[i].load(std::memory_order_acquire)) b->TouchInBackground();
      DrainAllTraceBuffers(false);
      lock.lock();
    }
  });
  g_writer_running.store(true);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void StopTraceWriter() {
  g_writer_running.store(false);
  if (g_writer) {
    {
      std::lock_guard<std::mutex> lock(WriterMutex());
      g_writer_stop = true;
    }
    WriterCv().notify_one();
    g_writer->join();
    delete g_writer;
    g_writer = nullptr;
  }
  // Also without a writer thread (INVMW_TRACE_TEST_NO_WRITER): what the rings hold is written.
  DrainAllTraceBuffers(false);
}

}  // namespace invmw::recording
