// Escaping text for XML and HTML attribute values and content (&, <, >, "), shared by the SimGrid
// platform export and the HTML report.
#pragma once

#include <string>

namespace invmw {

inline std::string XmlEscape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

}  // namespace invmw
