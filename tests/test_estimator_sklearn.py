"""IFCA as a scikit-learn estimator: clone, get_params / set_params, ``random_state`` (and the
deprecated ``rng``), scikit-learn's ``check_estimator`` where the machine layout lets it apply,
and the same properties tested on machine data where it does not; the one table of bounds that
the estimator, :func:`mixlinreg.ifca` and the configs read."""

from __future__ import annotations

import inspect
import pickle
import warnings

import numpy as np
import pytest
import sklearn
from numpy.testing import assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

import mixlinreg as mlr
from mixlinreg._validation import PARAMETERS, Array, Either, Interval, check_param

pytestmark = pytest.mark.filterwarnings("ignore::mixlinreg.EmptyClusterWarning")


@pytest.fixture(scope="module")
def mix():
    return mlr.make_mixture(m=16, n=20, d=4, k=2, R=1.0, sigma=0.1, rng=3)


def _same(a, b):
    """Parameter values equal: arrays by value, Generators by state, the rest by ==."""
    if isinstance(a, np.random.Generator):
        return type(b) is np.random.Generator and a.bit_generator.state == b.bit_generator.state
    if isinstance(a, np.random.SeedSequence):
        return type(b) is np.random.SeedSequence and a.entropy == b.entropy
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return type(a) is type(b) and a == b


# ------------------------------------------------------------------------------ clone and params
NON_DEFAULT = dict(n_clusters=3, lr=[0.05, 0.2], n_init=4, n_iter=7, init=np.ones((3, 4)),
                   loss="huber", l2=0.01, huber_delta=2.0, averaging="model", local_steps=2,
                   early_stop=True, tol=1e-5, method="data", dtype=np.float32, n_threads=1,
                   random_state=np.random.default_rng(5), diverge_threshold=1e8, shared=[0, 2],
                   fit_intercept=True, verbose=True, weighting="size")


def test_non_default_values_cover_every_parameter_but_the_deprecated_alias():
    assert set(NON_DEFAULT) | {"rng"} == set(mlr.IFCA().get_params())


@pytest.mark.parametrize("seed", [np.random.default_rng(5), np.random.SeedSequence(5), 5, None])
def test_clone_round_trips_every_parameter(seed):
    est = mlr.IFCA(**{**NON_DEFAULT, "random_state": seed})
    twin = clone(est)
    assert twin is not est and type(twin) is mlr.IFCA
    got, want = twin.get_params(), est.get_params()
    assert set(got) == set(want)
    for name in want:
        assert _same(got[name], want[name]), name
    # a clone is unfitted, even of a fitted estimator
    assert not hasattr(clone(est), "coef_")


def test_clone_of_a_fitted_estimator_is_unfitted_and_fits_the_same(mix):
    est = mlr.IFCA(n_init=3, n_iter=20, random_state=1).fit(mix.X, mix.y)
    twin = clone(est)
    assert not hasattr(twin, "coef_")
    assert_array_equal(twin.fit(mix.X, mix.y).coef_, est.coef_)


def test_get_params_and_set_params():
    est = mlr.IFCA()
    params = est.get_params()
    assert list(params) == sorted(inspect.signature(mlr.IFCA).parameters)
    assert params["random_state"] is None and params["rng"] == "deprecated"
    assert est.set_params(n_clusters=4, lr=[0.1, 0.3], random_state=7) is est
    assert (est.n_clusters, est.lr, est.random_state) == (4, [0.1, 0.3], 7)
    with pytest.raises(ValueError, match="Invalid parameter 'n_cluster'"):
        est.set_params(n_cluster=3)
    # __init__ stores and checks nothing: bad values are refused by fit, before any compute
    bad = mlr.IFCA(n_clusters=-1, tol="x")
    assert bad.n_clusters == -1 and bad.tol == "x"


# ---------------------------------------------------------------------- random_state and rng
@pytest.mark.parametrize("make", [lambda: 7, lambda: np.random.SeedSequence(7),
                                  lambda: np.random.default_rng(7)],
                         ids=["int", "SeedSequence", "Generator"])
def test_random_state_equals_the_deprecated_rng_bit_for_bit(mix, make):
    new = mlr.IFCA(n_init=4, lr=[0.1, 0.3], n_iter=30, random_state=make()).fit(mix.X, mix.y)
    with pytest.warns(FutureWarning, match=r"rng=\.\.\.\) is deprecated.*pass random_state"):
        old = mlr.IFCA(n_init=4, lr=[0.1, 0.3], n_iter=30, rng=make()).fit(mix.X, mix.y)
    for attr in ("coef_", "labels_", "loss_history_"):
        assert_array_equal(getattr(new, attr), getattr(old, attr))
    assert_array_equal(new.result_.theta, old.result_.theta)
    assert new.loss_ == old.loss_ and new.lr_ == old.lr_


def test_random_state_alone_does_not_warn_and_different_seeds_differ(mix):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        a = mlr.IFCA(n_init=2, n_iter=5, random_state=1).fit(mix.X, mix.y)
        b = mlr.IFCA(n_init=2, n_iter=5, random_state=2).fit(mix.X, mix.y)
    assert not np.array_equal(a.result_.theta, b.result_.theta)


def test_rng_and_random_state_together_are_refused(mix):
    with pytest.raises(ValueError, match=r"pass random_state only: rng is its deprecated alias, "
                                         r"got both rng=1 and random_state=2"):
        mlr.IFCA(rng=1, random_state=2).fit(mix.X, mix.y)
    est = mlr.IFCA(random_state=2).set_params(rng=1)
    with pytest.raises(ValueError, match="got both"):
        est.fit(mix.X, mix.y)


@pytest.mark.parametrize("bad", ["seed", 1.5, np.random.RandomState(0)])
def test_bad_random_state_names_random_state(mix, bad):
    with pytest.raises(TypeError, match=r"^random_state must be None, an int seed, a SeedSequence"):
        mlr.IFCA(random_state=bad).fit(mix.X, mix.y)


# -------------------------------------------------------------------- scikit-learn's checks
#: Why each of scikit-learn's checks that fail cannot apply to IFCA. LAYOUT: it fits on a 2-d X
#: (n_samples, n_features) with a 1-d y, while IFCA's fit takes machines, X (m, n, d) and y
#: (m, n), and refuses a 2-d X (the check fails on that refusal, "X must have 3 dimensions").
LAYOUT = ("fits on a 2-d X (n_samples, n_features) and a 1-d y; IFCA's fit takes machines, "
          "X (m, n, d) and y (m, n), and refuses a 2-d X")
CANNOT_APPLY = {
    **{name: LAYOUT for name in (
        "check_fit_score_takes_y", "check_estimators_overwrite_params",
        "check_dont_overwrite_parameters", "check_estimators_fit_returns_self",
        "check_readonly_memmap_input", "check_n_features_in_after_fitting",
        "check_positive_only_tag_during_fit", "check_estimators_dtypes",
        "check_estimators_empty_data_messages", "check_pipeline_consistency",
        "check_estimators_nan_inf", "check_estimators_pickle", "check_f_contiguous_array_estimator",
        "check_methods_sample_order_invariance", "check_methods_subset_invariance",
        "check_fit2d_1sample", "check_fit2d_1feature", "check_dict_unchanged",
        "check_fit_idempotent", "check_fit_check_is_fitted", "check_n_features_in",
        "check_fit2d_predict1d")},
    "check_dtype_object": LAYOUT + " (and an object array, even of numbers, is refused as "
                                   "non-numeric: IFCA never guesses a conversion)",
    "check_estimators_unfitted": "calls predict(X) without y; IFCA assigns a machine by the "
                                 "losses of its labelled data, so predict takes (X, y)",
    "check_complex_data": "expects a ValueError; complex data get a TypeError in IFCA, as "
                          "everywhere in mixlinreg (a dtype that is not real is a type error)",
}
#: The checks that apply, all of which pass.
APPLY = {"check_estimator_cloneable", "check_estimator_tags_renamed", "check_valid_tag_types",
         "check_estimator_repr", "check_no_attributes_set_in_init",
         "check_do_not_raise_errors_in_init_or_set_params", "check_mixin_order",
         "check_estimator_sparse_tag", "check_estimator_sparse_array",
         "check_estimator_sparse_matrix", "check_parameters_default_constructible",
         "check_get_params_invariance", "check_set_params", "check_fit1d",
         "check_requires_y_none"}


def _messages(exc):
    out = []
    while exc is not None:
        out.append(str(exc))
        exc = exc.__cause__ or exc.__context__
    return " | ".join(out)


def test_check_estimator_passes_every_check_that_applies():
    from sklearn.utils.estimator_checks import check_estimator

    if "expected_failed_checks" not in inspect.signature(check_estimator).parameters:
        pytest.skip(f"scikit-learn {sklearn.__version__} has no expected_failed_checks (>= 1.6)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the checks' tiny fits warn, by design
        results = check_estimator(mlr.IFCA(n_init=2, n_iter=5), expected_failed_checks=CANNOT_APPLY,
                                  on_fail=None, on_skip=None)
    status = {}
    for r in results:
        status.setdefault(r["check_name"], set()).add(r["status"])
        if r["status"] == "failed":
            pytest.fail(f"{r['check_name']} failed: {_messages(r['exception'])}")
    # every listed check did fail (a check that starts to pass must leave the list) and for the
    # reason given: the layout ones on the refusal of a 2-d X
    for name, reason in CANNOT_APPLY.items():
        assert status.get(name) == {"xfail"}, (name, status.get(name))
    for r in results:
        if r["status"] == "xfail" and CANNOT_APPLY[r["check_name"]].startswith(LAYOUT):
            text = _messages(r["exception"])
            assert "X must have 3 dimensions" in text or "must be a numeric array" in text, text
    passed = {name for name, s in status.items() if s == {"passed"}}
    assert APPLY <= passed, APPLY - passed
    # the rest were skipped by scikit-learn itself (array API without SCIPY_ARRAY_API)
    assert set(status) - passed - set(CANNOT_APPLY) <= {"check_array_api_input"}


def test_tags_say_fit_needs_y_and_3d_input():
    from sklearn.utils import get_tags

    if not hasattr(sklearn.base.BaseEstimator, "__sklearn_tags__"):
        pytest.skip(f"scikit-learn {sklearn.__version__} has no __sklearn_tags__ (>= 1.6)")
    tags = get_tags(mlr.IFCA())
    assert tags.target_tags.required and tags.input_tags.three_d_array
    assert tags.input_tags.two_d_array  # predict/score take one machine's 2-d X
    assert not tags.input_tags.sparse


# ------------------------------------- what the checks that cannot apply test, on machine data
def test_fit_returns_self_and_leaves_the_parameters_alone(mix):
    est = mlr.IFCA(n_init=2, n_iter=10, lr=[0.1, 0.3], random_state=4, shared=[1])
    before = pickle.dumps(est.get_params())
    public = {k for k in vars(est)}
    assert est.fit(mix.X, mix.y) is est
    assert pickle.dumps(est.get_params()) == before
    added = set(vars(est)) - public
    assert added and all(a.endswith("_") and not a.startswith("_") for a in added), added
    assert est.n_features_in_ == mix.X.shape[2]


def test_fit_is_idempotent_and_predict_does_not_change_the_estimator(mix):
    est = mlr.IFCA(n_init=3, n_iter=20, random_state=4)
    first = est.fit(mix.X, mix.y).coef_.copy()
    assert_array_equal(est.fit(mix.X, mix.y).coef_, first)
    state = pickle.dumps(vars(est))
    est.predict(mix.X, mix.y), est.score(mix.X, mix.y)
    assert pickle.dumps(vars(est)) == state


def test_pickle_and_fortran_data(mix):
    """(Read-only data, scikit-learn's memmap check, fit too, but numba compiles the kernel once
    more for read-only arrays, about a minute on a cold cache: not repeated here.)"""
    est = mlr.IFCA(n_init=3, n_iter=20, random_state=4).fit(mix.X, mix.y)
    back = pickle.loads(pickle.dumps(est))
    assert_array_equal(back.predict(mix.X, mix.y), est.predict(mix.X, mix.y))
    assert back.score(mix.X, mix.y) == est.score(mix.X, mix.y)
    fortran = np.asfortranarray(mix.X)
    assert not fortran.flags.c_contiguous
    assert_array_equal(mlr.IFCA(n_init=3, n_iter=20, random_state=4).fit(fortran, mix.y).coef_,
                       est.coef_)
    # an integer X is cast to the working dtype
    Xi = np.round(mix.X * 10).astype(np.int64)
    assert mlr.IFCA(n_init=2, n_iter=5, random_state=4).fit(Xi, mix.y).coef_.dtype == np.float64


def test_nan_inf_sparse_and_unfitted_are_refused(mix):
    import scipy.sparse as sp

    for bad in (np.nan, np.inf):
        X = mix.X.copy()
        X[0, 0, 0] = bad
        with pytest.raises(ValueError, match="X must contain only finite values"):
            mlr.IFCA(n_init=2, n_iter=5).fit(X, mix.y)
    with pytest.raises(TypeError, match="X must be a dense array: sparse input"):
        mlr.IFCA().fit(sp.csr_array(mix.X[0]), mix.y[0])
    with pytest.raises(ValueError, match="IFCA requires y to be passed, but the target y is None"):
        mlr.IFCA().fit(mix.X, None)
    with pytest.raises(NotFittedError, match="not fitted yet"):
        mlr.IFCA().predict(mix.X, mix.y)
    with pytest.raises(NotFittedError, match="not fitted yet"):
        mlr.IFCA().score(mix.X, mix.y)


def test_model_selection_splits_machines(mix):
    from sklearn.model_selection import GridSearchCV, cross_val_score

    scores = cross_val_score(mlr.IFCA(n_init=2, n_iter=20, random_state=0), mix.X, mix.y, cv=2)
    assert scores.shape == (2,) and np.all(scores < 0)
    grid = GridSearchCV(mlr.IFCA(n_init=2, n_iter=20, random_state=0), {"lr": [0.05, 0.1]},
                        cv=2).fit(mix.X, mix.y)
    assert grid.best_params_["lr"] in (0.05, 0.1)
    assert grid.best_estimator_.coef_.shape == (2, mix.X.shape[2])


# ------------------------------------------------------------------------ the table of bounds
def test_every_public_parameter_has_one_table_entry():
    # kernel (and its former name backend) is resolved against the calling context's default by
    # mixlinreg._kernel_choice.resolve_kernel, the one check of that choice
    ifca_params = set(inspect.signature(mlr.ifca).parameters) - {"X", "y", "kernel", "backend"}
    assert ifca_params <= set(PARAMETERS), ifca_params - set(PARAMETERS)
    est = set(mlr.IFCA().get_params())
    assert set(mlr.IFCA._constraints) == est
    # the estimator's entries are the table's (loss without the multinomial, rng with its sentinel)
    for name in est - {"loss", "rng"}:
        assert mlr.IFCA._constraints[name] is PARAMETERS[name], name
    from mixlinreg.losses import KERNEL_CODES

    assert set(PARAMETERS["loss"].choices) == set(KERNEL_CODES)
    assert set(mlr.IFCA._constraints["loss"].choices) == set(KERNEL_CODES) - {"multinomial"}


def test_the_function_and_the_estimator_give_the_same_message(mix):
    init = np.zeros((1, 2, 4))
    for name, bad, exc, text in [
            ("n_iter", -1, ValueError, r"^n_iter must be in \[0, inf\), got -1$"),
            ("n_iter", 2.5, TypeError, r"^n_iter must be an integer, got 2\.5$"),
            ("local_steps", 0, ValueError, r"^local_steps must be in \[1, inf\), got 0$"),
            ("tol", -1.0, ValueError, r"^tol must be a finite number in \[0, inf\), got -1\.0$"),
            ("l2", np.nan, ValueError, r"^l2 must be a finite number in \[0, inf\), got nan$"),
            ("huber_delta", 0, ValueError, r"^huber_delta must be a finite number in \(0, inf\)"),
            ("method", "fast", ValueError, r"^method must be one of \['auto', 'data', 'gram', "),
            ("averaging", "mean", ValueError, r"^averaging must be one of \['gradient', 'model'\]"),
            ("early_stop", "no", TypeError, r"^early_stop must be a bool \(True or False\)"),
            ("diverge_threshold", "big", ValueError,
             r"^diverge_threshold must be 'auto' or a positive number, got 'big'$"),
            ("n_threads", 0, ValueError, r"^n_threads must be in \[1, \d+\], got 0$"),
            ("n_threads", "2", TypeError, r"^n_threads must be None or an integer in \[1, \d+\]")]:
        with pytest.raises(exc, match=text):
            mlr.ifca(mix.X, mix.y, init, 0.1, **{name: bad})
        with pytest.raises(exc, match=text):
            mlr.IFCA(n_init=1, **{name: bad}).fit(mix.X, mix.y)


def test_the_estimator_checks_every_parameter_before_computing(mix, monkeypatch):
    import mixlinreg.estimator as estimator_module

    def boom(*args, **kwargs):
        raise AssertionError("computed before the parameters were checked")

    monkeypatch.setattr(estimator_module, "init_bernoulli", boom)
    monkeypatch.setattr(estimator_module, "ifca", boom)
    for bad in (dict(n_init=0), dict(tol=-1.0), dict(method="x"), dict(n_iter=-2),
                dict(random_state="x"), dict(shared="all"), dict(lr=[0.1, 0.0])):
        with pytest.raises((TypeError, ValueError), match=next(iter(bad))):
            mlr.IFCA(**bad).fit(mix.X, mix.y)
    # the data are not even read: a bad parameter wins over bad data
    with pytest.raises(ValueError, match="n_clusters must be in"):
        mlr.IFCA(n_clusters=0).fit("not data", None)


def test_n_iter_zero_keeps_the_best_start(mix):
    init = np.stack([mix.theta_star[::-1] + 5, mix.theta_star + 0.01])
    est = mlr.IFCA(init=init, n_iter=0).fit(mix.X, mix.y)
    assert est.n_iter_ == 0 and est.loss_history_.shape == (1,)
    assert_array_equal(est.coef_, init[1])


def test_constraint_vocabulary():
    rng_bound = Interval("int", low=1, high="m")
    assert rng_bound.check("s", 3, m=4) == 3
    with pytest.raises(ValueError, match=r"s must be in \[1, 4\], got 5"):
        rng_bound.check("s", 5, m=4)
    assert rng_bound.describe() == "an integer in [1, m]"
    with pytest.raises(ValueError, match="closed"):
        Interval("int", low=0, low_open=True)
    with pytest.raises(ValueError, match=r"lr must be a positive number for every one of its "
                                         r"runs, got -1\.0 at index 2"):
        PARAMETERS["lr"].check_each("lr", np.array([0.1, 0.2, -1.0]), "runs")
    assert check_param("participation", None, m=3) is None
    mask = np.ones((2, 1, 3), dtype=bool)
    assert check_param("participation", mask, m=3) is mask  # the shape is checked with the data
    assert isinstance(PARAMETERS["participation"], Either)
    assert any(isinstance(c, Array) for c in PARAMETERS["participation"].members)
    with pytest.raises(TypeError, match="shared must be None or an array of shape"):
        check_param("shared", "all")


def test_convergence_warning_without_early_stop():
    """Issue 39: the kept run that did not converge warns whatever the options (before, only
    ``early_stop=True`` warned); ``converged_`` says which, and ``coef_`` is not changed by the
    check (it equals the last iterate of the same fit with the check's warning filtered)."""
    import warnings

    mix = mlr.make_mixture(m=20, n=50, d=5, k=1, R=1.0, sigma=0.1, rng=0)
    with pytest.warns(mlr.ConvergenceWarning, match=r"did not meet tol=1e-06 within n_iter=3"):
        short = mlr.IFCA(1, lr=0.01, n_init=1, n_iter=3, random_state=0).fit(mix.X, mix.y)
    assert short.converged_ is False
    np.testing.assert_array_equal(short.coef_, short.result_.theta[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", mlr.ConvergenceWarning)
        long = mlr.IFCA(1, lr=0.5, n_init=1, n_iter=300, random_state=0).fit(mix.X, mix.y)
    assert long.converged_ is True
    # a looser tol accepts the short run's last step only if that step is below it
    loose = mlr.IFCA(1, lr=0.01, n_init=1, n_iter=3, tol=10.0, random_state=0).fit(mix.X, mix.y)
    assert loose.converged_ is True
