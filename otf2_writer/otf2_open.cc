#include "otf2_writer/otf2_open.h"

#include <otf2/OTF2_Pthread_Locks.h>

#include <stdexcept>

namespace invmw::otf2 {
namespace {

void Check(OTF2_ErrorCode rc, const std::string& path, const char* step) {
  if (rc != OTF2_SUCCESS)
    throw std::runtime_error(path + ": OTF2 error in " + step + ": " + OTF2_Error_GetName(rc) +
                             " (" + OTF2_Error_GetDescription(rc) + ")");
}

OTF2_FlushType PreFlush(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) {
  return OTF2_FLUSH;
}
const OTF2_FlushCallbacks kFlushCallbacks = {PreFlush, nullptr};

}  // namespace

OTF2_Archive* OpenArchiveForWriting(const std::string& dir, const std::string& name,
                                    uint64_t chunk_size_events, uint64_t chunk_size_defs) {
  const std::string path = dir + "/" + name + ".otf2";
  OTF2_Archive* archive =
      OTF2_Archive_Open(dir.c_str(), name.c_str(), OTF2_FILEMODE_WRITE, chunk_size_events,
                        chunk_size_defs, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (!archive) throw std::runtime_error(path + ": OTF2_Archive_Open failed");
  try {
    Check(OTF2_Archive_SetFlushCallbacks(archive, &kFlushCallbacks, nullptr), path,
          "SetFlushCallbacks");
    Check(OTF2_Archive_SetSerialCollectiveCallbacks(archive), path, "SetSerialCollectiveCallbacks");
    Check(OTF2_Pthread_Archive_SetLockingCallbacks(archive, nullptr), path,
          "Pthread_Archive_SetLockingCallbacks");
  } catch (...) {
    OTF2_Archive_Close(archive);
    throw;
  }
  return archive;
}

OTF2_Reader* OpenArchiveForReading(const std::string& path) {
  OTF2_Reader* reader = OTF2_Reader_Open(path.c_str());
  if (!reader)
    throw std::runtime_error(path + ": cannot open OTF2 archive (missing or not an anchor file)");
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

}  // namespace invmw::otf2
