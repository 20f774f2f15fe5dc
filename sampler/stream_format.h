// The live stream: the UDP datagrams a sampler sends to `invmw collect`.
//
// Why UDP: the sender must never block or slow the application when the collector is slow,
// gone or far away; a lost datagram costs one sample, which the collector detects by sequence
// number and interpolates. Every datagram is under 512 bytes so it is never fragmented.
//
// Layout (little-endian, as in memory): DatagramHeader, then a payload by kind:
//   kSample: `count` doubles, the values of metrics [first, first+count) of sample `sample`;
//            a sample with more metrics than fit is split into parts 0..nparts-1.
//   kInfo:   InfoPayload (clock anchor, interval, number of metrics, host name).
//   kNames:  metric definitions [first, first+count): per metric one flags byte (bit 0:
//            accumulated), one length byte, the name (no terminator).
// Info and names are resent every second so a collector started late still learns them.
// `seq` counts every datagram of the stream (all kinds), so a gap in it is a lost datagram.
// `checksum` is FNV-1a over the whole datagram with the field itself zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace invmw::sampler::stream {

constexpr uint32_t kMagic = 0x44534d49;  // "IMSD"
constexpr uint8_t kVersion = 1;
constexpr size_t kMaxDatagram = 508;

enum Kind : uint8_t { kSample = 1, kInfo = 2, kNames = 3 };

struct DatagramHeader {
  uint32_t magic;
  uint8_t version;
  uint8_t kind;
  uint16_t header_size;  // sizeof(DatagramHeader)
  uint32_t node_id;      // hash of the host name
  int32_t rank;
  uint32_t stream_id;  // random per sampler start: tells processes and restarts apart
  uint32_t checksum;
  uint64_t seq;     // datagram number of this stream, from 0
  uint64_t sample;  // kSample: sample number
  uint64_t ticks;   // kSample: cycle stamp (trace clock)
  uint16_t part, nparts;
  uint16_t first, count;
};
static_assert(sizeof(DatagramHeader) == 56, "DatagramHeader must stay 56 bytes");

constexpr size_t kMaxValues = (kMaxDatagram - sizeof(DatagramHeader)) / sizeof(double);

struct InfoPayload {
  double ticks_per_second;
  uint64_t anchor_ticks;       // a trace-clock stamp ...
  int64_t anchor_realtime_ns;  // ... and CLOCK_REALTIME at the same moment
  double interval_s;
  uint32_t num_metrics;
  int32_t world_size;
  char host[64];
};

inline uint32_t Fnv1a(const void* data, size_t n, uint32_t h = 2166136261u) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 16777619u;
  return h;
}

// Checksum of a datagram whose header's checksum field is treated as zero.
inline uint32_t Checksum(const unsigned char* d, size_t n) {
  DatagramHeader h;
  std::memcpy(&h, d, sizeof h);
  h.checksum = 0;
  uint32_t c = Fnv1a(&h, sizeof h);
  return Fnv1a(d + sizeof h, n - sizeof h, c);
}

}  // namespace invmw::sampler::stream
