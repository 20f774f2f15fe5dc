#include "cli/args.h"

#include <cstdio>
#include <cstring>
#include <sstream>

namespace invmw::cli {

Args::Args(std::string usage, std::string description)
    : usage_(std::move(usage)), description_(std::move(description)) {
  opts_.push_back({"--help", "", "show this help and exit"});
}

Args& Args::Flag(const std::string& name, bool* out, const std::string& help) {
  Opt o{name, "", help};
  o.flag = out;
  opts_.push_back(o);
  return *this;
}

Args& Args::Option(const std::string& name, const std::string& metavar, std::string* out,
                   const std::string& help) {
  Opt o{name, metavar, help};
  o.value = out;
  opts_.push_back(o);
  return *this;
}

Args& Args::Repeated(const std::string& name, const std::string& metavar,
                     std::vector<std::string>* out, const std::string& help) {
  Opt o{name, metavar, help};
  o.values = out;
  opts_.push_back(o);
  return *this;
}

Args& Args::Positional(const std::string& metavar, std::vector<std::string>* out, int min,
                       int max) {
  pos_metavar_ = metavar;
  pos_ = out;
  pos_min_ = min;
  pos_max_ = max;
  return *this;
}

Args& Args::Rest(const std::string& metavar, std::vector<std::string>* out,
                 const std::string& help) {
  rest_metavar_ = metavar;
  rest_help_ = help;
  rest_ = out;
  return *this;
}

Args& Args::Epilog(const std::string& text) {
  epilog_ = text;
  return *this;
}

std::string Args::Help() const {
  std::ostringstream os;
  os << "usage: " << usage_ << "\n\n" << description_ << "\n\noptions:\n";
  for (const auto& o : opts_) {
    std::string lhs = "  " + o.name + (o.metavar.empty() ? "" : " " + o.metavar);
    if (lhs.size() < 26)
      lhs.resize(26, ' ');
    else
      lhs += "\n" + std::string(26, ' ');
    os << lhs << o.help << (o.values ? " (repeatable)" : "") << "\n";
  }
  if (rest_) {
    std::string lhs = "  -- " + rest_metavar_;
    if (lhs.size() < 26) lhs.resize(26, ' ');
    os << lhs << rest_help_ << "\n";
  }
  if (!epilog_.empty()) os << "\n" << epilog_ << "\n";
  return os.str();
}

int Fail(const std::string& msg) {
  std::fprintf(stderr, "invmw: error: %s\n", msg.c_str());
  return 2;
}

int Args::Parse(int argc, char** argv, bool* done) {
  *done = false;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      if (!rest_) return Fail("unexpected '--' (see --help)");
      for (int j = i + 1; j < argc; ++j) rest_->push_back(argv[j]);
      break;
    }
    if (a == "--help" || a == "-h") {
      std::fputs(Help().c_str(), stdout);
      *done = true;
      return 0;
    }
    if (a.size() > 1 && a[0] == '-' && !(a.size() > 1 && std::isdigit((unsigned char)a[1]))) {
      std::string name = a, value;
      bool has_value = false;
      size_t eq = a.find('=');
      if (eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        has_value = true;
      }
      const Opt* found = nullptr;
      for (const auto& o : opts_)
        if (o.name == name) found = &o;
      if (!found)
        return Fail(
            "unknown option '" + name + "'" +
            (rest_ && !positional.empty()
                 ? " (the command to run goes after `--`: invmw ... -- " + positional[0] + " ...)"
                 : " (see --help)"));
      if (found->flag) {
        if (has_value) return Fail("option '" + name + "' takes no value");
        *found->flag = true;
        continue;
      }
      if (!has_value) {
        if (i + 1 >= argc || std::string(argv[i + 1]) == "--")
          return Fail("option '" + name + "' needs a value " + found->metavar);
        value = argv[++i];
      }
      if (found->value)
        *found->value = value;
      else
        found->values->push_back(value);
      continue;
    }
    positional.push_back(a);
  }
  if (!pos_ && !positional.empty())
    return Fail("unexpected argument '" + positional[0] + "'" +
                (rest_ ? " (the command to run goes after `--`)" : " (see --help)"));
  if (pos_) {
    if ((int)positional.size() < pos_min_) return Fail("missing " + pos_metavar_ + " (see --help)");
    if (pos_max_ >= 0 && (int)positional.size() > pos_max_)
      return Fail("too many arguments: '" + positional.back() + "' (see --help)");
    *pos_ = positional;
  }
  return 0;
}

}  // namespace invmw::cli
