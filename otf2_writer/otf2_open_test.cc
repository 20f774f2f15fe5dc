// The archives and readers invmw opens carry OTF2's pthread locks, and an archive opened that
// way takes events from several threads at once.
#include "otf2_writer/otf2_open.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdarg>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "otf2_reader/trace_reader.h"

namespace invmw::otf2 {
namespace {
namespace fs = std::filesystem;

// OTF2 prints every error it returns; the refusals provoked below are expected.
class QuietOtf2Errors {
 public:
  QuietOtf2Errors() { old_ = OTF2_Error_RegisterCallback(Ignore, nullptr); }
  ~QuietOtf2Errors() { OTF2_Error_RegisterCallback(old_, nullptr); }

 private:
  static OTF2_ErrorCode Ignore(void*, const char*, uint64_t, const char*, OTF2_ErrorCode code,
                               const char*, va_list) {
    return code;
  }
  OTF2_ErrorCallback old_;
};

OTF2_CallbackCode NoLock(void*, OTF2_Lock*) {
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode NoLockOp(void*, OTF2_Lock) {
  return OTF2_CALLBACK_SUCCESS;
}
const OTF2_LockingCallbacks kNoLocks = {nullptr, NoLock, NoLockOp, NoLockOp, NoLockOp};

class Otf2Open : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("invmw-otf2open-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Writes `threads` locations, each from its own thread at the same time, each with `visits`
  // Enter/Leave pairs of one region; then the definitions a reader needs.
  void WriteConcurrently(int threads, int visits) {
    OTF2_Archive* a = OpenArchiveForWriting(dir_, "traces", 1 << 20, 4 << 20);
    ASSERT_EQ(OTF2_Archive_OpenEvtFiles(a), OTF2_SUCCESS);
    std::vector<std::thread> pool;
    std::vector<int> failures(threads, 0);
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        // Every thread asks the archive for its writer and closes it again: both change the
        // archive's shared list of writers, which only the locks protect.
        OTF2_EvtWriter* w = OTF2_Archive_GetEvtWriter(a, uint64_t(t));
        if (!w) {
          failures[t]++;
          return;
        }
        for (int i = 0; i < visits; ++i) {
          failures[t] += OTF2_EvtWriter_Enter(w, nullptr, 10 + 2 * uint64_t(i), 0) != OTF2_SUCCESS;
          failures[t] += OTF2_EvtWriter_Leave(w, nullptr, 11 + 2 * uint64_t(i), 0) != OTF2_SUCCESS;
        }
        failures[t] += OTF2_Archive_CloseEvtWriter(a, w) != OTF2_SUCCESS;
      });
    for (auto& th : pool) th.join();
    for (int t = 0; t < threads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
    ASSERT_EQ(OTF2_Archive_CloseEvtFiles(a), OTF2_SUCCESS);
    ASSERT_EQ(OTF2_Archive_OpenDefFiles(a), OTF2_SUCCESS);
    for (int t = 0; t < threads; ++t) {
      OTF2_DefWriter* dw = OTF2_Archive_GetDefWriter(a, uint64_t(t));
      ASSERT_NE(dw, nullptr);
      ASSERT_EQ(OTF2_Archive_CloseDefWriter(a, dw), OTF2_SUCCESS);
    }
    ASSERT_EQ(OTF2_Archive_CloseDefFiles(a), OTF2_SUCCESS);
    OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(a);
    ASSERT_NE(g, nullptr);
    ASSERT_EQ(OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, 10, 2 * uint64_t(visits),
                                                        OTF2_UNDEFINED_TIMESTAMP),
              OTF2_SUCCESS);
    ASSERT_EQ(OTF2_GlobalDefWriter_WriteString(g, 0, ""), OTF2_SUCCESS);
    ASSERT_EQ(OTF2_GlobalDefWriter_WriteString(g, 1, "work"), OTF2_SUCCESS);
    ASSERT_EQ(OTF2_GlobalDefWriter_WriteString(g, 2, "process"), OTF2_SUCCESS);
    ASSERT_EQ(OTF2_GlobalDefWriter_WriteRegion(g, 0, 1, 1, 0, OTF2_REGION_ROLE_FUNCTION,
                                               OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE, 0, 0, 0),
              OTF2_SUCCESS);
    ASSERT_EQ(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, 2, 2, OTF2_UNDEFINED_SYSTEM_TREE_NODE),
              OTF2_SUCCESS);
    ASSERT_EQ(OTF2_GlobalDefWriter_WriteLocationGroup(g, 0, 2, OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                                      OTF2_UNDEFINED_LOCATION_GROUP),
              OTF2_SUCCESS);
    for (int t = 0; t < threads; ++t)
      ASSERT_EQ(OTF2_GlobalDefWriter_WriteLocation(g, uint64_t(t), 2, OTF2_LOCATION_TYPE_CPU_THREAD,
                                                   2 * uint64_t(visits), 0),
                OTF2_SUCCESS);
    ASSERT_EQ(OTF2_Archive_Close(a), OTF2_SUCCESS);
  }

  std::string dir_;
};

TEST_F(Otf2Open, ArchiveForWritingHasLocksInstalled) {
  OTF2_Archive* a = OpenArchiveForWriting(dir_, "traces", 1 << 20, 4 << 20);
  ASSERT_NE(a, nullptr);
  // OTF2 takes locking callbacks once: a second set is refused exactly when the first took.
  QuietOtf2Errors quiet;
  EXPECT_EQ(OTF2_Archive_SetLockingCallbacks(a, &kNoLocks, nullptr), OTF2_ERROR_INVALID_CALL);
  EXPECT_EQ(OTF2_Archive_Close(a), OTF2_SUCCESS);
}

TEST_F(Otf2Open, ReaderHasLocksInstalled) {
  WriteConcurrently(1, 1);
  OTF2_Reader* r = OpenArchiveForReading(dir_ + "/traces.otf2");
  ASSERT_NE(r, nullptr);
  QuietOtf2Errors quiet;
  EXPECT_EQ(OTF2_Reader_SetLockingCallbacks(r, &kNoLocks, nullptr), OTF2_ERROR_INVALID_CALL);
  EXPECT_EQ(OTF2_Reader_Close(r), OTF2_SUCCESS);
}

// The refusal above is meaningful only if a handle without locks accepts the same call.
TEST_F(Otf2Open, PlainOtf2HandleAcceptsLockingCallbacks) {
  OTF2_Archive* a = OTF2_Archive_Open(dir_.c_str(), "plain", OTF2_FILEMODE_WRITE, 1 << 20, 4 << 20,
                                      OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(OTF2_Archive_SetSerialCollectiveCallbacks(a), OTF2_SUCCESS);  // needed to close it
  EXPECT_EQ(OTF2_Archive_SetLockingCallbacks(a, &kNoLocks, nullptr), OTF2_SUCCESS);
  EXPECT_EQ(OTF2_Archive_Close(a), OTF2_SUCCESS);
}

TEST_F(Otf2Open, SeveralThreadsWriteOneArchive) {
  constexpr int kThreads = 4, kVisits = 20000;
  WriteConcurrently(kThreads, kVisits);
  if (HasFatalFailure()) return;
  Trace t = ReadTrace(dir_ + "/traces.otf2");
  ASSERT_EQ(t.locations.size(), size_t(kThreads));
  for (const auto& l : t.locations) {
    SCOPED_TRACE("location " + std::to_string(l.id));
    ASSERT_EQ(l.events.size(), 2u * kVisits);
    for (size_t i = 0; i < l.events.size(); ++i)
      if (l.events[i].type != (i % 2 ? TraceEvent::kLeave : TraceEvent::kEnter) ||
          l.events[i].ticks != 10 + i)
        FAIL() << "event " << i << " is " << EventTypeName(l.events[i].type) << " at "
               << l.events[i].ticks;
  }
}

TEST_F(Otf2Open, MissingArchiveThrowsWithItsPath) {
  QuietOtf2Errors quiet;
  try {
    OpenArchiveForReading(dir_ + "/nothing.otf2");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("nothing.otf2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace invmw::otf2
