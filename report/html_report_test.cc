// The report page from a minimal pipeline directory whose plots carry active content (a
// <script> element, onload= handlers, a javascript: link): none of it may reach the page as
// markup, and each plot must still be in it, byte for byte, as an image.
#include "report/html_report.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace invmw::report {
namespace {

void Write(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  ASSERT_TRUE(f.good()) << path;
}

std::string Base64Decode(const std::string& in) {
  std::string out;
  unsigned v = 0;
  int bits = 0;
  for (char c : in) {
    int d = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '+'             ? 62
            : c == '/'             ? 63
                                   : -1;
    if (d < 0) continue;
    v = (v << 6) | unsigned(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((v >> bits) & 0xff);
    }
  }
  return out;
}

std::string MakePipelineDir(const std::vector<std::string>& svgs) {
  const std::string dir = ::testing::TempDir() + "/report-" + std::to_string(getpid());
  mkdir(dir.c_str(), 0755);
  mkdir((dir + "/profile").c_str(), 0755);
  mkdir((dir + "/plots").c_str(), 0755);
  Write(dir + "/profile/profile.json",
        R"({"summary": {"ranks": 2, "wall_s": {"mean": 1, "max": 1.1},
            "mpi_s": {"mean": 0.1, "max": 0.2, "imbalance": 0.1}, "mpi_share": 0.1},
            "functions": {"MPI_Send": {"calls": 4, "time_s": 0.01, "bytes_sent": 64,
                                       "bytes_recv": 0}}})");
  Write(dir + "/fit.json",
        R"({"model": "<script>alert(1)</script>", "data": "d.csv", "converged": true,
            "parameters": [{"name": "a", "value": 1.5}],
            "responses": [{"name": "t", "points": 3}]})");
  Write(dir + "/predictions.json",
        R"({"sweep": "n", "model": "m", "settings": {},
            "platforms": [{"platform": "p", "points": [{"n": 2, "time": 1, "speedup": 1}]}]})");
  const char* names[] = {"measured-vs-predicted", "breakdown", "predict"};
  for (size_t i = 0; i < 3; ++i) Write(dir + "/plots/" + names[i] + ".svg", svgs[i]);
  return dir;
}

TEST(HtmlReport, PlotsAreImagesAndTheirScriptsNeverBecomeMarkup) {
  const std::vector<std::string> svgs = {
      "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "onload=\"alert('svg')\"><script>alert(document.cookie)</script><rect width=\"1\"/></svg>\n",
      "<svg xmlns=\"http://www.w3.org/2000/svg\"><a href=\"javascript:alert(2)\"><text "
      "onclick=\"alert(3)\">x</text></a><image href=\"http://example.com/x.png\"/></svg>",
      "<svg xmlns=\"http://www.w3.org/2000/svg\"><SCRIPT type=\"text/javascript\">alert(4)"
      "</SCRIPT><foreignObject><iframe src=\"http://example.com\"></iframe></foreignObject></svg>"};
  const std::string page = BuildHtmlReport(MakePipelineDir(svgs));
  std::string lower = page;
  for (auto& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const char* bad :
       {"<script", "onload", "onclick", "javascript:", "<iframe", "<svg", "http://example.com"})
    EXPECT_EQ(lower.find(bad), std::string::npos) << bad << " reached the page";
  // Each plot, unchanged, as an image.
  const std::string tag = "<img src=\"data:image/svg+xml;base64,";
  size_t at = 0;
  for (const auto& svg : svgs) {
    at = page.find(tag, at);
    ASSERT_NE(at, std::string::npos);
    at += tag.size();
    const size_t end = page.find('"', at);
    ASSERT_NE(end, std::string::npos);
    EXPECT_EQ(Base64Decode(page.substr(at, end - at)), svg);
    at = end;
  }
  EXPECT_EQ(page.find(tag, at), std::string::npos) << "more than three images";
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos)
      << "text from the JSON files is escaped";
}

// The plots' titles name the data by its base name; the page's text keeps the full path.
TEST(HtmlReport, TheFitsDataKeepsItsFullPath) {
  const std::string dir = MakePipelineDir({"<svg/>", "<svg/>", "<svg/>"});
  Write(dir + "/fit.json",
        R"({"model": "opal", "data": "/srv/build/experiments/results.db design opal-84 platform a",
            "converged": true, "parameters": [{"name": "a", "value": 1.5}],
            "responses": [{"name": "t", "points": 3}]})");
  const std::string page = BuildHtmlReport(dir);
  EXPECT_NE(page.find("fitted to /srv/build/experiments/results.db design opal-84 platform a"),
            std::string::npos);
}

TEST(HtmlReport, AFileThatIsNoSvgIsAnError) {
  const std::string dir =
      MakePipelineDir({"<svg/>", "not a plot", "<svg xmlns=\"http://www.w3.org/2000/svg\"/>"});
  try {
    BuildHtmlReport(dir);
    FAIL() << "accepted a plot without <svg>";
  } catch (const ReportError& e) {
    EXPECT_NE(std::string(e.what()).find("breakdown.svg: no <svg> element"), std::string::npos)
        << e.what();
  }
}

// validation/summary.json (`invmw validate summary`) is the pooled table, not one more
// validation: the page shows its rows and reads the validations without it.
TEST(HtmlReport, PooledSummaryIsItsOwnTable) {
  const std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\"><rect/></svg>";
  const std::string dir = MakePipelineDir({svg, svg, svg});
  mkdir((dir + "/validation").c_str(), 0755);
  Write(dir + "/validation/00-a.json",
        R"({"label": "target a", "total": "t", "table": "x", "run_platform": "pa",
            "summary": {"t": {"column": "t_wall", "points": 1, "median_abs_error_pct": 4}},
            "points": [{"point": 0, "factors": {"p": 1},
                        "responses": {"t": {"replications": 5, "mean": 1, "min": 0.9,
                                            "max": 1.1, "predicted": 1.04, "error_pct": 4}}}]})");
  Write(dir + "/validation/summary.json",
        R"({"total": "t", "significant_share": 0.1,
            "validations": [{"file": "00-a.json", "label": "target a",
              "total": {"points": 1, "in_90": 1, "with_90": 1},
              "components": {"t_sync": {"points": 1, "median_abs_error_pct": 45.5,
                                        "in_90": 0, "with_90": 0}}}],
            "all": {"total": {"points": 1, "median_abs_error_pct": 4, "in_90": 1, "with_90": 1},
                    "components": {"t_sync": {"points": 1, "median_abs_error_pct": 45.5,
                                              "in_90": 0, "with_90": 0}}}})");
  const std::string page = BuildHtmlReport(dir);
  EXPECT_NE(page.find("Pooled over the validations"), std::string::npos);
  EXPECT_NE(page.find("<tr><td>t</td><td>all validations</td><td>1</td><td>4</td><td>-</td>"
                      "<td>-</td><td>-</td><td>1 of 1</td></tr>"),
            std::string::npos);
  EXPECT_NE(page.find("<tr><td>t_sync</td><td>target a</td><td>1</td><td>45.5</td>"),
            std::string::npos);
  EXPECT_NE(page.find("more than 10% of the measured total"), std::string::npos);
  // One validation in the errors table: the summary is not read as one (it has no "table").
  EXPECT_EQ(page.find("<h3>target a: per point"), page.rfind("<h3>target a: per point"));
  Write(dir + "/validation/summary.json", R"({"total": "t"})");
  EXPECT_THROW(BuildHtmlReport(dir), ReportError);  // a malformed summary is named, not skipped
  // The other tests share the directory.
  std::remove((dir + "/validation/summary.json").c_str());
  std::remove((dir + "/validation/00-a.json").c_str());
  rmdir((dir + "/validation").c_str());
}

}  // namespace
}  // namespace invmw::report
