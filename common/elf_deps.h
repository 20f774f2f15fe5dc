// The shared libraries an executable needs, read from its ELF dynamic section (DT_NEEDED) and
// resolved the way the dynamic loader searches, without running anything.
//
// Why not ldd: ldd runs the program's own interpreter on it (and, for some binaries, the program
// itself), and calling it through a shell turned the file name into shell syntax. Reading the
// file is enough to tell which MPI (or PVM) library a program uses.
//
// The parser trusts nothing in the file: every offset and size is checked against the file's
// length and bounded (ELF64 little-endian only; anything else, a script, or garbage is reported
// as such, never a crash).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace invmw::elf {

enum class Kind {
  kDynamic,      // ELF64 with a dynamic section (needed, rpath, runpath are filled in)
  kStatic,       // ELF64 without a dynamic section
  kNotElf,       // no ELF magic: a script, text, data
  kUnsupported,  // ELF, but not ELF64 little-endian
  kMalformed,    // ELF64 whose headers or dynamic section lie outside the file
  kUnreadable,   // cannot be opened or read (error says why), or not a regular file
};

struct DynamicInfo {
  Kind kind = Kind::kUnreadable;
  std::string error;  // for kMalformed and kUnreadable
  uint16_t machine = 0;
  std::vector<std::string> needed;  // DT_NEEDED in file order
  std::string rpath, runpath;       // DT_RPATH, DT_RUNPATH as written (":"-separated)
};

// Limits of what is read from one file (a larger count is kMalformed).
constexpr size_t kMaxProgramHeaders = 4096;
constexpr size_t kMaxDynamicEntries = 65536;
constexpr size_t kMaxStringTable = size_t(16) << 20;

DynamicInfo ReadDynamic(const std::string& path);

struct Dependency {
  std::string name;  // as in DT_NEEDED
  std::string path;  // where it was found; empty when not found
};

// The transitive dependencies of `path` in breadth-first order, each name once, at most
// `max_objects` of them. Search order per object as ld.so: DT_RPATH (when there is no
// DT_RUNPATH; $ORIGIN expanded), LD_LIBRARY_PATH, DT_RUNPATH, the directories of
// /etc/ld.so.conf (with its includes), then /lib and /usr/lib (and their 64-bit and multiarch
// variants). A candidate of another ELF class or machine is skipped, as the loader does.
// Returns the program's own DynamicInfo in *self when given.
std::vector<Dependency> ResolveDependencies(const std::string& path, DynamicInfo* self = nullptr,
                                            size_t max_objects = 512);

}  // namespace invmw::elf
