#!/usr/bin/env python3
"""`invmw effects` and `invmw results export` on SQLite databases built here (contract D).

Each design's expected values are computed in this script, independently of the C++ code:
Jain's published numbers for his 2^2 examples, and for a 3 x 2 x 4 design with replications
the textbook marginal-mean formulas written out per term, with the t quantile found from a
numerically integrated t density (Simpson's rule), not from an incomplete beta function.

usage: effects_cli_test.py INVMW
"""
import csv
import io
import json
import math
import os
import random
import sqlite3
import subprocess
import sys
import tempfile

INVMW = sys.argv[1]
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def near(a, b, tol, what):
    check(a is not None and abs(a - b) <= tol, f"{what}: got {a}, expected {b} +- {tol}")


def make_db(path, design, runs):
    """runs: list of (point, replication, factors dict, responses dict or None, status, error)."""
    db = sqlite3.connect(path)
    db.executescript("""
      CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
      INSERT OR REPLACE INTO meta VALUES ('schema', '1');
      CREATE TABLE IF NOT EXISTS runs(
        id INTEGER PRIMARY KEY, design TEXT NOT NULL, point INTEGER NOT NULL,
        replication INTEGER NOT NULL, platform TEXT NOT NULL, run_order INTEGER,
        factors TEXT NOT NULL, responses TEXT, host TEXT, start_time TEXT, duration REAL,
        exit_status INTEGER, status TEXT NOT NULL CHECK(status IN ('ok','failed')), error TEXT,
        trace_dir TEXT, UNIQUE(design, point, replication, platform));""")
    for order, (point, rep, factors, responses, status, error) in enumerate(runs):
        db.execute(
            "INSERT INTO runs(design, point, replication, platform, run_order, factors, "
            "responses, host, start_time, duration, exit_status, status, error) "
            "VALUES (?, ?, ?, 'local', ?, ?, ?, 'testhost', '2026-11-22T07:00:00Z', 1.0, ?, ?, ?)",
            (design, point, rep, order, json.dumps(factors),
             None if responses is None else json.dumps(responses),
             0 if status == "ok" else 1, status, error))
    db.commit()
    db.close()


def invmw(*args, expect=0):
    p = subprocess.run([INVMW, *args], capture_output=True, text=True, timeout=60)
    check(p.returncode == expect,
          f"invmw {' '.join(args)}: exit {p.returncode}, expected {expect}; stderr: {p.stderr}")
    return p


def term(resp, name):
    for t in resp["terms"]:
        if t["name"] == name:
            return t
    FAILURES.append(f"no term {name}")
    return None


# --- t quantile by integrating the density (independent of the C++ incomplete beta) -------
def t_cdf(x, dof, steps=20000):
    c = math.exp(math.lgamma((dof + 1) / 2) - math.lgamma(dof / 2)) / math.sqrt(dof * math.pi)
    f = lambda t: c * (1 + t * t / dof) ** (-(dof + 1) / 2)
    h = x / steps
    s = f(0) + f(x) + sum((4 if i % 2 else 2) * f(i * h) for i in range(1, steps))
    return 0.5 + s * h / 3


def t_quantile(p, dof):
    lo, hi = 0.0, 50.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if t_cdf(mid, dof) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def jain_designs(tmp):
    db = os.path.join(tmp, "results.db")
    f = [{"memory": 4, "cache": 1}, {"memory": 16, "cache": 1},
         {"memory": 4, "cache": 2}, {"memory": 16, "cache": 2}]
    mips = [15, 45, 25, 75]
    make_db(db, "jain-2x2", [(i, 0, f[i], {"mips": mips[i]}, "ok", None) for i in range(4)])
    reps = [[15, 18, 12], [45, 48, 51], [25, 28, 19], [75, 75, 81]]
    make_db(db, "jain-2x2r3",
            [(i, k, f[i], {"mips": reps[i][k]}, "ok", None) for i in range(4) for k in range(3)])

    # Unreplicated 2^2 (Jain Example 17.1): text and JSON.
    p = invmw("effects", "--design", "jain-2x2", "--db", db)
    check("memory" in p.stdout and "76.19 %" in p.stdout and "19.05 %" in p.stdout
          and "4.76 %" in p.stdout, "2^2 text shows the allocation:\n" + p.stdout)
    check("No error term" in p.stdout, "2^2 text says there is no error term")
    out = os.path.join(tmp, "e.json")
    invmw("effects", "--design", "jain-2x2", "--db", db, "--json", out)
    j = json.load(open(out))
    r = j["responses"][0]
    check(j["method"] == "sign_table", "2^2 uses the sign table")
    near(r["mean"]["value"], 40, 1e-12, "q0")
    near(term(r, "memory")["q"]["value"], 20, 1e-12, "qA")
    near(term(r, "cache")["q"]["value"], 10, 1e-12, "qB")
    near(term(r, "memory*cache")["q"]["value"], 5, 1e-12, "qAB")
    near(round(term(r, "memory")["variation_pct"], 1), 76.2, 1e-9, "A 76.2%")
    near(round(term(r, "cache")["variation_pct"], 1), 19.0, 1e-9, "B 19.0%")
    near(round(term(r, "memory*cache")["variation_pct"], 1), 4.8, 1e-9, "AB 4.8%")
    check(r["error"] is None, "unreplicated: error is null")

    # Replicated (Jain Examples 18.1-18.3), published values.
    p = invmw("effects", "--design", "jain-2x2r3", "--db", db, "--json", "-")
    r = json.loads(p.stdout)["responses"][0]
    near(r["mean"]["value"], 41, 1e-12, "q0 r=3")
    near(term(r, "memory")["q"]["value"], 21.5, 1e-12, "qA r=3")
    near(term(r, "memory")["variation_pct"], 78.88, 0.005, "A 78.88%")
    near(r["error"]["variation_pct"], 1.45, 0.005, "error 1.45%")
    near(r["error"]["s_e"], 3.57, 0.005, "s_e")
    for name, lo, hi in [("memory", 19.58, 23.41), ("cache", 7.58, 11.41),
                         ("memory*cache", 3.08, 6.91)]:
        ci = term(r, name)["q"]["ci"]
        near(ci[0], lo, 0.01, f"{name} CI low")
        near(ci[1], hi, 0.01, f"{name} CI high")
    return db


def three_factor(tmp):
    """3 x 2 x 4 levels (numbers and strings), 2 replications, against hand formulas."""
    db = os.path.join(tmp, "multi.db")
    rnd = random.Random(5)
    P, NET, N, R = [1, 2, 4], ["fast", "slow"], [1000, 2000, 4000, 8000], 2
    y = {}
    runs = []
    point = 0
    for c, n in enumerate(N):
        for b, net in enumerate(NET):
            for a, p in enumerate(P):
                for k in range(R):
                    v = 1 + n / (1000 * p) + (0.5 * b * a) + rnd.uniform(0, 0.3)
                    y[a, b, c, k] = v
                    runs.append((point, k, {"p": p, "net": net, "n": n},
                                 {"t_wall": v, "t_comm": 0.1 * b + rnd.uniform(0, 0.01)},
                                 "ok", None))
                point += 1
    # A failed extra replication must be ignored (readers use status 'ok' only).
    runs.append((0, R, {"p": 1, "net": "fast", "n": 1000}, None, "failed", "timeout"))
    make_db(db, "opal-like", runs)

    A, B, C = len(P), len(NET), len(N)
    tot = A * B * C * R

    def mean(sel):
        vals = [v for key, v in y.items() if sel(*key)]
        return sum(vals) / len(vals)

    m = mean(lambda a, b, c, k: True)
    ma = [mean(lambda a, b, c, k, i=i: a == i) for i in range(A)]
    mb = [mean(lambda a, b, c, k, i=i: b == i) for i in range(B)]
    mc = [mean(lambda a, b, c, k, i=i: c == i) for i in range(C)]
    mab = {(i, j): mean(lambda a, b, c, k, i=i, j=j: a == i and b == j)
           for i in range(A) for j in range(B)}
    mac = {(i, j): mean(lambda a, b, c, k, i=i, j=j: a == i and c == j)
           for i in range(A) for j in range(C)}
    mbc = {(i, j): mean(lambda a, b, c, k, i=i, j=j: b == i and c == j)
           for i in range(B) for j in range(C)}
    mabc = {(i, j, l): mean(lambda a, b, c, k, i=i, j=j, l=l: a == i and b == j and c == l)
            for i in range(A) for j in range(B) for l in range(C)}
    ss = {"p": 0, "net": 0, "n": 0, "p*net": 0, "p*n": 0, "net*n": 0, "p*net*n": 0}
    sse = sst = 0
    for (a, b, c, k), v in y.items():
        ss["p"] += (ma[a] - m) ** 2
        ss["net"] += (mb[b] - m) ** 2
        ss["n"] += (mc[c] - m) ** 2
        ss["p*net"] += (mab[a, b] - ma[a] - mb[b] + m) ** 2
        ss["p*n"] += (mac[a, c] - ma[a] - mc[c] + m) ** 2
        ss["net*n"] += (mbc[b, c] - mb[b] - mc[c] + m) ** 2
        ss["p*net*n"] += (mabc[a, b, c] - mab[a, b] - mac[a, c] - mbc[b, c] + ma[a] + mb[b]
                          + mc[c] - m) ** 2
        sse += (v - mabc[a, b, c]) ** 2
        sst += (v - m) ** 2
    dof_e = A * B * C * (R - 1)
    s_e = math.sqrt(sse / dof_e)
    t = t_quantile(0.95, dof_e)

    p = invmw("effects", "--design", "opal-like", "--db", db, "--response", "t_wall",
              "--json", "-")
    j = json.loads(p.stdout)
    check(j["method"] == "general", "3x2x4 uses the general method")
    check([f["levels"] for f in j["factors"]] == [["1", "2", "4"], ["fast", "slow"],
                                                   ["1000", "2000", "4000", "8000"]],
          f"level order: {[f['levels'] for f in j['factors']]}")
    check(len(j["responses"]) == 1, "only the asked response")
    r = j["responses"][0]
    near(r["sst"], sst, 1e-9, "SST")
    near(r["error"]["ss"], sse, 1e-9, "SSE")
    check(r["error"]["dof"] == dof_e, "error dof")
    near(r["error"]["t"], t, 1e-6, "t quantile")
    for name, value in ss.items():
        near(term(r, name)["ss"], value, 1e-9, f"SS {name}")
        near(term(r, name)["variation_pct"], 100 * value / sst, 1e-9, f"variation {name}")
    # Main effect of p=4 and one three-factor interaction with their intervals.
    eff = {tuple(e["levels"].values()): e for e in term(r, "p")["effects"]}
    alpha = ma[2] - m
    near(eff[("4",)]["value"], alpha, 1e-12, "alpha p=4")
    half = t * s_e * math.sqrt((A - 1) / tot)
    near(eff[("4",)]["ci"][0], alpha - half, 1e-6, "alpha p=4 CI low")
    eff = {tuple(e["levels"].values()): e for e in term(r, "p*net*n")["effects"]}
    g = mabc[1, 1, 3] - mab[1, 1] - mac[1, 3] - mbc[1, 3] + ma[1] + mb[1] + mc[3] - m
    near(eff[("2", "slow", "8000")]["value"], g, 1e-12, "gamma p=2,net=slow,n=8000")
    near(eff[("2", "slow", "8000")]["std_error"],
         s_e * math.sqrt((A - 1) * (B - 1) * (C - 1) / tot), 1e-12, "gamma std error")
    # F-test of p against the integrated t? No: F of p from the hand SS.
    near(term(r, "p")["f"], (ss["p"] / (A - 1)) / (sse / dof_e), 1e-6, "F of p")

    # Pooling the three-factor interaction into the error.
    p = invmw("effects", "--design", "opal-like", "--db", db, "--response", "t_wall",
              "--max-order", "2", "--json", "-")
    r = json.loads(p.stdout)["responses"][0]
    check(r["pooled"] == ["p*net*n"], f"pooled: {r['pooled']}")
    near(r["error"]["ss"], sse + ss["p*net*n"], 1e-9, "pooled SSE")
    check(r["error"]["dof"] == dof_e + (A - 1) * (B - 1) * (C - 1), "pooled dof")

    # Text: allocation table and main effects.
    p = invmw("effects", "--design", "opal-like", "--db", db)
    check("Response t_wall" in p.stdout and "Response t_comm" in p.stdout,
          "text covers all responses:\n" + p.stdout)
    check("general full factorial" in p.stdout and "net=slow" in p.stdout, "text content")

    # Export round trips.
    csv_path = os.path.join(tmp, "out.csv")
    invmw("results", "export", "--design", "opal-like", "--db", db, "--format", "csv", "-o",
          csv_path)
    rows = list(csv.DictReader(open(csv_path, newline="")))
    check(len(rows) == A * B * C * R, f"CSV rows: {len(rows)}")
    check(list(rows[0].keys()) == ["point", "replication", "platform", "p", "net", "n",
                                   "t_wall", "t_comm"], f"CSV header {list(rows[0].keys())}")
    for row in rows:
        a, b, c = P.index(int(row["p"])), NET.index(row["net"]), N.index(int(row["n"]))
        check(float(row["t_wall"]) == y[a, b, c, int(row["replication"])],
              f"CSV value exact: {row}")
    p = invmw("results", "export", "--design", "opal-like", "--db", db, "--format", "extrap",
              expect=2)
    check("--where net=VALUE" in p.stderr, "extrap string factor error: " + p.stderr)
    # A failed export to an existing file leaves that file as it was (it used to be truncated
    # on open and then removed).
    before = open(csv_path).read()
    invmw("results", "export", "--design", "opal-like", "--db", db, "--format", "extrap", "-o",
          csv_path, expect=2)
    check(os.path.exists(csv_path) and open(csv_path).read() == before,
          "a failed export to an existing file changed or removed it")
    check(sorted(os.listdir(os.path.dirname(csv_path))) == sorted(
        n for n in os.listdir(os.path.dirname(csv_path)) if not n.startswith(".out.csv.tmp")),
        "a temporary file was left beside the export")
    p = invmw("results", "export", "--design", "opal-like", "--db", db, "--format", "extrap",
              "--where", "net=slow")
    lines = [json.loads(l) for l in p.stdout.splitlines()]
    check(len(lines) == A * C * R * 2, f"extrap lines: {len(lines)}")
    check(all(set(l) == {"params", "metric", "value"} and set(l["params"]) == {"p", "n"}
              for l in lines), "extrap line shape")
    walls = sorted(l["value"] for l in lines if l["metric"] == "t_wall")
    check(walls == sorted(v for (a, b, c, k), v in y.items() if b == 1), "extrap values exact")
    return db


def errors(tmp, db):
    bad = os.path.join(tmp, "bad.db")
    f = [{"memory": 4, "cache": 1}, {"memory": 16, "cache": 1},
         {"memory": 4, "cache": 2}, {"memory": 16, "cache": 2}]
    make_db(bad, "holes", [(0, 0, f[0], {"y": 1}, "ok", None), (1, 0, f[1], {"y": 2}, "ok", None),
                           (2, 0, f[2], {"y": 3}, "ok", None)])
    make_db(bad, "crashed", [(i, 0, f[i], {"y": i}, "ok", None) for i in range(3)] +
            [(3, 0, f[3], None, "failed", "exit status 134 (SIGABRT)")])
    p = invmw("effects", "--design", "holes", "--db", bad, expect=2)
    check("missing design point: (memory=16, cache=2)" in p.stderr, "holes: " + p.stderr)
    p = invmw("effects", "--design", "crashed", "--db", bad, expect=2)
    check("missing design point 3 (memory=16, cache=2)" in p.stderr and "SIGABRT" in p.stderr,
          "crashed: " + p.stderr)
    p = invmw("effects", "--design", "nosuch", "--db", db, expect=2)
    check("designs there: jain-2x2, jain-2x2r3" in p.stderr, "unknown design: " + p.stderr)
    p = invmw("effects", "--design", "x", "--db", os.path.join(tmp, "absent.db"), expect=2)
    check("no results database" in p.stderr, "absent db: " + p.stderr)
    p = invmw("effects", "--design", "jain-2x2", "--db", db, "--response", "t_idle", expect=2)
    check("response 't_idle' is missing" in p.stderr, "unknown response: " + p.stderr)
    p = invmw("effects", "--design", "jain-2x2", "--db", db, "--confidence", "2", expect=2)
    check("--confidence" in p.stderr, "bad confidence: " + p.stderr)
    p = invmw("effects", "--db", db, expect=2)
    check("--design NAME is required" in p.stderr, "no design: " + p.stderr)
    p = invmw("effects", "--help")
    check("allocation of variation" in p.stdout and "--max-order" in p.stdout, "effects --help")
    p = invmw("results", "export", "--help")
    check("Extra-P" in p.stdout, "export --help")
    p = invmw("results", "export", "--design", "jain-2x2", "--db", db, "--format", "xml",
              expect=2)
    check("expected csv or extrap" in p.stderr, "bad format: " + p.stderr)
    # INVMW_EXPERIMENT_DB is the default database.
    env = dict(os.environ, INVMW_EXPERIMENT_DB=db)
    p = subprocess.run([INVMW, "effects", "--design", "jain-2x2"], capture_output=True, text=True,
                       env=env, timeout=60)
    check(p.returncode == 0 and "76.19 %" in p.stdout, "INVMW_EXPERIMENT_DB: " + p.stderr)


with tempfile.TemporaryDirectory(prefix="invmw-effects-") as tmp:
    db = jain_designs(tmp)
    three_factor(tmp)
    errors(tmp, db)

if FAILURES:
    print(f"{len(FAILURES)} check(s) failed")
    sys.exit(1)
print("all checks passed")
