// The sampler's raw files: what the sampling thread of each process writes while the job runs,
// and what otf2_writer turns into OTF2 metrics and the profile into resource summaries.
//
// Why raw files and not OTF2 directly: the same reason as for events (common/event_format.h):
// a job that dies must still leave readable data, so each process appends fixed-size records
// with plain write(2) and the converter builds the archive later.
//
// Files of rank R in <run dir>/raw/ (R six digits, as for events):
//   metrics-R.jsonl  one JSON object per line ("type" first):
//     {"type":"sampler", "rank":R, "world_size":N, "host":"...", "pid":P, "node_leader":true,
//      "ticks_per_second":F, "interval_s":S, "start_ticks":T, "start_realtime_ns":NS}
//     {"type":"metric", "index":I, "name":"proc.cpu.user", "unit":"s", "mode":"accumulated"|
//      "absolute", "source":"proc", "description":"...", "start_ticks":T}   index = position in
//      SampleRecord; start_ticks only for a source opened after the sampler started (counters):
//      its values are 0 until then
//     {"type":"interval", "ticks":T, "interval_s":S}      the interval changed while running
//     {"type":"end", "samples":N, "end_ticks":T}          the sampler stopped cleanly
//   samples-R.bin    SampleFileHeader, then records of header.record_size bytes each:
//                    SampleRecordHead followed by num_metrics doubles (in "metric" index
//                    order). A crash may cut the last record short; readers drop it.
//   resources-R.json the process's resource summary, written when the sampler stops (see
//                    sampler/sampler.h); the profile attaches it.
//
// "accumulated" metrics count up from the start of sampling (values are totals since the
// sampler started: CPU seconds, bytes, events); "absolute" ones are instantaneous (RSS).
// Timestamps are ticks of the rank's trace clock, the same clock as EventRecord's.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace invmw::samples {

constexpr uint32_t kSampleMagic = 0x504d5349;  // "ISMP"
constexpr uint32_t kSampleVersion = 1;

struct SampleFileHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t header_size;  // sizeof(SampleFileHeader)
  uint32_t record_size;  // sizeof(SampleRecordHead) + 8 * num_metrics
  int32_t rank;
  uint32_t num_metrics;
  uint64_t reserved[5];
};
static_assert(sizeof(SampleFileHeader) == 64, "SampleFileHeader must stay 64 bytes");

struct SampleRecordHead {
  uint64_t ticks;   // trace clock at the moment the sample was taken
  uint64_t sample;  // sample number of this process, from 0
};

inline std::string RankTag(int32_t rank) {
  char b[16];
  std::snprintf(b, sizeof b, "%06d", rank);
  return b;
}
inline std::string MetricsFileName(int32_t rank) {
  return "metrics-" + RankTag(rank) + ".jsonl";
}
inline std::string SamplesFileName(int32_t rank) {
  return "samples-" + RankTag(rank) + ".bin";
}
inline std::string ResourcesFileName(int32_t rank) {
  return "resources-" + RankTag(rank) + ".json";
}

}  // namespace invmw::samples
