// A small, strict command-line parser shared by all verbs: every option is declared with its
// help text, so `--help` is generated and an unknown or malformed option is an error that names
// the option and what was expected.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace invmw::cli {

class Args {
 public:
  // usage: e.g. "invmw profile [options] DIR"; description: paragraph printed under it.
  Args(std::string usage, std::string description);

  // A flag without value.
  Args& Flag(const std::string& name, bool* out, const std::string& help);
  // An option with a value; metavar names the value in --help ("DIR", "N").
  Args& Option(const std::string& name, const std::string& metavar, std::string* out,
               const std::string& help);
  // An option that may be repeated; every value is appended.
  Args& Repeated(const std::string& name, const std::string& metavar, std::vector<std::string>* out,
                 const std::string& help);
  // Positional arguments: min..max of them (max < 0: unbounded).
  Args& Positional(const std::string& metavar, std::vector<std::string>* out, int min, int max);
  // Everything after a literal "--" is collected here (e.g. the launcher command of `run`).
  Args& Rest(const std::string& metavar, std::vector<std::string>* out, const std::string& help);
  // Extra text printed at the end of --help (examples, notes).
  Args& Epilog(const std::string& text);

  // Parses argv[1..argc). Returns 0 when parsing succeeded and the verb should run; otherwise
  // the exit status to return at once (0 after --help, 2 after an error, with the message
  // already printed to stderr).
  int Parse(int argc, char** argv, bool* done);

  std::string Help() const;

 private:
  struct Opt {
    std::string name, metavar, help;
    bool* flag = nullptr;
    std::string* value = nullptr;
    std::vector<std::string>* values = nullptr;
  };
  std::string usage_, description_, epilog_;
  std::vector<Opt> opts_;
  std::string pos_metavar_;
  std::vector<std::string>* pos_ = nullptr;
  int pos_min_ = 0, pos_max_ = 0;
  std::string rest_metavar_, rest_help_;
  std::vector<std::string>* rest_ = nullptr;
};

// Prints "invmw: error: <msg>" to stderr and returns 2, for uniform error exits.
int Fail(const std::string& msg);

}  // namespace invmw::cli
