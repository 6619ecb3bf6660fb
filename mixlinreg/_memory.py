"""How much memory a unit of work may use, read from the environment, and the error of a unit
that cannot have it.

:func:`available_bytes` is the smallest of what the machine has free (``MemAvailable``), what a
container allows (cgroup v2 ``memory.max``, v1 ``memory.limit_in_bytes``, less what it uses) and
what this process may still map (``RLIMIT_AS`` / ``RLIMIT_DATA`` less its current size). The
runner compares a workload's estimate of its largest unit with it before any unit runs
(:func:`mixlinreg.runner.run`).
"""

from __future__ import annotations

import resource
from pathlib import Path

__all__ = ["UnitMemoryError", "available_bytes", "format_bytes", "jax_device_room"]


class UnitMemoryError(MemoryError):
    """A unit needs more memory than there is: refused before it runs (or it ran out); the
    message names the workload, the setting, the estimate and what to lower."""


_MEMINFO = Path("/proc/meminfo")
_STATUS = Path("/proc/self/status")
_CGROUP_V2 = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory.current"))
_CGROUP_V1 = (Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
              Path("/sys/fs/cgroup/memory/memory.usage_in_bytes"))


def _kib_field(path, name):
    """``name:  <n> kB`` of a /proc file, in bytes (None when absent)."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_room(limit_path, usage_path):
    try:
        raw = Path(limit_path).read_text().strip()
        if raw == "max":
            return None
        limit = int(raw)
        if limit >= 1 << 60:  # v1's "no limit" is a huge number
            return None
        used = int(Path(usage_path).read_text().strip())
    except (OSError, ValueError):
        return None
    return max(0, limit - used)


def _rlimit_room(which, field):
    try:
        soft, _ = resource.getrlimit(which)
    except (OSError, ValueError):  # pragma: no cover
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    size = _kib_field(_STATUS, field) or 0
    return max(0, soft - size)


def available_bytes():
    """Bytes a new unit can still use here (``None`` when nothing can be read, e.g. not Linux)."""
    rooms = [_kib_field(_MEMINFO, "MemAvailable"), _cgroup_room(*_CGROUP_V2),
             _cgroup_room(*_CGROUP_V1), _rlimit_room(resource.RLIMIT_AS, "VmSize"),
             _rlimit_room(resource.RLIMIT_DATA, "VmData")]
    rooms = [r for r in rooms if r is not None]
    return min(rooms) if rooms else None


def jax_device_room():
    """``(free bytes, the device in words)`` of JAX's default device where it reports its memory
    (a GPU: ``bytes_limit`` less ``bytes_in_use``), else ``None`` (no JAX, or JAX's CPU backend,
    whose arrays live in the host memory that :func:`available_bytes` reads)."""
    try:
        import jax

        dev = jax.devices()[0]
        stats = dev.memory_stats()
    except Exception:  # noqa: BLE001 - no JAX, no device, or no statistics: nothing to compare
        return None
    if not stats or "bytes_limit" not in stats:
        return None
    free = int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    return max(0, free), f"{dev.platform}:{dev.id} {getattr(dev, 'device_kind', '')}".strip()


def format_bytes(n) -> str:
    """``41 GiB``, ``2.5 GiB``, ``830 MiB``: what a message about memory shows.

    >>> format_bytes(44 * 2**30), format_bytes(2.5 * 2**30), format_bytes(830 * 2**20)
    ('44 GiB', '2.5 GiB', '830 MiB')
    """
    n = float(n)
    if n >= 10 * 2**30:
        return f"{n / 2**30:.0f} GiB"
    if n >= 2**30:
        return f"{n / 2**30:.1f} GiB"
    return f"{max(1.0, n / 2**20):.0f} MiB"
