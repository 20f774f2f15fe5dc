#include "sampler/sampler.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/run_dir.h"
#include "common/sample_format.h"
#include "recording/io.h"
#include "sampler/source.h"
#include "sampler/stream_format.h"
#include "sampler/tiers.h"

namespace invmw::sampler {

bool StartOptions::IsValid(std::string* error) const {
  auto fail = [&](const char* msg) {
    if (error) *error = msg;
    return false;
  };
  if (run_dir.empty()) return fail("StartOptions::run_dir must name the experiment directory");
  if (rank < 0 || world_size < 1 || rank >= world_size)
    return fail("StartOptions::rank must be within 0 .. world_size-1 (world_size >= 1)");
  if (ticks_per_second < 0)
    return fail("StartOptions::ticks_per_second must be >= 0 (0: calibrate)");
  return true;
}

namespace {

using nlohmann::json;

// A failed write costs samples, never the run.
using recording::WriteAll;

// Sends samples to a collector; never blocks (a full socket buffer drops the datagram).
class Streamer {
 public:
  ~Streamer() {
    if (fd_ >= 0) close(fd_);
  }
  bool Open(const std::string& target, int rank, const std::string& host, uint64_t drop_every,
            std::string* error) {
    const size_t colon = target.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == target.size()) {
      *error = "INVMW_SAMPLER_STREAM=" + target + ": expected host:port";
      return false;
    }
    std::string h = target.substr(0, colon);
    if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    if (int port; !config::ParsePort(target.substr(colon + 1), &port) || port == 0) {
      *error = "INVMW_SAMPLER_STREAM=" + target + ": the port must be a number 1..65535";
      return false;
    }
    addrinfo hints{}, *res = nullptr;
    hints.ai_socktype = SOCK_DGRAM;
    const int rc = getaddrinfo(h.c_str(), target.c_str() + colon + 1, &hints, &res);
    if (rc != 0 || !res) {
      *error = "INVMW_SAMPLER_STREAM=" + target + ": " + gai_strerror(rc);
      return false;
    }
    std::memcpy(&addr_, res->ai_addr, res->ai_addrlen);
    addr_len_ = res->ai_addrlen;
    fd_ = socket(res->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    freeaddrinfo(res);
    if (fd_ < 0) {
      *error = std::string("INVMW_SAMPLER_STREAM: socket: ") + std::strerror(errno);
      return false;
    }
    std::memset(&head_, 0, sizeof head_);
    head_.magic = stream::kMagic;
    head_.version = stream::kVersion;
    head_.header_size = sizeof(stream::DatagramHeader);
    head_.node_id = stream::Fnv1a(host.data(), host.size());
    head_.rank = rank;
    const pid_t pid = getpid();
    head_.stream_id = stream::Fnv1a(&pid, sizeof pid, uint32_t(clock::Ticks()));
    drop_every_ = drop_every;
    return true;
  }

  void SendInfo(const stream::InfoPayload& info) {
    Send(stream::kInfo, 0, 0, 0, 1, 0, 0, &info, sizeof info);
  }

  void SendNames(const std::vector<MetricDef>& metrics) {
    unsigned char payload[stream::kMaxDatagram];
    size_t i = 0;
    while (i < metrics.size()) {
      size_t used = 0, first = i;
      while (i < metrics.size()) {
        const std::string& n = metrics[i].name;
        const size_t len = std::min<size_t>(n.size(), 255);
        if (used + 2 + len > stream::kMaxDatagram - sizeof(stream::DatagramHeader)) break;
        payload[used++] = metrics[i].accumulated ? 1 : 0;
        payload[used++] = uint8_t(len);
        std::memcpy(payload + used, n.data(), len);
        used += len;
        ++i;
      }
      if (i == first) ++i;  // cannot happen with 255-byte names; never loop forever
      Send(stream::kNames, 0, 0, 0, 1, uint16_t(first), uint16_t(i - first), payload, used);
    }
  }

  void SendSample(uint64_t sample, uint64_t ticks, const double* v, size_t n) {
    const size_t parts = std::max<size_t>(1, (n + stream::kMaxValues - 1) / stream::kMaxValues);
    for (size_t p = 0; p < parts; ++p) {
      const size_t first = p * stream::kMaxValues;
      const size_t count = std::min(stream::kMaxValues, n - first);
      Send(stream::kSample, sample, ticks, uint16_t(p), uint16_t(parts), uint16_t(first),
           uint16_t(count), v + first, count * sizeof(double));
    }
  }

  uint64_t sent() const { return sent_; }
  uint64_t dropped() const { return dropped_; }

 private:
  void Send(stream::Kind kind, uint64_t sample, uint64_t ticks, uint16_t part, uint16_t nparts,
            uint16_t first, uint16_t count, const void* payload, size_t size) {
    unsigned char buf[stream::kMaxDatagram];
    stream::DatagramHeader h = head_;
    h.kind = kind;
    h.seq = seq_++;
    h.sample = sample;
    h.ticks = ticks;
    h.part = part;
    h.nparts = nparts;
    h.first = first;
    h.count = count;
    h.checksum = 0;
    std::memcpy(buf, &h, sizeof h);
    std::memcpy(buf + sizeof h, payload, size);
    const size_t total = sizeof h + size;
    h.checksum = stream::Checksum(buf, total);
    std::memcpy(buf, &h, sizeof h);
    if (drop_every_ && h.seq % drop_every_ == drop_every_ - 1) {
      ++dropped_;
      return;
    }
    if (sendto(fd_, buf, total, MSG_DONTWAIT | MSG_NOSIGNAL,
               reinterpret_cast<const sockaddr*>(&addr_), addr_len_) == ssize_t(total))
      ++sent_;
    else
      ++dropped_;
  }

  int fd_ = -1;
  sockaddr_storage addr_{};
  socklen_t addr_len_ = 0;
  stream::DatagramHeader head_{};
  uint64_t seq_ = 0, sent_ = 0, dropped_ = 0, drop_every_ = 0;
};

const char* TierName(Tier t) {
  return t == Tier::kFast ? "fast" : t == Tier::kSlow ? "slow" : "measured";
}

class Sampler {
 public:
  explicit Sampler(const StartOptions& o) : opt_(o) {}

  bool Start(std::string* error) {
    cfg_ = opt_.config ? *opt_.config : config::Load();
    interval_s_ = cfg_.SAMPLER_INTERVAL;
    if (!(interval_s_ >= 1e-4 && interval_s_ <= 3600)) {
      Warn("INVMW_SAMPLER_INTERVAL must be within 100us .. 1h; using 10ms");
      interval_s_ = 0.01;
    }
    {
      std::string e;
      if (!tiers::ParseEvery(cfg_.SAMPLER_EVERY, &every_, &e)) {
        Warn(e + "; INVMW_SAMPLER_EVERY ignored");
        every_.clear();
      }
      for (const auto& [name, n] : every_)
        if (std::none_of(Sources().begin(), Sources().end(),
                         [&](const SourceSpec& sp) { return name == sp.name; }))
          Warn("INVMW_SAMPLER_EVERY names " + name + ", which is not a sampler source; ignored");
    }
    if (opt_.host.empty()) {
      char h[256] = {};
      gethostname(h, sizeof h - 1);
      opt_.host = h;
    }
    tps_ =
        opt_.ticks_per_second > 0 ? opt_.ticks_per_second : clock::CalibrateTicksPerSecond(2000000);
    main_tid_ = pid_t(syscall(SYS_gettid));
    const std::string raw = opt_.run_dir + "/raw";
    mkdir(opt_.run_dir.c_str(), 0755);
    mkdir(raw.c_str(), 0755);
    const std::string mpath = raw + "/" + samples::MetricsFileName(opt_.rank);
    const std::string spath = raw + "/" + samples::SamplesFileName(opt_.rank);
    // Never through or over an entry that is there already (common/run_dir.h).
    defs_fd_ = CreateNewFile(mpath, O_APPEND);
    if (defs_fd_ >= 0) samples_fd_ = CreateNewFile(spath);
    if (defs_fd_ < 0 || samples_fd_ < 0) {
      const std::string& bad = defs_fd_ < 0 ? mpath : spath;
      *error = "sampler: cannot create " + bad + ": " + std::strerror(errno);
      if (errno == EEXIST && opt_.existing) opt_.existing(bad);
      return false;
    }
    if (!cfg_.SAMPLER_STREAM.empty()) {
      std::string e;
      streamer_ = std::make_unique<Streamer>();
      if (!streamer_->Open(cfg_.SAMPLER_STREAM, opt_.rank, opt_.host,
                           uint64_t(std::max<int64_t>(0, cfg_.SAMPLER_TEST_DROP_EVERY)), &e)) {
        Warn(e + "; not streaming");
        streamer_.reset();
      }
    }
    // The cheap sources are opened and read once here, on the caller's thread: that first
    // reading is the base of accumulated metrics, so whatever the application does afterwards
    // is counted, and no hand-over to a new thread (a wake-up each way, milliseconds on a busy
    // node) lengthens the caller's start-up (MPI_Init). The deferred ones (SourceSpec) are
    // opened on the sampler thread (PAPI event sets belong to the thread that creates them),
    // after Start has returned, unless there is nothing else: then Start waits for them, so
    // that their failure is reported here.
    OpenSources(false);
    if (!metrics_.empty()) {
      raw_.assign(metrics_.size(), 0.0);
      base_.assign(metrics_.size(), 0.0);
      WriteHeaders(Now(), metrics_.size());
      start_ticks_ = Now();
      ReadSources(start_ticks_, true);
      opened_any_ = true;
    }
    PrepareDeferredSources();
    const bool wait = !opened_any_;  // read before the thread may write it
    // The thread blocks asynchronous signals, so the application's (and the runtime's) handlers
    // keep running on the application's threads; it inherits the mask set around its creation.
    sigset_t all, old;
    sigfillset(&all);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigdelset(&all, sig);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    thread_ = std::thread([this] { Run(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (!wait) return true;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return ready_; });
    if (!opened_any_) {
      lock.unlock();
      thread_.join();
      *error = "sampler: no source could be opened";
      return false;
    }
    return true;
  }

  void Stop() {
    stop_.store(1, std::memory_order_release);
    syscall(SYS_futex, reinterpret_cast<int*>(&stop_), FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX,
            nullptr, nullptr, 0);
    if (thread_.joinable()) thread_.join();
  }

  Stats stats() const {
    Stats s;
    s.samples = samples_;
    s.interval_s = interval_s_;
    s.thread_cpu_s = thread_cpu_s_;
    s.open_cpu_s = open_cpu_s_;
    s.close_cpu_s = close_cpu_s_;
    s.num_metrics = metrics_.size();
    s.wrote_resources = wrote_resources_;
    for (const auto& a : active_)
      s.tiers.push_back(Stats::SourceTier{a.spec->name, TierName(a.spec->tier), a.every, a.phase,
                                          a.cost_s, a.reads, a.fixed});
    if (streamer_) s.datagrams_sent = streamer_->sent(), s.datagrams_dropped = streamer_->dropped();
    return s;
  }

  ~Sampler() {
    Stop();
    if (defs_fd_ >= 0) close(defs_fd_);
    if (samples_fd_ >= 0) close(samples_fd_);
  }

 private:
  struct Active {
    const SourceSpec* spec;
    std::unique_ptr<Source> src;
    size_t first, count;
    bool based = false;  // its first reading (the base of its accumulated metrics) is taken
    // Its tier schedule (tiers.h): read on the ticks where Due(every, phase, tick).
    uint32_t every = 1, phase = 0;
    bool fixed = false;          // N from INVMW_SAMPLER_EVERY
    double cost_s = 0;           // the cost N was planned from (0: not measured yet)
    tiers::CostEstimate cost{};  // its full readings' measured times (slow, measured)
    uint64_t reads = 0;          // full readings
  };

  // N and the offsets of the slow sources from their measured costs (tiers.h). Fixed ones
  // (INVMW_SAMPLER_EVERY) count in the budget's division all the same: they take their share.
  // A kMeasured source (the counters) has a budget of its own and takes the offset after the
  // slow sources', so that its readings do not fall on the same ticks as the first one's.
  // settle: a re-planning during the run, which keeps an N that moved by an eighth or less.
  void Plan(bool settle = false) {
    size_t num_slow = 0;
    for (const auto& a : active_) num_slow += a.spec->tier == Tier::kSlow;
    const uint32_t max_every = tiers::MaxEvery(cfg_.SAMPLER_SLOW_MAX, interval_s_);
    size_t k = 0;
    for (auto& a : active_) {
      const size_t slow_index = a.spec->tier == Tier::kSlow ? k++ : 0;
      auto it = every_.find(a.spec->name);
      uint32_t every = 1;
      if (it != every_.end()) {
        every = it->second, a.fixed = true;
      } else if (a.spec->tier != Tier::kFast) {
        const double cost = a.cost.Median();
        every =
            a.spec->tier == Tier::kSlow
                ? tiers::ChooseEvery(cost, interval_s_, cfg_.SAMPLER_SLOW_BUDGET, num_slow,
                                     max_every)
                : tiers::MeasuredEvery(cost, interval_s_, cfg_.SAMPLER_COUNTERS_BUDGET, max_every);
        if (settle && !tiers::Settle(a.every, every)) continue;
        a.cost_s = cost;
      }
      a.every = every;
      a.phase = tiers::Phase(a.spec->tier == Tier::kMeasured ? num_slow : slow_index, a.every);
    }
  }

  void Warn(const std::string& msg) {
    if (opt_.warn) return opt_.warn(msg);
    static std::mutex mu;
    static std::set<std::string> seen;
    std::lock_guard<std::mutex> lock(mu);
    if (opt_.rank == 0 && seen.insert(msg).second) std::fprintf(stderr, "invmw: %s\n", msg.c_str());
  }

  // Into *batch when given (written by the caller in one go: a system call costs microseconds
  // on these VMs, and the definitions are written inside MPI_Init).
  void Line(const json& j, std::string* batch = nullptr) {
    const std::string s = j.dump() + "\n";
    if (batch) {
      batch->append(s);
      return;
    }
    WriteAll(defs_fd_, s.data(), s.size());
  }

  uint64_t Now() const {
    const uint64_t t = clock::Ticks();
    return opt_.trace_time ? opt_.trace_time(t) : t;
  }

  // Whether this process opens `spec` (INVMW_SAMPLER_SOURCES, node-wide sources on the leader).
  bool Selected(const SourceSpec& spec) const {
    const auto& want = cfg_.SAMPLER_SOURCES;
    if (!want.empty() && std::find(want.begin(), want.end(), spec.name) == want.end()) return false;
    return spec.scope != Scope::kNode || opt_.node_leader;
  }

  // The part of the deferred sources' start-up that must not overlap the application
  // (SourceSpec::prepare), on the caller's thread before the sampler thread starts.
  void PrepareDeferredSources() {
    SourceContext ctx;
    ctx.cfg = &cfg_;
    ctx.main_tid = main_tid_;
    ctx.proc_root = "/proc";
    ctx.sys_root = "/sys";
    for (const SourceSpec& spec : Sources())
      if (spec.deferred && spec.prepare && Selected(spec)) spec.prepare(ctx);
  }

  // The sources with SourceSpec::deferred == deferred.
  void OpenSources(bool deferred) {
    std::vector<std::string> notes;
    SourceContext ctx;
    ctx.cfg = &cfg_;
    ctx.main_tid = main_tid_;
    ctx.proc_root = "/proc";
    ctx.sys_root = "/sys";
    ctx.notes = &notes;
    const auto& want = cfg_.SAMPLER_SOURCES;
    for (const auto& w : deferred ? std::vector<std::string>() : want)
      if (std::none_of(Sources().begin(), Sources().end(),
                       [&](const SourceSpec& s) { return w == s.name; }))
        Warn("INVMW_SAMPLER_SOURCES names " + w + ", which is not a sampler source; ignored");
    for (const SourceSpec& spec : Sources()) {
      if (spec.deferred != deferred || !Selected(spec)) continue;
      Active a{&spec, spec.create(), metrics_.size(), 0, false};
      std::string why;
      if (!a.src->Open(ctx, &metrics_, &why)) {
        metrics_.resize(a.first);  // a failing source may have declared some metrics
        if (!why.empty()) Warn(std::string("sampler source ") + spec.name + " disabled: " + why);
        continue;
      }
      a.count = metrics_.size() - a.first;
      for (size_t i = 0; i < a.count; ++i) metric_source_.push_back(spec.name);
      metric_start_.resize(metrics_.size(), 0);
      active_.push_back(std::move(a));
    }
    Plan();
    for (const auto& n : notes) opt_.note ? opt_.note(n) : Warn(n);
  }

  // The "sampler" line, the definitions of metrics [0, n) and the sample file's header: before
  // the first reading, so the process's I/O totals do not count the sampler's own writes.
  void WriteHeaders(uint64_t start_ticks, size_t n) {
    std::string batch;
    Line({{"type", "sampler"},
          {"rank", opt_.rank},
          {"world_size", opt_.world_size},
          {"host", opt_.host},
          {"pid", int64_t(getpid())},
          {"node_leader", opt_.node_leader},
          {"ticks_per_second", tps_},
          {"interval_s", interval_s_},
          {"start_ticks", start_ticks},
          {"start_realtime_ns", clock::RealtimeNs()}},
         &batch);
    WriteMetricLines(0, n, &batch);
    WriteAll(defs_fd_, batch.data(), batch.size());
    WriteSampleHeader();
  }

  void WriteMetricLines(size_t from, size_t to, std::string* batch) {
    for (size_t i = from; i < to; ++i) {
      json m = {{"type", "metric"},
                {"index", i},
                {"name", metrics_[i].name},
                {"unit", metrics_[i].unit},
                {"mode", metrics_[i].accumulated ? "accumulated" : "absolute"},
                {"source", metric_source_[i]},
                {"description", metrics_[i].description}};
      // A deferred source counts from its first reading, not from the sampler's start.
      if (metric_start_[i]) m["start_ticks"] = metric_start_[i];
      Line(m, batch);
    }
  }

  // At offset 0: rewritten with the final metric count once the deferred sources are open
  // (nothing else is in the file before the first Flush).
  void WriteSampleHeader() {
    samples::SampleFileHeader h{};
    h.magic = samples::kSampleMagic;
    h.version = samples::kSampleVersion;
    h.header_size = sizeof h;
    h.record_size = uint32_t(sizeof(samples::SampleRecordHead) + 8 * metrics_.size());
    h.rank = opt_.rank;
    h.num_metrics = uint32_t(metrics_.size());
    if (pwrite(samples_fd_, &h, sizeof h, 0) != ssize_t(sizeof h) ||
        lseek(samples_fd_, sizeof h, SEEK_SET) < 0)
      Warn("sampler: cannot write the header of " + samples::SamplesFileName(opt_.rank) + ": " +
           std::strerror(errno));
  }

  void SendStreamInfo() {
    if (!streamer_) return;
    stream::InfoPayload info{};
    info.ticks_per_second = tps_;
    const clock::Anchor a = clock::TakeAnchor();
    info.anchor_ticks = opt_.trace_time ? opt_.trace_time(a.ticks) : a.ticks;
    info.anchor_realtime_ns = clock::RealtimeNs() - (clock::MonotonicNs() - a.mono_ns);
    info.interval_s = interval_s_;
    info.num_metrics = uint32_t(metrics_.size());
    info.world_size = opt_.world_size;
    std::snprintf(info.host, sizeof info.host, "%s", opt_.host.c_str());
    streamer_->SendInfo(info);
    streamer_->SendNames(metrics_);
  }

  // raw: clock::Ticks() when the caller has just read it (the loop, right after waking), so a
  // tick stamps its sample with the one clock reading it makes.
  void TakeSample(bool all = false, uint64_t raw = 0) {
    if (!raw) raw = clock::Ticks();
    const uint64_t t = opt_.trace_time ? opt_.trace_time(raw) : raw;
    ReadSources(t, all);
    Emit(t);
  }

  // The sources due on this tick (tiers.h; the tick is the index of the sample being taken),
  // or all of them. A source's first reading is the base of its accumulated metrics; before it
  // (a deferred source not yet open) its values are 0. The full readings of a slow or measured
  // source are timed (rdtsc, a few nanoseconds); its N is planned from the median of the recent
  // ones (tiers::CostEstimate) after each of its first four readings and re-planned once a
  // second. Between its readings a source's values repeat (raw_ keeps them).
  void ReadSources(uint64_t t, bool all) {
    constexpr uint64_t kFirst = 4;
    bool replan = false;
    for (auto& a : active_) {
      if (!all && a.based && !tiers::Due(a.every, a.phase, samples_)) {
        if (a.spec->fast_part) a.src->ReadFast(&raw_[a.first]);
        continue;
      }
      if (a.spec->tier != Tier::kFast) {
        const uint64_t t0 = clock::Ticks();
        a.src->Read(&raw_[a.first]);
        a.cost.Add(double(clock::Ticks() - t0) / tps_);
        replan = replan || (!a.fixed && a.cost.count() <= kFirst);
      } else {
        a.src->Read(&raw_[a.first]);
      }
      ++a.reads;
      if (!a.based) Base(a, t);
    }
    if (replan) Plan();
  }

  // A source's first reading: the base its accumulated metrics count from. Absolute metrics
  // get a base of 0, so that Emit subtracts without looking at the definitions.
  void Base(Active& a, uint64_t t) {
    a.based = true;
    for (size_t i = a.first; i < a.first + a.count; ++i)
      base_[i] = metrics_[i].accumulated ? raw_[i] : 0.0;
    if (samples_ > 0)
      std::fill(metric_start_.begin() + long(a.first),
                metric_start_.begin() + long(a.first + a.count), t);
  }

  // Appends the sample's record to the buffer written once a second, in place: a tick after
  // 10 ms asleep finds every cache line cold, so it touches only the values (not the metric
  // definitions) and copies them once.
  void Emit(uint64_t t) {
    const size_t n = raw_.size();
    for (size_t i = 0; i < n; ++i) out_[i] = raw_[i] - base_[i];
    const samples::SampleRecordHead head{t, samples_};
    const size_t at = pending_.size();
    pending_.resize(at + sizeof head + 8 * n);  // capacity reserved: no allocation per tick
    std::memcpy(pending_.data() + at, &head, sizeof head);
    std::memcpy(pending_.data() + at + sizeof head, out_.data(), 8 * n);
    if (streamer_) streamer_->SendSample(samples_, t, out_.data(), n);
    ++samples_;
  }

  void Flush() {
    if (!pending_.empty()) WriteAll(samples_fd_, pending_.data(), pending_.size());
    pending_.clear();
  }

  // Applies `interval=...` from <run dir>/control when it changed.
  void PollControl() {
    char buf[256];
    const int fd = open((opt_.run_dir + "/control").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return;
    buf[n] = '\0';
    const std::string text(buf);
    const size_t k = text.find("interval=");
    if (k == std::string::npos) return;
    const std::string v = text.substr(k + 9, text.find('\n', k) - (k + 9));
    if (v == last_control_) return;
    last_control_ = v;
    double s;
    if (!config::ParseDuration(v, &s) || s < 1e-4 || s > 3600) {
      Warn(opt_.run_dir + "/control: interval=" + v +
           ": expected a duration within 100us .. 1h (e.g. 5ms); ignored");
      return;
    }
    if (s == interval_s_) return;
    interval_s_ = s;
    ReservePending();
    Plan();  // N counts ticks: the same budget and longest gap need another N
    Line({{"type", "interval"}, {"ticks", Now()}, {"interval_s", s}});
  }

  void Run() {
    const size_t before = metrics_.size();
    if (!opened_any_) {  // only deferred sources: Start waits for them
      {
        std::lock_guard<std::mutex> lock(mu_);
        OpenSources(true);
        if (!metrics_.empty()) {
          raw_.assign(metrics_.size(), 0.0);
          base_.assign(metrics_.size(), 0.0);
          WriteHeaders(Now(), metrics_.size());
          start_ticks_ = Now();
          ReadSources(start_ticks_, true);
          opened_any_ = true;
        }
        ready_ = true;
      }
      cv_.notify_all();
      if (metrics_.empty()) return;
    } else {
      // Not at once: Start returns from inside MPI_Init, and on a node whose cores the ranks
      // fill, PAPI's start-up (milliseconds of CPU) would take the core from the application's
      // thread before it has left MPI_Init. A run that ends sooner has no deferred sources.
      const int64_t delay = std::min<int64_t>(StepNs(), 10000000);
      if (!SleepUntil(clock::MonotonicNs() + delay)) OpenSources(true);
    }
    raw_.resize(metrics_.size(), 0.0);
    base_.resize(metrics_.size(), 0.0);
    out_.assign(metrics_.size(), 0.0);
    ReservePending();
    SendStreamInfo();
    Emit(start_ticks_);
    if (before > 0 && metrics_.size() > before) {
      // The deferred sources' first reading, a sample of its own: their counts start here.
      TakeSample();
      std::string batch;
      WriteMetricLines(before, metrics_.size(), &batch);
      WriteAll(defs_fd_, batch.data(), batch.size());
      WriteSampleHeader();
    }
    open_cpu_s_ = ThreadCpu();
    // Samples fall on multiples of the interval of the monotonic clock, which every process of
    // a node shares: the ranks' sampler threads wake together, so ranks that wait for each
    // other are interrupted once per interval rather than one after another.
    //
    // A tick reads the cycle counter once (its sample's stamp) and not the clock: after 10 ms
    // asleep a clock_gettime cost 1.9 us here (its vDSO pages and data cold), a rdtsc 0.3 us,
    // against a budget of 10 us per tick (docs/sampler.md). The monotonic time is derived from
    // the counter between two readings of the clock a second apart (MonoFromTicks); only when
    // that says the thread fell behind or woke early is the clock itself read to decide. The
    // next deadline is checked against the time of the last wake (or of the once-a-second
    // anchor, taken after the work that may block: the write, the control file), not a new
    // reading: a tick's own work takes microseconds, and a deadline it overran only makes the
    // wait return at once.
    mono_.Anchor(tps_);
    int64_t step = StepNs();
    int64_t next = mono_.ns - mono_.ns % step;
    uint64_t next_poll = mono_.ticks + uint64_t(tps_);
    uint64_t last = mono_.ticks;
    while (true) {
      step = StepNs();
      next += step;
      int64_t now = mono_.Ns(last);
      if (next < now || next - now > step) {
        now = clock::MonotonicNs();
        // Fell behind (descheduled) or the interval changed: resume on the grid after now.
        if (next < now || next - now > step) next = now - now % step + step;
      }
      if (SleepUntil(next)) break;
      const uint64_t woke = clock::Ticks();
      last = woke;
      TakeSample(false, woke);
      if (woke >= next_poll) {
        Flush();
        PollControl();
        SendStreamInfo();
        Plan(true);  // from the slow sources' recent costs
        mono_.Anchor(tps_);
        next_poll = mono_.ticks + uint64_t(tps_);
        last = mono_.ticks;
      }
    }
    const double loop_end = ThreadCpu();
    TakeSample(true);  // the state at the end, every source, so totals cover the whole run
    Flush();
    Line({{"type", "end"}, {"samples", samples_}, {"end_ticks", Now()}});
    WriteResources();
    thread_cpu_s_ = ThreadCpu();
    close_cpu_s_ = thread_cpu_s_ - loop_end;
  }

  // Sleeps until `ns` on the monotonic clock (CLOCK_MONOTONIC, steady_clock's); true when Stop()
  // was called. A bare futex wait is one system call per sample where a condition variable's
  // timed wait made two, and system calls are the sampler's main cost (docs/sampler.md).
  bool SleepUntil(int64_t ns) {
    const timespec ts{time_t(ns / 1000000000), long(ns % 1000000000)};
    while (!stop_.load(std::memory_order_acquire)) {
      const long r =
          syscall(SYS_futex, reinterpret_cast<int*>(&stop_), FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG,
                  0, &ts, nullptr, FUTEX_BITSET_MATCH_ANY);
      if (r == 0 || errno == EAGAIN || errno == EINTR) continue;  // woken, or stop_ changed
      if (errno == ETIMEDOUT) return false;
      // No usable futex (a seccomp filter): sleep in slices short enough to notice Stop().
      const int64_t now = clock::MonotonicNs();
      if (now >= ns) return false;
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(ns - now, 20000000)));
    }
    return true;
  }

  int64_t StepNs() const { return int64_t(interval_s_ * 1e9); }

  // Room for a second of records (Flush empties the buffer once a second), so that Emit does
  // not allocate.
  void ReservePending() {
    const double per_second = std::min(1.0 / interval_s_, 1e4) + 16;
    pending_.reserve((sizeof(samples::SampleRecordHead) + 8 * metrics_.size()) *
                     size_t(per_second));
  }

  // CLOCK_MONOTONIC from the cycle counter, re-anchored once a second: the rate from two
  // anchors at least 0.1 s apart, before that the calibrated one.
  struct MonoFromTicks {
    uint64_t ticks = 0;
    int64_t ns = 0;
    double ns_per_tick = 0;
    void Anchor(double tps) {
      const clock::Anchor a = clock::TakeAnchor();
      if (ticks && a.ticks > ticks && a.mono_ns - ns >= 100000000)
        ns_per_tick = double(a.mono_ns - ns) / double(a.ticks - ticks);
      else if (!(ns_per_tick > 0))
        ns_per_tick = 1e9 / tps;
      ticks = a.ticks;
      ns = a.mono_ns;
    }
    int64_t Ns(uint64_t t) const { return ns + int64_t(double(int64_t(t - ticks)) * ns_per_tick); }
  };

  static double ThreadCpu() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
  }

  // The per-process summary the profile shows (common/sample_format.h).
  void WriteResources() {
    auto value = [&](const std::string& name) -> json {
      for (size_t i = 0; i < metrics_.size(); ++i)
        if (metrics_[i].name == name) return out_[i];
      return nullptr;
    };
    auto sum = [&](const std::string& prefix, const std::string& suffix) -> json {
      double s = 0;
      bool any = false;
      for (size_t i = 0; i < metrics_.size(); ++i) {
        const std::string& n = metrics_[i].name;
        if (n.compare(0, prefix.size(), prefix) == 0 && n.size() > suffix.size() &&
            n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
          s += out_[i], any = true;
      }
      return any ? json(s) : json(nullptr);
    };
    json counters = json::object(), all = json::object(), counters_start = nullptr;
    for (size_t i = 0; i < metrics_.size(); ++i) {
      all[metrics_[i].name] = {{"unit", metrics_[i].unit},
                               {"mode", metrics_[i].accumulated ? "accumulated" : "absolute"},
                               {"value", out_[i]}};
      if (metric_source_[i] != "counters") continue;
      counters[metrics_[i].name] = out_[i];
      if (counters_start.is_null())
        counters_start = metric_start_[i] ? double(metric_start_[i] - start_ticks_) / tps_ : 0.0;
    }
    json r = {{"rank", opt_.rank},
              {"host", opt_.host},
              {"pid", int64_t(getpid())},
              {"node_leader", opt_.node_leader},
              {"samples", samples_},
              {"interval_s", interval_s_},
              {"wall_s", double(Now() - start_ticks_) / tps_},
              {"cpu_user_s", value("proc.cpu.user")},
              {"cpu_system_s", value("proc.cpu.system")},
              {"rss_peak_bytes", value("proc.rss_peak")},
              {"io_read_bytes", value("proc.io.rchar")},
              {"io_write_bytes", value("proc.io.wchar")},
              {"storage_read_bytes", value("proc.io.read_bytes")},
              {"storage_write_bytes", value("proc.io.write_bytes")},
              // Node-wide: only the node leader samples them.
              {"node_net_rx_bytes", sum("net.", ".rx_bytes")},
              {"node_net_tx_bytes", sum("net.", ".tx_bytes")},
              {"counters", counters},
              // Seconds after the start of sampling from which the counters count (opened
              // after Start returned, see sampler.h); null without counters.
              {"counters_start_s", counters_start},
              // The tier schedule (sampler/tiers.h): read every N samples, measured cost.
              {"tiers", Tiers()},
              {"metrics", all}};
    const std::string path = opt_.run_dir + "/raw/" + samples::ResourcesFileName(opt_.rank);
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    const int fd = CreateNewFile(tmp);
    if (fd < 0) return Existing(errno, tmp);
    const std::string s = r.dump(2) + "\n";
    WriteAll(fd, s.data(), s.size());
    if (close(fd) != 0) Warn("sampler: cannot write " + tmp + ": " + std::strerror(errno));
    if (PublishNewFile(tmp, path))
      wrote_resources_ = true;
    else
      Existing(errno, path);
  }

  json Tiers() const {
    json t = json::object();
    for (const auto& a : active_)
      t[a.spec->name] = {{"tier", TierName(a.spec->tier)},
                         {"every", a.every},
                         {"fixed", a.fixed},
                         {"cost_us", a.cost_s * 1e6},
                         {"reads", a.reads}};
    return t;
  }

  // An output file not written: an entry of its name existed (reported to the runtime), or
  // another failure (a warning).
  void Existing(int err, const std::string& path) {
    if (err == EEXIST && opt_.existing) return opt_.existing(path);
    Warn("sampler: cannot write " + path + ": " + std::strerror(err));
  }

  StartOptions opt_;
  config::Config cfg_;
  double interval_s_ = 0.01, tps_ = 0;
  pid_t main_tid_ = 0;
  int defs_fd_ = -1, samples_fd_ = -1;
  std::unique_ptr<Streamer> streamer_;
  std::vector<Active> active_;
  std::vector<MetricDef> metrics_;
  std::vector<std::string> metric_source_;
  std::vector<uint64_t> metric_start_;  // ticks of a deferred metric's first reading, else 0
  std::vector<double> raw_, base_, out_;
  std::vector<char> pending_;  // records not written yet
  MonoFromTicks mono_;
  uint64_t samples_ = 0, start_ticks_ = 0;
  std::string last_control_;
  std::map<std::string, uint32_t> every_;  // INVMW_SAMPLER_EVERY
  double thread_cpu_s_ = 0, open_cpu_s_ = 0, close_cpu_s_ = 0;
  bool wrote_resources_ = false;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false, opened_any_ = false;
  // The futex word Stop() sets and wakes; the sampling thread sleeps on it.
  std::atomic<int> stop_{0};
  static_assert(sizeof(std::atomic<int>) == sizeof(int) && std::atomic<int>::is_always_lock_free);
};

// Constant-initialised and never destroyed by static destructors: the runtime may start the
// sampler while the preloaded library is still being initialised (INVMW_RUNTIME_NONMPI), and a
// program that calls exit() while the thread runs must not meet a joinable std::thread in a
// destructor (std::terminate would change its exit status).
std::mutex g_mu;
Sampler* g_sampler = nullptr;
Stats g_last;

}  // namespace

bool Start(const StartOptions& options, std::string* error) {
  std::string e;
  try {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_sampler) {
      e = "sampler: already running";
    } else if (options.IsValid(&e)) {
      auto s = std::make_unique<Sampler>(options);
      if (s->Start(&e)) {
        g_sampler = s.release();
        return true;
      }
    }
  } catch (const std::exception& ex) {
    e = std::string("sampler: ") + ex.what();
  } catch (...) {
    e = "sampler: unexpected failure";
  }
  if (error) *error = e;
  return false;
}

void Stop() {
  try {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!g_sampler) return;
    g_sampler->Stop();
    g_last = g_sampler->stats();
    delete g_sampler;
    g_sampler = nullptr;
  } catch (...) {
  }
}

Stats LastStats() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_last;
}

}  // namespace invmw::sampler
