#include "callsites/resolve.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace invmw::callsites {

namespace {

std::string Hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
  return b;
}

std::string Demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string s(d);
  std::free(d);
  return s;
}

std::string BuildIdHex(Dwfl_Module* m) {
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  const int n = dwfl_module_build_id(m, &bits, &vaddr);
  std::string s;
  for (int i = 0; i < n; ++i) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", bits[i]);
    s += b;
  }
  return s;
}

// A relative source name made absolute with its compilation unit's directory, "." and ".."
// removed lexically (file names as the compiler saw them, not as they are now).
std::string SourcePath(const char* file, Dwfl_Line* l) {
  std::string f = file;
  if (f.empty() || f[0] == '/') return f;
  Dwarf_Die* cu = dwfl_linecu(l);
  Dwarf_Attribute a;
  const char* dir = cu ? dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a)) : nullptr;
  if (!dir || dir[0] != '/') return f;
  std::vector<std::string> parts;
  const std::string joined = std::string(dir) + "/" + f;
  size_t at = 0;
  while (at <= joined.size()) {
    size_t e = joined.find('/', at);
    if (e == std::string::npos) e = joined.size();
    const std::string p = joined.substr(at, e - at);
    if (p == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!p.empty() && p != ".") {
      parts.push_back(p);
    }
    at = e + 1;
  }
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

}  // namespace

std::string Frame::Label() const {
  if (!file.empty() && line > 0) return file + ":" + std::to_string(line);
  if (!function.empty()) return function + "+" + Hex(function_offset);
  if (!object.empty()) return object + "+" + Hex(offset);
  return "unknown";
}

struct Resolver::Object {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* mod = nullptr;
  bool exec = false;  // ET_EXEC: addresses are absolute
  uint64_t low = 0;   // the module's start as reported (base 0)
  bool dwarf = false;
  bool usable = false;
  ~Object() {
    if (dwfl) dwfl_end(dwfl);
  }
};

Resolver::Resolver() = default;
Resolver::~Resolver() = default;

Resolver::Object* Resolver::Open(const std::string& path, const std::string& build_id) {
  auto key = std::make_pair(path, build_id);
  auto it = objects_.find(key);
  if (it != objects_.end()) return it->second.get();
  auto o = std::make_unique<Object>();
  static char* debuginfo_path = nullptr;
  static const Dwfl_Callbacks callbacks = {dwfl_build_id_find_elf, dwfl_standard_find_debuginfo,
                                           dwfl_offline_section_address, &debuginfo_path};
  o->dwfl = dwfl_begin(&callbacks);
  if (o->dwfl) {
    dwfl_report_begin(o->dwfl);
    o->mod = dwfl_report_elf(o->dwfl, path.c_str(), path.c_str(), -1, 0, false);
    dwfl_report_end(o->dwfl, nullptr, nullptr);
  }
  if (!o->mod) {
    notes_.push_back(path + ": cannot be opened (" + dwfl_errmsg(-1) +
                     "); its call sites are given as object+offset");
  } else {
    const std::string now = BuildIdHex(o->mod);
    if (!build_id.empty() && now != build_id) {
      notes_.push_back(path + ": build id " + (now.empty() ? "none" : now) +
                       " differs from the run's " + build_id +
                       " (rebuilt since); its call sites are given as object+offset");
    } else {
      o->usable = true;
      Dwarf_Addr bias = 0;
      Elf* elf = dwfl_module_getelf(o->mod, &bias);
      GElf_Ehdr eh;
      if (elf && gelf_getehdr(elf, &eh)) o->exec = eh.e_type == ET_EXEC;
      Dwarf_Addr start = 0;
      dwfl_module_info(o->mod, nullptr, &start, nullptr, nullptr, nullptr, nullptr, nullptr);
      o->low = start;
      o->dwarf = dwfl_module_getdwarf(o->mod, &bias) != nullptr;
      if (!o->dwarf)
        notes_.push_back(path +
                         ": no debug information; its call sites are given as "
                         "symbol+offset (build with -g, or install its -dbgsym package)");
    }
  }
  Object* raw = o.get();
  objects_[key] = std::move(o);
  return raw;
}

Frame Resolver::Resolve(const RankFile& f, uint64_t pc) {
  Frame fr;
  fr.how = "unknown";
  const Mapping* m = nullptr;
  // The latest snapshot that maps pc: an object loaded, unloaded and replaced by another at the
  // same address is resolved with the mapping the call most likely saw.
  for (auto s = f.snapshots.rbegin(); s != f.snapshots.rend() && !m; ++s)
    for (const Mapping& x : s->maps)
      if (pc >= x.start && pc < x.end) {
        m = &x;
        break;
      }
  if (!m) return fr;
  fr.object = m->path;
  const uint64_t base = m->base ? m->base : m->start - m->offset;
  fr.offset = pc - base;
  fr.how = "object";
  Object* o = Open(m->path, m->build_id);
  if (!o->usable) return fr;
  const uint64_t addr = o->exec ? pc : pc - base + o->low;
  // The call instruction ends just before the return address: look up the byte before it.
  GElf_Off off = 0;
  GElf_Sym sym;
  const char* name = dwfl_module_addrinfo(o->mod, addr - 1, &off, &sym, nullptr, nullptr, nullptr);
  if (name) {
    fr.function = Demangle(name);
    fr.function_offset = off + 1;
    fr.how = "symbol";
  }
  if (o->dwarf) {
    if (Dwfl_Line* l = dwfl_module_getsrc(o->mod, addr - 1)) {
      int line = 0;
      const char* file = dwfl_lineinfo(l, nullptr, &line, nullptr, nullptr, nullptr);
      if (file && line > 0) {
        fr.file = SourcePath(file, l);
        fr.line = line;
        fr.how = "line";
      }
    }
  }
  return fr;
}

}  // namespace invmw::callsites
