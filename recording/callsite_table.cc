#include "recording/callsite_table.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <unistd.h>
#include <unwind.h>

#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "recording/io.h"

namespace invmw::recording {

uint32_t CallSiteTable::RoundCapacity(uint32_t capacity) {
  uint32_t cap = 16;
  while (cap < capacity && cap < (1u << 20)) cap <<= 1;
  return cap;
}

uint64_t CallSiteTable::ArrayBytes(uint32_t capacity, uint32_t num_funcs) {
  return uint64_t(RoundCapacity(capacity)) * sizeof(CallSiteEntry) +
         uint64_t(num_funcs ? num_funcs : 1) * sizeof(CallSiteCounters);
}

CallSiteTable* CallSiteTable::Place(void* mem, uint32_t capacity, uint32_t num_funcs) {
  auto* t = static_cast<CallSiteTable*>(std::calloc(1, sizeof(CallSiteTable)));
  if (!t) return nullptr;
  const uint32_t cap = RoundCapacity(capacity);
  t->entries_ = static_cast<CallSiteEntry*>(mem);
  t->unattributed_ = reinterpret_cast<CallSiteCounters*>(static_cast<char*>(mem) +
                                                         uint64_t(cap) * sizeof(CallSiteEntry));
  t->mask_ = cap - 1;
  t->num_funcs_ = num_funcs;
  t->placed_ = true;
  return t;
}

CallSiteTable* CallSiteTable::Create(uint32_t capacity, uint32_t num_funcs) {
  const uint32_t cap = RoundCapacity(capacity);
  auto* t = static_cast<CallSiteTable*>(std::calloc(1, sizeof(CallSiteTable)));
  if (!t) return nullptr;
  t->entries_ = static_cast<CallSiteEntry*>(std::calloc(cap, sizeof(CallSiteEntry)));
  t->unattributed_ = static_cast<CallSiteCounters*>(
      std::calloc(num_funcs ? num_funcs : 1, sizeof(CallSiteCounters)));
  if (!t->entries_ || !t->unattributed_) {
    std::free(t->entries_);
    std::free(t->unattributed_);
    std::free(t);
    return nullptr;
  }
  t->mask_ = cap - 1;
  t->num_funcs_ = num_funcs;
  return t;
}

void CallSiteTable::Destroy(CallSiteTable* t) {
  if (!t) return;
  if (!t->placed_) {
    std::free(t->entries_);
    std::free(t->unattributed_);
  }
  std::free(t);
}

namespace {

struct UnwindState {
  uint64_t first;
  uint64_t* pcs;
  int max;
  int n;
  bool found;
};

_Unwind_Reason_Code UnwindStep(struct _Unwind_Context* ctx, void* arg) {
  auto* s = static_cast<UnwindState*>(arg);
  const uint64_t ip = _Unwind_GetIP(ctx);
  if (!s->found) {
    // The frames of invmw's wrapper end where the application's return address appears.
    if (ip != s->first) return _URC_NO_REASON;
    s->found = true;
  }
  if (ip == 0) return _URC_END_OF_STACK;
  s->pcs[s->n++] = ip;
  return s->n >= s->max ? _URC_END_OF_STACK : _URC_NO_REASON;
}

}  // namespace

int UnwindCallSite(uint64_t first, uint64_t* pcs, int max) {
  UnwindState s{first, pcs, max, 0, false};
  _Unwind_Backtrace(UnwindStep, &s);
  if (!s.found || s.n == 0) {
    pcs[0] = first;
    return 1;
  }
  return s.n;
}

int FramePointerCallSite(uint64_t first, uintptr_t app_fp, uint64_t* pcs, int max, uintptr_t lo,
                         uintptr_t hi) {
  pcs[0] = first;
  int n = 1;
  // Every frame must lie inside this thread's stack, above the current one, aligned, and the
  // chain must go up: a function without a frame pointer leaves any value in rbp, and the walk
  // then stops (or records a wrong frame) but never reads outside the stack.
  uintptr_t here = reinterpret_cast<uintptr_t>(&here);
  uintptr_t frame = app_fp;
  while (n < max) {
    if (frame <= here || frame < lo || hi - lo < 2 * sizeof(uintptr_t) ||
        frame > hi - 2 * sizeof(uintptr_t) || (frame & (sizeof(uintptr_t) - 1)))
      break;
    const uintptr_t* f = reinterpret_cast<const uintptr_t*>(frame);
    if (f[1] == 0) break;
    pcs[n++] = f[1];
    if (f[0] <= frame) break;
    frame = f[0];
  }
  return n;
}

bool ThreadStackBounds(uintptr_t* lo, uintptr_t* hi) {
  pthread_attr_t a;
  if (pthread_getattr_np(pthread_self(), &a) != 0) return false;
  void* addr = nullptr;
  size_t size = 0;
  const bool ok = pthread_attr_getstack(&a, &addr, &size) == 0;
  pthread_attr_destroy(&a);
  if (!ok) return false;
  *lo = reinterpret_cast<uintptr_t>(addr);
  *hi = *lo + size;
  return true;
}

namespace {

// Appends to a fixed buffer and writes it out when full.
class LineWriter {
 public:
  explicit LineWriter(int fd) : fd_(fd) {}
  ~LineWriter() { Flush(); }
  void Printf(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    if (len_ + 600 > sizeof buf_) Flush();
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf_ + len_, sizeof buf_ - len_, fmt, ap);
    va_end(ap);
    if (n < 0 || size_t(n) >= sizeof buf_ - len_) {
      ok_ = false;
      return;
    }
    len_ += size_t(n);
  }
  bool Flush() {
    if (len_ && !WriteAll(fd_, buf_, len_)) ok_ = false;
    len_ = 0;
    return ok_;
  }
  bool ok() const { return ok_; }

 private:
  int fd_;
  char buf_[16384];
  size_t len_ = 0;
  bool ok_ = true;
};

// The build id of the object mapped readable at `start` (its ELF header), as hex into out
// (empty when none). Only reads inside [start, end) and the note segment's own mapping, which
// the caller has checked to be readable.
void BuildIdAt(uint64_t start, uint64_t end, char* out, size_t cap) {
  out[0] = '\0';
  if (end - start < sizeof(ElfW(Ehdr))) return;
  const auto* eh = reinterpret_cast<const ElfW(Ehdr)*>(start);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_phentsize != sizeof(ElfW(Phdr)))
    return;
  const uint64_t ph_end = uint64_t(eh->e_phoff) + uint64_t(eh->e_phnum) * sizeof(ElfW(Phdr));
  if (ph_end > end - start) return;
  const auto* ph = reinterpret_cast<const ElfW(Phdr)*>(start + eh->e_phoff);
  uint64_t first_vaddr = UINT64_MAX;
  for (int i = 0; i < eh->e_phnum; ++i)
    if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) first_vaddr = ph[i].p_vaddr;
  if (first_vaddr == UINT64_MAX) return;
  for (int i = 0; i < eh->e_phnum; ++i) {
    if (ph[i].p_type != PT_NOTE) continue;
    // Notes live in the first (read-only) segment in every layout ld and lld produce; others
    // are not read, since their mapping was not checked.
    const uint64_t off = ph[i].p_vaddr - first_vaddr;
    if (ph[i].p_vaddr < first_vaddr || off + ph[i].p_memsz > end - start) continue;
    uint64_t p = start + off, q = p + ph[i].p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= q) {
      const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const uint64_t name_sz = (uint64_t(nh->n_namesz) + 3) & ~3ull;
      const uint64_t desc_sz = (uint64_t(nh->n_descsz) + 3) & ~3ull;
      const uint64_t desc = p + sizeof(ElfW(Nhdr)) + name_sz;
      if (desc + desc_sz > q) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
          std::memcmp(reinterpret_cast<const char*>(p + sizeof(ElfW(Nhdr))), "GNU", 4) == 0 &&
          nh->n_descsz * 2 + 1 <= cap) {
        const auto* d = reinterpret_cast<const unsigned char*>(desc);
        for (uint32_t k = 0; k < nh->n_descsz; ++k) std::snprintf(out + 2 * k, 3, "%02x", d[k]);
        return;
      }
      p = desc + desc_sz;
    }
  }
}

}  // namespace

bool MappingLog::Snapshot(int fd, const char* reason) {
  // /proc/self/maps read whole into a static buffer: this runs at init, at finalize and when a
  // call comes from an object loaded since (dlopen), never concurrently (callers serialise).
  static char maps[1 << 20];
  const int mfd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (mfd < 0) return false;
  size_t len = 0;
  for (;;) {
    ssize_t r = read(mfd, maps + len, sizeof maps - 1 - len);
    if (r > 0) {
      len += size_t(r);
      if (len == sizeof maps - 1) break;
    } else if (r == 0 || errno != EINTR) {
      break;
    }
  }
  close(mfd);
  maps[len] = '\0';
  LineWriter w(fd);
  w.Printf("maps %s\n", reason);
  n_ = 0;
  // First pass: the readable offset-0 mapping of each path holds its ELF header (build id).
  uint64_t head_lo = 0, head_hi = 0;
  char head_path[4096] = "";
  for (char* line = maps; line && *line;) {
    char* nl = std::strchr(line, '\n');
    if (nl) *nl = '\0';
    unsigned long long lo, hi, off;
    char perms[8];
    int path_at = 0;
    if (std::sscanf(line, "%llx-%llx %7s %llx %*s %*s%n", &lo, &hi, perms, &off, &path_at) == 4) {
      const char* path = line + path_at;
      while (*path == ' ') ++path;
      if (off == 0 && perms[0] == 'r' && path[0] == '/') {
        head_lo = lo;
        head_hi = hi;
        std::snprintf(head_path, sizeof head_path, "%s", path);
      }
      if (perms[2] == 'x' && path[0] == '/') {
        char bid[128] = "";
        if (std::strcmp(path, head_path) == 0) BuildIdAt(head_lo, head_hi, bid, sizeof bid);
        // start end offset build-id path; the load address of the object is the start of its
        // offset-0 mapping (head).
        w.Printf("m %llx %llx %llx %llx %s %s\n", lo, hi, off,
                 std::strcmp(path, head_path) == 0 ? (unsigned long long)head_lo : 0ull,
                 bid[0] ? bid : "-", path);
        if (n_ < kMaxRanges) ranges_[n_++] = {lo, hi};
      }
    }
    line = nl ? nl + 1 : nullptr;
  }
  w.Printf("end-maps\n");
  return w.Flush();
}

bool MappingLog::Known(uint64_t pc) const {
  for (int i = 0; i < n_; ++i)
    if (pc >= ranges_[i].lo && pc < ranges_[i].hi) return true;
  return false;
}

bool WriteCallSiteHeader(int fd, int rank, int depth, double ticks_per_second) {
  LineWriter w(fd);
  w.Printf("invmw-callsites 2\nrank %d\ndepth %d\nticks_per_second %.6f\n", rank, depth,
           ticks_per_second);
  return w.Flush();
}

bool WriteCallSiteRows(int fd, const CallSiteTable& t, int thread, const char* const* names) {
  LineWriter w(fd);
  w.Printf("thread %d\n", thread);
  for (uint32_t i = 0; i < t.capacity(); ++i) {
    const CallSiteEntry& e = t.entry(i);
    const uint32_t f1 = __atomic_load_n(&e.func1, __ATOMIC_ACQUIRE);
    if (f1 == 0 || f1 > t.num_funcs() || e.depth == 0 || e.depth > kMaxCallSiteDepth) continue;
    w.Printf("site %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " ", names[f1 - 1],
             e.c.calls, e.c.ticks, e.c.max_ticks, e.c.bytes_sent, e.c.bytes_recv);
    for (uint32_t k = 0; k < e.depth; ++k) w.Printf(k ? ",%" PRIx64 : "%" PRIx64, e.pcs[k]);
    // The slot, which the thread's kCall trace records name (event_format.h kFlagCallSite).
    w.Printf(" @%" PRIu32 "\n", i);
  }
  for (uint32_t f = 0; f < t.num_funcs(); ++f) {
    const CallSiteCounters& c = t.unattributed(f);
    if (!c.calls) continue;
    w.Printf("unattributed %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
             names[f], c.calls, c.ticks, c.max_ticks, c.bytes_sent, c.bytes_recv);
  }
  return w.Flush();
}

bool WriteCallSiteEnd(int fd, uint64_t unattributed_calls) {
  LineWriter w(fd);
  w.Printf("end %" PRIu64 "\n", unattributed_calls);
  return w.Flush();
}

std::string CallSiteFilePath(const std::string& dir, int rank) {
  char name[64];
  std::snprintf(name, sizeof name, "/callsites/rank-%06d.txt", rank);
  return dir + name;
}

}  // namespace invmw::recording
