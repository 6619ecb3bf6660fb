"""What the commands cost on a cold and on a warm numba cache, measured: the numbers that
``mixlinreg COMMAND --help`` quotes.

    python experiments/command_costs.py [--write]

Each command runs twice in a fresh ``NUMBA_CACHE_DIR`` (an empty folder: every kernel it needs
compiles, the cold case), then again with that folder (the warm case), with its output in a new
folder each time. Prints the wall seconds; ``--write`` stores them in
``mixlinreg/configs/command_costs.json``, which the help texts read. Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "mixlinreg" / "configs" / "command_costs.json"

#: command name -> its arguments (OUT is replaced by a fresh folder)
COMMANDS = {
    "demo": ["demo"],
    "reproduce": ["reproduce", "fig2a", "--preset", "smoke", "--out", "OUT", "--no-progress"],
    "compare": ["compare", "--preset", "smoke", "--out", "OUT", "--no-progress"],
    "digits": ["digits", "--preset", "smoke", "--out", "OUT"],
    "check": ["check", "L1", "--preset", "smoke", "--out", "OUT", "--no-progress"],
}


def _run(args, cache, out):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    cmd = [sys.executable, "-m", "mixlinreg.cli"] + [str(out) if a == "OUT" else a for a in args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=out.parent)
    seconds = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return seconds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"store the table in {TABLE}")
    ap.add_argument("commands", nargs="*", default=list(COMMANDS))
    args = ap.parse_args(argv)
    rows = {}
    with tempfile.TemporaryDirectory(prefix="mixlinreg-costs-") as tmp:
        tmp = Path(tmp)
        for name in args.commands:
            cache = tmp / f"cache_{name}"
            cache.mkdir()
            cold = _run(COMMANDS[name], cache, tmp / f"{name}_cold")
            warm = _run(COMMANDS[name], cache, tmp / f"{name}_warm")
            rows[name] = {"args": " ".join(COMMANDS[name]).replace(" --out OUT", ""),
                          "cold_s": round(cold, 1), "warm_s": round(warm, 1)}
            print(f"{name:10s} cold {cold:7.1f} s   warm {warm:7.1f} s   "
                  f"(mixlinreg {rows[name]['args']})", flush=True)
    if args.write:
        table = {"measured": datetime.date.today().isoformat(),
                 "machine": f"{os.cpu_count()} cores, {platform.machine()}",
                 "command": "python experiments/command_costs.py --write", "commands": rows}
        TABLE.write_text(json.dumps(table, indent=1) + "\n")
        print(f"wrote {TABLE}")


if __name__ == "__main__":
    main()
