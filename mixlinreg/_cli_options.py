"""Options of :mod:`mixlinreg.cli` that would do nothing, or something else than asked, are refused.

:func:`check_options` runs before any command does anything: every pair of options that conflict,
every option that does nothing in the context the others give it (``--scheduler`` without
``--backend dask``, ``--n-jobs`` with ``--backend sequential``, anything but study IDs and
``--paper`` with ``check --list``, ...) ends in one line naming both and exit status 2. An option
counts as given when it is on the command line, whatever its value (``--backend loky
--report-only`` is refused too): :func:`given` parses the command line again with every default
suppressed. ``--no-progress`` is never refused: it only changes what is shown.

:func:`config_lines` is how every command names the config file it read (and, for a packaged
config, a local file of the same name that it did not read).
"""

from __future__ import annotations

import argparse

import numpy as np

__all__ = ["positive_int", "nonneg_int", "positive_float", "nonneg_float", "text_arg", "given",
           "check_options", "config_lines"]  # and the where/kernel options of the commands


def _typed(kind, low, what, strict=False):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
        bad = value < low or (strict and value == low)
        if kind is float:
            bad = bad or not np.isfinite(value)
        if bad:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value

    return parse


#: argparse types: counts are >= 1, seeds >= 0, scales > 0 or >= 0, all finite
positive_int = _typed(int, 1, "an integer >= 1")
nonneg_int = _typed(int, 0, "an integer >= 0")
positive_float = _typed(float, 0.0, "a finite number > 0", strict=True)
nonneg_float = _typed(float, 0.0, "a finite number >= 0")


def text_arg(what):
    """An argparse type: a non-empty string (an empty ``--out`` would write in the current folder)."""
    def parse(text):
        if not text.strip():
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r} (empty)")
        return text

    parse.text_arg = what
    return parse


def _actions(parser):
    for action in parser._actions:
        yield parser, action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _actions(sub)


def given(build_parser, argv) -> set:
    """The ``dest`` of every option on the command line ``argv`` (and of positionals given a
    value other than their default)."""
    parser = build_parser()
    positional = {}
    for _, action in _actions(parser):
        if action.option_strings and action.dest != "help":
            action.default = argparse.SUPPRESS
        elif not action.option_strings:
            positional[action.dest] = action.default
    ns, _ = parser.parse_known_args(argv)
    out = set()
    for dest, value in vars(ns).items():
        if dest in ("func", "command"):
            continue
        if dest in positional:
            if value not in (positional[dest], [], None):
                out.add(dest)
        else:
            out.add(dest)
    return out


#: how an option is named in a message (the others: ``--`` and the dest with ``-``)
_NAMES = {"panel": "a panel name", "ids": "study IDs"}


def _name(dest):
    return _NAMES.get(dest, "--" + dest.replace("_", "-"))


def _conflict(a, b, why):
    def rule(args, got):
        if a in got and b in got:
            value = f" {getattr(args, b)!r}" if b in _NAMES else ""
            raise ValueError(f"{_name(a)} and {_name(b)}{value} conflict: {why}; give one of them")
    return rule


def _unused_with(flag, dests, why):
    """Refuse each of ``dests`` given together with ``flag`` (with which it does nothing)."""
    def rule(args, got):
        if flag in got and getattr(args, flag):
            bad = [_name(d) for d in dests if d in got]
            if bad:
                raise ValueError(f"{', '.join(bad)} {'does' if len(bad) == 1 else 'do'} nothing "
                                 f"with {_name(flag)} ({why}): drop {'it' if len(bad) == 1 else 'them'}")
    return rule


def _needs(dest, other, why):
    def rule(args, got):
        if dest in got and getattr(args, dest) and other not in got:
            raise ValueError(f"{_name(dest)} {why}; give {_name(other)} too, or drop {_name(dest)}")
    return rule


def _scheduler(args, got):
    if "scheduler" in got and args.backend != "dask":
        raise ValueError(f"--scheduler is only used with --backend dask, got --backend {args.backend}")


def _jobs(args, got):
    if "n_jobs" in got and args.n_jobs > 1 and args.backend != "loky":
        what = ("does nothing (the Dask cluster has its own workers)" if args.backend == "dask"
                else "would only give each unit fewer threads (units run one at a time in this "
                     "process)")
        raise ValueError(f"--n-jobs {args.n_jobs} sets the number of loky worker processes; with "
                         f"--backend {args.backend} it {what}: drop --n-jobs or use --backend loky")


def _jax_jobs(args, got):
    """One rule for every command with --kernel and --n-jobs: the JAX kernel runs the units in
    this process (worker processes would each claim its device)."""
    if getattr(args, "kernel", None) == "jax" and "n_jobs" in got and args.n_jobs > 1:
        raise ValueError(f"--n-jobs {args.n_jobs} and --kernel jax conflict: the JAX kernel runs "
                         f"the units in this process, on its device (worker processes would "
                         f"each claim it); drop --n-jobs, or use --kernel numba")


def _jax_method(args, got):
    if args.kernel == "jax" and args.method == "gram":
        raise ValueError("--method gram and --kernel jax conflict: the JAX backend runs the direct "
                         "path only (--method auto or data); give one of them")


def _study_ids(args, got):
    """``check``'s study IDs and ``--paper``: known, and not both."""
    from .theory import STUDIES
    from .theory.study import PAPERS

    if args.paper is not None and args.paper not in PAPERS:
        raise ValueError(f"--paper must be one of {list(PAPERS)}, got {args.paper!r}")
    if args.paper is not None and args.ids:
        raise ValueError("give study IDs or --paper, not both")
    bad = [i for i in args.ids if i not in STUDIES]
    if bad:
        raise ValueError(f"unknown study IDs {bad}; known: {list(STUDIES)}")


_RUN = ("n_jobs", "backend", "scheduler", "kernel")
_STORE = ("store", "no_store")
RULES = {
    "reproduce": [
        _conflict("config", "panel", "--config FILE is the grid to run instead of a packaged panel"),
        _unused_with("report_only", _RUN + ("method",), "--report-only runs nothing"),
        _jax_method, _jax_jobs, _scheduler, _jobs],
    "check": [
        _study_ids,
        _unused_with("list", ("preset", "out", "seed", "write", "report_only", "migrate_records",
                              "control_only", "stores", "reanalyse")
                     + _STORE + _RUN, "--list only lists the studies"),
        _unused_with("migrate_records", ("ids", "paper", "preset", "seed", "write", "report_only",
                                         "control_only", "stores", "reanalyse")
                     + _STORE + _RUN, "--migrate-records only renames the records in --out"),
        _needs("report_only", "write", "only rewrites the report of --write from the records"),
        _unused_with("report_only", ("seed", "control_only", "stores", "reanalyse") + _STORE + _RUN,
                     "--report-only runs nothing"),
        _unused_with("reanalyse", ("seed", "control_only", "stores", "write", "migrate_records")
                     + _STORE + _RUN,
                     "--reanalyse only analyses the committed tables in --out again (nothing runs)"),
        _conflict("store", "no_store", "--no-store keeps no rows, --store says where to keep them"),
        _jax_jobs, _scheduler, _jobs],
    "compare": [
        _conflict("store", "no_store", "--no-store keeps no rows, --store says where to keep them"),
        _jax_jobs, _scheduler, _jobs],
    "digits": [
        _conflict("store", "no_store", "--no-store keeps no rows, --store says where to keep them")],
    "bench": [
        _unused_with("units", ("quick", "threads", "n_iter", "repeats", "seed", "with_early_stop"),
                     "--units times one unit of each panel with the panel's own protocol"),
        _needs("preset", "units", "is the Figure 2 preset of --units and does nothing without it")],
}


def check_options(args, got):
    """Raise a ``ValueError`` naming the options when ``args.command``'s options conflict or one
    would do nothing; ``got``: :func:`given`."""
    for rule in RULES.get(args.command, ()):
        rule(args, got)


# ---------------------------------------------------------------- where and how units run
def _add_where(parser, n_jobs_help=None):
    """``--n-jobs`` (when ``n_jobs_help``), ``--backend`` and ``--scheduler``: where the units run
    (:func:`mixlinreg.runner.run`)."""
    if n_jobs_help:
        parser.add_argument("--n-jobs", type=positive_int, default=1, help=n_jobs_help)
    parser.add_argument("--backend", default="loky", choices=("loky", "dask", "sequential"),
                        help="how units are run: loky worker processes, a Dask cluster, or in "
                             "this process [loky]")
    parser.add_argument("--scheduler", default=None, type=text_arg("a Dask scheduler address"),
                        help="Dask scheduler address for --backend dask (none: a local cluster)")


def _where(args):
    """Refuse a ``--scheduler`` that would be ignored, and ``--backend dask`` without dask."""
    from ._cli_faults import need_module

    if args.scheduler is not None and args.backend != "dask":
        raise ValueError(f"--scheduler is only used with --backend dask, got --backend {args.backend}")
    if args.backend == "dask":
        need_module("dask.distributed", "--backend dask", "dask")
    return dict(n_jobs=args.n_jobs, backend=args.backend, scheduler=args.scheduler)


def _add_kernel(parser):
    parser.add_argument("--kernel", default="numba", choices=("numba", "jax"),
                        help="who runs IFCA: numba (this package's kernels on the CPU cores) or jax "
                             "(the same iterations with JAX, on a GPU where the 'gpu' extra "
                             "installed one; pip install 'mixlinreg[jax]' or 'mixlinreg[gpu]') "
                             "[numba]")


def _kernel(args):
    """``--kernel``, with a missing JAX reported as one line before any work."""
    if args.kernel == "jax":
        from ._jax import import_jax

        try:
            import_jax()
        except ImportError as exc:
            raise ValueError(f"--kernel jax: {exc}") from None
    return args.kernel


def config_lines(path, name=None, sub="", command="", own=None, indent="  "):
    """``config: PATH``, and a note for each local file a packaged config name did not read
    (:func:`mixlinreg.config.shadows`): ``own`` is the option that reads a file of one's own."""
    from .config import shadows

    lines = [f"{indent}config: {path}"]
    if name is not None:
        for q in shadows(name, sub):
            use = (f"pass {own} {q} to use it" if own else
                   f"mixlinreg {command} reads only its packaged config")
            lines.append(f"{indent}note: ./{q} is not read: {name!r} names the packaged config "
                         f"above; {use}")
    return lines
