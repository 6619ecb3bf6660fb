"""Names that must never become paths, and output folders that are checked before any work.

Every command of :mod:`mixlinreg.cli` calls :func:`output_dir` (or :func:`output_file`) on each
place it will write *before* it computes anything, so a bad ``--out`` fails in a second instead of
after an hour of work. Experiment names, presets and study IDs pass :func:`plain_name` before they
are used in a file name, so a name can never point into another folder.
"""

from __future__ import annotations

import io
import os
import re
import socket
import tempfile
from pathlib import Path

#: a plain name: letters, digits, ``_ . -``; starts with a letter or a digit (so never ``.``/``..``)
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
_NAME_RE = re.compile(NAME_PATTERN)
_NAME_MAX = 100


#: a unit's name (it becomes a file name): a plain name that may also hold ``=`` (``m=100_n=50``)
UNIT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.=-]*$"
_UNIT_RE = re.compile(UNIT_PATTERN)


def is_unit_name(value, limit: int) -> bool:
    """Whether ``value`` is a unit's name (:data:`UNIT_PATTERN`) of at most ``limit`` characters:
    the one rule of the runner's workloads and of its store.

    >>> is_unit_name("m=100_n=50", 100), is_unit_name("../x", 100), is_unit_name("a" * 101, 100)
    (True, False, False)
    """
    return isinstance(value, str) and len(value) <= limit and _UNIT_RE.match(value) is not None


def plain_name(param: str, value) -> str:
    """Return ``value`` if it is a plain name (usable as one path component), else raise.

    Parameters
    ----------
    param : str
        What the name is, for the error message (``"name"``, ``"preset"``, ``"study ID"``).
    value : object
        The candidate name.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If ``value`` is not a string matching :data:`NAME_PATTERN` of at most 100 characters.

    Examples
    --------
    >>> plain_name("name", "fig2a")
    'fig2a'
    >>> plain_name("name", "../x")
    Traceback (most recent call last):
    ...
    ValueError: name must be a plain name (letters, digits, '_', '.', '-', starting with a letter or digit, at most 100 characters; no '/' or '..'), got '../x'
    """
    if not isinstance(value, str) or len(value) > _NAME_MAX or not _NAME_RE.match(value) \
            or value in (".", ".."):
        raise ValueError(f"{param} must be a plain name (letters, digits, '_', '.', '-', starting "
                         f"with a letter or digit, at most {_NAME_MAX} characters; no '/' or '..'), "
                         f"got {value!r}")
    return value


def inside(base, path) -> Path:
    """``path`` if it lies inside the folder ``base`` (after resolving links and ``..``), else raise."""
    base_r, path_r = Path(base).resolve(), Path(path).resolve()
    if path_r != base_r and base_r not in path_r.parents:
        raise ValueError(f"refusing to write {path}: it is outside the output folder {base}")
    return Path(path)


def output_dir(path, param: str = "--out") -> Path:
    """Create the folder ``path`` if needed and prove that a file can be written in it.

    Raises a :class:`ValueError` naming ``param`` and the path when it is a file, cannot be
    created, or is not writable. Call it before computing anything.
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"{param} must be a folder, but {p} is an existing file")
    try:
        p.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=p, prefix=".write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(f"{param}: cannot write in the folder {p} ({exc.strerror or exc})") from None
    return p


def output_file(path, param: str) -> Path:
    """Check, before any work, that the file ``path`` can be written (its folder is created).

    Raises a :class:`ValueError` naming ``param`` when ``path`` is a folder or its folder cannot be
    written.
    """
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{param} must be a file name, but {p} is a folder")
    if p.exists() and not os.access(p, os.W_OK):
        raise ValueError(f"{param}: the file {p} exists and is not writable")
    for parent in [p.parent, *p.parent.parents]:
        if parent.exists() and not parent.is_dir():
            raise ValueError(f"{param}: cannot write {p}: {parent} is a file, not a folder")
    output_dir(p.parent, param)
    return p


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()
#: host name as it appears in temporary file names (no dots, no separators)
HOST = socket.gethostname().replace(".", "_").replace(os.sep, "_") or "host"


def atomic_write(path, data) -> Path:
    """Write ``data`` (str or bytes) to ``path`` atomically: a temporary file unique to this process
    (``.<name>.<host>.<pid>.<random>.tmp`` in the same folder), fsynced, then ``os.replace``.

    A reader (or another process writing the same file) sees the old or the new whole file, never a
    mix. On failure only this call's own temporary file is removed.
    """
    path = Path(path)
    if isinstance(data, str):
        data = data.encode()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{HOST}.{os.getpid()}.",
                               suffix=".tmp")
    try:
        os.chmod(tmp, _FILE_MODE)  # mkstemp creates 0600; a result file is an ordinary file
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def save_png(fig, path, **savefig_kw) -> Path:
    """Render a matplotlib figure to PNG in memory and write it with :func:`atomic_write`."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", **savefig_kw)
    return atomic_write(path, buf.getvalue())
