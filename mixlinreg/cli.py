"""Command line interface: ``mixlinreg reproduce``, ``check``, ``check-agreement``, ``compare``,
``digits``, ``teach``, ``demo``, ``bench`` and ``regenerate``.

User errors (a bad option value, a bad config, a missing file, options that conflict or would
do nothing: :mod:`mixlinreg._cli_options`) end in one line ``mixlinreg <command>: error: ...`` and
exit status 2; a fault mid-run (Ctrl-C: 130, a full disk, a dead worker, a bug: 1) in one line
that says what was kept and how to resume (:mod:`mixlinreg._cli_faults`). Set
``MIXLINREG_TRACEBACK=1`` to see the traceback instead.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from ._cli_faults import doing
from ._cli_options import (_add_kernel, _add_where, _kernel, _where, config_lines, nonneg_float,
                           nonneg_int, positive_float, positive_int, text_arg)
from .config import PRESETS

DESCRIPTION = """IFCA on mixtures of linear regressions: reproduce the paper's Figure 2, check its
theory, compare with baselines, benchmark the kernel. 'mixlinreg COMMAND --help' lists a
command's options; a user error ends in one line 'mixlinreg COMMAND: error: ...' (exit status 2),
Ctrl-C in one line saying how to resume (130), another failure in one line (1)."""


def _demo(args):
    """A small end-to-end run: one Figure 2 style problem, IFCA with restarts, the result."""
    import mixlinreg as mlr

    t0 = time.perf_counter()
    ss = np.random.SeedSequence(args.seed)
    data_seed, init_seed = ss.spawn(2)
    mix = mlr.make_mixture(args.m, args.n, args.d, args.k, args.R, args.sigma,
                           rng=data_seed, dtype=np.float32)
    steps = [1.0, 0.1, 0.01] if args.k == 2 else [2.0, 1.0, 0.5]
    init = mlr.init_bernoulli(args.n_init, args.k, args.d, rng=init_seed, dtype=np.float32)
    runs = np.repeat(init, len(steps), axis=0)
    lr = np.tile(steps, args.n_init)
    res = mlr.ifca(mix.X, mix.y, runs, lr, n_iter=args.n_iter)
    near = mlr.dist_nearest(res.theta, mix.theta_star)
    matched = mlr.dist_matched(res.theta, mix.theta_star)
    ari = mlr.adjusted_rand(mix.labels, res.labels)
    elapsed = time.perf_counter() - t0
    print(f"mixture of linear regressions: m={args.m} n={args.n} d={args.d} k={args.k} "
          f"R={args.R} sigma={args.sigma} (theta*_j = R * Bernoulli(0.5)^d, separation "
          f"{mix.separation:.3f})")
    print(f"IFCA, gradient averaging, {args.n_iter} iterations, float32: {args.n_init} Bernoulli "
          f"initializations x step sizes {steps} = {res.theta.shape[0]} runs in one kernel call")
    print(f"{'step':>6} {'runs ok':>8} {'diverged':>8} {'best dist_nearest':>18} {'best dist_matched':>18} "
          f"{'best ARI':>9}")
    plus = 0.001  # the authors' slack in the R-sigma panels (mlr.metrics.success_authors)
    won = mlr.metrics.success_authors(near, args.sigma, plus=plus)
    for s in steps:
        sel = lr == s
        ok = int(np.sum(won[sel]))
        print(f"{s:>6g} {ok:>8d} {int(res.diverged[sel].sum()):>8d} {np.nanmin(near[sel]):>18.4f} "
              f"{np.nanmin(matched[sel]):>18.4f} {np.max(ari[sel]):>9.3f}")
    success = bool(np.any(won))
    print(f"columns, over the {args.n_init} runs of each step size: 'runs ok' meet the authors' "
          f"rule below; 'diverged' were frozen as diverging; 'best dist_nearest' is the smallest "
          f"distance of a run's models to their nearest true parameters, 'best dist_matched' the "
          f"same under the best one-to-one matching (mixlinreg.metrics); 'best ARI' the highest "
          f"adjusted Rand index of the machines' clusters against the true ones (1 = exact)")
    print(f"trial success (authors' rule, mixlinreg.metrics.success_authors: some run has "
          f"dist_nearest < 0.6 sigma + {plus:g}): {success}")
    print(f"done in {elapsed:.1f} s (a numba compile, if the line before the table announced "
          f"one, included)")
    return 0


def _bench(args):
    from ._paths import atomic_write, output_file
    from .bench import format_table, load_shapes, run_benchmark

    from .config import find

    if args.csv:
        output_file(args.csv, "--csv")  # checked before the benchmark runs
    for panel in args.units or ["bench"]:
        print("\n".join(config_lines(find(panel), panel, command="bench", indent="")))
    configs, dtypes = load_shapes("quick" if args.quick else "paper")  # mixlinreg/configs/bench.toml
    es = (False, True) if args.with_early_stop else (False,)
    if args.units:
        from .bench import bench_units

        rows = bench_units(panels=args.units, preset=args.preset)
        total = {m: sum(r[f"projected_hours_{m}"] for r in rows) for m in ("data", "gram")}
        print(f"projected grid ({', '.join(args.units)}; {args.preset} preset, linear in m n): "
              f"data path {total['data']:.1f} h, gram path {total['gram']:.1f} h "
              f"({total['data'] / total['gram']:.2f}x)")
        if args.csv:
            import pandas as pd

            atomic_write(args.csv, pd.DataFrame(rows).to_csv(index=False))
            print(f"wrote {args.csv}")
        return 0
    from ._env import cpu_limits

    pool = cpu_limits()["NUMBA_NUM_THREADS"]
    if any(t > pool for t in args.threads):
        print(f"note: numba's pool has {pool} threads (NUMBA_NUM_THREADS); timing "
              f"{sorted({min(t, pool) for t in args.threads})} instead of {args.threads}")
        args.threads = sorted({min(t, pool) for t in args.threads})
    rows = run_benchmark(configs=configs, dtypes=dtypes, threads=args.threads, n_iter=args.n_iter,
                         repeats=args.repeats, seed=args.seed, early_stop=es)
    print()
    print(format_table(rows))
    if args.csv:
        import pandas as pd

        atomic_write(args.csv, pd.DataFrame(rows).to_csv(index=False))
        print(f"wrote {args.csv}")
    return 0


PANELS = ("fig2a", "fig2b", "fig2c", "fig2d")


def _reproduce(args):
    from .harness import ResultStore, format_summary, load_config, run_experiment
    from .harness.report import format_success, write_panel_outputs
    from .plots import combined_figure, save_figure

    from ._paths import output_dir

    where = _where(args)  # dask installed where --backend dask
    kernel = None if args.report_only else _kernel(args)
    output_dir(args.out, "--out")  # before any work
    figures = args.out if args.figures is None else output_dir(args.figures, "--figures")
    if args.config is not None:
        targets = [args.config]
    elif args.panel == "all":
        targets = list(PANELS)
    else:
        targets = [args.panel]
    panels = []
    for target in targets:
        exp = load_config(target, preset=args.preset)
        doing(f"{exp.name} ({exp.preset} preset)", None if args.report_only else args.out)
        print(f"{exp.name} ({exp.preset} preset): {_setting(exp)}")
        print("\n".join(config_lines(exp.path, target, command="reproduce", own="--config")))
        print(f"  {len(exp.units())} units x {exp.runs_per_unit} runs; results in "
              f"{args.out}/{exp.name}-{exp.preset}-{exp.hash()[:12]}/")
        if args.report_only:
            store = ResultStore(args.out, exp)
            print(f"  report only: {len(store.done())} of {len(exp.units())} units finished")
        else:
            store, summary = run_experiment(exp, args.out, method=args.method, kernel=kernel,
                                            progress=not args.no_progress, **where)
            print("  " + format_summary(summary))
        table, paths = write_panel_outputs(store, figures)
        if table is not None:
            print(format_success(table, exp.layout))
            print("  wrote " + ", ".join(str(p) for p in paths))
            panels.append((exp.name, table, exp.layout))
    if len(panels) > 1:
        path = save_figure(combined_figure(panels), f"{figures}/fig2_{args.preset}.png")
        print(f"wrote {path}")
    return 0


def _check_agreement(args):
    from .harness import load_config
    from .harness.agreement import check_agreement

    from ._paths import atomic_write, output_file

    if args.tol is not None and args.candidate != "early-stop":
        raise ValueError(f"--tol is the early-stop tolerance and applies only to --candidate "
                         f"early-stop, got --tol {args.tol:g} with --candidate {args.candidate}")
    if args.candidate == "jax":
        from ._jax import import_jax

        try:
            import_jax()
        except ImportError as exc:
            raise ValueError(f"--candidate jax: {exc}") from None
    if args.csv:
        output_file(args.csv, "--csv")  # checked before any unit runs
    exps = [load_config(name, preset=args.preset) for name in (args.panels or PANELS)]
    for name, exp in zip(args.panels or PANELS, exps):
        print("\n".join(config_lines(exp.path, name, command="check-agreement", indent="")))
    table, runs, verdict = check_agreement(
        exps, args.candidate, trials=args.trials, units=args.units, tol=args.tol,
        rel_tol=args.rel_tol, floor=args.floor, seed=args.seed)
    if args.csv:
        atomic_write(args.csv, table.to_csv(index=False, float_format="%.6g"))
        print(f"wrote {args.csv}")
    what = args.candidate + (f" (tol={table['tol'].iloc[0]:g})" if args.candidate == "early-stop" else "")
    flags = int(table[[c for c in table if c.startswith("flags_changed_")]].to_numpy().sum())
    print(f"{what} vs numba's direct path with the full iterations: {len(table)} units, "
          f"{int(table['runs'].sum())} runs; {table['seconds_a'].sum():.1f} s -> "
          f"{table['seconds_b'].sum():.1f} s, iterations {int(table['iterations_a'].sum())} -> "
          f"{int(table['iterations_b'].sum())}; success flags changed {flags}; divergence flags "
          f"changed {int(table['diverged_changed'].sum())}; runs whose distances or divergence "
          f"differ {int(table['runs_beyond'].sum())}: {int(table['not_reproducible'].sum())} not "
          f"reproducible by the direct path under another packing (listed, not failed unless "
          f"their divergence flag changed), "
          f"{int(table['ulp_sensitive'].sum())} reproducible but moved by one ulp of the initial "
          f"models and {int(table['disagree'].sum())} reproducible (both fail); largest distance "
          f"difference of the other runs {table['max_gap_counted'].max():.2e} (relative; absolute "
          f"below {args.floor:g}); largest change of the final loss {table['max_rel_loss'].max():.2e} "
          f"relative; verdict: "
          + (f"AGREE (success and divergence flags identical, distances within {args.rel_tol:g} "
             f"for every run the direct path reproduces)" if verdict else
             f"DISAGREE ({int((~table['agrees'].astype(bool)).sum())} of {len(table)} units)"))
    for r in runs.itertuples(index=False):
        own = ", ".join(f"{v:.6g}" for v in r.direct_dist_nearest)
        what = {"not reproducible": "not reproducible by the direct path (listed, not failed)",
                "one-ulp sensitive": "reproducible by the direct path, moved by one ulp (fails)",
                "disagree": "reproducible by the direct path (fails)",
                "not re-run": "not re-run: too many runs differ in the unit (fails)"}[r.status]
        print(f"  {r.experiment} {r.unit} run {r.run}: {what}"
              + ("; DIVERGENCE FLAG CHANGED (fails)" if r.ref_diverged != r.cand_diverged else "")
              + f"; dist_nearest {r.ref_dist_nearest:.6g} (direct) vs {r.cand_dist_nearest:.6g} "
              f"({args.candidate}), dist_matched {r.ref_dist_matched:.6g} vs {r.cand_dist_matched:.6g}"
              f" (difference {r.gap:.3g}); diverged {r.ref_diverged} vs {r.cand_diverged}; the direct "
              f"path re-run under other packings: dist_nearest {own or 'not re-run'} (its own "
              f"spread {r.direct_spread:.3g})")
    return 0 if verdict else 1


def _setting(exp):
    """What a run actually computes (the config's description names the paper preset's shapes)."""
    g, p = exp.grid, exp.protocol

    def vals(key):
        v = g[key]
        return str(v[0]) if len(v) == 1 else "{" + ", ".join(f"{x:g}" for x in v) + "}"

    return (f"k = {vals('k')}, (m, n, d) = ({vals('m')}, {vals('n')}, {vals('d')}), R in {vals('R')}, "
            f"sigma in {vals('sigma')}; {p['trials']} trials x {p['n_init']} initializations x "
            f"{len(p['steps'])} step sizes, {p['n_iter']} iterations")


def _out_and_store(args, default_store, skip_store=False):
    """Check ``--out`` and, unless ``--no-store`` (or ``skip_store``), the store folder (``--store``,
    else ``default_store``) before any work; return the store folder or None."""
    from ._paths import output_dir

    output_dir(args.out, "--out")
    if args.no_store or skip_store:
        return None
    store = output_dir(args.store if args.store is not None else default_store, "--store")
    doing(kept=store)
    return store


def _add_out_store(parser, out, out_help, store_help):
    """The ``--out``, ``--store`` and ``--no-store`` options of a command that keeps resumable rows."""
    parser.add_argument("--out", default=out, type=text_arg("a folder"), help=out_help)
    parser.add_argument("--store", default=None, type=text_arg("a folder"), help=store_help)
    parser.add_argument("--no-store", action="store_true", help="recompute everything, keep no rows")


def _compare(args):
    from .compare import METHODS, load_preset, run_compare, write_outputs

    from .config import find

    where = _where(args)
    store = _out_and_store(args, f"{args.out}/store")  # before any work
    t0 = time.perf_counter()
    doing(f"compare ({args.preset} preset)")
    print(f"compare ({args.preset} preset)")
    print("\n".join(config_lines(find("compare"), "compare", command="compare")))
    built, proto = load_preset(args.preset)  # mixlinreg/configs/compare.toml
    n_seeds = args.seeds if args.seeds is not None else proto["n_seeds"]
    # the runner's bar over (scenario, seed) units, whose estimate of the time left waits for
    # two units (a first unit that compiled the kernels no longer promises hours)
    print(f"{len(built)} scenarios x {n_seeds} seeds = {len(built) * n_seeds} units of "
          f"{len(METHODS)} methods each")
    rows = run_compare(args.preset, n_seeds=args.seeds, seed=args.seed, store=store,
                       progress=not args.no_progress, **where)
    summary, md, paths = write_outputs(rows, args.out, args.preset)
    print(md)
    elapsed = time.perf_counter() - t0
    counts = rows["status"].str.split(":").str[0].value_counts().to_dict()
    print(f"compare ({args.preset} preset): {rows['scenario'].nunique()} scenarios x "
          f"{rows['seed'].nunique()} seeds x {rows['method'].nunique()} methods = {len(rows)} rows "
          f"({', '.join(f'{v} {k}' for k, v in sorted(counts.items()))}) in {elapsed:.1f} s; "
          "wrote " + ", ".join(str(p) for p in paths))
    return 0


def _digits(args):
    from .digits import run_digits, write_digits_outputs

    from .config import find

    store = _out_and_store(args, f"{args.out}/store")  # before any work
    t0 = time.perf_counter()
    doing(f"digits ({args.preset} preset)")
    print(f"digits ({args.preset} preset)")
    print("\n".join(config_lines(find("digits"), "digits", command="digits")))
    rows, recovery = run_digits(args.seeds, m=args.m, n=args.n, tau=args.tau, rounds=args.rounds,
                                seed=args.seed, store=store, progress=not args.no_progress,
                                preset=args.preset, n_test=args.n_test, **{key: getattr(args, key)
                                for key in ("layout", "test_rule", "participation", "decay",
                                            "rotations")})
    md, paths = write_digits_outputs(rows, recovery, args.out)
    print(md)
    print(f"digits: {rows['seed'].nunique()} seeds x {rows['method'].nunique()} methods in "
          f"{time.perf_counter() - t0:.1f} s; wrote " + ", ".join(str(p) for p in paths))
    return 0


def _check_ids(args, known):
    """The study IDs ``check`` runs: the given ones, those of ``--paper``, or all (checked by
    :func:`mixlinreg._cli_options.check_options` before)."""
    if args.paper is not None:
        from .theory.studies import get

        ids = [s for s in known if get(s).paper == args.paper]
        if not ids:
            raise ValueError(f"no study of the {args.paper} paper yet; known: {list(known)}")
        return ids
    return args.ids or list(known)


def _check(args):
    from .theory import STUDIES, run_study, title, write_report
    from .theory.study import canonical_preset

    args.preset = canonical_preset(args.preset)  # 'full' is the former name of 'paper'
    if args.migrate_records:
        from ._paths import output_dir
        from .theory.report import migrate_records

        output_dir(args.out, "--out")
        moved = migrate_records(args.out)
        for old, new in moved:
            print(f"{old} -> {new}")
        print(f"check --migrate-records: {len(moved)} files renamed in {args.out}")
        return 0
    ids = _check_ids(args, STUDIES)
    if args.reanalyse:
        return _reanalyse(args, ids)
    if args.list:
        from .theory.studies import get

        for sid in ids:
            print(f"{sid:8s} {get(sid).paper:5s} {title(sid)}")
        return 0
    from tqdm.auto import tqdm

    from ._paths import output_file

    where = _where(args)
    store = _out_and_store(args, args.out, skip_store=args.report_only)  # before any work
    if args.write:
        output_file(args.write, "--write")
    t0 = time.perf_counter()
    if not args.report_only:
        from .ifca import use_kernel
        from .theory.studies import get

        from .theory.study import MissingInput

        missing = []
        bar = tqdm(ids, unit="study", desc=f"check/{args.preset}", disable=args.no_progress)
        for sid in bar:
            t1 = time.perf_counter()
            doing(f"study {sid} ({args.preset} preset)")
            bar.write(f"[{sid}] {title(sid)} ...")
            bar.write("\n".join(config_lines(get(sid).config(args.preset).path, sid, "studies",
                                              "check", indent=f"[{sid}] ")))
            try:
                with use_kernel(_kernel(args)):
                    r = run_study(sid, preset=args.preset, out=args.out, store=store,
                                  seed=args.seed, progress=not args.no_progress,
                                  control_only=args.control_only, stores=args.stores, **where)
            except MissingInput as exc:  # nothing measured: no verdict, no record
                missing.append(sid)
                bar.write(f"[{sid}] not checked, no record written: {exc}")
                continue
            ctl = r.control.get("verdict") or ("none can exist" if "none" in r.control
                                               else "none declared")
            bar.write(f"[{sid}] {r.verdict} (rule: {r.rule_verdict or r.verdict}; control: {ctl}; "
                      f"{time.perf_counter() - t1:.1f} s): {r.summary.strip().splitlines()[0]}")
        bar.close()
    if args.write:
        path = write_report(args.write, args.out, preset=args.preset)
        print(f"wrote {path}")
    if not args.report_only and missing:
        print(f"check: {len(ids) - len(missing)} of {len(ids)} studies in "
              f"{time.perf_counter() - t0:.1f} s; not checked, their input stores missing: "
              f"{', '.join(missing)} (make them as said above, or give --stores DIR)")
        return 1
    print(f"check: {len(ids)} studies in {time.perf_counter() - t0:.1f} s")
    return 0


def _reanalyse(args, ids):
    """``check --reanalyse``: each record in --out analysed again from its committed tables; its
    words rewritten where the code words them otherwise; exit 1 if a rule changed."""
    from ._paths import output_dir
    from .theory.records import RuleChanged, reanalyse

    output_dir(args.out, "--out")
    failed = []
    for sid in ids:
        if sid == "D1":
            print("[D1] skipped: a note remade by `python -m mixlinreg.theory.d1 --write`")
            continue
        try:
            _, changed = reanalyse(sid, preset=args.preset, out=args.out)
        except FileNotFoundError as exc:
            print(f"[{sid}] skipped: {exc}")
            continue
        except RuleChanged as exc:
            failed.append(sid)
            print(f"[{sid}] not rewritten: {exc}")
            continue
        print(f"[{sid}] " + (f"rewrote {', '.join(changed)}" if changed else "unchanged"))
    if failed:
        print(f"check --reanalyse: the rule changed for {', '.join(failed)}: a new version of "
              f"each, to be run again (docs/theory_checks.md)")
        return 1
    return 0


def _regenerate(args):
    from .theory.derived import regenerate

    found = regenerate(args.root, check=args.check)
    for path, block in found:
        what = path + (f" (derived block '{block}')" if block else "")
        print(f"stale: {what}" if args.check else f"rewrote {what}")
    if not found:
        print("regenerate: every derived document is current")
    elif args.check:
        print(f"regenerate --check: {len(found)} stale; `mixlinreg regenerate` rewrites them from "
              "the committed records")
    return 1 if args.check and found else 0


def _teach(args):
    from .teach import check_out_dir, check_views, write_views

    try:
        views = check_views(args.views or ["all"])
        out = check_out_dir(args.out)
    except ValueError as exc:
        print(f"mixlinreg teach: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    res = write_views(views, out, smoke=args.smoke, html_animation=not args.no_html)
    print(f"teach: {len(views)} view{'s' if len(views) > 1 else ''} in "
          f"{time.perf_counter() - t0:.1f} s; wrote {res['index']}")
    return 0


FIG2_PRESETS = tuple(reversed(PRESETS))  # the paper preset first in the help


def _panel(text):
    # a type function, not choices=: argparse rejects an empty nargs="*" list against choices
    if text not in PANELS:
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(PANELS)}, got {text!r}")
    return text


def build_parser():
    p = argparse.ArgumentParser(prog="mixlinreg", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _parser_demo(sub)
    _parser_reproduce(sub)
    _parser_check(sub)
    _parser_check_agreement(sub)
    _parser_bench(sub)
    _parser_compare(sub)
    _parser_digits(sub)
    _parser_teach(sub)
    _parser_regenerate(sub)
    _add_costs(p, sub)
    return p


def command_costs():
    """The measured costs of the commands (``mixlinreg/configs/command_costs.json``, written by
    ``python experiments/command_costs.py --write``), or None when the table is missing."""
    import json
    from importlib import resources

    try:
        return json.loads(resources.files("mixlinreg.configs").joinpath("command_costs.json")
                          .read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _cost_line(name, row, table):
    return (f"cost: 'mixlinreg {row['args']}' took {row['cold_s']:.0f} s on a cold numba cache "
            f"and {row['warm_s']:.0f} s warm (a cold cache compiles the kernels the command uses, "
            f"once), on {table['machine']} ({table['measured']}; {table['command']}); larger "
            f"presets cost more")


def _add_costs(parser, sub):
    """Each measured command's --help says what it cost, cold and warm; the top-level help lists
    them all."""
    table = command_costs()
    if not table:
        return
    lines = []
    for name, row in table["commands"].items():
        if name in sub.choices:
            cmd = sub.choices[name]
            import textwrap

            cost = textwrap.fill(_cost_line(name, row, table), width=88)
            cmd.description = f"{cmd.description or ''}\n\n{cost}".strip()
            cmd.formatter_class = argparse.RawDescriptionHelpFormatter
            lines.append(f"  mixlinreg {row['args']:<48s} cold {row['cold_s']:3.0f} s, warm "
                         f"{row['warm_s']:3.0f} s")
    import textwrap

    head = textwrap.fill(f"measured costs ({table['machine']}, {table['measured']}; "
                         f"{table['command']}), on a cold numba cache (first use) and warm:",
                         width=88)
    parser.epilog = head + "\n" + "\n".join(lines)


def _parser_demo(sub):
    """The ``demo`` command's options."""
    d = sub.add_parser("demo", help="a small end-to-end IFCA run that prints its result")
    d.add_argument("--m", type=positive_int, default=100, help="machines [100]")
    d.add_argument("--n", type=positive_int, default=100, help="rows per machine [100]")
    d.add_argument("--d", type=positive_int, default=1000, help="features [1000]")
    d.add_argument("--k", type=positive_int, default=2, help="clusters; must divide --m [2]")
    d.add_argument("--R", type=nonneg_float, default=0.5,
                   help="scale of the true models, theta*_j = R * Bernoulli(0.5)^d [0.5]")
    d.add_argument("--sigma", type=nonneg_float, default=0.1, help="noise standard deviation [0.1]")
    d.add_argument("--n-init", type=positive_int, default=10,
                   help="random initializations (each tried with 3 step sizes) [10]")
    d.add_argument("--n-iter", type=positive_int, default=300, help="IFCA iterations [300]")
    d.add_argument("--seed", type=nonneg_int, default=0, help="root seed [0]")
    d.set_defaults(func=_demo)


def _parser_reproduce(sub):
    """The ``reproduce`` command's options."""
    r = sub.add_parser("reproduce", help="reproduce Figure 2 (a-d) of the IFCA paper (NeurIPS "
                                         "version; Figure 3 of the long version)")
    r.add_argument("panel", nargs="?", default="all", choices=PANELS + ("all",),
                   help="which panel of Figure 2, or all four [all]")
    r.add_argument("--preset", default="quick", choices=FIG2_PRESETS,
                   help="paper (the authors' protocol exactly), quick (same grids, fewer trials and "
                        "initializations) or smoke (tiny grids: seconds on a warm numba cache, a "
                        "kernel compile first on a cold one; the cost line above) [quick]")
    r.add_argument("--n-jobs", type=positive_int, default=1, help="worker processes (loky) [1]")
    r.add_argument("--backend", default="loky", choices=("loky", "dask", "sequential"),
                   help="how units are run: loky worker processes, a Dask cluster, or in this "
                        "process [loky]")
    r.add_argument("--scheduler", default=None, type=text_arg("a Dask scheduler address"),
                   help="Dask scheduler address for --backend dask")
    r.add_argument("--out", default="results", type=text_arg("a folder"),
                   help="folder for everything this command makes: the result store, summary CSVs "
                        "and figures [results]")
    r.add_argument("--figures", default=None, type=text_arg("a folder"),
                   help="write figures and summary CSVs here instead of --out (e.g. the "
                        "repository's figures/) [--out]")
    r.add_argument("--config", default=None, type=text_arg("a .toml file"),
                   help="a TOML config file instead of a named panel (it must define the preset)")
    r.add_argument("--method", default="auto", choices=("auto", "data", "gram"),
                   help="kernel path: auto (certified assignments and shared cluster Grams where "
                        "they apply), data (every machine's rows every iteration) or gram [auto]; "
                        "every row records the path that computed it")
    _add_kernel(r)
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.add_argument("--report-only", action="store_true",
                   help="run nothing: write the figures and summaries of the units already finished")
    r.set_defaults(func=_reproduce)


def _parser_check(sub):
    """The ``check`` command's options."""
    t = sub.add_parser("check", help="theory checks: one study per claim of the IFCA, CFL and "
                                     "FPFC papers, with verdicts")
    t.add_argument("ids", nargs="*", metavar="ID",
                   help="study IDs (`mixlinreg check --list` shows them) [all, or all of --paper]")
    t.add_argument("--paper", default=None, metavar="PAPER", type=text_arg("a paper name"),
                   help="run the studies of one paper: IFCA, CFL or FPFC (not with IDs)")
    t.add_argument("--list", action="store_true",
                   help="only list the studies: ID, paper, title")
    t.add_argument("--preset", default="quick", choices=PRESETS + ("full",),
                   help="smoke (seconds on a warm numba cache; a kernel compile first on a cold "
                        "one), quick (minutes; docs/theory_checks.md gives measured times) or "
                        "paper (hours; 'full' is its former name) [quick]")
    _add_out_store(t, "results/checks", "folder for tables, figures and JSON records (and the store, "
                   "unless --store) [results/checks]",
                   "resumable per-unit rows; a rerun skips finished units [OUT]")
    t.add_argument("--seed", type=nonneg_int, default=0, help="root seed [0]")
    _add_where(t, "worker processes for a study's units [1]")
    t.add_argument("--write", default=None, metavar="PATH", type=text_arg("a file name"),
                   help="write the report (e.g. paper_checks.md) from the records in --out")
    t.add_argument("--report-only", action="store_true",
                   help="only rewrite the report from existing records")
    t.add_argument("--stores", default=None, metavar="DIR", type=text_arg("a folder"),
                   help="the folder of the Figure 2 stores that F2a-F2d, RS and D1 read (where "
                        "`mixlinreg reproduce --out DIR` made them) [each study's config: "
                        "figures/stores]")
    t.add_argument("--control-only", action="store_true",
                   help="run only each study's control (the setting where its claim is false) and "
                        "join it to the study's existing record in --out, whose measurements are "
                        "kept")
    t.add_argument("--reanalyse", action="store_true",
                   help="compute nothing: analyse each record in --out again from its committed "
                        "tables (study and control) and rewrite its words (claim, location, summary, "
                        "caveats, hard cells) where the code now words them otherwise; refused (exit 1) where "
                        "the verdict or a number would change, which is a new version of the study")
    _add_kernel(t)
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.add_argument("--migrate-records", action="store_true",
                   help="only rename the records in --out made under the former preset name "
                        "'full' to 'paper' (files and the fields that name the preset)")
    t.set_defaults(func=_check)


def _parser_check_agreement(sub):
    """The ``check-agreement`` command's options."""
    v = sub.add_parser("check-agreement",
                       help="run sample units of Figure 2 on numba's direct path (full iterations) "
                            "and on a candidate (gram, early-stop or jax) and apply one agreement "
                            "rule; exit 1 if they disagree")
    v.add_argument("panels", nargs="*", default=None, type=_panel, metavar="PANEL",
                   help=f"Figure 2 panels to sample from ({' '.join(PANELS)}) [all]")
    v.add_argument("--candidate", required=True, choices=("gram", "early-stop", "jax"),
                   help="how else to compute the units: gram (the certified-Gram kernel path), "
                        "early-stop (the optional early stop, --tol) or jax (the JAX backend)")
    v.add_argument("--preset", default="paper", choices=FIG2_PRESETS,
                   help="Figure 2 preset the units come from [paper]")
    how = v.add_mutually_exclusive_group()
    how.add_argument("--trials", type=positive_int, default=None,
                     help="trials per (m, n, d, k) group of each panel [2]")
    how.add_argument("--units", type=positive_int, default=None,
                     help="instead: units per panel, spread over its groups (the smallest and the "
                          "largest (m, n) group first)")
    v.add_argument("--tol", type=nonneg_float, default=None,
                   help="early-stop tolerance of --candidate early-stop (0: exact) [1e-7]")
    v.add_argument("--rel-tol", type=nonneg_float, default=1e-3,
                   help="largest relative difference of a distance that counts as agreement [1e-3]")
    v.add_argument("--floor", type=nonneg_float, default=1e-3,
                   help="distances below this are compared in absolute terms [1e-3]")
    v.add_argument("--seed", type=nonneg_int, default=0, help="seed that picks the sample units [0]")
    v.add_argument("--csv", default=None, type=text_arg("a file name"),
                   help="also write the per-unit table to this CSV file")
    v.set_defaults(func=_check_agreement)


def _parser_bench(sub):
    """The ``bench`` command's options."""
    b = sub.add_parser("bench", help="kernel vs plain NumPy vs GEMM throughput (ratios in one run)")
    b.add_argument("--quick", action="store_true", help="only (100, 100, 1000, 2), float32")
    b.add_argument("--threads", type=positive_int, nargs="+", default=[1, 2],
                   help="numba thread counts to time [1 2]")
    b.add_argument("--n-iter", type=positive_int, default=300, help="IFCA iterations per call [300]")
    b.add_argument("--repeats", type=positive_int, default=2, help="timed repeats, best kept [2]")
    b.add_argument("--seed", type=nonneg_int, default=0, help="data seed [0]")
    b.add_argument("--with-early-stop", action="store_true",
                   help="also time the kernel with the optional early stop (extra rows)")
    b.add_argument("--units", nargs="+", default=None, choices=PANELS, metavar="PANEL",
                   help="instead: one unit of each named panel on the data and gram paths, and the "
                        "whole grid projected from them")
    b.add_argument("--preset", default="paper", choices=FIG2_PRESETS,
                   help="Figure 2 preset of the --units [paper]")
    b.add_argument("--csv", default=None, type=text_arg("a file name"),
                   help="also write the rows to this CSV file")
    b.set_defaults(func=_bench)


def _parser_compare(sub):
    """The ``compare`` command's options."""
    c = sub.add_parser("compare", help="IFCA against the baselines on the issue's scenarios "
                                       "(CSV, markdown table, figure)")
    c.add_argument("--preset", default="quick", choices=PRESETS,
                   help="smoke (seconds on a warm numba cache; a kernel compile first on a cold one), "
                        "quick (reduced sizes, minutes) or paper (Figure 2 sizes); "
                        "defined in mixlinreg/configs/compare.toml")
    c.add_argument("--seeds", type=positive_int, default=None, help="data seeds per scenario [preset's]")
    c.add_argument("--seed", type=nonneg_int, default=0, help="root seed [0]")
    _add_where(c, "worker processes (loky), one (scenario, seed) unit each [1]")
    _add_out_store(c, "results/compare", "folder for everything this command makes [results/compare]",
                   "resumable per-(scenario, seed) rows; a rerun skips finished ones [OUT/store]")
    c.add_argument("--no-progress", action="store_true", help="no progress bar")
    c.set_defaults(func=_compare)


def _parser_digits(sub):
    """The ``digits`` command's options."""
    g = sub.add_parser("digits", help="rotated 8x8 digits, an analogue of the paper's Table 1 "
                                      "(not MNIST): IFCA vs global, local, one-shot")
    g.add_argument("--preset", default="paper", choices=PRESETS,
                   help="parameters from mixlinreg/configs/digits.toml [paper]")
    g.add_argument("--seeds", type=positive_int, default=None, help="data seeds [preset's: 5]")
    g.add_argument("--seed", type=nonneg_int, default=0, help="root seed [0]")
    g.add_argument("--m", type=positive_int, default=None, help="machines [80]")
    g.add_argument("--n", type=positive_int, default=None, help="training images per machine [30]")
    g.add_argument("--tau", type=positive_int, default=None, help="local steps per round [5]")
    g.add_argument("--rounds", type=positive_int, default=None, help="communication rounds [100]")

    def fraction(text):  # (0, 1]
        if positive_float(text) > 1:
            raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}")
        return float(text)

    def degrees(text):  # "0,180": distinct multiples of 90 in [0, 270]
        try:
            return list(_quarters([int(v) for v in text.split(",")]))
        except (ValueError, TypeError):
            raise argparse.ArgumentTypeError(f"must be distinct degrees among 0,90,180,270 "
                                             f"separated by commas, got {text!r}") from None

    from .digits import LAYOUTS, TEST_RULES, _quarters

    g.add_argument("--n-test", type=positive_int, default=None, help="test images per rotation [300]")
    g.add_argument("--layout", choices=LAYOUTS, default=None, help="independent draws per machine, "
                   "or partition: each rotated train image used once (Table 1) [independent]")
    g.add_argument("--test-rule", choices=TEST_RULES, default=None, help="majority model of the "
                   "rotation, or each test machine's lowest-loss model (Table 1) [majority]")
    g.add_argument("--participation", type=fraction, default=None,
                   help="fraction of machines per round for IFCA and global, in (0, 1] [1]")
    g.add_argument("--decay", type=fraction, default=None, help="step decay per round, in (0, 1] [1]")
    g.add_argument("--rotations", type=degrees, default=None,
                   help="degrees of the clusters, e.g. 0,180 (k = their number) [0,90,180,270]")
    _add_out_store(g, "results/digits", "folder for everything this command makes [results/digits]",
                   "resumable per-seed rows; a rerun skips finished seeds [OUT/store]")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.set_defaults(func=_digits)


def _parser_teach(sub):
    """The ``teach`` command's options."""
    h = sub.add_parser("teach", help="figures and animations that teach IFCA (PNG, GIF, HTML) "
                                     "and an index.html showing them")
    h.add_argument("views", nargs="*", metavar="VIEW",
                   help="lines, plane, basin, contraction, soft, explorer (the offline slider "
                        "page) or all [all]")
    h.add_argument("--out", default="figures/teach", type=text_arg("a folder"),
                   help="output folder [figures/teach]")
    h.add_argument("--smoke", action="store_true", help="tiny problems and few frames (seconds)")
    h.add_argument("--no-html", action="store_true",
                   help="skip the self-contained HTML animations (PNG and GIF only)")
    h.set_defaults(func=_teach)


def _parser_regenerate(sub):
    """The ``regenerate`` command's options."""
    g = sub.add_parser("regenerate", help="rewrite every document derived from the committed "
                                          "study records (paper_checks.md, the README's verdict "
                                          "tables, the docs' counts); nothing is computed")
    g.add_argument("--check", action="store_true",
                   help="write nothing; list each stale file and block and exit 1 if there is one")
    g.add_argument("--root", default=".", type=text_arg("a folder"),
                   help="the repository root: figures/checks, paper_checks.md, README.md, docs/ [.]")
    g.set_defaults(func=_regenerate)


def main(argv=None):
    """Run ``mixlinreg`` with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    from . import _cli_faults
    from ._cli_options import check_options, given

    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]

    def body(state):
        args = build_parser().parse_args(argv)
        state.command = args.command
        check_options(args, given(build_parser, argv))
        return args.func(args)

    return _cli_faults.run(argv, body)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
