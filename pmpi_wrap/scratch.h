// Per-thread scratch arrays for wrappers that must see more than the application passes:
// statuses when the application passed MPI_STATUSES_IGNORE, request snapshots before a
// completion call overwrites them, converted Fortran arrays. Each buffer grows to the largest
// count seen and is then reused, so steady-state calls allocate nothing.
#pragma once

#include <mpi.h>

#include <cstdlib>
#include <cstring>

#include "pmpi_wrap/request_table.h"
#include "pmpi_wrap/thread_state.h"

namespace invmw::wrap {

template <typename T>
class GrowBuffer {
 public:
  GrowBuffer() = default;
  GrowBuffer(const GrowBuffer&) = delete;
  GrowBuffer& operator=(const GrowBuffer&) = delete;
  ~GrowBuffer() { std::free(data_); }

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
  ReqInfo* SnapshotInfo(int n) { return snapshot_info_.Get(n > 0 ? n : 1); }
  bool* SnapshotFound(int n) { return snapshot_found_.Get(n > 0 ? n : 1); }
  // Fortran side.
  MPI_Request* FortranRequests(int n, const MPI_Fint* f);
  void* FortranStatusBuffer(int n);
  MPI_Status* FortranStatuses(int n, void* fstatuses);
  int* FortranIndices(int n, const MPI_Fint* f);

 private:
  GrowBuffer<MPI_Status> statuses_, fstatuses_c_;
  GrowBuffer<MPI_Request> snapshot_, frequests_;
  GrowBuffer<ReqInfo> snapshot_info_;
  GrowBuffer<bool> snapshot_found_;
  GrowBuffer<MPI_Fint> fstatus_buf_;
  GrowBuffer<int> findices_;
};

// The calling thread's buffers, freed when the thread ends (a pthread key destructor).
ScratchBuffers& Scratch();

// The requests of a completion call as they were before the call: handles (the call replaces
// completed non-persistent ones with MPI_REQUEST_NULL) and what invmw knew of each. The
// knowledge must be copied before the call, because as soon as the call returns MPI may hand
// the same handle to another thread, whose new request then takes over the table entry.
class RequestSnapshot {
 public:
  RequestSnapshot(int n, const MPI_Request* reqs) : n_(n > 0 ? n : 0) {
    bool small = n_ <= kInline;
    handles_ = small ? inline_handles_ : Scratch().Snapshot(n_);
    infos_ = small ? inline_infos_ : Scratch().SnapshotInfo(n_);
    found_ = small ? inline_found_ : Scratch().SnapshotFound(n_);
    if (!handles_ || !infos_ || !found_) n_ = 0;
    // A shared handle (request_table.h) occurring k times before in the array stands for its
    // (k+1)-th live request; a library has one or two such handles.
    MPI_Request shared[4];
    SharedCursor cursor[4];
    int nshared = 0;
    for (int i = 0; i < n_; ++i) {
      handles_[i] = reqs[i];
      if (IsSharedRequest(reqs[i])) {
        int k = 0;
        while (k < nshared && shared[k] != reqs[i]) ++k;
        if (k == nshared && nshared < 4) shared[nshared++] = reqs[i];
        SharedCursor fresh;
        found_[i] = NextSharedRequest(reqs[i], &infos_[i], k < 4 ? &cursor[k] : &fresh);
      } else {
        found_[i] = reqs[i] != MPI_REQUEST_NULL && CopyRequest(reqs[i], &infos_[i]);
      }
    }
  }
  int size() const { return n_; }
  MPI_Request operator[](int i) const { return handles_[i]; }
  // What invmw knew of request i, or nullptr when it was not tracked.
  const ReqInfo* info(int i) const { return found_[i] ? &infos_[i] : nullptr; }

 private:
  static constexpr int kInline = 8;
  MPI_Request inline_handles_[kInline];
  ReqInfo inline_infos_[kInline];
  bool inline_found_[kInline];
  MPI_Request* handles_;
  ReqInfo* infos_;
  bool* found_;
  int n_;
};

}  // namespace invmw::wrap
