#!/usr/bin/env python3
"""CTest report.pipeline_quick: runs scripts/pipeline.sh --quick into a temporary directory and
checks that every artefact exists and that the HTML report shows the fit's own numbers (each
fitted parameter's row with its estimate and standard error as fit.json has them)."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time


def g5(v):
    return "-" if v is None else "%.5g" % v  # the report's number format (html_report.cc Num)


def main():
    script, build = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="invmw-pipeline-") as tmp:
        out = os.path.join(tmp, "pl")
        env = dict(os.environ, BUILD_DIR=build)
        t = time.monotonic()
        subprocess.run(["bash", script, "--quick", "--out", out], env=env, check=True)
        elapsed = time.monotonic() - t
        print("pipeline --quick took %.1f s" % elapsed)
        for f in ["profile/profile.json", "profile/traces.otf2", "results.db", "fit.json",
                  "tables/calibrated.toml", "tables/local.toml", "predictions.json",
                  "plots/measured-vs-predicted.svg", "plots/breakdown.svg", "plots/predict.svg",
                  "report.html"]:
            assert os.path.isfile(os.path.join(out, f)), "missing artefact " + f
        html = open(os.path.join(out, "report.html"), encoding="utf-8").read()
        fit = json.load(open(os.path.join(out, "fit.json")))
        assert fit["parameters"], "fit.json has no parameters"
        for p in fit["parameters"]:
            row = "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td>" % (
                p["name"], p["unit"], g5(p["value"]), g5(p["std_error"]))
            assert row in html, "report lacks the fitted row " + row
        pred = json.load(open(os.path.join(out, "predictions.json")))
        for name in ["cray-j90", "cray-t3e-900", "fast-cops", "slow-cops", "smp-cops"]:
            assert any(p["platform"] == name for p in pred["platforms"]), name + " not predicted"
            assert "<h3>%s</h3>" % name in html, "report lacks platform " + name
        assert len(re.findall(r"<svg", html)) == 3, "expected 3 inline SVG plots"
        assert "http://" not in html.split("<svg")[0] and "<script" not in html, "page not static"
        # Naming the missing file is part of the contract.
        os.remove(os.path.join(out, "fit.json"))
        r = subprocess.run([os.path.join(build, "bin", "invmw"), "report", out],
                           capture_output=True, text=True)
        assert r.returncode != 0 and "fit.json" in r.stderr, r.stderr
        assert elapsed < 180, "quick pipeline took %.0f s (> 3 min)" % elapsed
    print("ok")


if __name__ == "__main__":
    main()
