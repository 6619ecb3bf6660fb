"""Progress of long calls: a tqdm bar over iterations (``verbose=True``).

The kernel paths report how many iterations they have done through :func:`report` (the direct
path after each chunk of iterations, :mod:`mixlinreg._chunked`; the certified-Gram path after
each iteration); a caller that wants a bar installs a hook for the duration of its call with
:func:`iterations_bar`. Nothing is reported when no hook is installed, so a call without
``verbose`` costs one context-variable read per chunk.
"""

from __future__ import annotations

import contextlib
import contextvars

_HOOK = contextvars.ContextVar("mixlinreg_iteration_hook", default=None)


def report(done):
    """Tell the installed hook (if any) that ``done`` iterations are finished."""
    hook = _HOOK.get()
    if hook is not None:
        hook(done)


def progress_range(n, desc, enabled, unit="round"):
    """``range(n)``, with a tqdm bar on stderr over it when ``enabled`` (the baselines' loops:
    the bar stops where a loop that breaks early stops)."""
    if not enabled:
        return range(n)
    from tqdm.auto import tqdm

    return tqdm(range(n), desc=desc, unit=unit, dynamic_ncols=True)


@contextlib.contextmanager
def iterations_bar(total, desc, enabled=True, unit="it"):
    """A tqdm bar (on stderr) over ``total`` iterations while the block runs, moved by
    :func:`report`; yields the bar's update function (``update(done)``), or a no-op when not
    ``enabled``. The bar is closed (at ``total`` when the block finished) on the way out."""
    if not enabled:
        yield lambda done: None
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit, leave=True, dynamic_ncols=True)

    def update(done):
        done = min(int(done), total)
        if done > bar.n:
            bar.update(done - bar.n)

    token = _HOOK.set(update)
    try:
        yield update
        update(total)
    finally:
        _HOOK.reset(token)
        bar.close()
