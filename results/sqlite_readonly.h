// Opening an existing SQLite database for reading only (the results database's readers:
// `experiment status`, `effects`, `results export`, `fit --db`).
//
// Why not a plain SQLITE_OPEN_READONLY: a reader must never create the database or its
// directory where a path was mistyped, and a database in WAL mode on read-only storage (a
// read-only mount, an archive directory, another user's files) cannot be read that way, because
// SQLite needs to create its -shm index next to it. When the plain read-only open fails for that
// reason and no write-ahead log holds changes, the file is opened with `immutable=1` (no locks,
// no -shm). A non-empty -wal that SQLite cannot read is an error, never silently skipped data.
//
// Contract: OpenReadOnly returns an open handle (busy timeout set) or nullptr with *error naming
// the path and what is wrong ("no such file", "not a regular file", SQLite's message). It
// creates no file or directory, except that SQLite's own -wal/-shm companions of a WAL database
// may appear next to it when that directory is writable (they are how readers coexist with a
// writer).
#pragma once

#include <string>

struct sqlite3;

namespace invmw::results {

sqlite3* OpenReadOnly(const std::string& path, std::string* error);

}  // namespace invmw::results
