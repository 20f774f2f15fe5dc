#include "callsites/callsite_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace invmw::callsites {
namespace {

constexpr uint64_t kMaxFileBytes = 256ull << 20;

// Splits off the next space-separated word of s starting at *pos.
bool Word(const std::string& s, size_t* pos, std::string* w) {
  while (*pos < s.size() && s[*pos] == ' ') ++*pos;
  if (*pos >= s.size()) return false;
  size_t e = s.find(' ', *pos);
  if (e == std::string::npos) e = s.size();
  *w = s.substr(*pos, e - *pos);
  *pos = e;
  return true;
}

bool ParseU64(const std::string& w, int base, uint64_t* v) {
  if (w.empty() || w.size() > 20 || w[0] == '-' || w[0] == '+' || w[0] == ' ') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long x = std::strtoull(w.c_str(), &end, base);
  if (errno || *end) return false;
  *v = x;
  return true;
}

bool IsHex(const std::string& w) {
  if (w.empty() || w.size() > 128 || w.size() % 2) return false;
  for (char c : w)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool IsFunctionName(const std::string& w) {
  if (w.size() < 5 || w.size() > 64 || w.compare(0, 4, "MPI_") != 0) return false;
  for (char c : w)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace

bool ParseRankFile(const std::string& text, RankFile* out, std::string* error) {
  *out = RankFile{};
  size_t at = 0;
  int lineno = 0;
  bool in_maps = false, header = false, ended = false;
  int32_t thread = -1;  // the table the following site rows belong to (format 2)
  auto fail = [&](const std::string& m) {
    *error = "line " + std::to_string(lineno) + ": " + m;
    return false;
  };
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) {
      // A last line without its newline: the writer was cut off there; ignore it.
      break;
    }
    const std::string line = text.substr(at, nl - at);
    at = nl + 1;
    ++lineno;
    if (ended) return fail("text after the \"end\" line");
    size_t pos = 0;
    std::string key, w;
    if (!Word(line, &pos, &key)) return fail("empty line");
    if (!header) {
      // Format 2 adds "thread" lines and the slots of site rows (for the trace).
      if (key != "invmw-callsites" || !Word(line, &pos, &w) || (w != "1" && w != "2") ||
          Word(line, &pos, &w))
        return fail("expected \"invmw-callsites 1\" or \"invmw-callsites 2\" (a call-site file)");
      header = true;
      continue;
    }
    if (in_maps) {
      if (key == "end-maps") {
        in_maps = false;
        continue;
      }
      if (key != "m") return fail("expected an \"m\" mapping line or \"end-maps\"");
      Mapping m;
      const char* fields[] = {"start", "end", "offset", "base"};
      uint64_t* vals[] = {&m.start, &m.end, &m.offset, &m.base};
      for (int i = 0; i < 4; ++i)
        if (!Word(line, &pos, &w) || !ParseU64(w, 16, vals[i]))
          return fail(std::string("mapping field ") + fields[i] + ": expected a hex address");
      if (m.end <= m.start) return fail("mapping end: must be above its start");
      if (!Word(line, &pos, &w) || (w != "-" && !IsHex(w)))
        return fail("mapping build id: expected hex digits or -");
      if (w != "-") m.build_id = w;
      while (pos < line.size() && line[pos] == ' ') ++pos;
      m.path = line.substr(pos);
      if (m.path.empty() || m.path[0] != '/')
        return fail("mapping path: expected an absolute path");
      out->snapshots.back().maps.push_back(std::move(m));
      continue;
    }
    if (key == "rank" || key == "depth") {
      uint64_t v;
      if (!Word(line, &pos, &w) || !ParseU64(w, 10, &v) || v > (key == "rank" ? 0x7fffffffu : 8u) ||
          Word(line, &pos, &w))
        return fail(key + ": expected " + (key == "rank" ? "a rank" : "a depth 0..8"));
      (key == "rank" ? out->rank : out->depth) = int(v);
    } else if (key == "ticks_per_second") {
      char* end = nullptr;
      if (!Word(line, &pos, &w)) return fail("ticks_per_second: expected a number");
      double v = std::strtod(w.c_str(), &end);
      if (*end || !std::isfinite(v) || v < 1e3 || v > 1e13)
        return fail("ticks_per_second: expected a rate between 1e3 and 1e13");
      out->ticks_per_second = v;
    } else if (key == "maps") {
      if (!Word(line, &pos, &w) || (w != "init" && w != "finalize" && w != "new-object"))
        return fail("maps: expected init, finalize or new-object");
      if (out->snapshots.size() >= 10000) return fail("maps: more than 10000 snapshots");
      out->snapshots.push_back(Snapshot{w, {}});
      in_maps = true;
    } else if (key == "site" || key == "unattributed") {
      std::string fn;
      if (!Word(line, &pos, &fn) || !IsFunctionName(fn))
        return fail(key + " function: expected an MPI function name");
      Counters c;
      const char* fields[] = {"calls", "ticks", "max_ticks", "bytes_sent", "bytes_recv"};
      uint64_t* vals[] = {&c.calls, &c.ticks, &c.max_ticks, &c.bytes_sent, &c.bytes_recv};
      for (int i = 0; i < 5; ++i)
        if (!Word(line, &pos, &w) || !ParseU64(w, 10, vals[i]))
          return fail(key + " " + fields[i] + ": expected an unsigned integer");
      if (key == "unattributed") {
        if (Word(line, &pos, &w)) return fail("unattributed: unexpected field after bytes_recv");
        out->unattributed.push_back({fn, c});
        continue;
      }
      if (!Word(line, &pos, &w)) return fail("site addresses: expected hex addresses");
      SiteRow row{fn, c, {}};
      size_t p = 0;
      while (p <= w.size()) {
        size_t e = w.find(',', p);
        if (e == std::string::npos) e = w.size();
        uint64_t a;
        if (!ParseU64(w.substr(p, e - p), 16, &a))
          return fail("site addresses: expected comma-separated hex addresses");
        row.pcs.push_back(a);
        if (row.pcs.size() > size_t(kMaxDepth)) return fail("site addresses: more than 8 frames");
        p = e + 1;
      }
      if (Word(line, &pos, &w)) {
        uint64_t slot;
        if (w.size() < 2 || w[0] != '@' || !ParseU64(w.substr(1), 10, &slot) || slot >= (1u << 20))
          return fail("site slot: expected @ and a table slot below 1048576");
        row.thread = thread;
        row.slot = int32_t(slot);
        if (Word(line, &pos, &w)) return fail("site: unexpected field after the slot");
      }
      out->sites.push_back(std::move(row));
    } else if (key == "thread") {
      uint64_t v;
      if (!Word(line, &pos, &w) || !ParseU64(w, 10, &v) || v > 999 || Word(line, &pos, &w))
        return fail("thread: expected a thread index 0..999");
      thread = int32_t(v);
    } else if (key == "end") {
      uint64_t v;
      if (!Word(line, &pos, &w) || !ParseU64(w, 10, &v) || Word(line, &pos, &w))
        return fail("end: expected the unattributed call count");
      out->unattributed_calls = v;
      out->complete = true;
      ended = true;
    } else {
      return fail("unknown line \"" + key.substr(0, 40) + "\"");
    }
  }
  if (!header) {
    lineno = 1;
    return fail("expected \"invmw-callsites 1\" (empty file)");
  }
  if (out->rank < 0) return fail("no \"rank\" line");
  if (out->ticks_per_second <= 0) return fail("no \"ticks_per_second\" line");
  return true;
}

bool ReadRankFile(const std::string& path, RankFile* out, std::string* error) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || uint64_t(st.st_size) > kMaxFileBytes) {
    close(fd);
    *error = path + ": not a regular file of at most 256 MiB";
    return false;
  }
  std::string text(size_t(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t r = read(fd, &text[got], text.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += size_t(r);
  }
  close(fd);
  text.resize(got);
  std::string err;
  if (!ParseRankFile(text, out, &err)) {
    *error = path + ": " + err;
    return false;
  }
  return true;
}

bool ParseRankFileName(const std::string& name, int* rank) {
  if (name.size() < 15 || name.compare(0, 5, "rank-") != 0 ||
      name.compare(name.size() - 4, 4, ".txt") != 0)
    return false;
  const std::string digits = name.substr(5, name.size() - 9);
  if (digits.size() < 6 || digits.size() > 10 || (digits.size() > 6 && digits[0] == '0'))
    return false;
  uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');
  }
  if (v > 0x7fffffff) return false;
  *rank = int(v);
  return true;
}

}  // namespace invmw::callsites
