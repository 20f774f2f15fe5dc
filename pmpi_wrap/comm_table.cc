#include "pmpi_wrap/comm_table.h"

#include <cstring>
#include <mutex>
#include <new>

#include "pmpi_wrap/runtime.h"
#include "pmpi_wrap/trace_runtime.h"

namespace invmw::wrap {
namespace {

// Handles are pointers (Open MPI) or integers (MPICH); both fit in 64 bits.
template <typename H>
uint64_t Key(H h) {
  uint64_t k = 0;
  static_assert(sizeof(H) <= sizeof(k), "handle larger than 64 bits");
  std::memcpy(&k, &h, sizeof(H));
  return k;
}

constexpr uint64_t kEmpty = 0;
constexpr uint64_t kTombstone = ~0ull;

struct Slot {
  std::atomic<uint64_t> key{kEmpty};
  std::atomic<const CommInfo*> info{nullptr};
};

constexpr int kSlots = 4096;  // communicators + windows alive at once; probes are bounded
constexpr int kMaxProbe = 64;

Slot g_comms[kSlots];
Slot g_wins[kSlots];
std::mutex g_register_mutex;  // registration only; lookups never lock
std::atomic<uint32_t> g_next_id{1};
CommInfo g_unknown{0xffffffffu, 0, -1, 0, false, nullptr, nullptr};
CommInfo g_world{};

uint64_t Hash(uint64_t k) {
  return (k * 0x9E3779B97F4A7C15ull) >> 52;
}  // 12 bits

const CommInfo* Find(Slot* table, uint64_t key) {
  uint64_t h = Hash(key);
  for (int i = 0; i < kMaxProbe; ++i) {
    Slot& s = table[(h + i) % kSlots];
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key) return s.info.load(std::memory_order_acquire);
    if (k == kEmpty) return nullptr;
  }
  return nullptr;
}

void Insert(Slot* table, uint64_t key, const CommInfo* info) {
  uint64_t h = Hash(key);
  for (int i = 0; i < kMaxProbe; ++i) {
    Slot& s = table[(h + i) % kSlots];
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key || k == kEmpty || k == kTombstone) {
      // Publish the info before the key so a reader that sees the key sees the info.
      s.info.store(info, std::memory_order_release);
      s.key.store(key, std::memory_order_release);
      return;
    }
  }
  g.errors.fetch_add(1, std::memory_order_relaxed);
}

void Erase(Slot* table, uint64_t key) {
  uint64_t h = Hash(key);
  for (int i = 0; i < kMaxProbe; ++i) {
    Slot& s = table[(h + i) % kSlots];
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key) {
      s.key.store(kTombstone, std::memory_order_release);
      // The CommInfo is deliberately leaked: a concurrent reader may still hold it.
      return;
    }
    if (k == kEmpty) return;
  }
}

int* TranslateGroup(MPI_Group group, int n) {
  MPI_Group world_group;
  PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
  int* in = new (std::nothrow) int[n];
  int* out = new (std::nothrow) int[n];
  if (!in || !out) return nullptr;
  for (int i = 0; i < n; ++i) in[i] = i;
  PMPI_Group_translate_ranks(group, n, in, world_group, out);
  for (int i = 0; i < n; ++i)
    if (out[i] == MPI_UNDEFINED) out[i] = kPeerNone;  // member of another world (spawn)
  delete[] in;
  PMPI_Group_free(&world_group);
  return out;
}

CommInfo* Build(MPI_Comm comm) {
  auto* ci = new (std::nothrow) CommInfo{};
  if (!ci) return nullptr;
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  ci->inter = inter != 0;
  PMPI_Comm_size(comm, &ci->size);
  PMPI_Comm_rank(comm, &ci->rank);
  MPI_Group grp;
  PMPI_Comm_group(comm, &grp);
  ci->world = TranslateGroup(grp, ci->size);
  PMPI_Group_free(&grp);
  if (ci->inter) {
    PMPI_Comm_remote_size(comm, &ci->remote_size);
    MPI_Group rgrp;
    PMPI_Comm_remote_group(comm, &rgrp);
    ci->remote_world = TranslateGroup(rgrp, ci->remote_size);
    PMPI_Group_free(&rgrp);
  } else {
    ci->remote_size = ci->size;
    ci->remote_world = ci->world;
  }
  ci->id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  return ci;
}

}  // namespace

void InitCommTable() {
  static int* identity = nullptr;
  PMPI_Comm_size(MPI_COMM_WORLD, &g_world.size);
  PMPI_Comm_rank(MPI_COMM_WORLD, &g_world.rank);
  identity = new int[g_world.size];
  for (int i = 0; i < g_world.size; ++i) identity[i] = i;
  g_world.id = 0;
  g_world.remote_size = g_world.size;
  g_world.world = g_world.remote_world = identity;
  Insert(g_comms, Key(MPI_COMM_WORLD), &g_world);
  // MPI_COMM_SELF is used often by I/O libraries; register it eagerly.
  RegisterComm(MPI_COMM_SELF);
}

const CommInfo* LookupComm(MPI_Comm comm) {
  if (comm == MPI_COMM_WORLD) return &g_world;
  if (comm == MPI_COMM_NULL) return &g_unknown;
  if (const CommInfo* ci = Find(g_comms, Key(comm))) return ci;
  RegisterComm(comm);
  const CommInfo* ci = Find(g_comms, Key(comm));
  return ci ? ci : &g_unknown;
}

const CommInfo* FindKnownComm(MPI_Comm comm) {
  if (comm == MPI_COMM_WORLD) return &g_world;
  if (comm == MPI_COMM_NULL) return nullptr;
  return Find(g_comms, Key(comm));
}

void RegisterComm(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return;
  std::lock_guard<std::mutex> lock(g_register_mutex);
  CommInfo* ci = Build(comm);
  if (!ci) {
    g.errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Insert(g_comms, Key(comm), ci);
  if (g.trace_on) TraceCommDefined(ci);
}

void ForgetComm(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL || comm == MPI_COMM_WORLD) return;
  std::lock_guard<std::mutex> lock(g_register_mutex);
  Erase(g_comms, Key(comm));
}

void RegisterWin(MPI_Win win) {
  if (win == MPI_WIN_NULL) return;
  MPI_Group grp;
  if (PMPI_Win_get_group(win, &grp) != MPI_SUCCESS) return;
  std::lock_guard<std::mutex> lock(g_register_mutex);
  auto* ci = new (std::nothrow) CommInfo{};
  if (!ci) return;
  PMPI_Group_size(grp, &ci->size);
  PMPI_Group_rank(grp, &ci->rank);
  ci->world = ci->remote_world = TranslateGroup(grp, ci->size);
  ci->remote_size = ci->size;
  PMPI_Group_free(&grp);
  Insert(g_wins, Key(win), ci);
}

void ForgetWin(MPI_Win win) {
  std::lock_guard<std::mutex> lock(g_register_mutex);
  Erase(g_wins, Key(win));
}

int WinTargetWorldRank(MPI_Win win, int target) {
  const CommInfo* ci = Find(g_wins, Key(win));
  if (!ci) return kPeerNone;
  return PeerWorldRank(ci, target);
}

}  // namespace invmw::wrap
