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

#include <cstdlib>
#include <cstring>

#include "pmpi_wrap/runtime.h"
#include "pmpi_wrap/thread_state.h"

namespace invmw::wrap {
namespace {

constexpr int kMaxProbe = 128;
constexpr uint64_t kEmpty = 0;
constexpr uint64_t kTombstone = ~0ull;
constexpr uint64_t kBusy = ~0ull - 1;  // claimed, info being written
// Keys of shared-handle entries: bit 62 set (no handle has it: Open MPI's are user-space
// pointers, MPICH's 32-bit integers), the starting thread's slot, its sequence number.
constexpr uint64_t kSharedBit = 1ull << 62;
constexpr uint64_t kSeqMask = (1ull << 40) - 1;

// Removal protocol: whoever wins the CAS of `id` (from the request's id to 0) owns the removal
// and alone turns the key into a tombstone; insertions only claim empty or tombstoned keys.
// So a completing thread and a thread re-tracking the same handle cannot undo each other.
struct Slot {
  std::atomic<uint64_t> key{kEmpty};
  std::atomic<uint64_t> id{0};
  std::atomic<int32_t> thread{-1};  // slot index of the thread that started it (shared handles)
  MPI_Request handle;               // shared entries: which shared handle
  ReqInfo info;
};

Slot* g_slots = nullptr;  // set once at MPI_Init
uint64_t g_mask = 0;
int g_shift = 64;
// Per-thread rings of shared-handle entries: entry `seq` of a thread lives in ring[seq & mask],
// so its own entries are found without hashing, and none of them leaves a tombstone in the table
// (a stream of distinct keys would fill it with tombstones and make every miss probe to the end).
uint64_t g_ring_mask = 0;

Slot* RingOf(ThreadState* ts) {
  return static_cast<Slot*>(ts->shared_ring.load(std::memory_order_acquire));
}

// The ring slot that holds (or held) shared entry `key`, or nullptr.
Slot* SharedSlot(uint64_t key) {
  ThreadState* ts = ThreadAt(int32_t((key >> 40) & 0x3fffff));
  Slot* ring = ts ? RingOf(ts) : nullptr;
  return ring ? &ring[key & kSeqMask & g_ring_mask] : nullptr;
}

uint64_t SharedKey(int32_t thread, uint64_t seq) {
  return kSharedBit | (uint64_t(uint32_t(thread) & 0x3fffff) << 40) | (seq & kSeqMask);
}

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

uint64_t Key(MPI_Request r) {
  uint64_t k = 0;
  std::memcpy(&k, &r, sizeof(r));
  // MPICH's request handles are small integers; keep 0 (and the markers) free for ourselves.
  return k + 1;
}

size_t Hash(uint64_t k) {
  return size_t((k * 0x9E3779B97F4A7C15ull) >> g_shift);
}

Slot& At(size_t h, int i) {
  return g_slots[(h + size_t(i)) & g_mask];
}

// The slot holding `key`, or nullptr.
Slot* FindKey(uint64_t key) {
  if (!g_slots) return nullptr;
  size_t h = Hash(key);
  for (int i = 0; i < kMaxProbe; ++i) {
    Slot& s = At(h, i);
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key) return &s;
    if (k == kEmpty) return nullptr;
  }
  return nullptr;
}

// Removes the entry of `key` while it still holds request `id`.
void RemoveKeyIf(uint64_t key, uint64_t id) {
  if (key & kSharedBit) {
    if (Slot* s = SharedSlot(key); s && s->key.load(std::memory_order_acquire) == key)
      RemoveIf(*s, key, id);
    return;
  }
  if (!g_slots) return;
  size_t h = Hash(key);
  for (int i = 0; i < kMaxProbe; ++i) {
    Slot& s = At(h, i);
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key && RemoveIf(s, key, id)) return;
    if (k == kEmpty) return;
  }
}

bool Insert(uint64_t key, MPI_Request req, const ReqInfo& info) {
  size_t h = Hash(key);
  for (int i = 0; i < kMaxProbe; ++i) {
    Slot& s = At(h, i);
    uint64_t k = s.key.load(std::memory_order_relaxed);
    if ((k == kEmpty || k == kTombstone) &&
        s.key.compare_exchange_strong(k, kBusy, std::memory_order_acquire)) {
      ANNOTATE_HAPPENS_AFTER(&s);
      s.info = info;
      s.info.key = key;
      s.handle = req;
      s.thread.store(tls_state ? tls_state->index : -1, std::memory_order_relaxed);
      s.id.store(info.id, std::memory_order_release);
      s.key.store(key, std::memory_order_release);
      return true;
    }
  }
  return false;
}

// Copies the live shared entry `key` of handle `req` from its ring slot; false when there is
// none. Read like a seqlock: the owner rewrites a slot only after its id went to 0, and ids are
// never reused, so an unchanged id after the copy means the copy is whole.
bool CopyShared(Slot& s, uint64_t key, MPI_Request req, ReqInfo* out) {
  if (s.key.load(std::memory_order_acquire) != key) return false;
  uint64_t id = s.id.load(std::memory_order_acquire);
  if (id == 0 || s.handle != req) return false;
  *out = s.info;
  ANNOTATE_HAPPENS_BEFORE(&s);  // as in CopyRequest
  std::atomic_thread_fence(std::memory_order_acquire);
  return s.id.load(std::memory_order_relaxed) == id && s.key.load(std::memory_order_relaxed) == key;
}

// Whether shared entry `key` is gone from slot `s`.
bool SharedGone(Slot& s, uint64_t key) {
  return s.key.load(std::memory_order_acquire) != key || s.id.load(std::memory_order_acquire) == 0;
}

}  // namespace

// Set once at MPI_Init, before the application's threads can make MPI calls.
[[maybe_unused]] static MPI_Request g_shared_empty = MPI_REQUEST_NULL;

void InitSharedRequests() {
#if defined(OPEN_MPI)
  // Looked up, not linked: the library must not depend on Open MPI's internal symbols.
  if (void* p = dlsym(RTLD_DEFAULT, "ompi_request_empty")) g_shared_empty = MPI_Request(p);
#endif
}

int64_t InitRequestTable(int64_t entries) {
  if (g_slots) return int64_t(g_mask + 1);
  int bits = 10;
  while (bits < 24 && (int64_t(1) << bits) < entries) ++bits;
  // Zeroed pages: every key starts as kEmpty, id 0, and untouched pages cost no memory.
  void* p = std::calloc(size_t(1) << bits, sizeof(Slot));
  if (!p) return 0;
  g_mask = (uint64_t(1) << bits) - 1;
  g_shift = 64 - bits;
  // Each thread's ring holds a 16th of the table's entries (at least 256).
  g_ring_mask = (uint64_t(1) << (bits - 4 < 8 ? 8 : bits - 4)) - 1;
  g_slots = static_cast<Slot*>(p);
  return int64_t(g_mask + 1);
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
  if (req == MPI_REQUEST_NULL || !g_slots) return;
  if (IsSharedRequest(req)) {
    ThreadState* ts = tls_state;
    Slot* ring = ts ? RingOf(ts) : nullptr;
    if (ts && !ring) {
      // Once per thread, at its first request on a shared handle (zeroed pages: empty slots).
      ring = static_cast<Slot*>(std::calloc(g_ring_mask + 1, sizeof(Slot)));
      ts->shared_ring.store(ring, std::memory_order_release);
    }
    if (!ring) {
      g.dropped_requests.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    // Only this thread writes its ring and moves its window; others only read and remove.
    uint64_t head = ts->shared_head.load(std::memory_order_relaxed);
    uint64_t tail = ts->shared_tail.load(std::memory_order_relaxed);
    while (tail < head && SharedGone(ring[tail & g_ring_mask], SharedKey(ts->index, tail))) ++tail;
    // Nothing live: start again at the ring's first slot, which stays in the cache (a start /
    // complete loop would otherwise walk the whole ring). Ids, not keys, tell entries apart.
    if (tail == head) head = tail = 0;
    ts->shared_tail.store(tail, std::memory_order_release);
    ts->shared_head.store(head, std::memory_order_release);
    Slot& s = ring[head & g_ring_mask];
    // The entry a whole ring earlier is still live: never completed (leaked) or more live
    // requests on shared handles than the ring holds. It is given up, and counted.
    if (s.id.load(std::memory_order_acquire) != 0 &&
        RemoveIf(s, s.key.load(std::memory_order_relaxed), 0))
      g.dropped_requests.fetch_add(1, std::memory_order_relaxed);
    if (head > g_ring_mask && tail < head - g_ring_mask)
      ts->shared_tail.store(head - g_ring_mask, std::memory_order_release);
    const uint64_t key = SharedKey(ts->index, head);
    ANNOTATE_HAPPENS_AFTER(&s);
    s.key.store(kBusy, std::memory_order_relaxed);
    s.info = info;
    s.info.key = key;
    s.handle = req;
    s.thread.store(ts->index, std::memory_order_relaxed);
    s.id.store(info.id, std::memory_order_release);
    s.key.store(key, std::memory_order_release);
    ts->shared_head.store(head + 1, std::memory_order_release);
    return;
  }
  // A handle reused after completion we did not see (e.g. completed by an unrecorded call)
  // would otherwise leave a stale duplicate ahead of the new entry.
  ForgetRequest(req);
  if (!Insert(Key(req), req, info)) g.dropped_requests.fetch_add(1, std::memory_order_relaxed);
}

ReqInfo* FindRequest(MPI_Request req) {
  if (req == MPI_REQUEST_NULL) return nullptr;
  Slot* s = FindKey(Key(req));
  return s ? &s->info : nullptr;
}

void ForgetRequest(MPI_Request req) {
  if (req != MPI_REQUEST_NULL) RemoveKeyIf(Key(req), 0);
}

bool CopyRequest(MPI_Request req, ReqInfo* out) {
  if (req == MPI_REQUEST_NULL) return false;
  Slot* s = FindKey(Key(req));
  if (!s) return false;
  *out = s->info;
  // The copy is taken before the completion call; once that returns, MPI may give the handle
  // to another thread, whose TrackRequest reclaims the slot. That order runs through MPI's
  // internals, which helgrind does not see: tell it.
  ANNOTATE_HAPPENS_BEFORE(s);
  return true;
}

bool NextSharedRequest(MPI_Request req, ReqInfo* out, SharedCursor* c) {
  if (req == MPI_REQUEST_NULL) return false;
  ThreadState* me = tls_state;
  if (c->pass == 0) {
    if (Slot* ring = me ? RingOf(me) : nullptr) {
      uint64_t tail = me->shared_tail.load(std::memory_order_relaxed);
      const uint64_t head = me->shared_head.load(std::memory_order_relaxed);
      if (!c->begun || c->seq < tail) c->seq = tail, c->begun = true;
      for (; c->seq < head; ++c->seq) {
        const uint64_t key = SharedKey(me->index, c->seq);
        Slot& s = ring[c->seq & g_ring_mask];
        if (CopyShared(s, key, req, out)) {
          ++c->seq;
          return true;
        }
        // The oldest entries are gone: the window starts later (only this thread moves it).
        if (c->seq == tail && SharedGone(s, key))
          me->shared_tail.store(tail = c->seq + 1, std::memory_order_release);
      }
    }
    c->pass = 1;
    c->thread = 0;
    c->begun = false;
  }
  for (const int n = ThreadCount(); c->thread < n; ++c->thread, c->begun = false) {
    ThreadState* ts = ThreadAt(c->thread);
    Slot* ring = ts && ts != me ? RingOf(ts) : nullptr;
    if (!ring) continue;
    const uint64_t tail = ts->shared_tail.load(std::memory_order_acquire);
    const uint64_t head = ts->shared_head.load(std::memory_order_acquire);
    if (!c->begun || c->seq < tail) c->seq = tail, c->begun = true;
    for (; c->seq < head; ++c->seq)
      if (CopyShared(ring[c->seq & g_ring_mask], SharedKey(ts->index, c->seq), req, out)) {
        ++c->seq;
        return true;
      }
  }
  return false;
}

void ForgetRequestIf(MPI_Request req, uint64_t id) {
  if (req != MPI_REQUEST_NULL) RemoveKeyIf(Key(req), id);
}

void ForgetTracked(const ReqInfo& info) {
  RemoveKeyIf(info.key, info.id);
}

void DeactivateRequestIf(MPI_Request req, uint64_t id) {
  ReqInfo* r = FindRequest(req);
  // Persistent requests keep their handle until MPI_Request_free, so nobody else re-tracks it.
  if (r && r->id == id) r->active = false;
}

}  // namespace invmw::wrap
