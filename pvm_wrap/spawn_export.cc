#include "pvm_wrap/spawn_export.h"

#include <cstdlib>
#include <cstring>

#include "pvm_wrap/call.h"

extern char** environ;

namespace invmw::pvm {

SpawnExport::SpawnExport(const Call& c) {
  if (!c.outer()) return;
  active_ = true;
  if (const char* e = std::getenv("PVM_EXPORT")) {
    had_export_ = true;
    old_export_ = e;
  }
  std::string names = "LD_PRELOAD";
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "INVMW_", 6) == 0) {
      const char* eq = std::strchr(*e, '=');
      if (eq) names += ":" + std::string(*e, size_t(eq - *e));
    }
  auto newcontext = reinterpret_cast<int (*)()>(RealByName("pvm_newcontext"));
  g.sync_context = -1;
  if (newcontext && g.cfg.PVM_SYNC_ROUNDS > 0) {
    int saved = tls_depth;
    tls_depth = 1000;
    g.sync_context = newcontext();
    tls_depth = saved;
  }
  if (g.sync_context > 0) {
    setenv("INVMW_PVM_SYNC_CONTEXT", std::to_string(g.sync_context).c_str(), 1);
    names += ":INVMW_PVM_SYNC_CONTEXT";
  }
  setenv("PVM_EXPORT", MergeExportList(old_export_, names).c_str(), 1);
}

SpawnExport::~SpawnExport() {
  if (!active_) return;
  unsetenv("INVMW_PVM_SYNC_CONTEXT");
  if (had_export_)
    setenv("PVM_EXPORT", old_export_.c_str(), 1);
  else
    unsetenv("PVM_EXPORT");
  if (g.sync_context > 0) {
    if (auto freecontext = reinterpret_cast<int (*)(int)>(RealByName("pvm_freecontext"))) {
      int saved = tls_depth;
      tls_depth = 1000;
      freecontext(g.sync_context);
      tls_depth = saved;
    }
  }
  g.sync_context = -1;
}

}  // namespace invmw::pvm
