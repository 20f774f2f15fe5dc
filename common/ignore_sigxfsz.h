// SIGXFSZ ignored while invmw writes its own output files.
//
// Why: a write beyond RLIMIT_FSIZE sends SIGXFSZ, whose default action ends the process: invmw
// itself, or, in the preload runtime, the application. Ignored, the write fails with EFBIG,
// which the writer checks like ENOSPC and reports with the path.
//
// The disposition is process-wide (Linux sends SIGXFSZ to the process, so blocking it in one
// thread is not enough): while the object lives, another thread of the process that exceeds
// the limit gets EFBIG instead of the signal too. The previous disposition is restored after.
#pragma once

#include <signal.h>

namespace invmw {

class IgnoreSigxfsz {
 public:
  IgnoreSigxfsz() {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    restore_ = sigaction(SIGXFSZ, &ign, &old_) == 0;
  }
  ~IgnoreSigxfsz() {
    if (restore_) sigaction(SIGXFSZ, &old_, nullptr);
  }
  IgnoreSigxfsz(const IgnoreSigxfsz&) = delete;
  IgnoreSigxfsz& operator=(const IgnoreSigxfsz&) = delete;

 private:
  struct sigaction old_ {};
  bool restore_ = false;
};

}  // namespace invmw
