// The event ring of the recording core (trace_buffer.h) on its own: order across the ring's
// wrap, the writer thread's drains, and what happens when the ring fills (flush or drop).
#include "recording/trace_buffer.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

namespace invmw::recording {
namespace {

uint64_t FakeNow() {
  return 777;
}

// An anonymous in-memory file for the ring's output, read back after the test.
class Ring : public ::testing::Test {
 protected:
  void SetUp() override {
    fd_ = memfd_create("invmw-ring-test", MFD_CLOEXEC);
    ASSERT_GE(fd_, 0);
    options_.now = FakeNow;
    options_.errors = &errors_;
  }
  void TearDown() override { close(fd_); }

  std::vector<trace::EventRecord> Written() const {
    const off_t size = lseek(fd_, 0, SEEK_END);
    std::vector<trace::EventRecord> out(size_t(size) / sizeof(trace::EventRecord));
    EXPECT_EQ(size_t(size) % sizeof(trace::EventRecord), 0u);
    if (!out.empty()) {
      EXPECT_EQ(pread(fd_, out.data(), out.size() * sizeof out[0], 0), ssize_t(size));
    }
    return out;
  }

  static trace::EventRecord Rec(uint64_t i) {
    trace::EventRecord r{};
    r.type = trace::kCall;
    r.t_enter = i;
    r.t_leave = i + 1;
    r.bytes_sent = i * 3;
    return r;
  }

  int fd_ = -1;
  std::atomic<uint64_t> errors_{0};
  RingOptions options_;
};

TEST_F(Ring, CapacityIsAPowerOfTwoOfAtLeast1024) {
  TraceBuffer small(10, fd_, &options_);
  EXPECT_EQ(small.capacity(), 1024u);
  TraceBuffer odd(3000, fd_, &options_);
  EXPECT_EQ(odd.capacity(), 4096u);
}

// Records written in several drains, the later ones across the end of the ring, come out in
// the order they were pushed, each once.
TEST_F(Ring, KeepsOrderAcrossTheWrap) {
  TraceBuffer b(1024, fd_, &options_);
  uint64_t next = 0;
  for (int round = 0; round < 5; ++round) {
    for (int k = 0; k < 700; ++k) ASSERT_TRUE(b.Push(Rec(next++)));
    EXPECT_EQ(b.pending(), 700u);
    EXPECT_EQ(b.Drain(), 700u);
    EXPECT_EQ(b.pending(), 0u);
  }
  const auto out = Written();
  ASSERT_EQ(out.size(), next);
  for (uint64_t i = 0; i < next; ++i) {
    ASSERT_EQ(out[i].t_enter, i) << "record " << i;
    ASSERT_EQ(out[i].bytes_sent, i * 3);
  }
  EXPECT_EQ(b.written(), next);
  EXPECT_EQ(b.dropped(), 0u);
  EXPECT_EQ(b.flushes(), 0u);
  EXPECT_EQ(errors_.load(), 0u);
}

// INVMW_TRACE_ON_FULL=stop: a full ring drops and counts what does not fit; what it holds is
// intact.
TEST_F(Ring, FullRingDropsAndCountsWhenStopped) {
  options_.flush_on_full = false;
  TraceBuffer b(1024, fd_, &options_);
  for (uint64_t i = 0; i < 1024; ++i) ASSERT_TRUE(b.Push(Rec(i)));
  for (uint64_t i = 0; i < 37; ++i) EXPECT_FALSE(b.Push(Rec(5000 + i)));
  EXPECT_EQ(b.dropped(), 37u);
  EXPECT_EQ(b.flushes(), 0u);
  EXPECT_EQ(b.Drain(), 1024u);
  const auto out = Written();
  ASSERT_EQ(out.size(), 1024u);
  EXPECT_EQ(out.front().t_enter, 0u);
  EXPECT_EQ(out.back().t_enter, 1023u);
  // After a drain there is room again.
  EXPECT_TRUE(b.Push(Rec(9999)));
}

// INVMW_TRACE_ON_FULL=flush: the pushing thread writes the ring out itself and marks the
// stretch with a kFlush record timed by the owner's clock; nothing is lost.
TEST_F(Ring, FullRingFlushesInsideTheCallAndMarksIt) {
  options_.flush_on_full = true;
  TraceBuffer b(1024, fd_, &options_);
  for (uint64_t i = 0; i < 1024 + 10; ++i) ASSERT_TRUE(b.Push(Rec(i)));
  EXPECT_EQ(b.flushes(), 1u);
  EXPECT_EQ(b.dropped(), 0u);
  b.Drain();
  const auto out = Written();
  ASSERT_EQ(out.size(), 1024u + 10u + 1u);
  for (uint64_t i = 0; i < 1024; ++i) ASSERT_EQ(out[i].t_enter, i);
  EXPECT_EQ(out[1024].type, trace::kFlush);
  EXPECT_EQ(out[1024].t_enter, 777u);
  EXPECT_EQ(out[1024].t_leave, 777u);
  for (uint64_t i = 0; i < 10; ++i) EXPECT_EQ(out[1025 + i].t_enter, 1024 + i);
}

// A failed write counts as an error of the preload; the ring moves on.
TEST_F(Ring, FailedWritesAreCounted) {
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  close(pipefd[1]);  // the ring gets the read end: every write fails (EBADF)
  TraceBuffer b(1024, pipefd[0], &options_);
  ASSERT_TRUE(b.Push(Rec(1)));
  b.Drain();
  EXPECT_EQ(errors_.load(), 1u);
  EXPECT_EQ(b.pending(), 0u);
  close(pipefd[0]);
}

// The signal path: DrainFromSignal writes what the ring holds, AppendFromSignal adds a record
// after it directly.
TEST_F(Ring, SignalPathDrainsAndAppends) {
  TraceBuffer b(1024, fd_, &options_);
  for (uint64_t i = 0; i < 5; ++i) b.Push(Rec(i));
  b.DrainFromSignal();
  trace::EventRecord cut = Rec(100);
  cut.type = trace::kCutOff;
  b.AppendFromSignal(cut);
  const auto out = Written();
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[4].t_enter, 4u);
  EXPECT_EQ(out[5].type, trace::kCutOff);
  EXPECT_EQ(b.written(), 6u);
}

// The writer thread drains registered rings without the owner's help: woken when a ring is
// half full (its period here is far longer than the test), and once more when it stops.
TEST_F(Ring, WriterThreadDrainsHalfFullRingsAndTheRestAtStop) {
  // Made before the writer starts, so its pages are touched at once and registering it wakes
  // nothing: only the half-full nudge can make the writer drain before it stops.
  auto* b = new TraceBuffer(1024, fd_, &options_);  // registered rings live as long as the process
  StartTraceWriter(3600.0);
  RegisterTraceBuffer(b);
  for (uint64_t i = 0; i < 512; ++i) ASSERT_TRUE(b->Push(Rec(i)));
  // No timing assumption: wait (up to a generous bound) for the nudge to be served.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (b->written() < 512 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(b->written(), 512u);
  for (uint64_t i = 512; i < 600; ++i) ASSERT_TRUE(b->Push(Rec(i)));
  StopTraceWriter();
  EXPECT_EQ(b->pending(), 0u);
  const auto out = Written();
  ASSERT_EQ(out.size(), 600u);
  for (uint64_t i = 0; i < 600; ++i) ASSERT_EQ(out[i].t_enter, i);
  EXPECT_EQ(b->flushes(), 0u);
}

}  // namespace
}  // namespace invmw::recording
