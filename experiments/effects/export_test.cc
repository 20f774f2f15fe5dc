// Export round trips: the CSV read back with an RFC 4180 parser gives the stored values
// exactly, and every Extra-P line is a JSON object with numeric params, metric and value.
#include "experiments/effects/results_export.h"

#include <sstream>

#include <gtest/gtest.h>

namespace invmw::effects {
namespace {

std::vector<Run> Rows() {
  std::vector<Run> rows;
  auto add = [&](int64_t point, int64_t rep, const char* factors, const char* platform,
                 std::vector<std::pair<std::string, double>> responses, bool ok = true) {
    Run r;
    r.id = static_cast<int64_t>(rows.size()) + 1;
    r.point = point;
    r.replication = rep;
    r.platform = platform;
    r.factors = nlohmann::ordered_json::parse(factors);
    for (auto& [k, v] : responses) {
      r.responses[k] = v;
      r.response_order.push_back(k);
    }
    r.ok = ok;
    rows.push_back(r);
  };
  add(0, 0, R"({"n": 1000, "u": 0.5, "label": "a, \"quoted\" one"})", "local",
      {{"t_wall", 0.1234567890123456789}, {"t_comm", 1e-7}});
  add(1, 0, R"({"n": 2000, "u": 0.5, "label": "plain"})", "local", {{"t_wall", 2.5}});
  add(1, 1, R"({"n": 2000, "u": 0.5, "label": "plain"})", "local", {{"t_wall", 99}}, false);
  add(2, 0, R"({"n": 4000, "u": 1, "label": "plain"})", "local",
      {{"t_wall", 1.0 / 3}, {"t_comm", 0.25}});
  return rows;
}

// A minimal RFC 4180 reader: quoted fields, doubled quotes, commas and newlines inside quotes.
std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> out(1);
  std::string field;
  bool quoted = false, in_quotes = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_quotes) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        in_quotes = false;
      } else {
        field += c;
      }
    } else if (c == '"' && field.empty() && !quoted) {
      in_quotes = quoted = true;
    } else if (c == ',') {
      out.back().push_back(field);
      field.clear();
      quoted = false;
    } else if (c == '\n') {
      out.back().push_back(field);
      field.clear();
      quoted = false;
      out.emplace_back();
    } else {
      field += c;
    }
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

TEST(Export, CsvRoundTrip) {
  std::ostringstream os;
  std::string error;
  ASSERT_TRUE(WriteCsv(Rows(), {}, os, &error)) << error;
  auto table = ParseCsv(os.str());
  ASSERT_EQ(table.size(), 4u) << os.str();  // header + 3 ok runs (the failed one is left out)
  EXPECT_EQ(table[0], (std::vector<std::string>{"point", "replication", "platform", "n", "u",
                                                "label", "t_wall", "t_comm"}));
  EXPECT_EQ(table[1][5], "a, \"quoted\" one");
  EXPECT_EQ(std::stod(table[1][6]), 0.1234567890123456789);  // exact round trip
  EXPECT_EQ(std::stod(table[1][7]), 1e-7);
  EXPECT_EQ(table[2][7], "");  // not recorded by that run
  EXPECT_EQ(std::stod(table[3][6]), 1.0 / 3);
  EXPECT_EQ(table[3][3], "4000");
  EXPECT_EQ(table[3][4], "1");
  EXPECT_EQ(table[1][4], "0.5");
  for (const auto& row : table) EXPECT_EQ(row.size(), 8u);
}

TEST(Export, CsvFilters) {
  ExportOptions opt;
  opt.where = {{"n", "2000"}};
  opt.responses = {"t_wall"};
  std::ostringstream os;
  std::string error;
  ASSERT_TRUE(WriteCsv(Rows(), opt, os, &error)) << error;
  EXPECT_EQ(os.str(),
            "point,replication,platform,n,u,label,t_wall\n1,0,local,2000,0.5,plain,2.5\n");
  opt.where = {{"cores", "2"}};
  EXPECT_FALSE(WriteCsv(Rows(), opt, os, &error));
  EXPECT_NE(error.find("no factor 'cores'"), std::string::npos) << error;
  opt.where.clear();
  opt.responses = {"t_idle"};
  EXPECT_FALSE(WriteCsv(Rows(), opt, os, &error));
  EXPECT_NE(error.find("--response t_idle"), std::string::npos) << error;
}

TEST(Export, ExtrapJsonLines) {
  std::ostringstream os;
  std::string note, error;
  // The string factor varies: Extra-P cannot take it.
  EXPECT_FALSE(WriteExtrapJsonLines(Rows(), {}, os, &note, &error));
  EXPECT_NE(error.find("factor 'label' has string levels"), std::string::npos) << error;
  EXPECT_NE(error.find("--where label=VALUE"), std::string::npos) << error;
  ExportOptions opt;
  opt.where = {{"label", "plain"}};
  std::ostringstream ok;
  ASSERT_TRUE(WriteExtrapJsonLines(Rows(), opt, ok, &note, &error)) << error;
  EXPECT_NE(note.find("label=plain"), std::string::npos);
  std::istringstream in(ok.str());
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 3u);  // point 1: t_wall; point 2: t_wall and t_comm
  for (const auto& j : lines) {
    ASSERT_TRUE(j["params"].is_object());
    EXPECT_EQ(j["params"].size(), 2u);
    EXPECT_TRUE(j["params"]["n"].is_number());
    EXPECT_TRUE(j["params"]["u"].is_number());
    EXPECT_TRUE(j["metric"].is_string());
    EXPECT_TRUE(j["value"].is_number());
  }
  EXPECT_EQ(lines[0]["params"]["n"], 2000);
  EXPECT_EQ(lines[1]["metric"], "t_wall");
  EXPECT_EQ(lines[1]["value"].get<double>(), 1.0 / 3);
  EXPECT_EQ(lines[2]["metric"], "t_comm");
}

TEST(Export, CsvField) {
  EXPECT_EQ(CsvField("abc"), "abc");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField(" padded"), "\" padded\"");
}

}  // namespace
}  // namespace invmw::effects
