#include "pmpi_wrap/trace_parallel.h"

#include <time.h>

#include <climits>
#include <cstdint>
#include <vector>

namespace invmw::wrap {
namespace {

MPI_Datatype MpiType(OTF2_Type type) {
  switch (type) {
    case OTF2_TYPE_UINT8:
      return MPI_UINT8_T;
    case OTF2_TYPE_INT8:
      return MPI_INT8_T;
    case OTF2_TYPE_UINT16:
      return MPI_UINT16_T;
    case OTF2_TYPE_INT16:
      return MPI_INT16_T;
    case OTF2_TYPE_UINT32:
      return MPI_UINT32_T;
    case OTF2_TYPE_INT32:
      return MPI_INT32_T;
    case OTF2_TYPE_UINT64:
      return MPI_UINT64_T;
    case OTF2_TYPE_INT64:
      return MPI_INT64_T;
    case OTF2_TYPE_FLOAT:
      return MPI_FLOAT;
    case OTF2_TYPE_DOUBLE:
      return MPI_DOUBLE;
    default:
      return MPI_DATATYPE_NULL;
  }
}

// Completes a request without spinning: ranks that wait here for a slower one (rank 0 writing
// the global definitions, a rank with more events) would otherwise burn the CPU that the
// writing ranks need when ranks share cores, and count it as time spent in MPI_Finalize.
int WaitSleeping(MPI_Request* req, int rc) {
  if (rc != MPI_SUCCESS) return rc;
  int done = 0;
  while (true) {
    rc = PMPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || done) return rc;
    const timespec pause{0, 50000};  // 50 us: short against any write, long against a poll
    nanosleep(&pause, nullptr);
  }
}

// Counts and displacements of a v-collective at the root, as MPI wants them (int).
bool Displacements(const uint32_t* counts, int n, std::vector<int>* c, std::vector<int>* d) {
  c->resize(n);
  d->resize(n);
  int64_t total = 0;
  for (int i = 0; i < n; ++i) {
    if (counts[i] > uint32_t(INT_MAX) || total > INT_MAX) return false;
    (*c)[i] = int(counts[i]);
    (*d)[i] = int(total);
    total += counts[i];
  }
  return true;
}

// OTF2's collectives and the definition exchange on a private duplicate of invmw's
// communicator: nothing else travels on it, so no message of another phase can be mistaken
// for one of these.
class MpiTransport final : public otf2::ParallelTransport {
 public:
  explicit MpiTransport(MPI_Comm comm) {
    ok_ = PMPI_Comm_dup(comm, &comm_) == MPI_SUCCESS &&
          PMPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN) == MPI_SUCCESS &&
          PMPI_Comm_rank(comm_, &rank_) == MPI_SUCCESS &&
          PMPI_Comm_size(comm_, &size_) == MPI_SUCCESS;
    callbacks_.otf2_release = nullptr;
    callbacks_.otf2_get_size = GetSize;
    callbacks_.otf2_get_rank = GetRank;
    callbacks_.otf2_create_local_comm = nullptr;
    callbacks_.otf2_free_local_comm = nullptr;
    callbacks_.otf2_barrier = Barrier;
    callbacks_.otf2_bcast = Bcast;
    callbacks_.otf2_gather = Gather;
    callbacks_.otf2_gatherv = Gatherv;
    callbacks_.otf2_scatter = Scatter;
    callbacks_.otf2_scatterv = Scatterv;
  }
  ~MpiTransport() override {
    if (comm_ != MPI_COMM_NULL) PMPI_Comm_free(&comm_);
  }
  bool usable() const { return ok_; }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool Send(int peer, const std::string& data) override {
    const uint64_t len = data.size();
    return len <= uint64_t(INT_MAX) &&
           PMPI_Send(&len, 1, MPI_UINT64_T, peer, kTag, comm_) == MPI_SUCCESS &&
           PMPI_Send(data.data(), int(len), MPI_BYTE, peer, kTag, comm_) == MPI_SUCCESS;
  }
  bool Recv(int peer, std::string* data) override {
    uint64_t len = 0;
    MPI_Request req;
    if (WaitSleeping(&req, PMPI_Irecv(&len, 1, MPI_UINT64_T, peer, kTag, comm_, &req)) !=
            MPI_SUCCESS ||
        len > uint64_t(INT_MAX))
      return false;
    data->resize(len);
    return WaitSleeping(&req, PMPI_Irecv(data->data(), int(len), MPI_BYTE, peer, kTag, comm_,
                                         &req)) == MPI_SUCCESS;
  }
  bool Bcast(std::string* data, int root) override {
    uint64_t len = data->size();
    MPI_Request req;
    if (WaitSleeping(&req, PMPI_Ibcast(&len, 1, MPI_UINT64_T, root, comm_, &req)) != MPI_SUCCESS)
      return false;
    // Every rank takes part in the second broadcast, even with a length it cannot take.
    const bool fits = len <= uint64_t(INT_MAX);
    data->resize(fits ? len : 0);
    return PMPI_Bcast(data->data(), fits ? int(len) : 0, MPI_BYTE, root, comm_) == MPI_SUCCESS &&
           fits;
  }
  bool AllOk(bool ok) override {
    int mine = ok ? 1 : 0, all = 0;
    MPI_Request req;
    return WaitSleeping(&req, PMPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm_, &req)) ==
               MPI_SUCCESS &&
           all == 1;
  }
  const OTF2_CollectiveCallbacks* Otf2Callbacks() override { return &callbacks_; }
  void* Otf2Data() override { return this; }

 private:
  static constexpr int kTag = 23;
  static MpiTransport* Self(void* data) { return static_cast<MpiTransport*>(data); }
  static OTF2_CallbackCode Code(int rc) {
    return rc == MPI_SUCCESS ? OTF2_CALLBACK_SUCCESS : OTF2_CALLBACK_ERROR;
  }

  static OTF2_CallbackCode GetSize(void* d, OTF2_CollectiveContext*, uint32_t* size) {
    *size = uint32_t(Self(d)->size_);
    return OTF2_CALLBACK_SUCCESS;
  }
  static OTF2_CallbackCode GetRank(void* d, OTF2_CollectiveContext*, uint32_t* rank) {
    *rank = uint32_t(Self(d)->rank_);
    return OTF2_CALLBACK_SUCCESS;
  }
  static OTF2_CallbackCode Barrier(void* d, OTF2_CollectiveContext*) {
    MPI_Request req;
    return Code(WaitSleeping(&req, PMPI_Ibarrier(Self(d)->comm_, &req)));
  }
  static OTF2_CallbackCode Bcast(void* d, OTF2_CollectiveContext*, void* data, uint32_t n,
                                 OTF2_Type type, uint32_t root) {
    const MPI_Datatype t = MpiType(type);
    if (t == MPI_DATATYPE_NULL || n > uint32_t(INT_MAX)) return OTF2_CALLBACK_ERROR;
    MPI_Request req;
    return Code(WaitSleeping(&req, PMPI_Ibcast(data, int(n), t, int(root), Self(d)->comm_, &req)));
  }
  static OTF2_CallbackCode Gather(void* d, OTF2_CollectiveContext*, const void* in, void* out,
                                  uint32_t n, OTF2_Type type, uint32_t root) {
    const MPI_Datatype t = MpiType(type);
    if (t == MPI_DATATYPE_NULL || n > uint32_t(INT_MAX)) return OTF2_CALLBACK_ERROR;
    return Code(
        PMPI_Gather(const_cast<void*>(in), int(n), t, out, int(n), t, int(root), Self(d)->comm_));
  }
  static OTF2_CallbackCode Gatherv(void* d, OTF2_CollectiveContext*, const void* in, uint32_t in_n,
                                   void* out, const uint32_t* out_n, OTF2_Type type,
                                   uint32_t root) {
    MpiTransport* s = Self(d);
    const MPI_Datatype t = MpiType(type);
    std::vector<int> counts, displs;
    // The root's counts may not fit MPI's ints; it still takes part, receiving nothing.
    bool fits = t != MPI_DATATYPE_NULL && in_n <= uint32_t(INT_MAX);
    if (s->rank_ == int(root) && !Displacements(out_n, s->size_, &counts, &displs)) {
      fits = false;
      counts.assign(s->size_, 0);
      displs.assign(s->size_, 0);
    }
    const int rc = PMPI_Gatherv(
        const_cast<void*>(in), fits ? int(in_n) : 0, t == MPI_DATATYPE_NULL ? MPI_BYTE : t, out,
        counts.data(), displs.data(), t == MPI_DATATYPE_NULL ? MPI_BYTE : t, int(root), s->comm_);
    return fits ? Code(rc) : OTF2_CALLBACK_ERROR;
  }
  static OTF2_CallbackCode Scatter(void* d, OTF2_CollectiveContext*, const void* in, void* out,
                                   uint32_t n, OTF2_Type type, uint32_t root) {
    const MPI_Datatype t = MpiType(type);
    if (t == MPI_DATATYPE_NULL || n > uint32_t(INT_MAX)) return OTF2_CALLBACK_ERROR;
    return Code(
        PMPI_Scatter(const_cast<void*>(in), int(n), t, out, int(n), t, int(root), Self(d)->comm_));
  }
  static OTF2_CallbackCode Scatterv(void* d, OTF2_CollectiveContext*, const void* in,
                                    const uint32_t* in_n, void* out, uint32_t out_n, OTF2_Type type,
                                    uint32_t root) {
    MpiTransport* s = Self(d);
    const MPI_Datatype t = MpiType(type);
    std::vector<int> counts, displs;
    bool fits = t != MPI_DATATYPE_NULL && out_n <= uint32_t(INT_MAX);
    if (s->rank_ == int(root) && !Displacements(in_n, s->size_, &counts, &displs)) {
      fits = false;
      counts.assign(s->size_, 0);
      displs.assign(s->size_, 0);
    }
    const int rc = PMPI_Scatterv(const_cast<void*>(in), counts.data(), displs.data(),
                                 t == MPI_DATATYPE_NULL ? MPI_BYTE : t, out, fits ? int(out_n) : 0,
                                 t == MPI_DATATYPE_NULL ? MPI_BYTE : t, int(root), s->comm_);
    return fits ? Code(rc) : OTF2_CALLBACK_ERROR;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  bool ok_ = false;
  OTF2_CollectiveCallbacks callbacks_{};
};

}  // namespace

otf2::ParallelResult WriteTraceInParallel(MPI_Comm comm, const std::string& run_dir,
                                          int test_fail_rank) {
  MpiTransport t(comm);
  // The duplicate exists on every rank or the failure is known to all of them (the check is
  // itself a reduction on invmw's communicator).
  int mine = t.usable() ? 1 : 0, all = 0;
  if (PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS || all != 1) {
    otf2::ParallelResult r;
    r.error = "no communicator for the parallel trace writing";
    return r;
  }
  return otf2::ConvertToOtf2Parallel(run_dir, &t, {}, test_fail_rank);
}

}  // namespace invmw::wrap
