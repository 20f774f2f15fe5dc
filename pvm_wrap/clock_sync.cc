#include "pvm_wrap/clock_sync.h"

#include <pvm3.h>
#include <sys/time.h>

#include <vector>

#include "common/clock.h"
#include "pvm_wrap/task_state.h"

namespace invmw::pvm {
namespace {

enum Tag { kHello = 1, kPing = 2, kPong = 3, kDone = 4 };

struct Fns {
  int (*setcontext)(int) = nullptr;
  int (*setsbuf)(int) = nullptr;
  int (*setrbuf)(int) = nullptr;
  int (*freebuf)(int) = nullptr;
  int (*psend)(int, int, void*, int, int) = nullptr;
  int (*trecv)(int, int, struct timeval*) = nullptr;
  int (*bufinfo)(int, int*, int*, int*) = nullptr;
  int (*upkbyte)(char*, int, int) = nullptr;
  bool ok() const {
    return setcontext && setsbuf && setrbuf && freebuf && psend && trecv && bufinfo && upkbyte;
  }
};

Fns Load() {
  Fns f;
  f.setcontext = reinterpret_cast<int (*)(int)>(RealByName("pvm_setcontext"));
  f.setsbuf = reinterpret_cast<int (*)(int)>(RealByName("pvm_setsbuf"));
  f.setrbuf = reinterpret_cast<int (*)(int)>(RealByName("pvm_setrbuf"));
  f.freebuf = reinterpret_cast<int (*)(int)>(RealByName("pvm_freebuf"));
  f.psend = reinterpret_cast<int (*)(int, int, void*, int, int)>(RealByName("pvm_psend"));
  f.trecv = reinterpret_cast<int (*)(int, int, struct timeval*)>(RealByName("pvm_trecv"));
  f.bufinfo = reinterpret_cast<int (*)(int, int*, int*, int*)>(RealByName("pvm_bufinfo"));
  f.upkbyte = reinterpret_cast<int (*)(char*, int, int)>(RealByName("pvm_upkbyte"));
  return f;
}

// Sets the application's context and buffers aside for the lifetime of the object.
class Isolated {
 public:
  Isolated(const Fns& f, int ctx) : f_(f) {
    old_ctx_ = f_.setcontext(ctx);
    old_sbuf_ = f_.setsbuf(0);
    old_rbuf_ = f_.setrbuf(0);
  }
  ~Isolated() {
    int mine = f_.setrbuf(old_rbuf_);
    if (mine > 0) f_.freebuf(mine);
    mine = f_.setsbuf(old_sbuf_);
    if (mine > 0) f_.freebuf(mine);
    f_.setcontext(old_ctx_);
  }

 private:
  const Fns& f_;
  int old_ctx_, old_sbuf_, old_rbuf_;
};

timeval Remaining(int64_t deadline_ns) {
  int64_t left = deadline_ns - clock::MonotonicNs();
  if (left < 0) left = 0;
  timeval tv;
  tv.tv_sec = left / 1000000000;
  tv.tv_usec = (left % 1000000000) / 1000;
  return tv;
}

// Receives one message from tid (-1: any) with tag (-1: any) before the deadline; returns its
// buffer (> 0) and fills src/tag, or 0 on timeout or error.
int Receive(const Fns& f, int tid, int tag, int64_t deadline_ns, int* src, int* got_tag) {
  timeval tv = Remaining(deadline_ns);
  int buf = f.trecv(tid, tag, &tv);
  if (buf <= 0) return 0;
  int bytes = 0;
  if (f.bufinfo(buf, &bytes, got_tag, src) < 0) return 0;
  return buf;
}

}  // namespace

ClockOffset SyncWithParent(int parent, int ctx, int rounds, double timeout_s) {
  ClockOffset out;
  Fns f = Load();
  if (!f.ok() || parent <= 0 || rounds <= 0) return out;
  Isolated iso(f, ctx);
  const int64_t deadline = clock::MonotonicNs() + int64_t(timeout_s * 1e9);
  int n = rounds;
  if (f.psend(parent, kHello, &n, int(sizeof n), PVM_BYTE) < 0) return out;
  uint64_t best_rtt = UINT64_MAX;
  for (int k = 0; k < rounds; ++k) {
    const uint64_t t0 = clock::Ticks();
    if (f.psend(parent, kPing, &k, int(sizeof k), PVM_BYTE) < 0) return out;
    int src = 0, tag = 0;
    if (!Receive(f, parent, kPong, deadline, &src, &tag)) return out;
    const uint64_t t1 = clock::Ticks();
    uint64_t tp = 0;
    if (f.upkbyte(reinterpret_cast<char*>(&tp), int(sizeof tp), 1) < 0) return out;
    if (t1 - t0 < best_rtt) {
      best_rtt = t1 - t0;
      out.ticks = t0 + (t1 - t0) / 2;
      out.offset_ticks = double(t0) + double(t1 - t0) / 2 - double(tp);
      out.uncertainty_ticks = double(t1 - t0) / 2;
    }
  }
  f.psend(parent, kDone, &n, int(sizeof n), PVM_BYTE);
  out.ok = true;
  return out;
}

int ServeChildren(int ctx, const int* tids, int n, double timeout_s) {
  Fns f = Load();
  if (!f.ok()) return 0;
  std::vector<int> waiting;
  for (int i = 0; i < n; ++i)
    if (tids[i] > 0) waiting.push_back(tids[i]);
  if (waiting.empty()) return 0;
  Isolated iso(f, ctx);
  const int64_t deadline = clock::MonotonicNs() + int64_t(timeout_s * 1e9);
  int served = 0;
  while (!waiting.empty()) {
    int child = 0, tag = 0;
    if (!Receive(f, -1, kHello, deadline, &child, &tag)) break;
    // Serve this child's pings until it says it is done (the others' hellos wait queued).
    for (;;) {
      int src = 0;
      if (!Receive(f, child, -1, deadline, &src, &tag) || tag != kPing) break;
      uint64_t now = clock::Ticks();
      if (f.psend(child, kPong, &now, int(sizeof now), PVM_BYTE) < 0) break;
    }
    for (size_t i = 0; i < waiting.size(); ++i)
      if (waiting[i] == child) {
        waiting.erase(waiting.begin() + long(i));
        ++served;
        break;
      }
  }
  return served;
}

}  // namespace invmw::pvm
