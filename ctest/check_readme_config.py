#!/usr/bin/env python3
"""The README's configuration table must be the registry's (`invmw config list --markdown`):
every variable with its type, default and meaning, so documentation cannot drift from code."""
import subprocess
import sys

invmw, readme = sys.argv[1], sys.argv[2]
table = subprocess.run([invmw, "config", "list", "--markdown"], check=True, capture_output=True,
                       text=True).stdout.splitlines()
text = open(readme).read()
missing = [row for row in table if row not in text]
for row in missing:
    print("README.md lacks (or differs in) the row: " + row)
if missing:
    print("regenerate the table with: invmw config list --markdown")
    sys.exit(1)
print("README configuration table matches the %d registry rows" % (len(table) - 2))
