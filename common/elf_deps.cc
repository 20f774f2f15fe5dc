#include "common/elf_deps.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <set>

#include "common/raw_input.h"

namespace invmw::elf {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the ELF reader reads little-endian files in host order");

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// off + len <= size without overflow.
bool Inside(uint64_t off, uint64_t len, uint64_t size) {
  return off <= size && len <= size - off;
}

DynamicInfo Fail(DynamicInfo d, Kind k, const std::string& why) {
  d.kind = k;
  d.error = why;
  d.needed.clear();
  d.rpath.clear();
  d.runpath.clear();
  return d;
}

}  // namespace

DynamicInfo ReadDynamic(const std::string& path) {
  DynamicInfo d;
  // O_NONBLOCK: opening a FIFO someone named as the program must not hang.
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (fd.get() < 0) return Fail(d, Kind::kUnreadable, path + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(fd.get(), &st) != 0)
    return Fail(d, Kind::kUnreadable, path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Fail(d, Kind::kUnreadable, path + ": not a regular file");
  const uint64_t size = uint64_t(st.st_size);
  unsigned char ident[EI_NIDENT] = {0};
  const size_t head = size < EI_NIDENT ? size_t(size) : size_t(EI_NIDENT);
  if (!rawio::ReadAt(fd.get(), ident, head, 0))
    return Fail(d, Kind::kUnreadable, path + ": cannot read");
  if (head < SELFMAG || std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    d.kind = Kind::kNotElf;
    return d;
  }
  if (head < EI_NIDENT || ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB)
    return Fail(d, Kind::kUnsupported, path + ": not a 64-bit little-endian ELF file");
  Elf64_Ehdr eh;
  if (!Inside(0, sizeof eh, size) || !rawio::ReadAt(fd.get(), &eh, sizeof eh, 0))
    return Fail(d, Kind::kMalformed, path + ": truncated ELF header");
  d.machine = eh.e_machine;
  if (eh.e_phnum == 0) {
    d.kind = Kind::kStatic;  // nothing to load: an object file, say
    return d;
  }
  if (eh.e_phentsize < sizeof(Elf64_Phdr) || eh.e_phnum == PN_XNUM ||
      eh.e_phnum > kMaxProgramHeaders ||
      !Inside(eh.e_phoff, uint64_t(eh.e_phnum) * eh.e_phentsize, size))
    return Fail(d, Kind::kMalformed, path + ": program headers outside the file");
  std::vector<Elf64_Phdr> loads;
  Elf64_Phdr dyn{};
  bool has_dyn = false;
  for (uint64_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!rawio::ReadAt(fd.get(), &ph, sizeof ph, eh.e_phoff + i * eh.e_phentsize))
      return Fail(d, Kind::kUnreadable, path + ": cannot read program headers");
    if (ph.p_type == PT_LOAD) loads.push_back(ph);
    if (ph.p_type == PT_DYNAMIC && !has_dyn) dyn = ph, has_dyn = true;
  }
  if (!has_dyn) {
    d.kind = Kind::kStatic;
    return d;
  }
  if (!Inside(dyn.p_offset, dyn.p_filesz, size))
    return Fail(d, Kind::kMalformed, path + ": dynamic section outside the file");
  const uint64_t count = dyn.p_filesz / sizeof(Elf64_Dyn);
  if (count > kMaxDynamicEntries)
    return Fail(d, Kind::kMalformed, path + ": dynamic section too large");
  std::vector<Elf64_Dyn> entries(count);
  if (count && !rawio::ReadAt(fd.get(), entries.data(), count * sizeof(Elf64_Dyn), dyn.p_offset))
    return Fail(d, Kind::kUnreadable, path + ": cannot read the dynamic section");
  uint64_t strtab = 0, strsz = 0;
  bool has_strtab = false;
  std::vector<uint64_t> needed;
  int64_t rpath = -1, runpath = -1;
  for (const Elf64_Dyn& e : entries) {
    if (e.d_tag == DT_NULL) break;
    switch (e.d_tag) {
      case DT_NEEDED:
        needed.push_back(e.d_un.d_val);
        break;
      case DT_STRTAB:
        strtab = e.d_un.d_ptr;
        has_strtab = true;
        break;
      case DT_STRSZ:
        strsz = e.d_un.d_val;
        break;
      case DT_RPATH:
        rpath = int64_t(e.d_un.d_val & 0x7fffffffffffffffull);
        break;
      case DT_RUNPATH:
        runpath = int64_t(e.d_un.d_val & 0x7fffffffffffffffull);
        break;
      default:
        break;
    }
  }
  d.kind = Kind::kDynamic;
  if (needed.empty() && rpath < 0 && runpath < 0) return d;
  if (!has_strtab) return Fail(d, Kind::kMalformed, path + ": DT_NEEDED without DT_STRTAB");
  if (strsz > kMaxStringTable)
    return Fail(d, Kind::kMalformed, path + ": dynamic string table too large");
  // DT_STRTAB is an address: the segment that loads it says where it lies in the file.
  uint64_t off = 0, avail = 0;
  bool mapped = false;
  for (const Elf64_Phdr& ph : loads)
    if (strtab >= ph.p_vaddr && strtab - ph.p_vaddr < ph.p_filesz) {
      off = ph.p_offset + (strtab - ph.p_vaddr);
      avail = ph.p_filesz - (strtab - ph.p_vaddr);
      mapped = off >= ph.p_offset;  // no wrap-around
      break;
    }
  if (!mapped || strsz > avail || !Inside(off, strsz, size))
    return Fail(d, Kind::kMalformed, path + ": dynamic string table outside the file");
  std::string table(size_t(strsz), '\0');
  if (strsz && !rawio::ReadAt(fd.get(), &table[0], table.size(), off))
    return Fail(d, Kind::kUnreadable, path + ": cannot read the dynamic string table");
  bool ok = true;
  auto str = [&](uint64_t at) {
    if (at >= table.size()) {
      ok = false;
      return std::string();
    }
    const void* nul = std::memchr(table.data() + at, '\0', table.size() - at);
    if (!nul) {
      ok = false;
      return std::string();
    }
    return std::string(table.data() + at, static_cast<const char*>(nul) - (table.data() + at));
  };
  for (uint64_t n : needed) d.needed.push_back(str(n));
  if (rpath >= 0) d.rpath = str(uint64_t(rpath));
  if (runpath >= 0) d.runpath = str(uint64_t(runpath));
  if (!ok) return Fail(d, Kind::kMalformed, path + ": string offset outside the string table");
  return d;
}

namespace {

std::string Dirname(const std::string& p) {
  const size_t s = p.rfind('/');
  if (s == std::string::npos) return ".";
  return s == 0 ? "/" : p.substr(0, s);
}

// A search list as ld.so reads it: ':'-separated, $ORIGIN (or ${ORIGIN}) the object's directory.
void AppendPathList(const std::string& list, const std::string& origin,
                    std::vector<std::string>* out) {
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t end = list.find_first_of(":;", pos);
    if (end == std::string::npos) end = list.size();
    std::string dir = list.substr(pos, end - pos);
    for (const char* token : {"${ORIGIN}", "$ORIGIN"})
      for (size_t at; (at = dir.find(token)) != std::string::npos;)
        dir.replace(at, std::strlen(token), origin);
    if (!dir.empty()) out->push_back(dir);
    pos = end + 1;
  }
}

void ReadLdSoConf(const std::string& file, int depth, std::vector<std::string>* out) {
  if (depth > 8) return;  // an include cycle
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    line = line.substr(b, line.find_last_not_of(" \t\r") - b + 1);
    if (line.rfind("include", 0) == 0 && line.size() > 7 && (line[7] == ' ' || line[7] == '\t')) {
      std::string pattern = line.substr(line.find_first_not_of(" \t", 7));
      if (pattern[0] != '/') pattern = Dirname(file) + "/" + pattern;
      glob_t g{};
      if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i) ReadLdSoConf(g.gl_pathv[i], depth + 1, out);
      globfree(&g);
    } else if (line[0] == '/') {
      out->push_back(line.substr(0, line.find_first_of(" \t")));
    }
  }
}

const std::vector<std::string>& SystemDirs() {
  static const std::vector<std::string> dirs = [] {
    std::vector<std::string> d;
    ReadLdSoConf("/etc/ld.so.conf", 0, &d);
    for (const char* s : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
                          "/usr/lib64", "/lib", "/usr/lib"})
      d.push_back(s);
    return d;
  }();
  return dirs;
}

}  // namespace

std::vector<Dependency> ResolveDependencies(const std::string& path, DynamicInfo* self,
                                            size_t max_objects) {
  std::vector<Dependency> out;
  std::map<std::string, DynamicInfo> cache;
  auto info = [&](const std::string& p) -> const DynamicInfo& {
    auto it = cache.find(p);
    if (it == cache.end()) it = cache.emplace(p, ReadDynamic(p)).first;
    return it->second;
  };
  const DynamicInfo& exe = info(path);
  if (self) *self = exe;
  if (exe.kind != Kind::kDynamic) return out;
  std::vector<std::string> env_dirs;
  if (const char* e = std::getenv("LD_LIBRARY_PATH"); e && *e) AppendPathList(e, ".", &env_dirs);
  // ld.so also searches the executable's DT_RPATH for every object without a DT_RUNPATH.
  std::vector<std::string> exe_rpath;
  if (exe.runpath.empty()) AppendPathList(exe.rpath, Dirname(path), &exe_rpath);

  struct Item {
    std::string loader;  // path of the object that needs it
    std::string name;
  };
  std::deque<Item> queue;
  std::set<std::string> seen;
  for (const auto& n : exe.needed) queue.push_back({path, n});
  while (!queue.empty() && out.size() < max_objects) {
    Item it = queue.front();
    queue.pop_front();
    if (it.name.empty() || !seen.insert(it.name).second) continue;
    const DynamicInfo& loader = info(it.loader);
    std::vector<std::string> candidates;
    if (it.name.find('/') != std::string::npos) {
      candidates.push_back(it.name);
    } else {
      std::vector<std::string> dirs;
      const std::string origin = Dirname(it.loader);
      if (loader.runpath.empty()) {
        AppendPathList(loader.rpath, origin, &dirs);
        dirs.insert(dirs.end(), exe_rpath.begin(), exe_rpath.end());
      }
      dirs.insert(dirs.end(), env_dirs.begin(), env_dirs.end());
      AppendPathList(loader.runpath, origin, &dirs);
      dirs.insert(dirs.end(), SystemDirs().begin(), SystemDirs().end());
      for (const auto& dir : dirs) candidates.push_back(dir + "/" + it.name);
    }
    Dependency dep{it.name, ""};
    for (const auto& c : candidates) {
      if (access(c.c_str(), F_OK) != 0) continue;
      const DynamicInfo& di = info(c);
      // A library of another class or machine (a 32-bit one in /lib32) is skipped.
      if ((di.kind == Kind::kDynamic || di.kind == Kind::kStatic) && di.machine == exe.machine) {
        dep.path = c;
        break;
      }
    }
    if (!dep.path.empty())
      for (const auto& n : info(dep.path).needed) queue.push_back({dep.path, n});
    out.push_back(std::move(dep));
  }
  return out;
}

}  // namespace invmw::elf
