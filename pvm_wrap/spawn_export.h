// What a parent's pvm_spawn must arrange so its children are observed too.
//
// Why: the PVM daemon starts spawned tasks, not the parent, and passes them only the
// variables named in PVM_EXPORT (colon-separated). For the duration of an application's
// pvm_spawn this object adds LD_PRELOAD, every INVMW_* variable of the process (the output
// directory among them) and INVMW_PVM_SYNC_CONTEXT (a fresh message context for the clock
// synchronisation, clock_sync.h) to PVM_EXPORT, and restores the application's environment
// afterwards. Nothing is done for the group library's own spawn of pvmgs (an inner call).
#pragma once

#include <string>

#include "pvm_wrap/export_list.h"

namespace invmw::pvm {

class Call;

class SpawnExport {
 public:
  explicit SpawnExport(const Call& c);
  ~SpawnExport();
  SpawnExport(const SpawnExport&) = delete;
  SpawnExport& operator=(const SpawnExport&) = delete;

 private:
  bool active_ = false;
  bool had_export_ = false;
  std::string old_export_;
};

}  // namespace invmw::pvm
