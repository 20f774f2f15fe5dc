#include "experiments/runner/progress.h"

namespace invmw::experiment {

Progress::Progress(FILE* out, int total, bool tty)
    : out_(out), total_(total), tty_(tty), begin_(std::chrono::steady_clock::now()) {}

std::string Progress::Clock(double s) {
  if (s < 0) s = 0;
  long t = static_cast<long>(s + 0.5);
  char b[32];
  if (t >= 3600)
    std::snprintf(b, sizeof b, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else
    std::snprintf(b, sizeof b, "%ld:%02ld", t / 60, t % 60);
  return b;
}

void Progress::Start(const std::string& label) {
  label_ = label;
  run_begin_ = std::chrono::steady_clock::now();
  if (tty_)
    Draw();
  else
    std::fprintf(out_, "[%d/%d] %s ...\n", done_ + 1, total_, label.c_str()), std::fflush(out_);
}

void Progress::Tick() {
  if (tty_) Draw();
}

void Progress::Draw() {
  using namespace std::chrono;
  double elapsed = duration<double>(steady_clock::now() - begin_).count();
  const int width = 24;
  int filled = total_ > 0 ? done_ * width / total_ : width;
  std::string bar(filled, '#');
  bar += std::string(width - filled, '.');
  std::string eta = done_ > 0 ? Clock(finished_seconds_ / done_ * (total_ - done_) -
                                      duration<double>(steady_clock::now() - run_begin_).count())
                              : "?";
  std::fprintf(out_, "\r\033[K[%s] %d/%d  %s  elapsed %s  ETA %s", bar.c_str(), done_, total_,
               label_.c_str(), Clock(elapsed).c_str(), eta.c_str());
  std::fflush(out_);
  drawn_ = true;
}

void Progress::Finish(const std::string& outcome) {
  using namespace std::chrono;
  finished_seconds_ += duration<double>(steady_clock::now() - run_begin_).count();
  ++done_;
  if (tty_) {
    // Failures stay on screen; successes only move the bar.
    if (outcome.rfind("ok", 0) != 0) Note(label_ + ": " + outcome);
    Draw();
  } else {
    std::fprintf(out_, "[%d/%d] %s: %s\n", done_, total_, label_.c_str(), outcome.c_str());
    std::fflush(out_);
  }
}

void Progress::Note(const std::string& line) {
  if (tty_ && drawn_) std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "%s\n", line.c_str());
  if (tty_ && drawn_) Draw();
  std::fflush(out_);
}

void Progress::Done() {
  if (tty_ && drawn_) {
    Draw();
    std::fprintf(out_, "\n");
  }
  std::fflush(out_);
}

}  // namespace invmw::experiment
