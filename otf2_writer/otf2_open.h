// Opening OTF2 archives for writing and reading the one way invmw does it.
//
// Why: OTF2 guards the shared state of an archive or reader (its lists of event and
// definition writers/readers, the file substrate, its memory pools) only when locking
// callbacks are installed; without them two threads that each write or read a location of the
// same archive race inside the library. The converter and the reader are single-threaded
// today, but a second writing thread (e.g. for the sampler's metric locations) must not turn
// into silent corruption, so every archive and reader invmw opens gets OTF2's pthread locks.
// Both also use OTF2's serial collective callbacks: one process writes or reads the whole
// archive (see converter.h, "Why offline").
//
// Contract: both functions throw std::runtime_error naming the path and the failing step when
// the archive cannot be opened or a callback cannot be installed, and close what they opened.
// The caller closes the handle it gets (OTF2_Archive_Close / OTF2_Reader_Close).
#pragma once

#include <otf2/otf2.h>

#include <cstdint>
#include <string>

namespace invmw::otf2 {

// Creates dir/name.otf2 (+ name.def, name/) for writing: POSIX substrate, no compression,
// serial collectives, pthread locks, flushes allowed whenever OTF2 wants one.
OTF2_Archive* OpenArchiveForWriting(const std::string& dir, const std::string& name,
                                    uint64_t chunk_size_events, uint64_t chunk_size_defs);

// The same with the given collective callbacks instead of the serial ones: every process of
// the collective opens it, each writes its own locations (parallel_convert.h).
OTF2_Archive* OpenArchiveForCollectiveWriting(const std::string& dir, const std::string& name,
                                              uint64_t chunk_size_events, uint64_t chunk_size_defs,
                                              const OTF2_CollectiveCallbacks* collectives,
                                              void* collective_data);

// Opens an anchor file (.otf2) for reading: serial collectives, pthread locks.
OTF2_Reader* OpenArchiveForReading(const std::string& anchor_path);

// OTF2 prints every error it meets ("[OTF2] src/...: error: ..."), several lines for one
// failure, before invmw's own one-line error. Both functions above install an error handler
// that keeps OTF2's first message of this thread instead; this returns it (empty if none) and
// forgets it, so errors can carry the cause: "..., OTF2: This is not a directory: ...".
std::string TakeOtf2Error();

}  // namespace invmw::otf2
