// Reads `invmw trace export` output with a trace-event reader invmw did not write: Chrome
// DevTools' own SDK.TracingModel (npm chrome-devtools-frontend, loaded through the sandbox of npm
// devtools-timeline-model), and compares what it parsed with the synthetic run's expected.json
// (otf2_make_synthetic_run DIR --samples).
//
// usage: node check_perfetto_devtools.js TRACE.json EXPECTED.json
// Needs devtools-timeline-model resolvable by node (NODE_PATH). Exit 0 when everything matches,
// 1 with one line per difference, 2 when it cannot run.
'use strict';
const fs = require('fs');
const vm = require('vm');
const path = require('path');

if (process.argv.length !== 4) {
  console.error('usage: node check_perfetto_devtools.js TRACE.json EXPECTED.json');
  process.exit(2);
}
const expected = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
const problems = [];
const fail = (what) => problems.push(what);

// The reader's own complaints (e.g. "Missing mandatory event argument") are failures too.
const complaints = [];
const quiet = {
  log: (...a) => complaints.push(a.join(' ')),
  warn: (...a) => complaints.push(a.join(' ')),
  error: (...a) => complaints.push(a.join(' ')),
  info: () => {},
  debug: () => {},
  assert: (c, ...a) => c || complaints.push('assert: ' + a.join(' ')),
};
const dir = path.dirname(require.resolve('devtools-timeline-model'));
const ctx = vm.createContext({require, global, console: quiet, __dirname: dir});
new vm.Script(fs.readFileSync(path.join(dir, 'lib', 'timeline-model.js'), 'utf8')).runInContext(ctx);
ctx.__text = fs.readFileSync(process.argv[2], 'utf8');
vm.runInContext(`
  var __tm = new SDK.TracingModel(new Bindings.TempFileBackingStorage('tracing'));
  __tm.setEventsForTest(JSON.parse(__text).traceEvents);`, ctx);
const tm = ctx.__tm;
for (const c of complaints) fail('DevTools: ' + c);

const key = (a) => JSON.stringify(a);
const multiset = (list) => {
  const m = new Map();
  for (const x of list) m.set(key(x), (m.get(key(x)) || 0) + 1);
  return m;
};
const sameMultiset = (what, got, want) => {
  const g = multiset(got), w = multiset(want);
  for (const [k, n] of w)
    if (g.get(k) !== n) fail(`${what}: ${k} expected ${n} times, found ${g.get(k) || 0}`);
  for (const [k, n] of g)
    if (!w.has(k)) fail(`${what}: ${k} found ${n} times, not expected`);
};

const ranks = Object.keys(expected.by_rank).map(Number);
const processes = tm.sortedProcesses();
if (processes.length !== ranks.length)
  fail(`${processes.length} processes, expected ${ranks.length}`);
const sends = [], recvs = [], samples = [];
let starts = 0, finishes = 0;
for (const p of processes) {
  const rank = Number(p.id());
  if (p.name() !== `rank ${rank}`) fail(`process ${p.id()} is named "${p.name()}"`);
  let slices = 0;
  for (const t of p.sortedThreads()) {
    for (const e of t.events()) {
      if (e.phase === 'X') {
        ++slices;
        if (!(e.duration >= 0)) fail(`${e.name} at ${e.startTime} ms: duration ${e.duration}`);
        const recs = e.args.records || (e.args.record ? [e.args] : []);
        for (const r of recs) {
          const x = [rank, r.peer, r.tag, r.bytes];
          if (r.record === 'MpiSend' || r.record === 'MpiIsend') sends.push(x);
          if (r.record === 'MpiRecv' || r.record === 'MpiIrecv') recvs.push(x);
        }
      } else if (e.phase === 'C') {
        samples.push([rank, e.name, e.startTime, e.args.value]);
      } else if (e.phase === 's') {
        ++starts;
      } else if (e.phase === 'f') {
        ++finishes;
      }
    }
  }
  const want = expected.by_rank[String(rank)];
  if (!want) fail(`process ${rank}: no such rank`);
  else if (slices !== want.Enter) fail(`rank ${rank}: ${slices} slices, expected ${want.Enter}`);
}
sameMultiset('send records (rank, peer, tag, bytes)', sends,
             expected.messages.map((m) => [m[0], m[1], m[2], m[3]]));
sameMultiset('receive records (rank, peer, tag, bytes)', recvs,
             expected.messages.map((m) => [m[1], m[0], m[2], m[3]]));
if (starts !== expected.messages.length || finishes !== expected.messages.length)
  fail(`${starts} flow starts and ${finishes} flow ends, expected ${expected.messages.length} each`);

// Counters: DevTools gives times in milliseconds since the trace start (the archive's global
// offset, the synthetic run's true time 0); the run's clock is 1 GHz.
const tps = 1e9;
const wantSamples = [];
for (const [rank, ticks, cpu, rss] of expected.samples) {
  wantSamples.push([rank, 'proc.cpu.user (s)', ticks / tps * 1e3, cpu]);
  wantSamples.push([rank, 'proc.rss (bytes)', ticks / tps * 1e3, rss]);
}
if (samples.length !== wantSamples.length)
  fail(`${samples.length} counter values, expected ${wantSamples.length}`);
const byKey = (a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1]) || a[2] - b[2];
samples.sort(byKey);
wantSamples.sort(byKey);
for (let i = 0; i < Math.min(samples.length, wantSamples.length); ++i) {
  const [g, w] = [samples[i], wantSamples[i]];
  // 10 ns: clock correction is exact to a few ticks; the export rounds to 1 ns.
  if (g[0] !== w[0] || g[1] !== w[1] || Math.abs(g[2] - w[2]) > 1e-5 ||
      Math.abs(g[3] - w[3]) > 1e-9 * Math.abs(w[3]))
    fail(`counter value ${key(g)}, expected ${key(w)}`);
}

for (const p of problems.slice(0, 30)) console.log(p);
if (problems.length > 30) console.log(`... and ${problems.length - 30} more`);
console.log(problems.length ? `FAILED: ${problems.length} problems` :
                              `ok: ${processes.length} processes, ${sends.length} sends, ` +
                              `${recvs.length} receives, ${samples.length} counter values`);
process.exit(problems.length ? 1 : 0);
