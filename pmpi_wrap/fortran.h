// Support for the generated Fortran entry points: finding the MPI library's own Fortran
// symbols, and recognising the Fortran sentinels (MPI_IN_PLACE, MPI_BOTTOM,
// MPI_STATUS(ES)_IGNORE), whose Fortran addresses differ from the C constants.
#pragma once

#include <mpi.h>

#include <atomic>

namespace invmw::wrap {

// Enough MPI_Fint for one Fortran status of any MPI we build against.
constexpr int kFortranStatusInts = 16;

// Resolves the MPI library's Fortran entry point (e.g. pmpi_send_) on first use, trying the
// usual manglings; dlsym(RTLD_NEXT) so our own definitions are skipped.
class FortranSymbol {
 public:
  explicit FortranSymbol(const char* base) : base_(base) {}
  void* get() {
    void* p = fn_.load(std::memory_order_acquire);
    if (!p) p = Resolve();
    return p;
  }

 private:
  void* Resolve();
  const char* base_;
  std::atomic<void*> fn_{nullptr};
};

// Maps a Fortran buffer address to MPI_IN_PLACE / MPI_BOTTOM when it is one of those
// sentinels, else returns it unchanged.
const void* FortranBuffer(const void* p);
bool IsFortranStatusIgnore(const void* p);
bool IsFortranStatusesIgnore(const void* p);

// Looks the sentinels up once (after MPI_Init, when the Fortran library is loaded).
void InitFortranSentinels();

}  // namespace invmw::wrap
