// The replay section joins validation/*.json and replay/*.json by run platform and design
// point: the replay's median over replications and both errors per row, summary medians, and
// clear errors for malformed replay files.
#include "report/replay_section.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "report/html_report.h"

namespace invmw::report {
namespace {

void Write(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  ASSERT_TRUE(f.good()) << path;
}

std::string MakeDir(const std::string& name) {
  const std::string dir =
      ::testing::TempDir() + "/replay-section-" + name + "-" + std::to_string(getpid());
  mkdir(dir.c_str(), 0755);
  mkdir((dir + "/validation").c_str(), 0755);
  // Two points measured on the 100 Mbit/s platform: means 2 s and 4 s, analytic 2.2 and 3.
  Write(dir + "/validation/01-emu-100.json",
        R"({"label": "emu-100 from ref", "run_platform": "emu-100", "total": "t_wall",
            "table": "t.toml", "summary": {},
            "points": [
              {"point": 0, "factors": {"p": 1}, "responses": {"t_wall":
                {"mean": 2, "predicted": 2.2, "error_pct": 10}}},
              {"point": 1, "factors": {"p": 3}, "responses": {"t_wall":
                {"mean": 4, "predicted": 3, "error_pct": -25}}}]})");
  return dir;
}

TEST(ReplaySection, NoReplayDirIsANote) {
  const std::string dir = MakeDir("none");
  const std::string h = ReplaySection(dir);
  EXPECT_NE(h.find("did not replay"), std::string::npos) << h;
}

TEST(ReplaySection, JoinsByPlatformAndPoint) {
  const std::string dir = MakeDir("join");
  mkdir((dir + "/replay").c_str(), 0755);
  // Point 0 replayed twice (1.8 and 2.2 s on emu-100: median 2.0, error 0%), point 1 once
  // (5 s: +25%); the reference's own platform is replayed too but has no validation here.
  auto replay = [&](const std::string& name, int point, double ref, double target, double share) {
    Write(dir + "/replay/" + name,
          "{\"point\": " + std::to_string(point) +
              ", \"replication\": 0, \"run_platforms\": [\"emu-ref\", \"emu-100\"], "
              "\"replay\": {\"reference\": \"probed-emu-ref\", \"platforms\": ["
              "{\"table\": \"a\", \"predicted_wall_s\": " +
              std::to_string(ref) +
              ", \"unexpressed\": []}, {\"table\": \"b\", \"predicted_wall_s\": " +
              std::to_string(target) + ", \"unexpressed\": [{\"function\": \"MPI_Probe\", " +
              "\"calls\": 1, \"time_s\": 0.1, \"share\": " + std::to_string(share) + "}]}]}}");
  };
  replay("p0-r0.json", 0, 1, 1.8, 0.01);
  replay("p0-r1.json", 0, 1, 2.2, 0.02);
  replay("p1-r0.json", 1, 1, 5.0, 0);
  const std::string h = ReplaySection(dir);
  // Detail rows: measured, analytic, analytic error, replay, replay error, unexpressed share.
  EXPECT_NE(h.find("<td>2</td><td>2.2</td><td>10.0</td><td>2</td><td>0.0</td><td>2.00</td>"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("<td>4</td><td>3</td><td>-25.0</td><td>5</td><td>25.0</td><td>0.00</td>"),
            std::string::npos)
      << h;
  // Summary: analytic median |error| (10, 25) = 17.5, replay (0, 25) = 12.5; worst 25 and 25.
  EXPECT_NE(h.find("<td>emu-100</td><td>2</td><td>17.5</td><td>12.5</td><td>25.0</td>"
                   "<td>25.0</td>"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("probed-emu-ref"), std::string::npos);
}

TEST(ReplaySection, MalformedReplayNamesFileAndField) {
  const std::string dir = MakeDir("bad");
  mkdir((dir + "/replay").c_str(), 0755);
  Write(dir + "/replay/p0-r0.json",
        R"({"point": 0, "run_platforms": ["emu-100"], "replay": {"platforms": [{}]}})");
  try {
    ReplaySection(dir);
    FAIL() << "no error";
  } catch (const ReportError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("p0-r0.json"), std::string::npos) << m;
    EXPECT_NE(m.find("replay.platforms[0].predicted_wall_s"), std::string::npos) << m;
  }
  Write(dir + "/replay/p0-r0.json",
        R"({"point": 0, "run_platforms": ["a", "b"], "replay": {"platforms": []}})");
  EXPECT_THROW(ReplaySection(dir), ReportError);
}

}  // namespace
}  // namespace invmw::report
