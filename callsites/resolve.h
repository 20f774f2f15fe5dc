// Return addresses of a rank to function, file and line, offline, with elfutils' libdwfl: each
// address is placed in the object the rank had mapped there (its recorded mappings), the object
// file is opened from its recorded path and its build id compared with the recorded one, and
// the call instruction (the address minus one) is looked up in its DWARF line table; without
// debug information (also none under /usr/lib/debug), the nearest symbol and the offset of the
// return address from it; when the object is gone or was rebuilt, only the object and offset.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "callsites/callsite_file.h"

namespace invmw::callsites {

struct Frame {
  std::string object;    // the object's path ("" when no recorded mapping holds the address)
  uint64_t offset = 0;   // return address relative to the object's load address
  std::string function;  // symbol (demangled), "" when none
  uint64_t function_offset = 0;
  std::string file;  // source file, "" without debug information
  int line = 0;
  std::string how;  // "line", "symbol", "object" or "unknown"
  // One text for tables and as the key that merges ranks: file:line, else symbol+0xoff, else
  // object+0xoff.
  std::string Label() const;
};

class Resolver {
 public:
  Resolver();
  ~Resolver();
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  // Resolves pc as recorded by rank file f. Notes about objects (no debug information, build
  // id differs, file missing) are collected once per object in notes().
  Frame Resolve(const RankFile& f, uint64_t pc);
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct Object;
  Object* Open(const std::string& path, const std::string& build_id);
  std::map<std::pair<std::string, std::string>, std::unique_ptr<Object>> objects_;
  std::vector<std::string> notes_;
};

}  // namespace invmw::callsites
