// Low-level output of the recording core, shared by both preloads and the sampler.
//
// Why here and not in common/: these are the writes of a running measurement (raw dumps, event
// files, definitions lines), several of them made from signal handlers, so they stay
// async-signal-safe (write(2)/pwrite(2) only, no allocation). The exclusive creation of a
// run's files (CreateNewFile) stays in common/run_dir.h, which the offline tools use too.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace invmw::recording {

// Writes all n bytes, retrying short writes and EINTR. False when not everything was written.
// Async-signal-safe.
bool WriteAll(int fd, const void* data, size_t n);
// The same at a file offset (pwrite): a rewrite of a file's start. Async-signal-safe.
bool WriteAllAt(int fd, const void* data, size_t n, off_t at);

// mkdir -p with mode 0755; an existing directory is fine. Not for signal handlers.
bool MakeDirs(const std::string& path);

// UTC time of a CLOCK_REALTIME nanosecond count as ISO 8601 ("2026-01-02T03:04:05Z").
std::string IsoTime(int64_t realtime_ns);

}  // namespace invmw::recording
