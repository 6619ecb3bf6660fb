"""verbose=True (issue 39): a tqdm bar on stderr over the iterations (the estimator) or rounds
(cfl, fpfc) that moves during the call and ends at its total; nothing printed without it."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mixlinreg as mlr
from mixlinreg import _chunked
from mixlinreg._progress import report

pytestmark = pytest.mark.filterwarnings("ignore::mixlinreg.ConvergenceWarning",
                                        "ignore::mixlinreg.EmptyClusterWarning")


@pytest.fixture(scope="module")
def mix():
    return mlr.make_mixture(m=12, n=30, d=4, k=2, R=1.0, sigma=0.1, rng=0)


def _bar_total(err, desc):
    """The last ``done/total`` the bar printed for ``desc``."""
    found = re.findall(re.escape(desc) + r"[^\r\n]*?(\d+)/(\d+)", err)
    assert found, err
    return [tuple(int(v) for v in f) for f in found]


def test_the_estimator_bar_ends_at_its_total(mix, capsys):
    est = mlr.IFCA(2, n_init=3, lr=[0.1, 0.2], n_iter=40, method="data", verbose=True,
                   random_state=0).fit(mix.X, mix.y)
    counts = _bar_total(capsys.readouterr().err, "IFCA k=2: 3 starts x 2 step sizes")
    assert counts[-1] == (40, 40)
    assert est.coef_.shape == (2, 4)


def _reported(**kw):
    from mixlinreg import _progress

    done = []
    token = _progress._HOOK.set(done.append)
    try:
        mlr.ifca(**kw)
    finally:
        _progress._HOOK.reset(token)
    return done


def test_the_direct_path_reports_after_every_chunk(mix, monkeypatch):
    """The bar moves during the call: after each chunk of iterations, not only at the end."""
    monkeypatch.setattr(_chunked, "CHUNK_ITERATIONS", 5)
    done = _reported(X=mix.X, y=mix.y, init=np.zeros((2, 2, 4)), lr=0.1, n_iter=40,
                     method="data")
    assert done == list(range(5, 41, 5))


def test_the_gram_path_reports_every_iteration(mix):
    done = _reported(X=mix.X, y=mix.y, init=np.zeros((2, 2, 4)), lr=0.1, n_iter=25,
                     method="gram")
    assert done == list(range(1, 26))


def test_quiet_by_default_and_bars_of_the_baselines(mix, capsys):
    mlr.IFCA(2, n_init=2, n_iter=10, random_state=0).fit(mix.X, mix.y)
    assert capsys.readouterr().err == ""
    mlr.baselines.cfl(mix.X, mix.y, max_rounds=30, verbose=True)
    assert _bar_total(capsys.readouterr().err, "cfl")[-1] == (30, 30)
    mlr.baselines.fpfc(mix.X, mix.y, n_rounds=12, verbose=True)
    assert _bar_total(capsys.readouterr().err, "fpfc")[-1] == (12, 12)
    report(3)  # no hook installed: nothing happens
    assert capsys.readouterr().err == ""


def test_the_runner_bar_waits_for_two_units_and_ignores_a_slow_first():
    """A first unit of 165 s (a compile) then units of 2 s: the estimate is the median's, not
    the 4 hours tqdm's rate since the start gave for 90 units (issue 39)."""
    import io

    from tqdm import tqdm

    from mixlinreg.runner import _UnitBar

    out = io.StringIO()
    bar = _UnitBar(tqdm(total=90, file=out, mininterval=0, bar_format=_UnitBar.FORMAT), n_jobs=2)
    bar.update(1, {"seconds": 165.0})
    assert bar.left(1) == "time left: after 2 units"
    for _ in range(4):
        bar.update(1, {"seconds": 2.0})
    assert bar.bar.n == 5
    assert bar.left(5) == "about 01:25 left"  # 85 units x 2 s / 2 workers
    bar.update(3)  # units finished by other processes: counted, no time
    assert bar.left(8) == "about 01:22 left"
    bar.close()
    shown = out.getvalue()
    assert "time left: after 2 units" in shown and "about 01:22 left" in shown
    assert "04:" not in shown  # no wild estimate at any point


def test_the_other_baselines_have_bars(mix, capsys):
    bl = mlr.baselines
    bl.fedavg(mix.X, mix.y, n_rounds=7, verbose=True)
    assert _bar_total(capsys.readouterr().err, "fedavg")[-1] == (7, 7)
    bl.local_train(mix.X, mix.y, n_steps=6, verbose=True)
    assert _bar_total(capsys.readouterr().err, "local_train")[-1] == (6, 6)
    bl.per_fedavg(mix.X, mix.y, alpha=0.01, beta=0.01, n_rounds=5, verbose=True)
    assert _bar_total(capsys.readouterr().err, "per_fedavg")[-1] == (5, 5)
    bl.ifca_weighted(mix.X, mix.y, np.zeros((3, 2, 4)), 0.1, n_iter=4, verbose=True)
    assert _bar_total(capsys.readouterr().err, "ifca_weighted")[-1] == (3, 3)
    bl.soft_ifca(mix.X, mix.y, np.zeros((2, 4)), 0.1, temperature=0.1, n_iter=9, verbose=True)
    assert _bar_total(capsys.readouterr().err, "soft_ifca")[-1] == (9, 9)
    bl.fedavg(mix.X, mix.y, n_rounds=7)
    assert capsys.readouterr().err == ""


def test_help_states_the_measured_costs(capsys):
    """Each measured command's --help quotes its cold and warm cost from the committed table
    (experiments/command_costs.py --write), and the top-level help lists them all."""
    from mixlinreg.cli import command_costs, main

    table = command_costs()
    assert table is not None and set(table["commands"]) >= {"demo", "reproduce", "compare"}
    with pytest.raises(SystemExit):
        main(["--help"])
    top = " ".join(capsys.readouterr().out.split())
    for name, row in table["commands"].items():
        with pytest.raises(SystemExit):
            main([name, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert (f"took {row['cold_s']:.0f} s on a cold numba cache" in text
                and f"and {row['warm_s']:.0f} s warm" in text), (name, text[:400])
        assert f"mixlinreg {row['args']}" in top and f"cold {row['cold_s']:.0f} s" in top


def test_the_benchmarks_page_gives_the_measured_costs():
    from pathlib import Path

    from mixlinreg.cli import command_costs

    text = (Path(__file__).resolve().parent.parent / "BENCHMARKS.md").read_text()
    for row in command_costs()["commands"].values():
        assert f"| {row['cold_s']:.1f} s | {row['warm_s']:.1f} s |" in text, row


def test_the_runner_bar_moves_during_a_unit(monkeypatch):
    """A unit running in this process reports its kernel's iterations: the bar shows them
    before the unit ends (issue 39: the bar sat at 0% through a first unit)."""
    import io

    import pandas as pd
    from tqdm import tqdm

    from mixlinreg import runner
    from mixlinreg.runner import Workload, _UnitBar

    out = io.StringIO()
    monkeypatch.setattr(_UnitBar, "REFRESH", 0.0)
    real_tqdm = tqdm

    def to_buffer(*args, **kw):
        kw.update(file=out, mininterval=0, disable=False)
        return real_tqdm(*args, **kw)

    monkeypatch.setattr("tqdm.auto.tqdm", to_buffer)

    def unit(name, ss):
        for k in (10, 20, 30):
            report(k)
        return pd.DataFrame({"x": [1.0]})

    wl = Workload(name="toy", preset="smoke", key={}, units=("u0", "u1"), compute=unit)
    runner.run(wl, progress=True)
    shown = out.getvalue()
    assert "running: iteration 10 of a kernel call" in shown
    assert "running: iteration 30 of a kernel call" in shown
    report(5)  # the hook is gone after the run
