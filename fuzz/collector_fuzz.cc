// Fuzz target: the collector's datagram handling (sampler/collector.cc, Collector::Feed) and
// the analysis and reports built from what it accepted.
//
// Input: a sequence of datagrams, each as [flags: 1 byte][length: 2 bytes LE][bytes]. Unless
// flags bit 0 is set the harness writes the correct checksum into the datagram first, so the
// fuzzer gets past the checksum to the fields behind it. Contract checked: Feed never throws;
// Analyze, RenderSummary, LiveLine and (first flags byte bit 1) WriteLogs work on whatever was
// accepted.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "sampler/collector.h"

using namespace invmw::sampler;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static invmw::fuzz::ScratchDir dir;
  Collector c;
  size_t at = 0;
  for (int n = 0; n < 64 && at + 3 <= size; ++n) {
    const uint8_t flags = data[at];
    size_t len = data[at + 1] | size_t(data[at + 2]) << 8;
    at += 3;
    if (len > size - at) len = size - at;
    // The collector must cope with a datagram anywhere in memory: a copy of exactly len bytes
    // lets AddressSanitizer see any read past its end.
    std::vector<unsigned char> d(data + at, data + at + len);
    at += len;
    if (!(flags & 1) && d.size() >= sizeof(stream::DatagramHeader)) {
      const uint32_t sum = stream::Checksum(d.data(), d.size());
      std::memcpy(d.data() + offsetof(stream::DatagramHeader, checksum), &sum, sizeof sum);
    }
    c.Feed(d.empty() ? nullptr : d.data(), d.size());
  }
  c.LiveLine();
  const CollectorReport r = c.Analyze();
  Collector::RenderSummary(r);
  // Writing the logs costs ten times the rest; only inputs whose first flags byte has bit 1 set
  // (the seeds do) write them, so the fuzzer spends most runs on the datagram handling.
  if (size == 0 || !(data[0] & 2)) return 0;
  // A fresh folder each time: the node logs are named after the hosts the input made up.
  const std::string logs = dir.path() + "/logs";
  std::error_code ec;
  std::filesystem::remove_all(logs, ec);
  std::string error;
  if (!Collector::WriteLogs(logs, r, &error)) std::abort();
  return 0;
}
