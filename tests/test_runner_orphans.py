"""Local workers end with the process that gave them work: after a kill -9 of the parent, no
loky worker keeps computing or writing units (mixlinreg.runner.watch_owner)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from mixlinreg.runner import owner_alive

_PARENT = textwrap.dedent("""
    import sys, time
    import pandas as pd
    from mixlinreg.runner import Workload, run

    def slow(unit, ss):
        time.sleep(0.5)
        return pd.DataFrame({"x": [1.0]})

    if __name__ == "__main__":
        wl = Workload(name="orphans", preset="smoke", key={"a": 1},
                      units=tuple(f"u{i}" for i in range(40)), compute=slow, seed=0, pin_blas=False)
        run(wl, sys.argv[1], n_jobs=2, backend="loky", progress=False)
""")


def _children(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    return [int(x) for x in out.stdout.split()]


def _alive(pids):
    return [p for p in pids if owner_alive(p, None)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and ps")
def test_workers_end_when_their_parent_is_killed(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(_PARENT)
    store = tmp_path / "store"
    parent = subprocess.Popen([sys.executable, str(script), str(store)], cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    units = []
    while time.time() < deadline and len(units) < 3:  # the workers are running units
        time.sleep(0.2)
        units = list(store.rglob("u*.csv"))
        assert parent.poll() is None, parent.stderr.read().decode()[-2000:]
    assert len(units) >= 3, "the workers never started"
    workers = []
    for child in _children(parent.pid):  # loky's workers (and its resource tracker)
        workers += [child] + _children(child)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    at_kill = len(list(store.rglob("u*.csv")))
    time.sleep(4.0)  # the watch polls every second
    assert _alive(workers) == [], f"workers still alive 4 s after the kill: {_alive(workers)}"
    later = len(list(store.rglob("u*.csv")))
    assert later <= at_kill + 2, (at_kill, later)  # at most the units being written at the kill
