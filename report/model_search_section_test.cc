// The report's model-search section: absent input gives no section, a document gives its rows,
// markup in names is escaped, and a malformed document is an error naming the file.
#include "report/model_search_section.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

#include "report/html_report.h"

namespace invmw::report {
namespace {

std::string TempDir() {
  char tmpl[] = "/tmp/invmw_search_section_XXXXXX";
  const char* d = mkdtemp(tmpl);
  EXPECT_NE(d, nullptr);
  return d ? d : "";
}

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(ModelSearchSection, AbsentFileGivesNoSection) {
  std::string dir = TempDir();
  EXPECT_EQ(ModelSearchSection(dir), "");
  rmdir(dir.c_str());
}

TEST(ModelSearchSection, RowsPerResponseAndHeldOutPoints) {
  std::string dir = TempDir();
  Write(dir + "/model-search.json", R"({"designs": [
    {"design": "lammps", "platform": "emu-8x25-shm", "responses": [
      {"response": "wall_s", "formula": "0.5 + 0.01 * n^3", "cv_error": 0.05,
       "mean_rel_error": 0.123, "max_rel_error": 0.2,
       "heldout": [{"point": {"n": 12, "p": 7}, "measured": 3.5, "predicted": 3.0,
                    "replications": 1, "rel_error": 0.1428}]}],
     "checks": [{"response": "wall_s", "term": "n^3", "found": true}]},
    {"design": "<b>x</b>", "error": "no ok runs"}]})");
  std::string h = ModelSearchSection(dir);
  EXPECT_NE(h.find("<h2>Model search"), std::string::npos);
  EXPECT_NE(h.find("<code>0.5 + 0.01 * n^3</code>"), std::string::npos) << h;
  EXPECT_NE(h.find("<td>12.3</td>"), std::string::npos) << h;  // mean |error| in %
  EXPECT_NE(h.find("n=12 p=7"), std::string::npos) << h;
  EXPECT_NE(h.find("<td>14.3</td>"), std::string::npos) << h;
  EXPECT_NE(h.find("has the term <code>n^3</code>: found"), std::string::npos) << h;
  EXPECT_EQ(h.find("<b>x</b>"), std::string::npos) << "a design name is escaped";
  EXPECT_NE(h.find("&lt;b&gt;x&lt;/b&gt;"), std::string::npos);
  unlink((dir + "/model-search.json").c_str());
  rmdir(dir.c_str());
}

TEST(ModelSearchSection, MalformedDocumentNamesFile) {
  std::string dir = TempDir();
  for (const char* text : {"{not json", R"({"designs": 3})"}) {
    Write(dir + "/model-search.json", text);
    try {
      ModelSearchSection(dir);
      ADD_FAILURE() << "no error for " << text;
    } catch (const ReportError& e) {
      EXPECT_NE(std::string(e.what()).find("model-search.json"), std::string::npos) << e.what();
    }
  }
  unlink((dir + "/model-search.json").c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace invmw::report
