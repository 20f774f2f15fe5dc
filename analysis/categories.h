// The time categories of the inverse mapping: every second of every rank's run lands in exactly
// one of them, so the per-rank sums add up to the rank's wall time and nothing is counted twice.
//
// Why a fixed list: the text report, the JSON, the critical path composition and the
// classification all speak of the same categories; one enum with one name table keeps them in
// step (the JSON keys are the names below).
#pragma once

#include <array>
#include <cstdint>

namespace invmw::analysis {

enum Category : uint8_t {
  kComputation,  // outside MPI (and, with sampler data, on the CPU or starved of it)
  kTransfer,     // point-to-point, one-sided and data-carrying collective work minus waiting
  kIdle,         // waiting for a late partner (late sender, late receiver)
  kSyncWait,     // in a barrier or collective, waiting for the last arrival
  kSyncOp,       // the barrier or data-less collective operation itself
  kIo,           // MPI-IO calls
  kMemoryIo,     // outside MPI, off the CPU, with I/O or paging activity (needs sampler data)
  kUnallocated,  // time no resource explains: other MPI calls, tool flushes, off-CPU sleep
  kPaused,       // recording paused (MPI_Pcontrol(0)): not observed
  kNumCategories
};

// JSON key / text column name ("computation", "transfer", ...).
const char* CategoryName(Category c);

using Times = std::array<double, kNumCategories>;

inline Times& operator+=(Times& a, const Times& b) {
  for (int i = 0; i < kNumCategories; ++i) a[i] += b[i];
  return a;
}

// Sum over the categories that the rank actually spent observed (everything but kPaused).
double ObservedTotal(const Times& t);

}  // namespace invmw::analysis
