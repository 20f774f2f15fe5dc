#include "callsites/callsite_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "common/raw_input.h"
#include "recording/callsite_live.h"

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

namespace {

// "PREFIX-NNNNNN.SUFFIX": at least 6 digits, no leading zero beyond them, rank <= 2^31-1.
bool ParseNumberedName(const std::string& name, const char* prefix, const char* suffix, int* rank) {
  if (name.size() < 15 || name.compare(0, 5, prefix) != 0 ||
      name.compare(name.size() - 4, 4, suffix) != 0)
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

}  // namespace

bool ParseRankFileName(const std::string& name, int* rank) {
  return ParseNumberedName(name, "rank-", ".txt", rank);
}

bool ParseLiveFileName(const std::string& name, int* rank) {
  return ParseNumberedName(name, "live-", ".bin", rank);
}

bool ParseLiveTables(uint64_t size, const ReadAt& read, LiveTables* out, std::string* error) {
  using recording::CallSiteCounters;
  using recording::CallSiteEntry;
  using recording::LiveSitesHeader;
  *out = LiveTables{};
  LiveSitesHeader h;
  if (size < sizeof h || !read(&h, sizeof h, 0)) {
    *error = "shorter than its header (" + std::to_string(size) + " bytes, header " +
             std::to_string(sizeof h) + ")";
    return false;
  }
  if (h.magic != recording::kLiveSitesMagic) {
    // The runtime stores the magic last, at the end of its MPI_Init.
    *error = "magic " + std::to_string(h.magic) +
             ": not a live call-site file, or its rank died inside MPI_Init";
    return false;
  }
  auto bad = [&](const std::string& field, uint64_t v, const std::string& want) {
    *error = "header field " + field + " = " + std::to_string(v) + ": expected " + want;
    return false;
  };
  if (h.version != recording::kLiveSitesVersion)
    return bad("version", h.version, std::to_string(recording::kLiveSitesVersion));
  if (h.header_size != sizeof h) return bad("header_size", h.header_size, std::to_string(sizeof h));
  if (h.entry_size != sizeof(CallSiteEntry))
    return bad("entry_size", h.entry_size, std::to_string(sizeof(CallSiteEntry)));
  if (h.counters_size != sizeof(CallSiteCounters))
    return bad("counters_size", h.counters_size, std::to_string(sizeof(CallSiteCounters)));
  if (h.num_funcs == 0 || h.num_funcs > 4096) return bad("num_funcs", h.num_funcs, "1..4096");
  if (h.capacity < 16 || h.capacity > (1u << 20) || (h.capacity & (h.capacity - 1)))
    return bad("capacity", h.capacity, "a power of two 16..1048576");
  if (h.slot_count > 4096) return bad("slot_count", h.slot_count, "at most 4096");
  if (h.slots_used > h.slot_count)
    return bad("slots_used", h.slots_used, "at most slot_count " + std::to_string(h.slot_count));
  if (h.rank < 0) return bad("rank", uint64_t(uint32_t(h.rank)), "a rank >= 0");
  if (h.depth < 1 || h.depth > uint32_t(kMaxDepth)) return bad("depth", h.depth, "1..8");
  const uint64_t entries_bytes = uint64_t(h.capacity) * sizeof(CallSiteEntry);
  const uint64_t table_bytes = entries_bytes + uint64_t(h.num_funcs) * sizeof(CallSiteCounters);
  if (h.names_offset < sizeof h || h.names_offset > size)
    return bad("names_offset", h.names_offset, "after the header, inside the file");
  if (h.slots_offset < h.names_offset + uint64_t(h.num_funcs) * 48 || h.slots_offset > size)
    return bad("slots_offset", h.slots_offset, "after the names, inside the file");
  if (h.slot_size < table_bytes || h.slot_size > (uint64_t(1) << 40))
    return bad("slot_size", h.slot_size, "at least " + std::to_string(table_bytes));
  if ((size - h.slots_offset) / h.slot_size < h.slots_used)
    return bad("slots_used", h.slots_used,
               "slots that fit in the file of " + std::to_string(size) + " bytes");
  std::vector<char> names(size_t(h.num_funcs) * 48);
  if (!read(names.data(), names.size(), h.names_offset)) {
    *error = "cannot read the function names";
    return false;
  }
  std::vector<std::string> fn(h.num_funcs);
  for (uint32_t f = 0; f < h.num_funcs; ++f) {
    const char* n = names.data() + 48 * size_t(f);
    fn[f].assign(n, strnlen(n, 48));
    if (fn[f].size() == 48 || !IsFunctionName(fn[f])) {
      *error = "function name " + std::to_string(f) + ": expected an MPI function name";
      return false;
    }
  }
  out->rank = h.rank;
  out->depth = int(h.depth);
  out->slots = h.slots_used;
  constexpr uint32_t kChunk = 4096;
  std::vector<CallSiteEntry> chunk(std::min<uint32_t>(kChunk, h.capacity));
  std::vector<CallSiteCounters> un(h.num_funcs);
  for (uint32_t t = 0; t < h.slots_used; ++t) {
    const uint64_t slot = h.slots_offset + uint64_t(t) * h.slot_size;
    for (uint32_t at = 0; at < h.capacity; at += kChunk) {
      const uint32_t n = std::min(kChunk, h.capacity - at);
      if (!read(chunk.data(), size_t(n) * sizeof(CallSiteEntry),
                slot + uint64_t(at) * sizeof(CallSiteEntry))) {
        *error = "cannot read the entries of thread slot " + std::to_string(t);
        return false;
      }
      for (uint32_t i = 0; i < n; ++i) {
        const CallSiteEntry& e = chunk[i];
        if (e.func1 == 0) continue;  // free (perhaps being filled when the rank was killed)
        if (e.func1 > h.num_funcs || e.depth == 0 || e.depth > h.depth) {
          ++out->damaged;
          continue;
        }
        if (e.c.calls == 0) continue;  // taken by the call a kill interrupted, not counted yet
        SiteRow row{fn[e.func1 - 1],
                    {e.c.calls, e.c.ticks, e.c.max_ticks, e.c.bytes_sent, e.c.bytes_recv},
                    std::vector<uint64_t>(e.pcs, e.pcs + e.depth)};
        out->sites.push_back(std::move(row));
      }
    }
    if (!read(un.data(), un.size() * sizeof(CallSiteCounters), slot + entries_bytes)) {
      *error = "cannot read the unattributed rows of thread slot " + std::to_string(t);
      return false;
    }
    for (uint32_t f = 0; f < h.num_funcs; ++f) {
      const CallSiteCounters& c = un[f];
      if (c.calls == 0) continue;
      out->unattributed.push_back(
          {fn[f], {c.calls, c.ticks, c.max_ticks, c.bytes_sent, c.bytes_recv}});
      out->unattributed_calls += c.calls;
    }
  }
  return true;
}

bool ReadLiveTables(const std::string& path, LiveTables* out, std::string* error) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    *error = path + ": not a regular file";
    return false;
  }
  auto read_at = [fd](void* buf, size_t n, uint64_t at) { return rawio::ReadAt(fd, buf, n, at); };
  std::string err;
  const bool ok = ParseLiveTables(uint64_t(st.st_size), read_at, out, &err);
  close(fd);
  if (!ok) *error = path + ": " + err;
  return ok;
}

}  // namespace invmw::callsites
