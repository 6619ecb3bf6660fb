"""How a command of :mod:`mixlinreg.cli` ends when it does not succeed: one line, one exit status.

=====  ==========================================================================================
exit   when
=====  ==========================================================================================
0      done
1      the run failed: an OS error while writing (a full disk), a worker process that died (the
       out-of-memory killer), a bug (an internal error); ``check-agreement``: the paths disagree
2      what was asked is invalid or cannot run here: a bad option, option pair or config, a
       missing file, a missing optional dependency (the line names the extra to install)
130    interrupted (Ctrl-C)
143    stopped by SIGTERM (``kill PID``, a batch system's time limit, ``docker stop``)
141    the reader of the output went away (``mixlinreg check --list | head``): nothing printed
=====  ==========================================================================================

A failed or interrupted run says what was kept and the command that resumes it (a rerun skips
the finished units of its store). ``MIXLINREG_TRACEBACK=1`` shows the traceback instead (for
developers).
"""

from __future__ import annotations

import _thread
import os
import re
import shlex
import signal
import stat
import sys
import threading

__all__ = ["USER_ERRORS", "EXTRAS", "run", "doing", "need_module"]

#: exceptions that end a command in one line, exit status 2: what the user asked for is invalid or
#: does not fit (a MemoryError: the JAX device ran out of memory)
USER_ERRORS = (ValueError, TypeError, OverflowError, MemoryError, FileNotFoundError, NotADirectoryError,
               IsADirectoryError, PermissionError)
#: optional dependencies -> the extra of mixlinreg that installs them
EXTRAS = {"dask": "dask", "distributed": "dask", "jax": "jax", "jaxlib": "jax"}
#: exception class names of a worker process that died (loky, concurrent.futures)
_WORKER_DIED = ("TerminatedWorkerError", "BrokenProcessPool", "BrokenExecutor")


class _Run:
    """The command being run: what the line that ends it says."""

    def __init__(self, argv):
        self.argv = list(argv)
        self.command = None
        self.doing = None  # what it is computing now ("fig2a (paper preset)")
        self.kept = None  # where finished units are kept, or None
        self.interrupted = False
        self.signal = "SIGINT"  # which signal stopped it, when interrupted
        self.active = True

    def resume(self):
        return "mixlinreg " + shlex.join(self.argv)

    def tail(self):
        """``"; finished units are kept in X; resume with: mixlinreg ..."``."""
        if self.kept:
            return f"; finished units are kept in {self.kept}; resume with: {self.resume()}"
        return f"; nothing is kept; run it again with: {self.resume()}"


_CURRENT = []


def doing(what=None, kept=None):
    """Record what the running command computes now, and where its finished units are kept,
    for the line that ends it if it is interrupted or fails (no-op outside :func:`run`)."""
    if _CURRENT:
        if what is not None:
            _CURRENT[-1].doing = what
        if kept is not None:
            _CURRENT[-1].kept = str(kept)


def need_module(module, option, extra):
    """Import ``module`` or raise a ``ValueError`` naming ``option`` and the extra to install."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ValueError(f"{option} needs the optional dependency {module.split('.')[0]}, which is "
                         f"not installed ({exc}): pip install 'mixlinreg[{extra}]'") from None


def run(argv, body):
    """``body(state)`` (parse the options and run the command) with every ending made one line.

    ``SystemExit`` (argparse's errors and ``--help``) passes through. Ctrl-C anywhere (also when a
    worker's death is what reaches this process first) ends with status 130."""
    state = _Run(argv)
    _CURRENT.append(state)
    old = _on_sigint(state)
    old_term = _on_sigint(state, signal.SIGTERM)
    try:
        try:
            code = body(state)
            sys.stdout.flush()  # a closed pipe shows here
            if state.interrupted:  # a library caught the KeyboardInterrupt and went on
                raise KeyboardInterrupt
            return code
        except SystemExit:
            raise
        except BaseException as exc:  # noqa: BLE001 - every ending gets its line
            pipe = isinstance(exc, BrokenPipeError) and _stdout_broken()
            if os.environ.get("MIXLINREG_TRACEBACK") and not pipe:
                raise
            if pipe:
                _silence_stdout()
                return 141
            code, line = _ending(exc, state)
            _drop_frames(exc)
            try:
                print(f"mixlinreg{' ' + state.command if state.command else ''}: {line}",
                      file=sys.stderr)
            except (OSError, ValueError):
                pass
            return code
    finally:
        state.active = False
        _CURRENT.pop()
        if old is not None:
            signal.signal(signal.SIGINT, old)
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)


def _on_sigint(state, signum=signal.SIGINT):
    """Note a Ctrl-C (or SIGTERM, with ``signum``) in ``state``, then raise KeyboardInterrupt, as
    Python does for Ctrl-C; returns the handler it replaced."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        state.interrupted = True
        state.signal = signal.Signals(signum).name
        if _swallowed_in(frame):
            # there the exception would be printed with a traceback and ignored, and the
            # command would go on: raise it a moment later, back in plain Python
            threading.Timer(0.05, lambda: state.active and _thread.interrupt_main()).start()
            return
        raise KeyboardInterrupt

    try:
        return signal.signal(signum, handler)
    except (ValueError, OSError):  # pragma: no cover - no signals here
        return None


def _swallowed_in(frame, depth=64):
    """Whether an exception raised in ``frame`` would be printed and ignored: in a callback of
    numba's compiler (llvmlite), or in a finalizer at any depth (``__del__``, a ``weakref``
    callback: the garbage collector may run one anywhere)."""
    if frame is not None and "llvmlite" in frame.f_code.co_filename:
        return True
    while frame is not None and depth > 0:
        code = frame.f_code
        if code.co_name == "__del__" or code.co_filename.endswith("weakref.py"):
            return True
        frame, depth = frame.f_back, depth - 1
    return False


def _is_store_error(exc) -> bool:
    from .runner.store import StoreError

    return isinstance(exc, StoreError)


def _ending(exc, state):
    """``(exit status, line)`` for the exception that ended the command."""
    if state.interrupted or isinstance(exc, KeyboardInterrupt):
        during = f" during {state.doing}" if state.doing else ""
        if state.signal == "SIGTERM":
            return 143, f"stopped (SIGTERM){during}" + state.tail()
        return 130, f"interrupted (Ctrl-C){during}" + state.tail()
    first = _first_line(exc)
    if isinstance(exc, ImportError):
        root = (exc.name or _module_in(first) or "?").split(".")[0]
        if root in EXTRAS:
            return 2, (f"error: this needs the optional dependency {root}, which is not installed "
                       f"({first}): pip install 'mixlinreg[{EXTRAS[root]}]'")
        return 1, (f"error: a Python package mixlinreg needs is missing ({first}); reinstall "
                   f"mixlinreg (pip install mixlinreg)")
    if _is_store_error(exc):  # the store's state or the disk, not the command's words: exit 1
        return 1, f"error: {first}" + state.tail()
    if isinstance(exc, USER_ERRORS):
        return 2, f"error: {first}"
    if type(exc).__name__ in _WORKER_DIED:
        codes = re.search(r"exit codes? of the workers? (?:is|are) (\{[^}]*\}|\S+)", str(exc))
        how = f" (exit codes {codes.group(1)})" if codes else ""
        return 1, (f"error: a worker process died{how}; one killed by the system usually ran out "
                   f"of memory: try fewer --n-jobs" + state.tail())
    if isinstance(exc, OSError):
        what = exc.strerror or first
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        return 1, f"error: {what}{where} (errno {exc.errno})" + state.tail()
    return 1, (f"internal error: {type(exc).__name__}: {first} (a bug in mixlinreg: please report "
               f"it; MIXLINREG_TRACEBACK=1 shows the traceback)" + state.tail())


def _drop_frames(exc):
    """Free what the abandoned frames held now, with its complaints (a matplotlib animation that
    was never saved warns when it is freed), so that the command's last line is its own."""
    import gc
    import traceback
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seen = set()
        while exc is not None and id(exc) not in seen:
            seen.add(id(exc))
            traceback.clear_frames(exc.__traceback__)
            exc = exc.__context__
        gc.collect()


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _module_in(text):
    m = re.search(r"No module named '([^']+)'", text)
    return m.group(1) if m else None


def _stdout_broken():
    """Whether a BrokenPipeError is stdout's: a pipe (or socket) whose reader went away."""
    try:
        mode = os.fstat(sys.stdout.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _silence_stdout():
    """Point stdout at /dev/null so that the interpreter's last flush is quiet too."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
