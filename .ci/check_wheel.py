"""Every file of the four package folders that git tracks is in the wheel (data included)."""

import subprocess
import sys
import zipfile
from pathlib import Path

FOLDERS = {"models": "mmaprobe/models", "smt": "mmaprobe/smt", "probes": "mmaprobe/probes",
           "vectors": "mmaprobe/vectors"}

wheel = Path(sys.argv[1])
names = set(zipfile.ZipFile(wheel).namelist())
tracked = subprocess.run(["git", "ls-files", *FOLDERS], capture_output=True, text=True,
                         check=True).stdout.split()
missing = []
for f in tracked:
    top, rest = f.split("/", 1)
    if f"{FOLDERS[top]}/{rest}" not in names:
        missing.append(f)
if missing:
    print("files missing from the wheel:\n  " + "\n  ".join(missing))
    sys.exit(1)
print(f"wheel {wheel.name}: all {len(tracked)} tracked package files present")
