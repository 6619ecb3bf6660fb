"""mixlinreg.teach: the runs behind the pictures are the kernel's, and the pictures say what they show."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import seaborn as sns
from matplotlib.animation import FuncAnimation
from matplotlib.figure import Figure

import mixlinreg as mlr
from mixlinreg import teach
from mixlinreg.baselines import soft_ifca

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def lines():
    mix = teach.line_mixture(k=3, m=12, n=15, sigma=0.4, rng=0)
    init = np.random.default_rng(8).normal(0.0, 1.0, (3, 2))
    return mix, teach.ifca_path(mix, init, 0.5, 8)


def _losses(mix, theta):
    """F_i(theta_j) of every machine and model, computed directly: (m, k)."""
    r = np.einsum("mnd,kd->mnk", mix.X, theta) - mix.y[:, :, None]
    return np.mean(r * r, axis=1)


def test_line_mixture_design_has_intercept():
    mix = teach.line_mixture(k=2, m=8, n=6, sigma=0.0, rng=1)
    np.testing.assert_array_equal(mix.X[:, :, 0], 1.0)
    # noiseless: every point lies exactly on its cluster's line
    fit = mix.theta_star[mix.labels][:, None, 0] + mix.theta_star[mix.labels][:, None, 1] * mix.t
    np.testing.assert_allclose(mix.y, fit, rtol=0, atol=1e-12)  # float64 rounding only
    assert mix.delta == pytest.approx(np.hypot(2.0, 2.0))
    with pytest.raises(ValueError, match="theta_star is required"):
        teach.line_mixture(k=4)
    with pytest.raises(ValueError, match="m"):
        teach.line_mixture(k=3, m=2)


def test_ifca_path_iterates_and_trace_agree(lines):
    mix, path = lines
    # the chained iterates end where one n_iter call ends (checked inside too)
    res = mlr.ifca(mix.X, mix.y, path.theta[0][None], 0.5, n_iter=8, dtype=np.float64)
    np.testing.assert_allclose(path.theta[-1], res.theta[0], rtol=1e-12, atol=1e-14)
    # the colours drawn at iteration t (trace labels) are the argmin at the lines drawn at t
    for t in range(path.theta.shape[0]):
        F = _losses(mix, path.theta[t])
        np.testing.assert_array_equal(path.labels[t], np.argmin(F, axis=1))
        np.testing.assert_allclose(path.loss[t], F.min(axis=1).mean(), rtol=1e-10)
    np.testing.assert_allclose(path.dist, mlr.dist_matched(path.theta, mix.theta_star), rtol=1e-10)


def test_soft_path_matches_one_call(lines):
    mix, path = lines
    sp = teach.soft_path(mix, path.theta[0], 0.5, 6, temperature=2.0)
    one = soft_ifca(mix.X, mix.y, path.theta[0], 0.5, temperature=2.0, n_iter=6)
    np.testing.assert_allclose(sp.theta[-1], one.theta, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sp.weights.sum(-1), 1.0, rtol=1e-12)
    assert sp.weights.shape == (7, 12, 3)


@pytest.fixture(scope="module")
def basin():
    mix = teach.line_mixture(k=2, m=12, n=20, sigma=0.3, rng=2)
    return mix, teach.basin_map(mix, 0.5, 20, alpha0=0.25, grid=13, rng=5)


def _succeeds(mix, init, bm):
    res = mlr.ifca(mix.X, mix.y, init[None], bm.lr, n_iter=bm.n_iter, dtype=np.float64,
                   n_threads=1)
    return bool(mlr.dist_matched(res.theta[0], mix.theta_star) <= bm.tol) and not res.diverged[0]


def test_basin_map_cells_agree_with_direct_runs(basin):
    mix, bm = basin
    assert 0 < bm.success.mean() < 1  # the slice shows both outcomes
    gen = np.random.default_rng(0)
    cells = list(zip(gen.integers(0, 13, 12), gen.integers(0, 13, 12)))
    cells += list(zip(*np.nonzero(~bm.success)))[:4] + list(zip(*np.nonzero(bm.success)))[:4]
    for ib, ia in cells:
        init = np.vstack([[bm.a[ia], bm.b[ib]], bm.others])
        assert _succeeds(mix, init, bm) == bm.success[ib, ia], (ia, ib)
    # iterations to success: NaN exactly where it failed, within [0, n_iter] elsewhere
    assert np.array_equal(np.isnan(bm.iterations), ~bm.success)
    it = bm.iterations[bm.success]
    assert it.min() >= 0 and it.max() <= bm.n_iter


def test_basin_map_agrees_with_init_close(basin):
    """Starts drawn by init_close: ifca from them succeeds exactly where the map says, wherever the
    map is unanimous in the 3 x 3 cells around the start (away from the discretized boundary)."""
    mix, bm = basin
    # the fixed models are init_close's own draw for this alpha0 and seed
    ref = mlr.init_close(mix.theta_star, bm.alpha0, 1, rng=5)[0]
    np.testing.assert_array_equal(bm.others, ref[1:])
    assert _succeeds(mix, ref, bm)
    compared = 0
    for alpha0 in (0.02, 0.25, 0.45):
        starts = mlr.init_close(mix.theta_star, alpha0, 10, rng=int(100 * alpha0))[:, 0]
        for p in starts:
            ia = int(np.argmin(np.abs(bm.a - p[0])))
            ib = int(np.argmin(np.abs(bm.b - p[1])))
            block = bm.success[max(ib - 1, 0):ib + 2, max(ia - 1, 0):ia + 2]
            if block.all() or not block.any():
                assert _succeeds(mix, np.vstack([p, bm.others]), bm) == bool(block.all())
                compared += 1
    assert compared >= 15
    # Assumption 1's ball is inside the success region on this problem
    A, B = np.meshgrid(bm.a, bm.b)
    inside = np.hypot(A - mix.theta_star[0, 0], B - mix.theta_star[0, 1]) <= bm.radius
    assert inside.any() and bm.success[inside].all()


def test_contraction_factor_near_theorem():
    c = teach.contraction_run(m=100, n_prime=20, d=6, n_iter=10, n_runs=3, rng=1)
    assert c.err.shape == (11, 3, 2)
    assert c.factor.lo <= c.factor.est <= c.factor.hi
    # gamma p = 1/4: the exact RMS factor is 1/2 * sqrt(1 + (d+1)/N); the fit must land near it
    assert abs(c.factor.est - c.factor_exact) < 0.05
    assert c.factor_theorem == 0.5
    line = c.summary()
    assert f"{c.factor.est:.3f}" in line and "Theorem 1: 0.500" in line
    fig = teach.contraction_figure(c)
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert f"{c.factor.est:.3f}" in texts and "Theorem 1: 0.500" in texts


def _legend_labels(fig):
    return [t.get_text() for lg in fig.legends for t in lg.get_texts()]


def _check_axes(fig):
    assert isinstance(fig, Figure)
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>":
            continue
        assert ax.get_xlabel() and ax.get_ylabel()


def test_views_are_labelled(lines, basin):
    mix, path = lines
    cols = sns.color_palette("colorblind")
    assert teach.palette(3) == cols[:3]
    f = teach.lines_figure(mix, path)
    _check_axes(f)
    assert [s for s in _legend_labels(f) if s.startswith("model")] == [
        f"model {j}: line, points of its machines" for j in (1, 2, 3)]
    assert "true lines" in _legend_labels(f)
    f = teach.plane_figure(mix, path)
    _check_axes(f)
    assert len(_legend_labels(f)) == 1 + 2 * 3 + 2  # + the start marker
    mix2, bm = basin
    f = teach.basin_figure([mix2], [bm])
    _check_axes(f)
    assert any("alpha0 = 0.25" in s for s in _legend_labels(f))
    sp = teach.soft_path(mix, path.theta[0], 0.5, 8, temperature=2.0)
    f = teach.soft_figure(mix, [path, sp], ["hard", "soft"])
    _check_axes(f)
    assert {"hard", "soft"} <= set(_legend_labels(f))


def test_animations_frames(lines, basin, tmp_path):
    mix, path = lines
    anim = teach.lines_animation(mix, path, max_frames=4)
    assert isinstance(anim, FuncAnimation)
    frames = list(anim.new_frame_seq())
    assert frames[0] == 0 and frames[-1] == 8 and len(frames) <= 4
    html = anim.to_jshtml()
    assert html.count("data:image/png;base64") == len(frames)
    anim = teach.plane_animation(mix, path, max_frames=30)
    assert list(anim.new_frame_seq()) == list(range(9))
    from matplotlib.animation import PillowWriter
    from PIL import Image

    anim.save(tmp_path / "p.gif", writer=PillowWriter(fps=2), dpi=40)
    with Image.open(tmp_path / "p.gif") as im:
        assert im.n_frames == 9
    mix2, bm = basin
    anim = teach.basin_animation([mix2], [bm], max_frames=3)
    anim._draw_next_frame(2, blit=False)  # draws without error


def test_check_views_and_out_dir(tmp_path):
    assert teach.check_views("all") == list(teach.VIEWS) + list(teach.PAGES)
    assert teach.check_views(["soft", "lines", "soft"]) == ["soft", "lines"]
    with pytest.raises(ValueError, match="unknown view 'nope'"):
        teach.check_views(["lines", "nope"])
    with pytest.raises(ValueError, match="at least one"):
        teach.check_views([])
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        teach.check_out_dir(f)
    assert teach.check_out_dir(tmp_path / "a" / "b").is_dir()
    assert list((tmp_path / "a" / "b").iterdir()) == []  # the write check leaves nothing behind


def test_committed_teach_figures_small():
    folder = ROOT / "figures" / "teach"
    from PIL import Image

    for v in teach.VIEWS:
        gif, png = folder / f"{v}.gif", folder / f"{v}.png"
        assert png.is_file() and gif.is_file(), v
        assert gif.stat().st_size < 1_000_000, (v, gif.stat().st_size)
        with Image.open(gif) as im:
            assert im.n_frames > 5
    index = (folder / "index.html").read_text()
    for v in teach.VIEWS:
        assert f"id='{v}'" in index


def test_cli_teach_smoke(tmp_path, capsys):
    from PIL import Image

    from mixlinreg.cli import main

    out = tmp_path / "teach"
    # two views without their HTML animation, then a third with it: the files, the index and its
    # merging are the same code for every view (writing all of them, each with its HTML, took
    # 10 s of the suite; each view's figure and animation are tested above)
    first = ["lines", "contraction"]
    assert main(["teach", *first, "--smoke", "--no-html", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "contraction per iteration: measured" in text and "Theorem 1: 0.500" in text
    index = (out / "index.html").read_text()
    for v in first:
        for ext in ("png", "gif"):
            assert (out / f"{v}.{ext}").stat().st_size > 0, (v, ext)
        assert not (out / f"{v}.html").exists()
        with Image.open(out / f"{v}.gif") as im:
            assert im.n_frames >= 2
        assert f"<img src='{v}.gif'" in index and f"<a href='{v}.html'>" not in index
    assert index.count("<p>") >= len(first)
    assert not list(out.glob(".*"))  # no temporary files left
    # making another view, with its HTML, keeps the others in the index
    assert main(["teach", "soft", "--smoke", "--out", str(out)]) == 0
    index = (out / "index.html").read_text()
    assert all(f"id='{v}'" in index for v in first + ["soft"])
    assert (out / "soft.html").stat().st_size > 0 and "data:image/png;base64" in (
        out / "soft.html").read_text()
    assert "<a href='soft.html'>" in index and "<a href='lines.html'>" not in index
    assert not list(out.glob(".*"))


def test_cli_teach_errors(tmp_path, capsys):
    from mixlinreg.cli import main

    assert main(["teach", "lines", "wiggle", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "unknown view 'wiggle'" in err
    assert not (tmp_path / "o").exists()  # names are checked before the folder is made
    f = tmp_path / "f"
    f.write_text("")
    assert main(["teach", "--out", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "is a file" in err


def test_teaching_page_numbers_are_the_committed_runs():
    """Every number in the teaching page's 'measured' list is printed in a committed view record."""
    import json
    import re

    readme = (ROOT / "docs" / "teaching.md").read_text()
    section = readme.split("Measured by `mixlinreg teach all")[1].split("**Interactive.**")[0]
    numbers = re.findall(r"\d+\.\d+|\d+%", section)
    assert len(numbers) >= 8
    records = " ".join(
        json.loads((ROOT / "figures" / "teach" / f"{v}.json").read_text())["summary"] + " "
        + json.loads((ROOT / "figures" / "teach" / f"{v}.json").read_text())["caption"]
        for v in teach.VIEWS)
    for x in numbers:
        assert x in records, x


def test_docstring_examples():
    import doctest

    from mixlinreg.teach import _runs

    for mod in (teach, _runs):
        result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0 and (mod is teach or result.attempted >= 8)


def test_bad_input_named():
    mix = teach.line_mixture(k=2, m=6, n=8, sigma=0.0, rng=0)
    with pytest.raises(ValueError, match="tol"):
        teach.basin_map(mix, 0.5, 3, grid=3)  # sigma = 0: the default 0.6 sigma is no threshold
    with pytest.raises(ValueError, match="init"):
        teach.ifca_path(mix, np.zeros((3, 2)), 0.5, 3)
    with pytest.raises(ValueError, match="alpha0"):
        teach.basin_map(mix, 0.5, 3, alpha0=0.7, tol=0.1)
    with pytest.raises(ValueError, match="grid"):
        teach.basin_map(mix, 0.5, 3, grid=1, tol=0.1)
