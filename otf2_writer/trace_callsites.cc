#include "otf2_writer/trace_callsites.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace invmw::otf2 {

namespace {

struct Map {
  uint64_t start, end, offset, base;
  std::string path;
};

bool Hex(const std::string& w, uint64_t* v) {
  if (w.empty() || w.size() > 16) return false;
  char* end = nullptr;
  *v = std::strtoull(w.c_str(), &end, 16);
  return *end == 0;
}

// The object and offset of pc in the last snapshot that maps it: what the finish step resolves
// too (the same function names both ends).
std::string Label(const std::vector<std::vector<Map>>& snaps, uint64_t pc) {
  for (auto s = snaps.rbegin(); s != snaps.rend(); ++s)
    for (const Map& m : *s)
      if (pc >= m.start && pc < m.end) {
        const uint64_t off = m.base ? pc - m.base : pc - m.start + m.offset;
        const size_t slash = m.path.rfind('/');
        char buf[32];
        std::snprintf(buf, sizeof buf, "+0x%" PRIx64, off);
        return m.path.substr(slash == std::string::npos ? 0 : slash + 1) + buf;
      }
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, pc);
  return buf;
}

}  // namespace

bool ParseTraceSites(const std::string& text, const std::string& path, RankTraceSites* out,
                     std::vector<std::string>* problems) {
  std::vector<std::vector<Map>> snaps;
  struct Row {
    int32_t thread;
    uint32_t slot;
    uint64_t pc;
  };
  std::vector<Row> rows;
  int32_t thread = -1;
  bool in_maps = false;
  size_t at = 0, lineno = 0;
  auto bad = [&](const std::string& what) {
    problems->push_back(path + ": line " + std::to_string(lineno) + ": " + what +
                        "; the trace has no calling contexts for this rank");
    return false;
  };
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    if (nl == std::string::npos) break;  // a line cut off by the end of the run
    std::istringstream line(text.substr(at, nl - at));
    at = nl + 1;
    ++lineno;
    std::string key;
    line >> key;
    if (in_maps) {
      if (key == "end-maps") {
        in_maps = false;
      } else if (key == "m") {
        std::string a[5];
        Map m{};
        line >> a[0] >> a[1] >> a[2] >> a[3] >> a[4];
        if (!Hex(a[0], &m.start) || !Hex(a[1], &m.end) || !Hex(a[2], &m.offset) ||
            !Hex(a[3], &m.base))
          return bad("mapping: expected hex start, end, offset and base");
        std::getline(line >> std::ws, m.path);
        snaps.back().push_back(std::move(m));
      }
      continue;
    }
    if (key == "maps") {
      snaps.emplace_back();
      in_maps = true;
    } else if (key == "thread") {
      if (!(line >> thread) || thread < 0 || thread > 999)
        return bad("thread: expected a thread index 0..999");
    } else if (key == "site") {
      std::string w, pcs, slot;
      for (int i = 0; i < 6; ++i) line >> w;  // function and the five counters
      line >> pcs >> slot;
      if (slot.empty()) continue;  // format 1: no slot
      uint64_t pc;
      char* end = nullptr;
      const unsigned long s = std::strtoul(slot.c_str() + 1, &end, 10);
      if (thread < 0 || slot[0] != '@' || *end || s >= (1u << 20) ||
          !Hex(pcs.substr(0, pcs.find(',')), &pc))
        return bad("site: expected addresses and @slot after a thread line");
      rows.push_back({thread, uint32_t(s), pc});
    }
  }
  std::map<std::string, uint32_t> index;
  for (const Row& r : rows) {
    const std::string label = Label(snaps, r.pc);
    auto [it, added] = index.emplace(label, uint32_t(out->labels.size()));
    if (added) {
      out->labels.push_back(label);
      out->pcs.push_back(r.pc);
    }
    out->site_of[{r.thread, r.slot}] = it->second;
  }
  return !rows.empty();
}

bool LoadTraceSites(const std::string& run_dir, int32_t rank, RankTraceSites* out,
                    std::vector<std::string>* problems) {
  char name[64];
  std::snprintf(name, sizeof name, "/callsites/rank-%06d.txt", int(rank));
  const std::string path = run_dir + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > (256u << 20)) {
    problems->push_back(path + ": larger than 256 MiB; the trace has no calling contexts for it");
    return false;
  }
  return ParseTraceSites(text.str(), "callsites" + std::string(name), out, problems);
}

}  // namespace invmw::otf2
