// Test helper for CTest fixtures: writes a synthetic raw run into DIR, converts it to OTF2 and
// writes DIR/expected.json (what check_with_python.py compares the archive with).
//
// usage: otf2_make_synthetic_run DIR [--unmatched-send] [--crash] [--samples]
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "otf2_writer/converter.h"
#include "otf2_writer/tests/synthetic_run.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: otf2_make_synthetic_run DIR [--unmatched-send] [--crash] [--samples]\n");
    return 2;
  }
  invmw::otf2::testing::SyntheticOptions o;
  o.iterations = 2;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--unmatched-send"))
      o.unmatched_send = true;
    else if (!std::strcmp(argv[i], "--samples"))
      o.samples = 5;
    else if (!std::strcmp(argv[i], "--crash"))
      o.crash = true, o.drift[2] = 0;
    else {
      std::fprintf(stderr, "otf2_make_synthetic_run: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  const auto e = invmw::otf2::testing::WriteSyntheticRun(argv[1], o);
  invmw::otf2::ConvertToOtf2(argv[1]);
  nlohmann::json j;
  j["by_type"] = e.by_type;
  for (const auto& [rank, counts] : e.by_rank) j["by_rank"][std::to_string(rank)] = counts;
  j["messages"] = nlohmann::json::array();
  for (const auto& m : e.messages)
    j["messages"].push_back({m.src, m.dst, m.tag, m.bytes, m.send_true, m.recv_true});
  j["base_ticks"] = o.base_ticks;
  j["samples"] = nlohmann::json::array();  // rank, true ticks, proc.cpu.user, proc.rss
  for (const auto& s : e.samples) j["samples"].push_back({s.rank, s.true_ticks, s.cpu_user, s.rss});
  std::ofstream(std::filesystem::path(argv[1]) / "expected.json") << j.dump(1) << "\n";
  return 0;
}
