#include "pmpi_wrap/request_table.h"

#include <dlfcn.h>
#if __has_include(<valgrind/helgrind.h>)
#include <valgrind/helgrind.h>  // happens-before marks for the removal protocol below
#else
#define ANNOTATE_HAPPENS_BEFORE(obj) ((void)0)
#define ANNOTATE_HAPPENS_AFTER(obj) ((void)0)
#endif
#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer does not see the hand-over through MPI's internals either (a sanitizer build,
// -DINVMW_SANITIZE=thread): the same marks, in its terms.
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#undef ANNOTATE_HAPPENS_BEFORE
#undef ANNOTATE_HAPPENS_AFTER
#define ANNOTATE_HAPPENS_BEFORE(obj) __tsan_release((void*)(obj))
#define ANNOTATE_HAPPENS_AFTER(obj) __tsan_acquire((void*)(obj))
#endif

#include <cstring>

#include "pmpi_wrap/runtime.h"
#include "pmpi_wrap/thread_state.h"

namespace invmw::wrap {
namespace {

constexpr int kSlots = 1 << 16;
constexpr int kMaxProbe = 128;
constexpr uint64_t kEmpty = 0;
constexpr uint64_t kTombstone = ~0ull;
constexpr uint64_t kBusy = ~0ull - 1;  // claimed, info being written

// Removal protocol: whoever wins the CAS of `id` (from the request's id to 0) owns the removal
// and alone turns the key into a tombstone; insertions only claim empty or tombstoned keys.
// So a completing thread and a thread re-tracking the same handle cannot undo each other.
struct Slot {
  std::atomic<uint64_t> key{kEmpty};
  std::atomic<uint64_t> id{0};
  std::atomic<int32_t> thread{-1};  // slot index of the thread that started it (shared handles)
  ReqInfo info;
};

// Removes the entry in `s` if it still holds request `id` (any live request when id == 0).
bool RemoveIf(Slot& s, uint64_t key, uint64_t id) {
  uint64_t cur = s.id.load(std::memory_order_acquire);
  if (cur == 0 || (id != 0 && cur != id)) return false;
  if (!s.id.compare_exchange_strong(cur, 0, std::memory_order_acq_rel)) return false;
  // Whatever the remover read of the entry happens before the next claim of the slot (the
  // atomics order it; helgrind needs to be told, it does not follow C++ atomics).
  ANNOTATE_HAPPENS_BEFORE(&s);
  uint64_t k = key;
  s.key.compare_exchange_strong(k, kTombstone, std::memory_order_acq_rel);
  return true;
}

Slot g_slots[kSlots];

uint64_t Key(MPI_Request r) {
  uint64_t k = 0;
  std::memcpy(&k, &r, sizeof(r));
  // MPICH's request handles are small integers; keep 0 (and the markers) free for ourselves.
  return k + 1;
}

size_t Hash(uint64_t k) {
  return (k * 0x9E3779B97F4A7C15ull) >> 48;
}  // 16 bits

}  // namespace

// Set once at MPI_Init, before the application's threads can make MPI calls.
static MPI_Request g_shared_empty = MPI_REQUEST_NULL;

void InitSharedRequests() {
#if defined(OPEN_MPI)
  // Looked up, not linked: the library must not depend on Open MPI's internal symbols.
  if (void* p = dlsym(RTLD_DEFAULT, "ompi_request_empty")) g_shared_empty = MPI_Request(p);
#endif
}

bool IsSharedRequest(MPI_Request req) {
  if (req == MPI_REQUEST_NULL) return false;
#if defined(OPEN_MPI)
  return g_shared_empty != MPI_REQUEST_NULL && req == g_shared_empty;
#elif defined(MPICH)
  // MPICH handles carry their kind in the top two bits; 01 is a builtin object.
  return (uint32_t(req) >> 30) == 1u;
#else
  return false;
#endif
}

void TrackRequest(MPI_Request req, const ReqInfo& info) {
  if (req == MPI_REQUEST_NULL) return;
  uint64_t key = Key(req);
  size_t h = Hash(key);
  // A handle reused after completion we did not see (e.g. completed by an unrecorded call)
  // would otherwise leave a stale duplicate ahead of the new entry. A shared handle stands for
  // several requests at once: none of its entries is stale.
  if (!IsSharedRequest(req)) ForgetRequest(req);
  for (int i = 0; i < kMaxProbe; ++i) {
    Slot& s = g_slots[(h + i) % kSlots];
    uint64_t k = s.key.load(std::memory_order_relaxed);
    if ((k == kEmpty || k == kTombstone) &&
        s.key.compare_exchange_strong(k, kBusy, std::memory_order_acquire)) {
      ANNOTATE_HAPPENS_AFTER(&s);
      s.info = info;
      s.thread.store(tls_state ? tls_state->index : -1, std::memory_order_relaxed);
      s.id.store(info.id, std::memory_order_release);
      s.key.store(key, std::memory_order_release);
      return;
    }
  }
  g.dropped_requests.fetch_add(1, std::memory_order_relaxed);
}

// The first slot holding `req`, or nullptr.
Slot* FindSlot(MPI_Request req) {
  if (req == MPI_REQUEST_NULL) return nullptr;
  uint64_t key = Key(req);
  size_t h = Hash(key);
  for (int i = 0; i < kMaxProbe; ++i) {
    Slot& s = g_slots[(h + i) % kSlots];
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key) return &s;
    if (k == kEmpty) return nullptr;
  }
  return nullptr;
}

ReqInfo* FindRequest(MPI_Request req) {
  Slot* s = FindSlot(req);
  return s ? &s->info : nullptr;
}

void ForgetRequest(MPI_Request req) {
  if (req == MPI_REQUEST_NULL) return;
  uint64_t key = Key(req);
  size_t h = Hash(key);
  for (int i = 0; i < kMaxProbe; ++i) {
    Slot& s = g_slots[(h + i) % kSlots];
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key && RemoveIf(s, key, 0)) return;
    if (k == kEmpty) return;
  }
}

}  // namespace invmw::wrap

namespace invmw::wrap {

bool CopyRequest(MPI_Request req, ReqInfo* out) {
  Slot* s = FindSlot(req);
  if (!s) return false;
  *out = s->info;
  // The copy is taken before the completion call; once that returns, MPI may give the handle
  // to another thread, whose TrackRequest reclaims the slot. That order runs through MPI's
  // internals, which helgrind does not see: tell it.
  ANNOTATE_HAPPENS_BEFORE(s);
  return true;
}

bool CopySharedRequest(MPI_Request req, ReqInfo* out, int nth) {
  if (req == MPI_REQUEST_NULL) return false;
  const int32_t me = tls_state ? tls_state->index : -1;
  uint64_t key = Key(req);
  size_t h = Hash(key);
  // This thread's entries first: only this thread completes them, so none is recycled while
  // it is copied; then anybody's (a request completed by another thread than its starter).
  for (int pass = 0; pass < 2; ++pass) {
    int n = nth;
    for (int i = 0; i < kMaxProbe; ++i) {
      Slot& s = g_slots[(h + i) % kSlots];
      uint64_t k = s.key.load(std::memory_order_acquire);
      if (k == kEmpty) break;
      if (k != key || s.id.load(std::memory_order_acquire) == 0) continue;
      if (pass == 0 && s.thread.load(std::memory_order_relaxed) != me) continue;
      if (n-- == 0) {
        *out = s.info;
        ANNOTATE_HAPPENS_BEFORE(&s);  // as in CopyRequest
        return true;
      }
    }
  }
  return false;
}

void ForgetRequestIf(MPI_Request req, uint64_t id) {
  if (req == MPI_REQUEST_NULL) return;
  uint64_t key = Key(req);
  size_t h = Hash(key);
  for (int i = 0; i < kMaxProbe; ++i) {
    Slot& s = g_slots[(h + i) % kSlots];
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key && RemoveIf(s, key, id)) return;
    if (k == kEmpty) return;
  }
}

void DeactivateRequestIf(MPI_Request req, uint64_t id) {
  ReqInfo* r = FindRequest(req);
  // Persistent requests keep their handle until MPI_Request_free, so nobody else re-tracks it.
  if (r && r->id == id) r->active = false;
}

}  // namespace invmw::wrap
