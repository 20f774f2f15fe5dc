// Progress of a design run for the person watching it: a bar with elapsed time and ETA that
// redraws in place on a terminal, and one plain line per finished run otherwise (CTest logs,
// pipes), so logs stay readable and a terminal does not scroll away.
//
// The ETA is the mean duration of the runs finished in this session times the runs left; it is
// shown once one run has finished.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace invmw::experiment {

class Progress {
 public:
  // total: runs this session will attempt; tty: redraw in place (else plain lines).
  Progress(FILE* out, int total, bool tty);
  // A run starts (label e.g. "point 5 rep 0 (n=64 u=1)").
  void Start(const std::string& label);
  // Called while a run goes on, to keep the clock moving on a terminal.
  void Tick();
  // A run ended; `outcome` e.g. "ok 1.23 s" or "FAILED: exit status 1".
  void Finish(const std::string& outcome);
  // A line that must not be overwritten (warnings, skipped runs).
  void Note(const std::string& line);
  void Done();

 private:
  void Draw();
  static std::string Clock(double seconds);
  FILE* out_;
  int total_, done_ = 0;
  bool tty_, drawn_ = false;
  std::string label_;
  std::chrono::steady_clock::time_point begin_, run_begin_;
  double finished_seconds_ = 0;
};

}  // namespace invmw::experiment
