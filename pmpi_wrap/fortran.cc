#include "pmpi_wrap/fortran.h"

#include <dlfcn.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "pmpi_wrap/runtime.h"
#include "pmpi_wrap/scratch.h"

namespace invmw::wrap {
namespace {

// Fortran sentinels are common blocks or variables of the MPI library's Fortran layer.
const void* g_in_place[8];
const void* g_bottom[8];
const void* g_status_ignore[8];
const void* g_statuses_ignore[8];

void Collect(const void** out, const char* const* names, bool deref) {
  int n = 0;
  for (const char* const* name = names; *name && n < 7; ++name) {
    void* p = dlsym(RTLD_DEFAULT, *name);
    if (!p) continue;
    // Some libraries export a pointer variable holding the sentinel's address.
    out[n++] = deref ? *static_cast<void**>(p) : p;
  }
  out[n] = nullptr;
}

bool In(const void* const* set, const void* p) {
  for (; *set; ++set)
    if (*set == p) return true;
  return false;
}

}  // namespace

void* FortranSymbol::Resolve() {
  char name[128];
  std::snprintf(name, sizeof name, "%s", base_);
  const size_t len = std::strlen(name);
  // Exact name first (f08 names carry their own suffix), then the usual manglings.
  const char* suffixes[] = {"", "_", "__"};
  for (const char* s : suffixes) {
    std::snprintf(name + len, sizeof name - len, "%s", s);
    if (void* p = dlsym(RTLD_NEXT, name)) {
      fn_.store(p, std::memory_order_release);
      return p;
    }
  }
  name[len] = '\0';
  for (size_t i = 0; i < len; ++i) name[i] = char(std::toupper((unsigned char)name[i]));
  if (void* p = dlsym(RTLD_NEXT, name)) {
    fn_.store(p, std::memory_order_release);
    return p;
  }
  // MPICH's mpi_f08 layer has no profiling twins (mpi_waitall_f08_ but no pmpi_waitall_f08_);
  // its f08 procedures call the C MPI_* functions. Forward to the library's own MPI entry
  // point then (the next definition after ours): the running Call's reentrancy guard keeps
  // the C wrapper it reaches from counting the call a second time.
  if (base_[0] == 'p' && std::strncmp(base_, "pmpi_", 5) == 0) {
    if (void* p = dlsym(RTLD_NEXT, base_ + 1)) {
      fn_.store(p, std::memory_order_release);
      return p;
    }
  }
  // The application called a Fortran MPI entry point, so the library must have it; if it does
  // not, there is no way to continue the call correctly.
  std::fprintf(stderr, "invmw: fatal: the MPI library has no Fortran symbol %s\n", base_);
  std::abort();
}

void InitFortranSentinels() {
  static const char* const in_place[] = {"mpi_fortran_in_place_", "mpi_fortran_in_place",
                                         "mpi_fortran_in_place__", "MPI_FORTRAN_IN_PLACE", nullptr};
  static const char* const bottom[] = {"mpi_fortran_bottom_", "mpi_fortran_bottom",
                                       "mpi_fortran_bottom__", "MPI_FORTRAN_BOTTOM", nullptr};
  // MPICH's mpi_f08 sentinels are objects of their own (MPIR_F08_..._OBJ).
  static const char* const st[] = {"mpi_fortran_status_ignore_",     "mpi_fortran_status_ignore",
                                   "mpi_fortran_status_ignore__",    "MPI_FORTRAN_STATUS_IGNORE",
                                   "MPIR_F08_MPI_STATUS_IGNORE_OBJ", nullptr};
  static const char* const sts[] = {
      "mpi_fortran_statuses_ignore_",     "mpi_fortran_statuses_ignore",
      "mpi_fortran_statuses_ignore__",    "MPI_FORTRAN_STATUSES_IGNORE",
      "MPIR_F08_MPI_STATUSES_IGNORE_OBJ", nullptr};
  // MPICH keeps the addresses in pointer variables.
  static const char* const in_place_ptr[] = {"MPIR_F_MPI_IN_PLACE", "MPIR_F08_MPI_IN_PLACE",
                                             nullptr};
  static const char* const bottom_ptr[] = {"MPIR_F_MPI_BOTTOM", "MPIR_F08_MPI_BOTTOM", nullptr};
  Collect(g_in_place, in_place, false);
  Collect(g_bottom, bottom, false);
  Collect(g_status_ignore, st, false);
  Collect(g_statuses_ignore, sts, false);
  const void* extra[8];
  Collect(extra, in_place_ptr, true);
  for (int i = 0, n = 0; extra[i]; ++i) {
    while (g_in_place[n]) ++n;
    if (n < 7) g_in_place[n] = extra[i], g_in_place[n + 1] = nullptr;
  }
  Collect(extra, bottom_ptr, true);
  for (int i = 0, n = 0; extra[i]; ++i) {
    while (g_bottom[n]) ++n;
    if (n < 7) g_bottom[n] = extra[i], g_bottom[n + 1] = nullptr;
  }
  // The standard C-side names of the Fortran ignore sentinels.
  for (int n = 0;; ++n) {
    if (!g_status_ignore[n]) {
      g_status_ignore[n] = MPI_F_STATUS_IGNORE;
      g_status_ignore[n + 1] = nullptr;
      break;
    }
  }
  for (int n = 0;; ++n) {
    if (!g_statuses_ignore[n]) {
      g_statuses_ignore[n] = MPI_F_STATUSES_IGNORE;
      g_statuses_ignore[n + 1] = nullptr;
      break;
    }
  }
}

const void* FortranBuffer(const void* p) {
  if (p && In(g_in_place, p)) return MPI_IN_PLACE;
  if (p && In(g_bottom, p)) return MPI_BOTTOM;
  return p;
}

bool IsFortranStatusIgnore(const void* p) {
  return p == nullptr || In(g_status_ignore, p);
}
bool IsFortranStatusesIgnore(const void* p) {
  return p == nullptr || In(g_statuses_ignore, p);
}

// Fortran halves of the scratch buffers.
MPI_Request* ScratchBuffers::FortranRequests(int n, const MPI_Fint* f) {
  MPI_Request* r = frequests_.Get(n > 0 ? n : 1);
  if (!r) return nullptr;
  for (int i = 0; i < n; ++i) r[i] = PMPI_Request_f2c(f[i]);
  return r;
}

void* ScratchBuffers::FortranStatusBuffer(int n) {
  return fstatus_buf_.Get(size_t(n > 0 ? n : 1) * kFortranStatusInts);
}

MPI_Status* ScratchBuffers::FortranStatuses(int n, void* fstatuses) {
  MPI_Status* s = fstatuses_c_.Get(n > 0 ? n : 1);
  if (!s) return nullptr;
  // Fortran statuses are MPI_STATUS_SIZE integers each, laid out like the C struct.
  constexpr size_t ints = sizeof(MPI_Status) / sizeof(MPI_Fint);
  for (int i = 0; i < n; ++i) PMPI_Status_f2c(static_cast<MPI_Fint*>(fstatuses) + i * ints, &s[i]);
  return s;
}

int* ScratchBuffers::FortranIndices(int n, const MPI_Fint* f) {
  int* idx = findices_.Get(n > 0 ? n : 1);
  if (!idx) return nullptr;
  for (int i = 0; i < n; ++i) idx[i] = f[i] - 1;
  return idx;
}

}  // namespace invmw::wrap
