#include "pmpi_wrap/request_table.h"

#include <cstring>

#include "pmpi_wrap/runtime.h"

namespace invmw::wrap {
namespace {

constexpr int kSlots = 1 << 16;
constexpr int kMaxProbe = 128;
constexpr uint64_t kEmpty = 0;
constexpr uint64_t kTombstone = ~0ull;
constexpr uint64_t kBusy = ~0ull - 1;  // claimed, info being written

struct Slot {
  std::atomic<uint64_t> key{kEmpty};
  ReqInfo info;
};

Slot g_slots[kSlots];

uint64_t Key(MPI_Request r) {
  uint64_t k = 0;
  std::memcpy(&k, &r, sizeof(r));
  // MPICH's request handles are small integers; keep 0 (and the markers) free for ourselves.
  return k + 1;
}

size_t Hash(uint64_t k) { return (k * 0x9E3779B97F4A7C15ull) >> 48; }  // 16 bits

}  // namespace

void TrackRequest(MPI_Request req, const ReqInfo& info) {
  if (req == MPI_REQUEST_NULL) return;
  uint64_t key = Key(req);
  size_t h = Hash(key);
  // A handle reused after completion we did not see (e.g. completed by an unrecorded call)
  // would otherwise leave a stale duplicate ahead of the new entry.
  ForgetRequest(req);
  for (int i = 0; i < kMaxProbe; ++i) {
    Slot& s = g_slots[(h + i) % kSlots];
    uint64_t k = s.key.load(std::memory_order_relaxed);
    if ((k == kEmpty || k == kTombstone) &&
        s.key.compare_exchange_strong(k, kBusy, std::memory_order_acquire)) {
      s.info = info;
      s.key.store(key, std::memory_order_release);
      return;
    }
  }
  g.dropped_requests.fetch_add(1, std::memory_order_relaxed);
}

ReqInfo* FindRequest(MPI_Request req) {
  if (req == MPI_REQUEST_NULL) return nullptr;
  uint64_t key = Key(req);
  size_t h = Hash(key);
  for (int i = 0; i < kMaxProbe; ++i) {
    Slot& s = g_slots[(h + i) % kSlots];
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key) return &s.info;
    if (k == kEmpty) return nullptr;
  }
  return nullptr;
}

void ForgetRequest(MPI_Request req) {
  if (req == MPI_REQUEST_NULL) return;
  uint64_t key = Key(req);
  size_t h = Hash(key);
  for (int i = 0; i < kMaxProbe; ++i) {
    Slot& s = g_slots[(h + i) % kSlots];
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key) {
      s.key.store(kTombstone, std::memory_order_release);
      return;
    }
    if (k == kEmpty) return;
  }
}

}  // namespace invmw::wrap
