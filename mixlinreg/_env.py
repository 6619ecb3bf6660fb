"""What the environment lets a command use: one function for the number of usable cores.

Every place that splits work between processes and threads asks :func:`usable_cores` (and
:func:`numba_threads` for the numba thread pool), so that a limit set by the user
(``NUMBA_NUM_THREADS``, ``OMP_NUM_THREADS``), by the scheduler (CPU affinity) or by a container
(cgroup v2 ``cpu.max``, cgroup v1 ``cpu.cfs_quota_us``) is respected instead of crashing a command.
And :func:`interrupted_while_loading`: whether this process is the ``mixlinreg`` command, for a
Ctrl-C that lands while the package is imported; :func:`check_numba_threads_env`: a
``NUMBA_NUM_THREADS`` numba cannot start with is refused in one line before numba is imported.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

__all__ = ["usable_cores", "numba_threads", "cpu_limits", "interrupted_while_loading",
           "check_numba_threads_env"]

_CGROUP_V2 = Path("/sys/fs/cgroup/cpu.max")
_CGROUP_V1 = (Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us"))


def _env_int(name):
    """A positive integer environment variable, or None when unset or not a positive integer."""
    raw = os.environ.get(name, "").strip()
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if value >= 1 else None


def _cgroup_cpus(v2=_CGROUP_V2, v1=_CGROUP_V1):
    """CPUs allowed by a cgroup quota (rounded up), or None when there is no quota or no cgroup."""
    try:
        quota, period = Path(v2).read_text().split()[:2]
        if quota != "max":
            return max(1, math.ceil(int(quota) / int(period)))
        return None
    except (OSError, ValueError):
        pass
    try:
        quota = int(Path(v1[0]).read_text())
        period = int(Path(v1[1]).read_text())
        if quota > 0 and period > 0:
            return max(1, math.ceil(quota / period))
    except (OSError, ValueError):
        pass
    return None


def cpu_limits():
    """Every limit on the cores this process may use, as a dict (None = no limit of that kind).

    Keys: ``affinity`` (``os.sched_getaffinity``, else ``os.cpu_count``), ``cgroup`` (CPU quota),
    ``NUMBA_NUM_THREADS`` (numba's thread pool size, which the environment variable sets),
    ``OMP_NUM_THREADS``.
    """
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        affinity = os.cpu_count() or 1
    try:
        import numba

        numba_max = int(numba.config.NUMBA_NUM_THREADS)
    except Exception:  # pragma: no cover - numba is a dependency
        numba_max = _env_int("NUMBA_NUM_THREADS")
    return {"affinity": affinity, "cgroup": _cgroup_cpus(), "NUMBA_NUM_THREADS": numba_max,
            "OMP_NUM_THREADS": _env_int("OMP_NUM_THREADS")}


def usable_cores():
    """Cores this process may use: the smallest of CPU affinity, cgroup quota and ``OMP_NUM_THREADS``.

    ``NUMBA_NUM_THREADS`` is not a core limit (it caps numba's pool, see :func:`numba_threads`).
    Always at least 1.
    """
    lim = cpu_limits()
    vals = [v for key, v in lim.items() if key != "NUMBA_NUM_THREADS" and v is not None]
    return max(1, min(vals))


def numba_threads(n_jobs=1):
    """numba threads per worker when ``n_jobs`` workers share :func:`usable_cores`.

    Never more than numba's pool (``NUMBA_NUM_THREADS``), never less than 1.
    """
    per_job = max(1, usable_cores() // max(1, int(n_jobs)))
    pool = cpu_limits()["NUMBA_NUM_THREADS"]
    return max(1, min(per_job, pool)) if pool else per_job


def _in_command():
    """Whether this process is the ``mixlinreg`` command (the console script, or ``python -m
    mixlinreg.cli``) while the package loads."""
    script = os.path.basename(sys.argv[0]) in ("mixlinreg", "mixlinreg.exe") if sys.argv else False
    # python -m mixlinreg.cli: while the package loads, argv[0] is "-m"
    module = sys.argv[:1] == ["-m"] and "mixlinreg.cli" in getattr(sys, "orig_argv", [])
    return script or module


def numba_threads_problem(raw, cpus=None):
    """What is wrong with ``NUMBA_NUM_THREADS=raw`` (a sentence), or None when numba can start
    with it: unset or empty (numba's default), or a whole number from 1 to this machine's
    logical CPUs (``os.cpu_count()``). numba itself fails at import on 0 or a negative value
    (a traceback), ignores a non-integer with a warning and a traceback of its own, and starts
    a pool of any size above that (100000 threads crash the process with a segmentation fault;
    more threads than CPUs computes nothing faster, and mixlinreg gives its workers at most the
    usable cores anyway)."""
    if raw is None or not raw.strip():
        return None
    cpus = cpus or os.cpu_count() or 1
    try:
        value = int(raw.strip())
    except ValueError:
        value = None
    if value is not None and 1 <= value <= cpus:
        return None
    return (f"NUMBA_NUM_THREADS must be a whole number from 1 to {cpus} (the logical CPUs of "
            f"this machine), got {raw!r}; unset it (numba then uses every usable core) or set it "
            f"in that range")


def check_numba_threads_env():
    """Refuse a ``NUMBA_NUM_THREADS`` that numba cannot start with (see
    :func:`numba_threads_problem`), before numba reads it: in the ``mixlinreg`` command one line
    and exit 2, anywhere else a ``ValueError`` naming the variable, the range and the value.
    Once numba is imported it has read the variable already, and nothing is checked."""
    if "numba" in sys.modules:
        return
    problem = numba_threads_problem(os.environ.get("NUMBA_NUM_THREADS"))
    if problem is None:
        return
    if _in_command():
        try:
            print(f"mixlinreg: error: {problem}", file=sys.stderr)
        except (OSError, ValueError):
            pass
        raise SystemExit(2)
    raise ValueError(problem)


def interrupted_while_loading():
    """A Ctrl-C arrived while ``mixlinreg`` was being imported. In the ``mixlinreg`` command (the
    console script, or ``python -m mixlinreg.cli``) end it as any Ctrl-C: one line, exit 130;
    anywhere else return, and the caller re-raises the KeyboardInterrupt (a library must not
    exit its user's program)."""
    if not _in_command():
        return
    try:
        print("mixlinreg: interrupted (Ctrl-C) while loading; nothing was run", file=sys.stderr)
    except (OSError, ValueError):
        pass
    raise SystemExit(130)
