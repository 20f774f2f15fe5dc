#include "recording/profile_aggregate.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "recording/profile_report.h"

namespace invmw::profile {

namespace {

// a += b, saturating at 2^64-1; sets bit in *flags when it happened.
void SatAdd(uint64_t* a, uint64_t b, uint32_t* flags, uint32_t bit) {
  if (__builtin_add_overflow(*a, b, a)) {
    *a = UINT64_MAX;
    *flags |= bit;
  }
}

void AddCounts(FunctionAggregate* a, const uint64_t calls, uint64_t sent, uint64_t recv,
               const uint64_t* hist, const uint64_t* hist_sent, const uint64_t* hist_recv) {
  using F = FunctionAggregate;
  SatAdd(&a->calls, calls, &a->saturated, F::kCalls);
  SatAdd(&a->bytes_sent, sent, &a->saturated, F::kBytesSent);
  SatAdd(&a->bytes_recv, recv, &a->saturated, F::kBytesRecv);
  for (int b = 0; b < raw::kHistBins; ++b) {
    SatAdd(&a->hist[b], hist[b], &a->saturated, F::kHist);
    SatAdd(&a->hist[raw::kHistBins + b], hist_sent[b], &a->saturated, F::kHistSent);
    SatAdd(&a->hist[2 * raw::kHistBins + b], hist_recv[b], &a->saturated, F::kHistRecv);
  }
}

class Writer {
 public:
  template <typename T>
  void Pod(const T& v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void Str(const std::string& s) {
    Pod(uint32_t(s.size()));
    out_ += s;
  }
  void Across(const AcrossRanks& a) {
    Pod(a.min), Pod(a.max), Pod(a.sum), Pod(a.n), Pod(a.argmin), Pod(a.argmax);
  }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(const void* d, size_t n) : p_(static_cast<const char*>(d)), left_(n) {}
  template <typename T>
  bool Pod(T* v) {
    if (left_ < sizeof *v) return false;
    std::memcpy(v, p_, sizeof *v);
    p_ += sizeof *v, left_ -= sizeof *v;
    return true;
  }
  bool Str(std::string* s) {
    uint32_t n = 0;
    if (!Pod(&n) || n > left_) return false;
    s->assign(p_, n);
    p_ += n, left_ -= n;
    return true;
  }
  bool Across(AcrossRanks* a) {
    return Pod(&a->min) && Pod(&a->max) && Pod(&a->sum) && Pod(&a->n) && Pod(&a->argmin) &&
           Pod(&a->argmax);
  }
  size_t left() const { return left_; }

 private:
  const char* p_;
  size_t left_;
};

constexpr uint32_t kAggregateMagic = 0x41564e49;  // "INVA"
constexpr uint32_t kAggregateVersion = 2;         // 2: sparse histograms

}  // namespace

RankFigures::RankFigures(const RankData& r) {
  const auto& h = r.header;
  // ParseDump rejects other rates; a caller's own RankData is not trusted to be parsed.
  ticks_per_second = std::isfinite(h.ticks_per_second) && h.ticks_per_second > 0
                         ? h.ticks_per_second
                         : std::numeric_limits<double>::quiet_NaN();
  for (const auto& f : r.funcs) {
    const double t = Seconds(f.ticks);
    mpi_s += t;
    if (std::strcmp(f.name, "MPI_Init") == 0 || std::strcmp(f.name, "MPI_Init_thread") == 0)
      init_call_s += t;
  }
}

void RunAggregate::AddRank(const RankData& r) {
  const auto& h = r.header;
  const RankFigures fig(r);
  if (ranks == 0) {
    first_mpi_library = h.mpi_library;
    first_invmw_version = h.invmw_version;
  }
  ++ranks;
  hosts.insert(h.host);
  for (const auto& f : r.funcs) {
    FunctionAggregate& a = functions[f.name];
    const double t = fig.Seconds(f.ticks);
    AddCounts(&a, f.calls, f.bytes_sent, f.bytes_recv, f.hist, f.hist_sent, f.hist_recv);
    a.time_s += t;
    a.time.Add(t, h.rank);
  }
  incomplete |= (h.flags & raw::kFlagIncomplete) != 0;
  wall.Add(h.wall_s, h.rank);
  mpi.Add(fig.mpi_s, h.rank);
  // Start-up left out: the MPI_Init call (the library's and invmw's start-up) from the MPI
  // time and from the wall time, which both begin at its entry.
  mpi_after_init_sum += std::max(0.0, fig.mpi_s - fig.init_call_s);
  wall_after_init_sum += std::max(0.0, h.wall_s - std::max(h.mpi_init_s, fig.init_call_s));
  uint32_t ignored = 0;
  SatAdd(&dropped_thread_calls, h.dropped_threads, &ignored, 1);
  SatAdd(&dropped_requests, h.dropped_requests, &ignored, 1);
}

void RunAggregate::Merge(const RunAggregate& right) {
  if (right.ranks == 0) return;
  if (ranks == 0) {
    first_mpi_library = right.first_mpi_library;
    first_invmw_version = right.first_invmw_version;
  }
  ranks += right.ranks;
  hosts.insert(right.hosts.begin(), right.hosts.end());
  for (const auto& [name, b] : right.functions) {
    FunctionAggregate& a = functions[name];
    AddCounts(&a, b.calls, b.bytes_sent, b.bytes_recv, b.hist, b.hist + raw::kHistBins,
              b.hist + 2 * raw::kHistBins);
    a.saturated |= b.saturated;
    a.time_s += b.time_s;
    a.time.Merge(b.time);
  }
  incomplete |= right.incomplete;
  wall.Merge(right.wall);
  mpi.Merge(right.mpi);
  mpi_after_init_sum += right.mpi_after_init_sum;
  wall_after_init_sum += right.wall_after_init_sum;
  uint32_t ignored = 0;
  SatAdd(&dropped_thread_calls, right.dropped_thread_calls, &ignored, 1);
  SatAdd(&dropped_requests, right.dropped_requests, &ignored, 1);
}

std::string RunAggregate::Encode() const {
  Writer w;
  w.Pod(kAggregateMagic), w.Pod(kAggregateVersion), w.Pod(ranks);
  w.Across(wall), w.Across(mpi);
  w.Pod(mpi_after_init_sum), w.Pod(wall_after_init_sum), w.Pod(uint8_t(incomplete));
  w.Pod(dropped_thread_calls), w.Pod(dropped_requests);
  w.Str(first_mpi_library), w.Str(first_invmw_version);
  w.Pod(uint32_t(hosts.size()));
  for (const auto& h : hosts) w.Str(h);
  w.Pod(uint32_t(functions.size()));
  for (const auto& [name, f] : functions) {
    w.Str(name);
    w.Pod(f.calls), w.Pod(f.bytes_sent), w.Pod(f.bytes_recv), w.Pod(f.time_s);
    w.Across(f.time);
    // Most bins are empty: only the others, as (index, count), keep the message small.
    uint8_t used = 0;
    for (uint64_t c : f.hist) used += c != 0;
    w.Pod(used);
    for (uint8_t b = 0; b < 3 * raw::kHistBins; ++b)
      if (f.hist[b]) w.Pod(b), w.Pod(f.hist[b]);
    w.Pod(f.saturated);
  }
  return std::move(w.out());
}

bool RunAggregate::Decode(const void* data, size_t size, RunAggregate* out, std::string* error) {
  Reader r(data, size);
  RunAggregate a;
  uint32_t magic = 0, version = 0, n = 0;
  uint8_t inc = 0;
  auto bad = [&](const char* what) {
    *error = std::string("profile aggregate of ") + std::to_string(size) + " bytes: " + what;
    return false;
  };
  if (!r.Pod(&magic) || !r.Pod(&version) || magic != kAggregateMagic ||
      version != kAggregateVersion)
    return bad("not an aggregate of this invmw version");
  if (!r.Pod(&a.ranks) || !r.Across(&a.wall) || !r.Across(&a.mpi) ||
      !r.Pod(&a.mpi_after_init_sum) || !r.Pod(&a.wall_after_init_sum) || !r.Pod(&inc) ||
      !r.Pod(&a.dropped_thread_calls) || !r.Pod(&a.dropped_requests) ||
      !r.Str(&a.first_mpi_library) || !r.Str(&a.first_invmw_version) || !r.Pod(&n))
    return bad("truncated run figures");
  a.incomplete = inc != 0;
  if (a.ranks < 0) return bad("negative rank count");
  for (uint32_t i = 0; i < n; ++i) {
    std::string h;
    if (!r.Str(&h)) return bad("truncated host list");
    a.hosts.insert(std::move(h));
  }
  if (!r.Pod(&n)) return bad("truncated function count");
  for (uint32_t i = 0; i < n; ++i) {
    std::string name;
    FunctionAggregate f;
    if (!r.Str(&name) || !r.Pod(&f.calls) || !r.Pod(&f.bytes_sent) || !r.Pod(&f.bytes_recv) ||
        !r.Pod(&f.time_s) || !r.Across(&f.time))
      return bad("truncated function record");
    uint8_t used = 0;
    if (!r.Pod(&used) || used > 3 * raw::kHistBins) return bad("bad histogram bin count");
    for (int k = 0, last = -1; k < used; ++k) {
      uint8_t b = 0;
      if (!r.Pod(&b) || int(b) <= last || b >= 3 * raw::kHistBins || !r.Pod(&f.hist[b]))
        return bad("bad histogram bin");
      last = b;
    }
    if (!r.Pod(&f.saturated)) return bad("truncated function record");
    if (!a.functions.emplace(std::move(name), f).second) return bad("a function listed twice");
  }
  if (r.left() != 0) return bad("bytes after the last function");
  *out = std::move(a);
  return true;
}

}  // namespace invmw::profile
