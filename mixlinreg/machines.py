"""Federated data as it comes: machines of unequal sizes, and tables with a machine column.

Every fitting function of the package (:func:`mixlinreg.ifca`, :meth:`mixlinreg.IFCA.fit` and
the estimator's other methods, :func:`mixlinreg.baselines.cfl`, :func:`mixlinreg.baselines.fpfc`
and the other baselines) takes the machines' data in one of three forms (the estimator the first
two):

* dense arrays ``X`` (m, n, d) and ``y`` (m, n): m machines of n rows each;
* lists of per-machine arrays, ``X = [X_1, ..., X_m]`` with ``X_i`` of shape (n_i, d) and
  ``y = [y_1, ..., y_m]`` with ``y_i`` of shape (n_i,): machines of unequal sizes ("ragged");
* padded arrays ``X`` (m, n, d), ``y`` (m, n) with ``n_samples`` (m,): machine i holds its first
  ``n_samples[i]`` rows, the rest is padding and is never read (it may hold anything, NaN too).

:func:`stack_machines` turns the second form into the third; :func:`split_by_machine` makes the
second from a long table (one row per sample, a column naming its machine), such as a pandas
DataFrame.

With machines of unequal sizes, each machine's loss is its own empirical mean over its n_i rows,
``F_i(theta) = (1/n_i) sum_t ell(<x_t, theta>, y_t)``, and the training loss is the mean over
machines ``(1/m) sum_i min_j F_i(theta_j)``: every machine counts once whatever its size, as in
the paper's formulation (Ghosh et al., Section 3, where all machines hold n points). With equal
sizes every form gives the dense arrays' result bit for bit.
"""

from __future__ import annotations

import numpy as np

from ._validation import check_array, check_dtype

__all__ = ["stack_machines", "split_by_machine"]

_LIST_HINT = ("for machines of unequal sizes pass X as a list of m arrays of shape (n_i, d) and y "
              "as a list of m arrays of shape (n_i,); for a table with a machine column, "
              "mixlinreg.split_by_machine(frame, machine=..., target=...) makes those lists")


def _is_list(value):
    return isinstance(value, (list, tuple))


def stack_machines(X, y, *, dtype=np.float64):
    """Per-machine arrays as one zero-padded array and the machines' sizes.

    Parameters
    ----------
    X : list of m array-likes of shape (n_i, d)
        Features of each machine; the same d for all, n_i >= 1.
    y : list of m array-likes of shape (n_i,)
        Responses of each machine, as many as its rows.
    dtype : numpy.float32 or numpy.float64, default float64

    Returns
    -------
    X : ndarray (m, n, d), y : ndarray (m, n), n_samples : ndarray (m,) of int64
        ``n = max n_i``; machine i's rows are ``X[i, :n_samples[i]]``, the rest zeros. The three
        can be passed as they are to any fitting function of the package (``n_samples=``).

    Raises
    ------
    ValueError
        Naming the machine (``X[i]``, ``y[i]``) whose array is not 2-d (1-d for ``y``), has no
        rows, a different d, a different number of rows than its responses, or a value that is
        not finite; and when ``X`` and ``y`` hold different numbers of machines.

    Examples
    --------
    >>> import numpy as np, mixlinreg as mlr
    >>> X, y, n = mlr.stack_machines([np.ones((2, 3)), np.ones((1, 3))], [[1.0, 2.0], [3.0]])
    >>> X.shape, y.tolist(), n.tolist()
    ((2, 2, 3), [[1.0, 2.0], [3.0, 0.0]], [2, 1])
    """
    dt = check_dtype("dtype", dtype)
    if not _is_list(X) or not _is_list(y):
        raise TypeError(f"stack_machines takes X and y as lists of per-machine arrays, got X a "
                        f"{type(X).__name__} and y a {type(y).__name__}")
    Xs, ys = machine_lists(X, y, dt)
    counts = np.array([a.shape[0] for a in Xs], dtype=np.int64)
    m, n, d = len(Xs), int(counts.max()), Xs[0].shape[1]
    Xp = np.zeros((m, n, d), dtype=dt)
    yp = np.zeros((m, n), dtype=dt)
    for i, (Xi, yi) in enumerate(zip(Xs, ys)):
        Xp[i, :Xi.shape[0]] = Xi
        yp[i, :yi.shape[0]] = yi
    return Xp, yp, counts


def machine_lists(X, y, dt):
    """Lists of per-machine arrays checked (the errors of :func:`stack_machines`) and cast to
    ``dt``: ``([X_i (n_i, d)], [y_i (n_i,)])``."""
    if len(X) != len(y):
        raise ValueError(f"X and y must hold the same number of machines, got {len(X)} arrays in X "
                         f"and {len(y)} in y")
    if not X:
        raise ValueError("X must hold at least one machine, got an empty list")
    Xs, ys = [], []
    for i, (Xi, yi) in enumerate(zip(X, y)):
        Xi = check_array(f"X[{i}]", Xi, ndim=2, dtype=dt)
        yi = check_array(f"y[{i}]", yi, ndim=1, dtype=dt)
        if Xi.shape[0] < 1 or Xi.shape[1] < 1:
            raise ValueError(f"X[{i}] must have at least one row and one feature (shape (n_i, d) "
                             f"with n_i, d >= 1), got shape {Xi.shape}")
        if Xi.shape[1] != (Xs[0].shape[1] if Xs else Xi.shape[1]):
            raise ValueError(f"every machine must have the same d features: X[0] has "
                             f"{Xs[0].shape[1]}, X[{i}] has {Xi.shape[1]} (shape {Xi.shape})")
        if yi.shape[0] != Xi.shape[0]:
            raise ValueError(f"y[{i}] must have one response per row of X[{i}], shape "
                             f"({Xi.shape[0]},), got {yi.shape}")
        Xs.append(Xi)
        ys.append(yi)
    return Xs, ys


def split_by_machine(frame, *, machine, target, features=None):
    """A long table (one row per sample, a column naming its machine) as per-machine lists.

    Parameters
    ----------
    frame : pandas.DataFrame, or a mapping of column names to 1-d arrays
        One row per sample.
    machine : str
        The column that names each row's machine (any hashable values).
    target : str
        The column of the responses ``y``.
    features : list of str, optional
        The feature columns, in this order; default every column other than ``machine`` and
        ``target``, in the table's order.

    Returns
    -------
    X : list of m ndarrays (n_i, d), y : list of m ndarrays (n_i,), machines : list
        One entry per machine, in the order of first appearance in the table; each machine's
        rows keep the table's order. ``machines[i]`` is machine i's value of ``machine`` (so a
        fitted ``labels_[i]`` belongs to ``machines[i]``). ``X`` and ``y`` can be passed to any
        fitting function of the package.

    Raises
    ------
    KeyError
        Naming a column that is not in the table.
    ValueError
        When a feature or the target column is not numeric, no feature column is left, or a
        row has no machine (a missing value in the ``machine`` column).

    Examples
    --------
    >>> import mixlinreg as mlr
    >>> table = {"site": ["a", "b", "a"], "x": [1.0, 2.0, 3.0], "y": [0.5, 1.0, 1.5]}
    >>> X, y, sites = mlr.split_by_machine(table, machine="site", target="y")
    >>> sites, [a.shape for a in X], y[0].tolist()
    (['a', 'b'], [(2, 1), (1, 1)], [0.5, 1.5])
    """
    columns = list(frame.keys())
    for what, name in (("machine", machine), ("target", target)):
        if name not in columns:
            raise KeyError(f"{what}={name!r} is not a column of the table; its columns are "
                           f"{columns}")
    if features is None:
        features = [c for c in columns if c not in (machine, target)]
    else:
        features = list(features)
        missing = [c for c in features if c not in columns]
        if missing:
            raise KeyError(f"features {missing} are not columns of the table; its columns are "
                           f"{columns}")
    if not features:
        raise ValueError(f"no feature column is left besides machine={machine!r} and "
                         f"target={target!r}; columns: {columns}")
    ids = np.asarray(frame[machine])
    import pandas as pd

    missing = np.flatnonzero(pd.isna(ids))
    if missing.size:
        raise ValueError(f"machine column {machine!r} has {missing.size} missing values (rows "
                         f"{missing[:5].tolist()}{' ...' if missing.size > 5 else ''}): every row "
                         "needs its machine; drop or fill them first")
    cols = []
    for c in features + [target]:
        v = np.asarray(frame[c])
        if v.dtype == object or not (np.issubdtype(v.dtype, np.number)
                                     or np.issubdtype(v.dtype, np.bool_)):
            raise ValueError(f"column {c!r} must be numeric to be a feature or the target, got "
                             f"dtype {v.dtype}; encode it first (for example pandas.get_dummies)")
        cols.append(v.astype(np.float64))
    values = np.column_stack(cols)
    order, first = {}, []
    for row, key in enumerate(ids.tolist()):
        if key not in order:
            order[key] = len(first)
            first.append([])
        first[order[key]].append(row)
    rows = [np.asarray(r, dtype=np.int64) for r in first]
    X = [np.ascontiguousarray(values[r, :-1]) for r in rows]
    y = [np.ascontiguousarray(values[r, -1]) for r in rows]
    return X, y, list(order)


def refuse_n_samples_with_lists(n_samples):
    """``n_samples`` belongs to padded arrays: with lists the arrays' lengths are the sizes."""
    if n_samples is not None:
        raise ValueError("n_samples is for padded arrays; with lists of per-machine arrays "
                         "each machine's size is its array's length: drop n_samples")


def machine_arrays(X, y, n_samples, dtype, *, y_ndim=(2,), where="X"):
    """The machines' data in any of the three forms (see the module) as padded arrays.

    Returns ``X`` (m, n, d), ``y`` (m, n) (or ``(C, m, n)`` when 3 is in ``y_ndim`` and a 3-d
    ``y`` was given), ``counts`` (m,) int64 and ``ragged`` (whether some machine has fewer than
    n rows). Padding is zeroed, so sums over all rows (sufficient statistics, scales) equal sums
    over the machines' own rows. Errors name the parameter and say what to pass.
    """
    if _is_list(X):
        refuse_n_samples_with_lists(n_samples)
        if not _is_list(y):  # an (m, n) array of responses pairs with m machines of n rows
            if np.ndim(y) < 1:
                raise TypeError(f"with X a list of per-machine arrays, y must be a list of their "
                                f"responses (arrays of shape (n_i,)), got {type(y).__name__}")
            y = list(np.asarray(y))  # a DataFrame's rows, not its column names
        Xp, yp, counts = stack_machines(X, y, dtype=dtype)
        return Xp, yp, counts, bool(np.any(counts != Xp.shape[1]))
    finite = n_samples is None
    sparse = type(X).__module__.startswith("scipy.sparse")  # check_array says so
    if not sparse and np.ndim(X) == 2:  # a table of rows (a DataFrame too)
        raise ValueError(f"X must have 3 dimensions (m machines, n rows, d features), got shape "
                         f"{np.shape(X)}: one machine's (n, d) rows are X[None] (and y[None]); "
                         f"{_LIST_HINT}")
    X = check_array("X", X, ndim=3, dtype=dtype, finite=finite)
    m, n, d = X.shape
    if min(m, n, d) < 1:
        raise ValueError(f"X must have m, n, d >= 1, got shape {X.shape}")
    y = check_array("y", y, ndim=y_ndim, dtype=dtype, finite=finite)
    Y = y[None] if y.ndim == 2 else y
    if Y.shape[1:] != (m, n):
        want = f"({m}, {n})" + (f" or (C, {m}, {n})" if 3 in y_ndim else "")
        raise ValueError(f"y must have shape {want} to match X {X.shape}, got {y.shape}")
    if n_samples is None:
        return X, y, np.full(m, n, dtype=np.int64), False
    counts = check_array("n_samples", n_samples, shape=(m,), dtype=np.float64)
    bad = (counts != np.round(counts)) | (counts < 1) | (counts > n)
    if bad.any():
        raise ValueError(f"n_samples must hold m = {m} integers in [1, {n}] (rows used per "
                         f"machine, at most the padded n = {n}), got {counts[bad][0]!r}")
    counts = counts.astype(np.int64)
    pad = np.arange(n)[None, :] >= counts[:, None]  # (m, n): padding rows
    own = ~pad
    if not (np.all(np.isfinite(X[own])) and np.all(np.isfinite(Y[:, own]))):
        raise ValueError(f"{where} and y must contain only finite values (no NaN or inf) in each "
                         "machine's first n_samples[i] rows (the padding after them may hold "
                         "anything)")
    if pad.any():
        X = X.copy()
        y = y.copy()
        X[pad] = 0.0
        (y[None] if y.ndim == 2 else y)[:, pad] = 0.0
    return X, y, counts, bool(pad.any())
