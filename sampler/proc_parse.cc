#include "sampler/proc_parse.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include <cerrno>

namespace invmw::sampler::parse {

const char* const kCpuStateNames[kCpuStates] = {"user",   "nice", "system",  "idle",
                                                "iowait", "irq",  "softirq", "steal"};

namespace {

// Next unsigned decimal number at or after *p (skipping anything else on the same line);
// false at the end of the line or text.
bool NextU64(const char** p, const char* end, uint64_t* out) {
  const char* c = *p;
  while (c < end && (*c < '0' || *c > '9')) {
    if (*c == '\n') return false;
    ++c;
  }
  if (c >= end) return false;
  uint64_t v = 0;
  while (c < end && *c >= '0' && *c <= '9') v = v * 10 + uint64_t(*c++ - '0');
  *p = c;
  *out = v;
  return true;
}

bool ToU64(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

// Value of "Key:  123 kB" lines.
bool KeyValue(std::string_view text, const char* key, uint64_t* out) {
  const size_t klen = std::strlen(key);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    if (text.compare(pos, klen, key) == 0 && pos + klen < text.size() && text[pos + klen] == ':') {
      const char* p = text.data() + pos + klen + 1;
      return NextU64(&p, text.data() + nl, out);
    }
    pos = nl + 1;
  }
  return false;
}

}  // namespace

bool ProcSelfStat(const std::string& text, ProcStat* out) {
  // The command name (field 2) may hold spaces and ')' itself: fields resume after the last ')'.
  size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream in(text.substr(close + 1));
  std::vector<std::string> f;  // f[0] = state (field 3)
  std::string w;
  while (in >> w) f.push_back(w);
  // Fields 10 minflt, 12 majflt, 14 utime, 15 stime -> indices 7, 9, 11, 12.
  if (f.size() < 13) return false;
  ProcStat p;
  if (!ToU64(f[7], &p.minflt) || !ToU64(f[9], &p.majflt) || !ToU64(f[11], &p.utime) ||
      !ToU64(f[12], &p.stime))
    return false;
  *out = p;
  return true;
}

bool ProcStatmResident(std::string_view text, uint64_t* pages) {
  const char* p = text.data();
  const char* end = p + text.size();
  uint64_t size;
  return NextU64(&p, end, &size) && NextU64(&p, end, pages);
}

bool ProcStatusMemory(std::string_view text, uint64_t* rss_bytes, uint64_t* hwm_bytes) {
  uint64_t rss = 0, hwm = 0;
  if (!KeyValue(text, "VmRSS", &rss)) return false;
  if (!KeyValue(text, "VmHWM", &hwm)) hwm = rss;
  *rss_bytes = rss * 1024;
  *hwm_bytes = hwm * 1024;
  return true;
}

bool ProcSelfIo(std::string_view text, ProcIo* out) {
  ProcIo io;
  if (!KeyValue(text, "rchar", &io.rchar) || !KeyValue(text, "wchar", &io.wchar)) return false;
  KeyValue(text, "read_bytes", &io.read_bytes);  // absent without task I/O accounting
  KeyValue(text, "write_bytes", &io.write_bytes);
  *out = io;
  return true;
}

bool ProcStatCpu(std::string_view text, uint64_t states[kCpuStates]) {
  if (text.compare(0, 4, "cpu ") != 0) return false;
  const char* p = text.data() + 4;
  const char* end = text.data() + text.size();
  uint64_t v[kCpuStates] = {};
  int n = 0;
  while (n < kCpuStates && NextU64(&p, end, &v[n])) ++n;
  if (n < 4) return false;  // very old kernels stop after idle
  std::memcpy(states, v, sizeof v);
  return true;
}

bool NetDevices(std::string_view text, std::vector<NetDev>* out) {
  const char* p = text.data();
  const char* end = p + text.size();
  size_t n_out = 0;
  bool any_header = false;
  while (p < end) {
    const char* eol = static_cast<const char*>(std::memchr(p, '\n', size_t(end - p)));
    if (!eol) eol = end;
    const char* colon = static_cast<const char*>(std::memchr(p, ':', size_t(eol - p)));
    if (!colon || std::memchr(p, '|', size_t(eol - p))) {
      any_header = true;
      p = eol + 1;
      continue;
    }
    const char* b = p;
    while (b < colon && *b == ' ') ++b;
    if (out->size() <= n_out) out->resize(n_out + 1);
    NetDev& d = (*out)[n_out];
    d.name.assign(b, size_t(colon - b));
    const char* f = colon + 1;
    uint64_t v[10] = {};
    int n = 0;
    while (n < 10 && NextU64(&f, eol, &v[n])) ++n;
    if (n < 10) return false;
    // Receive: bytes packets errs drop fifo frame compressed multicast; transmit: bytes packets.
    d.rx_bytes = v[0];
    d.rx_packets = v[1];
    d.tx_bytes = v[8];
    d.tx_packets = v[9];
    ++n_out;
    p = eol + 1;
  }
  if (!any_header) return false;
  out->resize(n_out);
  return true;
}

bool DiskStats(std::string_view text, std::vector<DiskStat>* out) {
  const char* p = text.data();
  const char* end = p + text.size();
  size_t n_out = 0;
  while (p < end) {
    const char* eol = static_cast<const char*>(std::memchr(p, '\n', size_t(end - p)));
    if (!eol) eol = end;
    uint64_t major, minor;
    const char* c = p;
    if (!NextU64(&c, eol, &major) || !NextU64(&c, eol, &minor)) {
      p = eol + 1;
      continue;
    }
    while (c < eol && *c == ' ') ++c;
    const char* name = c;
    while (c < eol && *c != ' ') ++c;
    if (out->size() <= n_out) out->resize(n_out + 1);
    DiskStat& d = (*out)[n_out];
    d.name.assign(name, size_t(c - name));
    uint64_t v[7];
    int n = 0;
    while (n < 7 && NextU64(&c, eol, &v[n])) ++n;
    if (n < 7) return false;
    // reads completed, reads merged, sectors read, ms reading, writes completed, merged, sectors
    d.reads = v[0];
    d.read_bytes = v[2] * 512;
    d.writes = v[4];
    d.write_bytes = v[6] * 512;
    ++n_out;
    p = eol + 1;
  }
  out->resize(n_out);
  return true;
}

bool CgroupCpuStatText(std::string_view text, CgroupCpuStat* out) {
  CgroupCpuStat s;
  bool any = false;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    const char* eol = static_cast<const char*>(std::memchr(p, '\n', size_t(end - p)));
    if (!eol) eol = end;
    const char* k = p;
    while (k < eol && *k != ' ') ++k;
    const std::string_view key(p, size_t(k - p));
    uint64_t v;
    if (NextU64(&k, eol, &v)) {
      any = true;
      if (key == "usage_usec")
        s.usage_ns = v * 1000, s.has_usage = true;
      else if (key == "user_usec")
        s.user_ns = v * 1000;
      else if (key == "system_usec")
        s.system_ns = v * 1000;
      else if (key == "nr_periods")
        s.nr_periods = v;
      else if (key == "nr_throttled")
        s.nr_throttled = v;
      else if (key == "throttled_usec")
        s.throttled_ns = v * 1000;
      else if (key == "throttled_time")
        s.throttled_ns = v;  // v1: nanoseconds
    }
    p = eol + 1;
  }
  if (!any) return false;
  *out = s;
  return true;
}

bool CgroupCpuMax(const std::string& text, int64_t* quota_us, int64_t* period_us) {
  std::istringstream in(text);
  std::string q;
  int64_t p = 0;
  if (!(in >> q >> p) || p <= 0) return false;
  if (q == "max") {
    *quota_us = -1;
  } else {
    char* end = nullptr;
    long long v = std::strtoll(q.c_str(), &end, 10);
    if (*end) return false;
    *quota_us = v;
  }
  *period_us = p;
  return true;
}

bool CgroupPath(const std::string& text, const std::string& controller, std::string* path,
                std::string* v1_mount_name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find(':');
    size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string ctrls = line.substr(a + 1, b - a - 1);
    const std::string p = line.substr(b + 1);
    if (controller.empty()) {
      if (line.compare(0, a, "0") == 0 && ctrls.empty()) {
        *path = p;
        return true;
      }
      continue;
    }
    std::istringstream cs(ctrls);
    std::string c;
    while (std::getline(cs, c, ','))
      if (c == controller) {
        *path = p;
        if (v1_mount_name) *v1_mount_name = ctrls;
        return true;
      }
  }
  return false;
}

}  // namespace invmw::sampler::parse
