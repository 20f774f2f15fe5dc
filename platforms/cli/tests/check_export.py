#!/usr/bin/env python3
"""CTest platforms.export_simgrid and platforms.simgrid_roundtrip: `invmw platform export`.

Default mode (platforms.export_simgrid, no SimGrid needed):
- every shipped table (platforms/tables/*.toml) exports; the XML parses (xml.etree) and its
  cluster carries bw = a1 x 10^6 B/s, 2 x lat = b1, speed = 100 / a3 flop/s, the SMPI config
  (smpi/bw-factor 0:1, smpi/lat-factor 0:1) and the hostfile one line per node;
- a probed table of each tcp emulated platform (pooled by `invmw platform probe --from-raw` from
  synthetic probe lines, so the table has the real probed format) exports with --platform EMU:
  the platform's nodes, and a rate limit becomes a SHARED backbone of rate/8 B/s;
- refusals with the field named: a table without a1, without b1, without a compute parameter;
  an existing output without --force (and the file is left as it was).
--roundtrip (platforms.simgrid_roundtrip): a table of known a1/b1 (and fast-cops, and a probed
table of this machine) exported and run under smpirun with probe-pingpong built by smpicc: a1 (the
slope over sizes) and b1 (the 0-byte time) come back within 5%. A missing smpirun is a clear
error. Exits 77 (skipped) only when SimGrid is not installed."""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(cmd, expect=0, timeout=120):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if expect is not None and r.returncode != expect:
        sys.exit(f"FAIL {' '.join(cmd)}: exit {r.returncode}, expected {expect}\n"
                 f"{r.stdout}\n{r.stderr}")
    return r


def values(path):
    """[parameters]/[measures] values of a table, by 'section.name' (a small TOML reading)."""
    out, section = {}, None
    for line in open(path):
        m = re.match(r"\[(\w+)\]", line.strip())
        if m:
            section = m.group(1)
        m = re.match(r"(\w+)\s*=\s*\{\s*value\s*=\s*([-+0-9.eE]+)", line.strip())
        if m:
            out[f"{section}.{m.group(1)}"] = float(m.group(2))
    return out


def num(text, unit):
    check(text.endswith(unit), f"'{text}' is in {unit}")
    return float(text[:-len(unit)])


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * abs(b)


def export(a, table, out, extra=()):
    return run([a.invmw, "platform", "export", "--format", "simgrid", table, "-o", out] +
               list(extra))


def check_xml(xml_path, table_path, nodes, backbone_Bps=None):
    v = values(table_path)
    name = os.path.basename(xml_path)
    root = ET.parse(xml_path).getroot()
    check(root.tag == "platform" and root.get("version") == "4.1", f"{name}: <platform 4.1>")
    props = {p.get("id"): p.get("value") for p in root.iter("prop")}
    check(props.get("smpi/bw-factor") == "0:1" and props.get("smpi/lat-factor") == "0:1",
          f"{name}: <config> sets smpi/bw-factor and smpi/lat-factor to 0:1: {props}")
    clusters = list(root.iter("cluster"))
    check(len(clusters) == 1, f"{name}: one cluster")
    c = clusters[0]
    bw, lat = num(c.get("bw"), "Bps"), num(c.get("lat"), "s")
    speed = num(c.get("speed"), "f")
    bb_lat = num(c.get("bb_lat"), "s") if c.get("bb_lat") else 0.0
    check(close(bw, v["parameters.a1"] * 1e6), f"{name}: bw {bw} B/s = a1 x 10^6")
    check(close(2 * lat + bb_lat, v["parameters.b1"]), f"{name}: route latency = b1")
    if "parameters.a3" in v:
        check(close(speed, 100 / v["parameters.a3"]), f"{name}: speed {speed} = 100 / a3")
    check(c.get("radical") == f"0-{nodes - 1}", f"{name}: {nodes} nodes ({c.get('radical')})")
    if backbone_Bps is None:
        check(c.get("bb_bw") is None, f"{name}: no backbone")
    else:
        check(c.get("bb_bw") is not None and close(num(c.get("bb_bw"), "Bps"), backbone_Bps) and
              c.get("bb_sharing_policy") == "SHARED",
              f"{name}: shared backbone of {backbone_Bps} B/s ({c.get('bb_bw')})")
    hosts = open(xml_path[:-4] + ".hostfile").read().split()
    check(hosts == [f"node-{i}" for i in range(nodes)], f"{name}: hostfile of {nodes} nodes")
    cfg = open(xml_path[:-4] + ".cfg").read().split()
    check("--cfg=smpi/bw-factor:0:1" in cfg and "--cfg=smpi/lat-factor:0:1" in cfg,
          f"{name}: .cfg holds the factors: {cfg}")


def synthetic_raw(path, a1_MBps, b1):
    """Probe lines as probe-pingpong/-barrier/-kernels print them (contract F), of a network
    with exactly a1 and b1."""
    with open(path, "w") as f:
        for rep in range(2):
            for b in (0, 1024, 65536, 1048576):
                f.write('{"probe":"pingpong","bytes":%d,"reps":20,"replication":%d,"mean_s":%.9g}\n'
                        % (b, rep, b1 + b / (a1_MBps * 1e6)))
            f.write('{"probe":"barrier","ranks":2,"reps":100,"replication":%d,"mean_s":%.9g}\n'
                    % (rep, 2 * b1))
            for k, t, u in (("pair_check", 2e-9, 124750), ("pair_energy", 1e-8, 21658),
                            ("bonded", 5e-8, 500)):
                f.write('{"probe":"kernel","kernel":"%s","per_unit_s":%g,"units":%d,"reps":2,'
                        '"replication":%d,"n":500,"rc":10}\n' % (k, t, u, rep))


def emulated_rate_Bps(path):
    text = open(path).read()
    m = re.search(r'^rate\s*=\s*"([0-9.]+)(k|m|g)?bit"', text, re.M)
    if not m:
        return None
    return float(m.group(1)) * {None: 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)] / 8


def test_export(a, tmp):
    tables = sorted(glob.glob(os.path.join(a.tables, "*.toml")))
    check(len(tables) == 5, f"five shipped tables: {[os.path.basename(t) for t in tables]}")
    for t in tables:
        out = os.path.join(tmp, os.path.basename(t)[:-5] + ".xml")
        export(a, t, out, ["--nodes", "4"])
        check_xml(out, t, 4)

    # Probed tables of the emulated platforms, exported with their platform.
    emus = sorted(glob.glob(os.path.join(a.emulated, "*.toml")))
    check(len(emus) >= 10, f"the emulated platforms: {len(emus)}")
    for emu in emus:
        name = os.path.basename(emu)[:-5]
        text = open(emu).read()
        rate = emulated_rate_Bps(emu)
        raw = os.path.join(tmp, name + ".jsonl")
        synthetic_raw(raw, (rate or 1e9) / 1e6 * 0.9, 5e-5)
        table = os.path.join(tmp, name + ".probed.toml")
        run([a.invmw, "platform", "probe", "--name", name, "--platform", name, "--from-raw", raw,
             "--out", table])
        out = os.path.join(tmp, name + ".xml")
        export(a, table, out, ["--platform", name])
        m = re.search(r"^nodes\s*=\s*(\d+)", text, re.M)
        nodes = int(m.group(1)) if m else 2  # local: no nodes, the export's default
        check_xml(out, table, nodes, rate)

    # Refusals, each naming the field.
    base = open(os.path.join(a.tables, "fast-cops.toml")).read()
    for field, why in (("a1", "parameters.a1"), ("b1", "parameters.b1"),
                       ("a3", "parameters.a3 (or measures.mflops_adjusted)")):
        text = re.sub(rf"^{field} = .*\n", "", base, flags=re.M)
        if field == "a3":
            text = re.sub(r"^mflops(_adjusted)? = .*\n", "", text, flags=re.M)
        bad = os.path.join(tmp, f"no-{field}.toml")
        open(bad, "w").write(text)
        out = os.path.join(tmp, f"no-{field}.xml")
        r = run([a.invmw, "platform", "export", "--format", "simgrid", bad, "-o", out], expect=2)
        check(why in r.stderr and bad in r.stderr and not os.path.exists(out),
              f"table without {field}: refused naming {why}: {r.stderr.strip()}")
    out = os.path.join(tmp, "fast-cops.xml")  # written above
    before = open(out).read()
    r = run([a.invmw, "platform", "export", "--format", "simgrid", "slow-cops", "--tables",
             a.tables, "-o", out], expect=2)
    check("exists (use --force" in r.stderr and open(out).read() == before,
          f"existing output refused without --force and left as it was: {r.stderr.strip()}")
    run([a.invmw, "platform", "export", "--format", "simgrid", "slow-cops", "--tables", a.tables,
         "-o", out, "--force"])
    check(open(out).read() != before, "--force overwrites")
    # No SimGrid here: the files are written, and the user is told what running them needs.
    r = subprocess.run([a.invmw, "platform", "export", "--format", "simgrid", "fast-cops",
                        "--tables", a.tables, "-o", os.path.join(tmp, "nosg.xml")],
                       capture_output=True, text=True, env=dict(os.environ, PATH=tmp))
    check(r.returncode == 0 and "smpirun is not on PATH" in r.stderr and "libsimgrid-dev" in
          r.stderr, f"a missing smpirun is said: {r.stderr.strip()}")
    r = run([a.invmw, "platform", "export", "--format", "dot", "fast-cops", "-o", out], expect=2)
    check("supported: simgrid" in r.stderr, f"unknown format refused: {r.stderr.strip()}")


def fit_pingpong(stdout):
    """b1: the 0-byte time; a1: the least-squares slope through (bytes, t - b1), in MB/s."""
    pts = [(int(m.group(1)), float(m.group(2))) for m in
           re.finditer(r'"bytes":(\d+),.*?"mean_s":([-+0-9.eE]+)', stdout)]
    b1 = [t for b, t in pts if b == 0]
    if not b1 or len(pts) < 3:
        sys.exit(f"FAIL no ping-pong lines in the SMPI output:\n{stdout}")
    b1 = sum(b1) / len(b1)
    sxx = sum(b * b for b, t in pts if b > 0)
    sxy = sum(b * (t - b1) for b, t in pts if b > 0)
    return sxx / sxy / 1e6, b1


def smpi_pingpong(a, xml, hostfile=None):
    base = xml[:-4]
    cfg = open(base + ".cfg").read().split()
    cmd = [a.smpirun, "-platform", xml, "-hostfile", hostfile or base + ".hostfile", "-np", "2"
           ] + cfg + [
        # SMPI would otherwise inject the host's measured CPU time between the MPI calls: the
        # ping-pong then depends on the machine's load instead of the platform alone.
        "--cfg=smpi/simulate-computation:no", a.smpi_pingpong, "--sizes",
        "0,1024,16384,65536,262144,1048576", "--reps", "10"]
    r = run(cmd, timeout=120)
    return fit_pingpong(r.stdout)


def test_roundtrip(a, tmp):
    known = os.path.join(tmp, "known.toml")
    open(known, "w").write(
        'schema = 1\nname = "known"\n[parameters]\n'
        'a1 = { value = 20, unit = "MB/s", source = "round-trip test" }\n'
        'b1 = { value = 4e-05, unit = "s", source = "round-trip test" }\n'
        'a3 = { value = 1e-06, unit = "s", source = "round-trip test" }\n')
    tables = [known, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tables",
                                  "fast-cops.toml")]
    # A probed table of this machine, from the real probes and the build's MPI.
    local = os.path.join(tmp, "local.toml")
    run([a.invmw, "platform", "probe", "--quiet", "--name", "local", "--out", local,
         "--launcher", a.launcher, "--replications", "1", "--sizes", "0,1024,65536,1048576",
         "--pingpong-reps", "20", "--barrier-reps", "20", "--n", "300", "--kernel-reps", "1",
         "--kernel-min-time", "0"], timeout=120)
    tables.append(local)
    for t in tables:
        v = values(t)
        xml = os.path.join(tmp, os.path.basename(t)[:-5] + ".xml")
        export(a, t, xml)
        a1, b1 = smpi_pingpong(a, xml)
        print(f"     {os.path.basename(t)}: a1 {v['parameters.a1']:.6g} -> {a1:.6g} MB/s, "
              f"b1 {v['parameters.b1']:.6g} -> {b1:.6g} s")
        check(abs(a1 / v["parameters.a1"] - 1) <= 0.05,
              f"{os.path.basename(t)}: SMPI a1 {a1:.6g} within 5% of {v['parameters.a1']:.6g}")
        check(abs(b1 / v["parameters.b1"] - 1) <= 0.05,
              f"{os.path.basename(t)}: SMPI b1 {b1:.6g} within 5% of {v['parameters.b1']:.6g}")

    # A fat tree: b1 is the latency of the longest route (node-0 to node-7 crosses the top).
    xml = os.path.join(tmp, "fat.xml")
    export(a, known, xml, ["--topology", "fat-tree", "--fat-tree", "2;4,2;1,2;1,1"])
    far = os.path.join(tmp, "far.hostfile")
    open(far, "w").write("node-0\nnode-7\n")
    a1, b1 = smpi_pingpong(a, xml, far)
    print(f"     fat tree, node-0 to node-7: a1 20 -> {a1:.6g} MB/s, b1 4e-05 -> {b1:.6g} s")
    check(abs(a1 / 20 - 1) <= 0.05 and abs(b1 / 4e-5 - 1) <= 0.05,
          "fat tree: a1 and b1 of the longest route within 5%")
    # The 10 Mbit/s emulated platform's limit as the shared backbone caps the rate.
    xml = os.path.join(tmp, "emu.xml")
    export(a, known, xml, ["--platform", "emu-4x50-10mbit"])
    a1, b1 = smpi_pingpong(a, xml)
    print(f"     backbone of emu-4x50-10mbit: a1 -> {a1:.6g} MB/s (limit 1.25)")
    check(abs(a1 / 1.25 - 1) <= 0.05, f"shared backbone: a1 {a1:.6g} within 5% of 1.25 MB/s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--tables")
    ap.add_argument("--emulated")
    ap.add_argument("--roundtrip", action="store_true")
    ap.add_argument("--smpirun", default="")
    ap.add_argument("--smpi-pingpong", default="")
    ap.add_argument("--launcher", default="mpirun")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="invmw-export-") as tmp:
        if a.roundtrip:
            if not a.smpirun or not a.smpi_pingpong:
                print("SKIP: SimGrid (smpicc, smpirun: Debian libsimgrid-dev, see "
                      "scripts/setup.sh) was not found when the build was configured")
                sys.exit(77)
            # Configured with SimGrid but smpirun gone since: an error, not a skip.
            for p in (a.smpirun, a.smpi_pingpong):
                if not os.access(p, os.X_OK):
                    sys.exit(f"FAIL {p} not found or not executable (SimGrid's smpirun and "
                             "probe-pingpong-smpi: install libsimgrid-dev, scripts/setup.sh, "
                             "and build the target probe-pingpong-smpi)")
            test_roundtrip(a, tmp)
        else:
            test_export(a, tmp)
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")
    print("all checks passed")


if __name__ == "__main__":
    main()
