#include "otf2_writer/otf2_open.h"

#include <otf2/OTF2_Pthread_Locks.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <stdexcept>

namespace invmw::otf2 {
namespace {

thread_local std::string t_first_error;

OTF2_ErrorCode KeepFirstError(void*, const char*, uint64_t, const char*, OTF2_ErrorCode code,
                              const char* format, va_list args) {
  if (t_first_error.empty()) {
    char msg[512] = "";
    if (format) std::vsnprintf(msg, sizeof msg, format, args);
    t_first_error = std::string(OTF2_Error_GetDescription(code)) + (*msg ? ": " : "") + msg;
  }
  return code;
}

void KeepOtf2Errors() {
  static std::once_flag once;
  std::call_once(once, [] { OTF2_Error_RegisterCallback(KeepFirstError, nullptr); });
  t_first_error.clear();
}

std::string Cause() {
  const std::string e = TakeOtf2Error();
  return e.empty() ? "" : "; OTF2: " + e;
}

void Check(OTF2_ErrorCode rc, const std::string& path, const char* step) {
  if (rc != OTF2_SUCCESS)
    throw std::runtime_error(path + ": OTF2 error in " + step + ": " + OTF2_Error_GetName(rc) +
                             " (" + OTF2_Error_GetDescription(rc) + ")" + Cause());
}

OTF2_FlushType PreFlush(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) {
  return OTF2_FLUSH;
}
const OTF2_FlushCallbacks kFlushCallbacks = {PreFlush, nullptr};

}  // namespace

OTF2_Archive* OpenArchiveForWriting(const std::string& dir, const std::string& name,
                                    uint64_t chunk_size_events, uint64_t chunk_size_defs) {
  return OpenArchiveForCollectiveWriting(dir, name, chunk_size_events, chunk_size_defs, nullptr,
                                         nullptr);
}

OTF2_Archive* OpenArchiveForCollectiveWriting(const std::string& dir, const std::string& name,
                                              uint64_t chunk_size_events, uint64_t chunk_size_defs,
                                              const OTF2_CollectiveCallbacks* collectives,
                                              void* collective_data) {
  const std::string path = dir + "/" + name + ".otf2";
  KeepOtf2Errors();
  OTF2_Archive* archive =
      OTF2_Archive_Open(dir.c_str(), name.c_str(), OTF2_FILEMODE_WRITE, chunk_size_events,
                        chunk_size_defs, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (!archive) throw std::runtime_error(path + ": OTF2_Archive_Open failed" + Cause());
  try {
    Check(OTF2_Archive_SetFlushCallbacks(archive, &kFlushCallbacks, nullptr), path,
          "SetFlushCallbacks");
    if (collectives)
      Check(OTF2_Archive_SetCollectiveCallbacks(archive, collectives, collective_data, nullptr,
                                                nullptr),
            path, "SetCollectiveCallbacks");
    else
      Check(OTF2_Archive_SetSerialCollectiveCallbacks(archive), path,
            "SetSerialCollectiveCallbacks");
    Check(OTF2_Pthread_Archive_SetLockingCallbacks(archive, nullptr), path,
          "Pthread_Archive_SetLockingCallbacks");
  } catch (...) {
    OTF2_Archive_Close(archive);
    throw;
  }
  return archive;
}

OTF2_Reader* OpenArchiveForReading(const std::string& path) {
  KeepOtf2Errors();
  OTF2_Reader* reader = OTF2_Reader_Open(path.c_str());
  if (!reader)
    throw std::runtime_error(path + ": cannot open OTF2 archive (missing or not an anchor file)" +
                             Cause());
  try {
    Check(OTF2_Reader_SetSerialCollectiveCallbacks(reader), path, "SetSerialCollectiveCallbacks");
    Check(OTF2_Pthread_Reader_SetLockingCallbacks(reader, nullptr), path,
          "Pthread_Reader_SetLockingCallbacks");
  } catch (...) {
    OTF2_Reader_Close(reader);
    throw;
  }
  return reader;
}

std::string TakeOtf2Error() {
  std::string e;
  e.swap(t_first_error);
  return e;
}

}  // namespace invmw::otf2
