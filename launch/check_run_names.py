#!/usr/bin/env python3
"""`invmw run` of a program whose file name is shell syntax: nothing of the name is executed.

The launcher-less run looks at the program's dependencies to pick the preload library; that
must not pass the name through a shell. The program is a copy of a real binary under names
with $(...), backquotes, quotes and ';'; each would create a marker file in the working
directory if a shell ever saw it. The run must work (exit status passed on) and create none.

  check_run_names.py --invmw PATH --prog PATH
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

NAMES = ["a'$(touch X1)'b", 'c"$(touch X2)"d', "e`touch X3`f", "g';touch X4;'h", "i$(touch X5)j"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--invmw", required=True)
    ap.add_argument("--prog", required=True, help="a real program that exits 0 (a copy is run)")
    a = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="invmw-run-names-") as work:
        for i, name in enumerate(NAMES):
            prog = os.path.join(work, name)
            shutil.copy2(a.prog, prog)
            out = os.path.join(work, "out%d" % i)
            r = subprocess.run([a.invmw, "run", "--out", out, "--", "./" + name], cwd=work,
                               capture_output=True, text=True, timeout=120)
            markers = sorted(n for n in os.listdir(work) if n.startswith("X"))
            ok = r.returncode == 0 and not markers
            print(("ok   " if ok else "FAIL ") + "%r: exit %d, marker files %s"
                  % (name, r.returncode, markers))
            if not ok:
                print(r.stderr)
                failures.append(name)
            for m in markers:
                os.unlink(os.path.join(work, m))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
