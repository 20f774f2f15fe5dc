#include "results/sqlite_readonly.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace invmw::results {
namespace {

// A file: URI for the path: '%', '?' and '#' are the characters that would otherwise be read as
// URI syntax; everything else is taken literally by SQLite.
std::string Uri(const std::string& path, const char* query) {
  std::string u = "file:";
  if (path.rfind("//", 0) == 0) u += "/.";  // "file://x" would name a host
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", static_cast<unsigned char>(c));
      u += b;
    } else {
      u += c;
    }
  }
  return u + "?" + query;
}

// Opens and reads the schema (the first read is what needs the -shm of a WAL database).
int TryOpen(const std::string& path, const char* query, sqlite3** db) {
  *db = nullptr;
  int rc = sqlite3_open_v2(Uri(path, query).c_str(), db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
                           nullptr);
  if (rc != SQLITE_OK) return rc;
  sqlite3_busy_timeout(*db, 5000);  // a runner may be writing at the same time
  return sqlite3_exec(*db, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
}

}  // namespace

sqlite3* OpenReadOnly(const std::string& path, std::string* error) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    *error = path + ": " +
             (errno == ENOENT ? std::string("no such file (no results database there)")
                              : std::string(std::strerror(errno)));
    return nullptr;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + ": not a regular file";
    return nullptr;
  }
  sqlite3* db = nullptr;
  int rc = TryOpen(path, "mode=ro", &db);
  if (rc == SQLITE_OK) return db;
  std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  sqlite3_close(db);
  // SQLITE_READONLY*/SQLITE_CANTOPEN: the -shm could not be created (read-only directory).
  int primary = rc & 0xff;
  if (primary != SQLITE_READONLY && primary != SQLITE_CANTOPEN) {
    *error = path + ": cannot read the database: " + msg;
    return nullptr;
  }
  struct stat wal;
  if (stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size > 0) {
    *error = path + ": cannot read the database (" + msg + "): its write-ahead log " + path +
             "-wal holds changes that SQLite can only read with write access to the directory; "
             "open it once where the directory is writable, or copy the files there";
    return nullptr;
  }
  rc = TryOpen(path, "mode=ro&immutable=1", &db);
  if (rc == SQLITE_OK) return db;
  *error = path + ": cannot read the database: " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  sqlite3_close(db);
  return nullptr;
}

}  // namespace invmw::results
