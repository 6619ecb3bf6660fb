"""Cold start of a fresh clone: ``pip install -e .``, then ``mixlinreg demo`` cold and warm.

    python experiments/cold_start.py [REV ...] [--out DIR]

For each git revision (default HEAD) of this repository: clone it into DIR/clone_<rev>, make a
new virtual environment, time ``pip install -e .`` (packages from pip's cache or index), run
``mixlinreg demo`` on the empty numba cache (cold) and again (warm), and print every line the
user sees with the seconds since the command started, then the summary: install seconds, seconds
from the start of the install to the demo's first printed result, and the warm demo's. Run it on
an idle machine (BENCHMARKS.md, "Cold start", gives the measured numbers).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _stamped(cmd, cwd):
    """Run ``cmd``; return its lines as ``(seconds, stream, text)`` and the wall time."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    lines = []

    def pump(stream, tag):
        for line in stream:
            lines.append((time.perf_counter() - t0, tag, line.rstrip()))

    threads = [threading.Thread(target=pump, args=(proc.stdout, "out")),
               threading.Thread(target=pump, args=(proc.stderr, "err"))]
    for t in threads:
        t.start()
    proc.wait()
    for t in threads:
        t.join()
    if proc.returncode:
        raise SystemExit(f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n"
                         + "\n".join(text for _, _, text in lines[-20:]))
    return sorted(lines), time.perf_counter() - t0


def measure(rev, out):
    clone = out / f"clone_{rev}"
    if clone.exists():
        shutil.rmtree(clone)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", rev], cwd=clone, check=True)
    subprocess.run([sys.executable, "-m", "venv", ".venv"], cwd=clone, check=True)
    _, install = _stamped([".venv/bin/pip", "install", "-q", "-e", "."], clone)
    cold, _ = _stamped([".venv/bin/mixlinreg", "demo"], clone)
    warm, _ = _stamped([".venv/bin/mixlinreg", "demo"], clone)
    first = lambda lines: next(s for s, tag, _ in lines if tag == "out")  # noqa: E731
    print(f"== {rev} ({subprocess.run(['git', 'rev-parse', '--short', rev], cwd=ROOT, text=True, capture_output=True).stdout.strip()})")
    for name, lines in (("cold", cold), ("warm", warm)):
        print(f"-- mixlinreg demo, {name}:")
        for s, tag, text in lines:
            print(f"[{s:6.1f} s {tag}] {text}")
    print(f"install {install:.1f} s; install start to the demo's first printed result "
          f"{install + first(cold):.1f} s (cold cache); warm demo's first result after "
          f"{first(warm):.1f} s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("revs", nargs="*", default=["HEAD"])
    ap.add_argument("--out", type=Path, default=Path("/tmp/mixlinreg-cold-start"))
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for rev in args.revs:
        measure(rev, args.out)


if __name__ == "__main__":
    main()
