// Per-thread scratch arrays for wrappers that must see more than the application passes:
// statuses when the application passed MPI_STATUSES_IGNORE, request snapshots before a
// completion call overwrites them, converted Fortran arrays. Each buffer grows to the largest
// count seen and is then reused, so steady-state calls allocate nothing.
#pragma once

#include <mpi.h>

#include <cstdlib>
#include <cstring>

#include "pmpi_wrap/thread_state.h"

namespace invmw::wrap {

template <typename T>
class GrowBuffer {
 public:
  T* Get(size_t n) {
    if (n > cap_) {
      size_t want = n < 64 ? 64 : n;
      T* p = static_cast<T*>(std::realloc(data_, want * sizeof(T)));
      if (!p) return nullptr;
      data_ = p;
      cap_ = want;
    }
    return data_;
  }

 private:
  T* data_ = nullptr;
  size_t cap_ = 0;
};

class ScratchBuffers {
 public:
  MPI_Status* Statuses(int n) { return statuses_.Get(n > 0 ? n : 1); }
  MPI_Request* Snapshot(int n) { return snapshot_.Get(n > 0 ? n : 1); }
  // Fortran side.
  MPI_Request* FortranRequests(int n, const MPI_Fint* f);
  void* FortranStatusBuffer(int n);
  MPI_Status* FortranStatuses(int n, void* fstatuses);
  int* FortranIndices(int n, const MPI_Fint* f);

 private:
  GrowBuffer<MPI_Status> statuses_, fstatuses_c_;
  GrowBuffer<MPI_Request> snapshot_, frequests_;
  GrowBuffer<MPI_Fint> fstatus_buf_;
  GrowBuffer<int> findices_;
};

ScratchBuffers& Scratch();

// The request handles of a completion call as they were before the call (the call replaces
// completed non-persistent ones with MPI_REQUEST_NULL).
class RequestSnapshot {
 public:
  RequestSnapshot(int n, const MPI_Request* reqs) : n_(n > 0 ? n : 0) {
    data_ = n_ <= kInline ? inline_ : Scratch().Snapshot(n_);
    if (!data_) n_ = 0;
    if (n_) std::memcpy(data_, reqs, sizeof(MPI_Request) * n_);
  }
  int size() const { return n_; }
  MPI_Request operator[](int i) const { return data_[i]; }

 private:
  static constexpr int kInline = 16;
  MPI_Request inline_[kInline];
  MPI_Request* data_;
  int n_;
};

}  // namespace invmw::wrap
