#include "otf2_writer/callsite_names.h"

#include <otf2/otf2.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "otf2_writer/otf2_open.h"
#include "otf2_writer/trace_callsites.h"

namespace invmw::otf2 {

namespace {

// Pass 1: what the contexts refer to.
struct Scan {
  std::unordered_map<OTF2_StringRef, std::string> strings;
  std::unordered_map<OTF2_RegionRef, std::pair<OTF2_StringRef, OTF2_StringRef>> regions;
  std::unordered_map<OTF2_SourceCodeLocationRef, OTF2_StringRef> scl_file;
  std::vector<std::tuple<OTF2_CallingContextRef, OTF2_RegionRef, OTF2_SourceCodeLocationRef>> ccs;
};

// Pass 2: the copy, with these substitutions.
struct Copy {
  OTF2_GlobalDefWriter* w = nullptr;
  std::unordered_map<OTF2_StringRef, std::string> strings;
  std::unordered_map<OTF2_SourceCodeLocationRef, uint32_t> lines;
  uint64_t read = 0;
  bool failed = false;
  bool unknown = false;
};

Copy* C(void* u) {
  return static_cast<Copy*>(u);
}
OTF2_CallbackCode Done(void* u, OTF2_ErrorCode rc) {
  ++C(u)->read;
  if (rc != OTF2_SUCCESS) {
    C(u)->failed = true;
    return OTF2_CALLBACK_INTERRUPT;
  }
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode CpClock(void* u, uint64_t res, uint64_t off, uint64_t len, uint64_t rt) {
  return Done(u, OTF2_GlobalDefWriter_WriteClockProperties(C(u)->w, res, off, len, rt));
}
OTF2_CallbackCode CpString(void* u, OTF2_StringRef self, const char* s) {
  auto it = C(u)->strings.find(self);
  return Done(u, OTF2_GlobalDefWriter_WriteString(
                     C(u)->w, self, it == C(u)->strings.end() ? s : it->second.c_str()));
}
OTF2_CallbackCode CpAttribute(void* u, OTF2_AttributeRef self, OTF2_StringRef n, OTF2_StringRef d,
                              OTF2_Type t) {
  return Done(u, OTF2_GlobalDefWriter_WriteAttribute(C(u)->w, self, n, d, t));
}
OTF2_CallbackCode CpRegion(void* u, OTF2_RegionRef self, OTF2_StringRef n, OTF2_StringRef cn,
                           OTF2_StringRef d, OTF2_RegionRole role, OTF2_Paradigm p,
                           OTF2_RegionFlag f, OTF2_StringRef file, uint32_t b, uint32_t e) {
  return Done(u, OTF2_GlobalDefWriter_WriteRegion(C(u)->w, self, n, cn, d, role, p, f, file, b, e));
}
OTF2_CallbackCode CpScl(void* u, OTF2_SourceCodeLocationRef self, OTF2_StringRef file,
                        uint32_t line) {
  auto it = C(u)->lines.find(self);
  return Done(u, OTF2_GlobalDefWriter_WriteSourceCodeLocation(
                     C(u)->w, self, file, it == C(u)->lines.end() ? line : it->second));
}
OTF2_CallbackCode CpContext(void* u, OTF2_CallingContextRef self, OTF2_RegionRef r,
                            OTF2_SourceCodeLocationRef scl, OTF2_CallingContextRef parent) {
  return Done(u, OTF2_GlobalDefWriter_WriteCallingContext(C(u)->w, self, r, scl, parent));
}
OTF2_CallbackCode CpMember(void* u, OTF2_MetricMemberRef self, OTF2_StringRef n, OTF2_StringRef d,
                           OTF2_MetricType t, OTF2_MetricMode m, OTF2_Type vt, OTF2_Base b,
                           int64_t e, OTF2_StringRef unit) {
  return Done(u, OTF2_GlobalDefWriter_WriteMetricMember(C(u)->w, self, n, d, t, m, vt, b, e, unit));
}
OTF2_CallbackCode CpClass(void* u, OTF2_MetricRef self, uint8_t n, const OTF2_MetricMemberRef* m,
                          OTF2_MetricOccurrence o, OTF2_RecorderKind k) {
  return Done(u, OTF2_GlobalDefWriter_WriteMetricClass(C(u)->w, self, n, m, o, k));
}
OTF2_CallbackCode CpRecorder(void* u, OTF2_MetricRef m, OTF2_LocationRef r) {
  return Done(u, OTF2_GlobalDefWriter_WriteMetricClassRecorder(C(u)->w, m, r));
}
OTF2_CallbackCode CpNode(void* u, OTF2_SystemTreeNodeRef self, OTF2_StringRef n, OTF2_StringRef c,
                         OTF2_SystemTreeNodeRef parent) {
  return Done(u, OTF2_GlobalDefWriter_WriteSystemTreeNode(C(u)->w, self, n, c, parent));
}
OTF2_CallbackCode CpLocGroup(void* u, OTF2_LocationGroupRef self, OTF2_StringRef n,
                             OTF2_LocationGroupType t, OTF2_SystemTreeNodeRef parent,
                             OTF2_LocationGroupRef creating) {
  return Done(u, OTF2_GlobalDefWriter_WriteLocationGroup(C(u)->w, self, n, t, parent, creating));
}
OTF2_CallbackCode CpLocation(void* u, OTF2_LocationRef self, OTF2_StringRef n, OTF2_LocationType t,
                             uint64_t events, OTF2_LocationGroupRef g) {
  return Done(u, OTF2_GlobalDefWriter_WriteLocation(C(u)->w, self, n, t, events, g));
}
OTF2_CallbackCode CpGroup(void* u, OTF2_GroupRef self, OTF2_StringRef n, OTF2_GroupType t,
                          OTF2_Paradigm p, OTF2_GroupFlag f, uint32_t count,
                          const uint64_t* members) {
  return Done(u, OTF2_GlobalDefWriter_WriteGroup(C(u)->w, self, n, t, p, f, count, members));
}
OTF2_CallbackCode CpComm(void* u, OTF2_CommRef self, OTF2_StringRef n, OTF2_GroupRef g,
                         OTF2_CommRef parent, OTF2_CommFlag f) {
  return Done(u, OTF2_GlobalDefWriter_WriteComm(C(u)->w, self, n, g, parent, f));
}
// A definition this copy does not know would be lost: the rename is abandoned instead.
OTF2_CallbackCode CpUnknown(void* u) {
  C(u)->unknown = true;
  return OTF2_CALLBACK_INTERRUPT;
}

Scan* S(void* u) {
  return static_cast<Scan*>(u);
}
OTF2_CallbackCode ScString(void* u, OTF2_StringRef self, const char* s) {
  S(u)->strings[self] = s;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode ScRegion(void* u, OTF2_RegionRef self, OTF2_StringRef n, OTF2_StringRef cn,
                           OTF2_StringRef, OTF2_RegionRole, OTF2_Paradigm, OTF2_RegionFlag,
                           OTF2_StringRef, uint32_t, uint32_t) {
  S(u)->regions[self] = {n, cn};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode ScScl(void* u, OTF2_SourceCodeLocationRef self, OTF2_StringRef file, uint32_t) {
  S(u)->scl_file[self] = file;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode ScContext(void* u, OTF2_CallingContextRef self, OTF2_RegionRef r,
                            OTF2_SourceCodeLocationRef scl, OTF2_CallingContextRef) {
  S(u)->ccs.emplace_back(self, r, scl);
  return OTF2_CALLBACK_SUCCESS;
}

struct ReaderCloser {
  OTF2_Reader* r;
  ~ReaderCloser() {
    if (r) OTF2_Reader_Close(r);
  }
};

void Ok(OTF2_ErrorCode rc, const char* what) {
  if (rc != OTF2_SUCCESS) throw std::runtime_error(std::string(what) + " failed");
}

}  // namespace

NameResult NameTraceContexts(const std::string& run_dir, const std::string& archive_name,
                             const std::map<std::string, ContextName>& names) {
  NameResult out;
  const std::string anchor = run_dir + "/" + archive_name + ".otf2";
  const std::string def = run_dir + "/" + archive_name + ".def";
  std::string temp_dir;
  try {
    // Pass 1: the contexts, their regions' labels and the strings to rewrite.
    Scan scan;
    uint64_t chunk_events = 0, chunk_defs = 0, defs_in = 0;
    {
      ReaderCloser rc{OpenArchiveForReading(anchor)};
      Ok(OTF2_Reader_GetChunkSize(rc.r, &chunk_events, &chunk_defs), "OTF2_Reader_GetChunkSize");
      Ok(OTF2_Reader_GetNumberOfGlobalDefinitions(rc.r, &defs_in), "GetNumberOfGlobalDefinitions");
      OTF2_GlobalDefReader* gdr = OTF2_Reader_GetGlobalDefReader(rc.r);
      if (!gdr) throw std::runtime_error("OTF2_Reader_GetGlobalDefReader failed");
      OTF2_GlobalDefReaderCallbacks* cb = OTF2_GlobalDefReaderCallbacks_New();
      OTF2_GlobalDefReaderCallbacks_SetStringCallback(cb, ScString);
      OTF2_GlobalDefReaderCallbacks_SetRegionCallback(cb, ScRegion);
      OTF2_GlobalDefReaderCallbacks_SetSourceCodeLocationCallback(cb, ScScl);
      OTF2_GlobalDefReaderCallbacks_SetCallingContextCallback(cb, ScContext);
      const OTF2_ErrorCode reg = OTF2_Reader_RegisterGlobalDefCallbacks(rc.r, gdr, cb, &scan);
      OTF2_GlobalDefReaderCallbacks_Delete(cb);
      Ok(reg, "OTF2_Reader_RegisterGlobalDefCallbacks");
      uint64_t n = 0;
      Ok(OTF2_Reader_ReadAllGlobalDefinitions(rc.r, gdr, &n), "reading the global definitions");
    }
    Copy copy;
    const size_t prefix = sizeof kContextKeyPrefix - 1;
    for (const auto& [cc, region, scl] : scan.ccs) {
      auto r = scan.regions.find(region);
      if (r == scan.regions.end()) continue;
      const std::string& key = scan.strings[r->second.second];
      if (key.compare(0, prefix, kContextKeyPrefix) != 0) continue;  // not invmw's
      ++out.contexts;
      auto n = names.find(key.substr(prefix));
      if (n == names.end()) continue;
      // Only the strings the converter wrote for this context alone (Strings::Fresh).
      const std::string& fn = n->second.function;
      copy.strings[r->second.first] = fn.empty() ? key.substr(prefix) : fn;
      auto f = scan.scl_file.find(scl);
      if (f != scan.scl_file.end() && !n->second.file.empty()) {
        copy.strings[f->second] = n->second.file;
        copy.lines[scl] = n->second.line;
      }
      ++out.renamed;
    }
    if (copy.strings.empty()) {
      out.ok = true;
      return out;
    }

    // Pass 2: the copy into a temporary archive beside the run (same file system, so the
    // rename is atomic); only its .def file is kept.
    std::string tmpl = run_dir + "/.invmw-names-XXXXXX";
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temporary directory");
    temp_dir = tmpl;
    {
      OTF2_Archive* archive =
          OpenArchiveForWriting(temp_dir, archive_name, chunk_events, chunk_defs);
      struct ArchiveCloser {
        OTF2_Archive* a;
        ~ArchiveCloser() {
          if (a) OTF2_Archive_Close(a);
        }
      } ac{archive};
      copy.w = OTF2_Archive_GetGlobalDefWriter(archive);
      if (!copy.w) throw std::runtime_error("OTF2_Archive_GetGlobalDefWriter failed");
      ReaderCloser rc{OpenArchiveForReading(anchor)};
      OTF2_GlobalDefReader* gdr = OTF2_Reader_GetGlobalDefReader(rc.r);
      if (!gdr) throw std::runtime_error("OTF2_Reader_GetGlobalDefReader failed");
      OTF2_GlobalDefReaderCallbacks* cb = OTF2_GlobalDefReaderCallbacks_New();
      OTF2_GlobalDefReaderCallbacks_SetUnknownCallback(cb, CpUnknown);
      OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(cb, CpClock);
      OTF2_GlobalDefReaderCallbacks_SetStringCallback(cb, CpString);
      OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(cb, CpAttribute);
      OTF2_GlobalDefReaderCallbacks_SetRegionCallback(cb, CpRegion);
      OTF2_GlobalDefReaderCallbacks_SetSourceCodeLocationCallback(cb, CpScl);
      OTF2_GlobalDefReaderCallbacks_SetCallingContextCallback(cb, CpContext);
      OTF2_GlobalDefReaderCallbacks_SetMetricMemberCallback(cb, CpMember);
      OTF2_GlobalDefReaderCallbacks_SetMetricClassCallback(cb, CpClass);
      OTF2_GlobalDefReaderCallbacks_SetMetricClassRecorderCallback(cb, CpRecorder);
      OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodeCallback(cb, CpNode);
      OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(cb, CpLocGroup);
      OTF2_GlobalDefReaderCallbacks_SetLocationCallback(cb, CpLocation);
      OTF2_GlobalDefReaderCallbacks_SetGroupCallback(cb, CpGroup);
      OTF2_GlobalDefReaderCallbacks_SetCommCallback(cb, CpComm);
      const OTF2_ErrorCode reg = OTF2_Reader_RegisterGlobalDefCallbacks(rc.r, gdr, cb, &copy);
      OTF2_GlobalDefReaderCallbacks_Delete(cb);
      Ok(reg, "OTF2_Reader_RegisterGlobalDefCallbacks");
      uint64_t n = 0;
      const OTF2_ErrorCode read = OTF2_Reader_ReadAllGlobalDefinitions(rc.r, gdr, &n);
      if (copy.unknown)
        throw std::runtime_error("a global definition of a kind this copy does not know");
      if (copy.failed) throw std::runtime_error("writing a copied definition failed");
      Ok(read, "reading the global definitions");
      // Every definition was copied, or the anchor's count would no longer match its file.
      if (copy.read != defs_in)
        throw std::runtime_error("copied " + std::to_string(copy.read) + " of " +
                                 std::to_string(defs_in) + " global definitions");
      ac.a = nullptr;
      Ok(OTF2_Archive_Close(archive), "OTF2_Archive_Close");
    }
    if (std::rename((temp_dir + "/" + archive_name + ".def").c_str(), def.c_str()) != 0)
      throw std::runtime_error("cannot rename the new definitions over " + def);
    out.ok = true;
  } catch (const std::exception& e) {
    const std::string otf2 = TakeOtf2Error();
    out.error = def + ": calling contexts not renamed: " + e.what() +
                (otf2.empty() ? "" : "; OTF2: " + otf2) + "; the archive is unchanged";
    out.ok = false;
  }
  if (!temp_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(temp_dir, ec);  // made by mkdtemp above: ours
  }
  return out;
}

}  // namespace invmw::otf2
