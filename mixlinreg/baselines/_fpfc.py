"""FPFC: fusion penalized federated clustering (Yu, Liu, Sun, Wang, AAAI 2023), SCAD or l1."""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from .. import _numerics
from .._progress import iterations_bar
from .._validation import (as_generator, check_array, check_bool, check_choice, check_float,
                           check_int)
from .._validation import check_participation_fraction
from ..losses import LOSSES, multinomial_value
from ._common import LOSSES as LOSS_NAMES
from ._common import (RaggedRows, check_data, check_l2, check_scale, loss_gradient, model_start,
                      ragged_rows, sample_weights, smoothness, warn_diverged)
from ._result import BaselineResult

__all__ = ["fpfc"]


def _scad_smooth(t, lam, a, xi):
    """The smoothed SCAD penalty ``P~_a(t, lam)`` of the paper (display after the SCAD definition,
    Section "Our objective"), elementwise on ``t >= 0``.

    ``P_a(t) = lam t`` (t <= lam), ``(a lam t - (t^2 + lam^2) / 2) / (a - 1)``
    (lam < t <= a lam), ``lam^2 (a + 1) / 2`` (t > a lam); below ``xi`` it is replaced by
    ``lam t^2 / (2 xi) + xi lam / 2``.
    """
    t = np.abs(np.asarray(t, dtype=np.float64))
    out = np.where(t <= lam, lam * t,
                   np.where(t <= a * lam, (a * lam * t - 0.5 * (t * t + lam * lam)) / (a - 1.0),
                            0.5 * lam * lam * (a + 1.0)))
    if lam > 0.0:
        out = np.where(t <= xi, lam * t * t / (2.0 * xi) + 0.5 * xi * lam, out)
    return out


def _scad_threshold(t, lam, a, xi, rho):
    r"""Minimizer ``s >= 0`` of ``P~_a(s, lam) + (rho / 2) (s - t)^2`` for ``t >= 0`` (elementwise).

    This is the radial part of the closed-form theta step of Algorithm 1 (step 5): the minimizer
    of ``P~_a(||theta||, lam) + (rho / 2) ||delta - theta||^2`` is
    ``theta = s(||delta||) delta / ||delta||``.
    The paper states that the step has a closed form without printing it; setting the derivative
    of each piece to zero gives (valid when ``rho > 1 / (a - 1)``, which makes the objective
    strictly convex in ``s``, so exactly one branch holds)

    * ``t <= xi + lam / rho``:            ``s = t / (1 + lam / (rho xi))``   (quadratic smoothing),
    * ``xi + lam/rho < t <= lam + lam/rho``: ``s = t - lam / rho``            (soft thresholding),
    * ``lam + lam/rho < t <= a lam``:      ``s = (rho (a - 1) t - a lam) / (rho (a - 1) - 1)``,
    * ``t > a lam``:                       ``s = t``                          (no shrinkage).

    ``lam = 0`` gives ``s = t``.
    """
    t = np.asarray(t, dtype=np.float64)
    if lam == 0.0:
        return t.copy()
    s_quad = t / (1.0 + lam / (rho * xi))
    s_soft = t - lam / rho
    s_scad = (rho * (a - 1.0) * t - a * lam) / (rho * (a - 1.0) - 1.0)
    return np.where(t <= xi + lam / rho, s_quad,
                    np.where(t <= lam + lam / rho, s_soft,
                             np.where(t <= a * lam, s_scad, t)))


def _threshold(t, lam, a, xi, rho, penalty):
    """The radial part of the theta step for ``penalty``: :func:`_scad_threshold` (``"scad"``), or
    group soft thresholding ``max(t - lam / rho, 0)``, the exact minimizer of
    ``lam s + (rho / 2) (s - t)^2`` over ``s >= 0`` (``"l1"``, the convex penalty of FPFC-l1)."""
    if penalty == "l1":
        return np.maximum(np.asarray(t, dtype=np.float64) - lam / rho, 0.0)
    return _scad_threshold(t, lam, a, xi, rho)


def _penalty_value(t, lam, a, xi, penalty):
    """``g(t, lam)``: the smoothed SCAD (``"scad"``) or ``lam t`` (``"l1"``)."""
    if penalty == "l1":
        return lam * np.abs(np.asarray(t, dtype=np.float64))
    return _scad_smooth(t, lam, a, xi)


def _pair_index(m):
    """Pairs ``i < j`` in row-major order: ``I``, ``J`` (P,) and the signed incidence matrix
    ``D`` (P, m) with ``D[p, I[p]] = 1``, ``D[p, J[p]] = -1``, so
    ``D @ omega = omega_I - omega_J``."""
    I, J = np.triu_indices(m, k=1)
    P = I.size
    rows = np.concatenate([np.arange(P), np.arange(P)])
    cols = np.concatenate([I, J])
    vals = np.concatenate([np.ones(P), -np.ones(P)])
    D = sparse.csr_matrix((vals, (rows, cols)), shape=(P, m))
    return I.astype(np.int64), J.astype(np.int64), D


def _loss_values(X, y, omega, loss, delta, shape, weights):
    """``(1/n_i) sum_t ell`` of every machine at its model (rows of ``omega``; the rows' weights
    ``weights``, see ``sample_weights``), without the ridge."""
    if loss == "multinomial":
        Z = np.einsum("ind,idc->inc", X, omega.reshape((-1,) + shape))
        return np.sum(multinomial_value(Z, y) * weights, axis=1)
    z = np.einsum("ind,id->in", X, omega)
    return np.sum(LOSSES[loss].value(z, y, delta=delta) * weights, axis=1)


def _objective(values, omega, D, pen, l2):
    """``F(omega) = sum_i f_i(omega_i) + (1/m) sum_{i<j} g(||omega_i - omega_j||, lam)``;
    ``values(omega)`` gives the machines' ``f_i`` without the ridge."""
    lam, a, xi, penalty = pen
    m = omega.shape[0]
    f = values(omega)
    if l2 != 0.0:
        f += 0.5 * l2 * np.sum(omega * omega, axis=1)
    total = 0.0
    if lam > 0.0 and m > 1:
        total = float(np.sum(_penalty_value(np.linalg.norm(D @ omega, axis=1), lam, a, xi,
                                            penalty))) / m
    return float(np.sum(f)) + total


def _clusters(m, I, J, theta_pairs, nu):
    """Connected components of the graph linking ``i, j`` when ``||theta_ij|| <= nu``, labelled
    0, 1, ... in order of first appearance along the machines."""
    link = np.linalg.norm(theta_pairs, axis=1) <= nu
    G = sparse.coo_matrix((np.ones(int(link.sum())), (I[link], J[link])), shape=(m, m))
    _, comp = connected_components(G, directed=False)
    _, first, inverse = np.unique(comp, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))  # component -> rank of its first machine
    return order[inverse].astype(np.int64)


def fpfc(X, y, *, lam=0.5, a=3.7, xi=0.01, rho=1.0, lr=None, local_steps=5, n_rounds=300,
         nu=0.1, participation=1.0, rng=None, l2=0.0, loss="squared", max_pair_floats=5e7,
         penalty="scad", huber_delta=1.0, n_classes=None, n_samples=None, callback=None,
         init="zeros", n_participants=None, verbose=False, record_objective=True):
    r"""FPFC: fusion penalized federated clustering; finds the clusters without knowing ``k``.

    Every machine ``i`` has its own model ``omega_i`` and the method minimizes (paper, Section
    "Our objective")

    ``F(omega) = sum_i f_i(omega_i) + (1 / 2m) sum_{i, j} P~_a(||omega_i - omega_j||, lam)``,

    ``f_i(w) = (1/n) sum_t ell(<x_it, w>, y_it) + (l2/2) ||w||^2`` (``loss="squared"``:
    ``(1/n) ||X_i w - y_i||^2 + (l2/2) ||w||^2``; the logistic, Huber and multinomial losses of
    :mod:`mixlinreg.losses` as in :func:`cfl`, a model being a d x C matrix for the last), with
    the SCAD penalty ``P_a`` (Fan and Li 2001, ``a > 2``) smoothed by a quadratic below ``xi``
    (``P~_a``, see ``_scad_smooth``), or with ``penalty="l1"`` the convex ``g(t) = lam t`` of the
    paper's FPFC-l1 variant (its theta step is group soft thresholding; ``a`` and ``xi`` unused). With
    pair variables ``theta_ij = omega_i - omega_j`` and duals ``v_ij`` (stored for ``i < j`` only;
    ``theta_ji = -theta_ij``, ``v_ji = -v_ij``) each round of the paper's Algorithm 1 is:

    1. the center draws the participants ``A_k``: ``round(participation * m)`` machines (at least
       one), or ``n_participants`` machines, without replacement from ``rng`` (step 1);
    2. each participant starts from its ``omega_i`` and runs ``local_steps`` gradient steps
       ``omega <- omega - lr [grad f_i(omega) + rho (omega - zeta_i)]`` (steps 2-4) and sends
       ``omega_i`` back; the other machines keep theirs;
    3. for every pair with at least one participant, ``delta_ij = omega_i - omega_j + v_ij / rho``,
       ``theta_ij = argmin P~_a(||theta||) + (rho/2) ||delta_ij - theta||^2`` (closed form,
       ``_scad_threshold``) and ``v_ij <- v_ij + rho (omega_i - omega_j - theta_ij)`` (step 5);
       pairs of two non-participants keep ``theta_ij, v_ij``;
    4. ``zeta_i = (1/m) sum_j (omega_j + theta_ij - v_ij / rho)`` for every ``i`` (last line).

    Step 5 of the paper prints the update "for i, j in A_k" and keeps the pairs "i, j not in A_k";
    pairs with one participant are not mentioned. Here they are updated (the center knows every
    current ``omega_j``). With ``participation=1`` the two readings agree.

    The start (``init``): Algorithm 1 initializes ``omega_1 = ... = omega_m``, ``zeta_i =
    omega_i``, ``theta = v = 0`` without saying which common value; ``init="zeros"`` (the
    default) starts at zero, ``init="common_normal"`` at one standard normal draw copied to every
    machine (the FPFC authors' public code, github xueyu-ubc/FPFC, ``Synthetic/``, HEAD
    c8ff103, ``base.py:23-32``), an array at the user's start. A start per machine ((m,) + the
    model's shape) is outside Algorithm 1: its initialization is then applied as printed
    (``zeta_i = omega_i``, ``theta = v = 0``).

    At the end machines ``i, j`` are linked when ``||theta_ij|| <= nu``; the clusters are the
    connected components, and each cluster's model is the mean of its machines' ``omega_i`` (the
    paper's ``n_i``-weighted mean; all machines have ``n`` points here).

    The defaults suit well separated problems like ``make_mixture(m=20..40, n=50, d=5, k=2..4,
    R=3, sigma=0.1, theta_scale="norm")``: between-cluster distances above ``a lam = 1.85`` are not
    penalized (SCAD is flat there) while local least-squares models of one cluster, about
    ``sigma sqrt(d / n)`` apart, fuse. They are problem dependent: ``lam`` must be smaller than the
    separation over ``a``, ``xi < lam`` and ``xi <= nu`` (the paper suggests ``nu`` in
    ``[xi, 0.5]``), and ``nu`` must exceed the within-cluster spread left by the smoothing. The
    paper's convergence theorem asks for ``rho > max(L_f / (1 - 2 c^(T/2)), 2 lam / xi,
    2 / (a - 1))``, far larger than the default; ``rho = 1`` converges on these problems and
    separates clusters faster.

    Memory: the pair variables ``theta_ij``, ``v_ij`` and the temporaries of one round are a few
    arrays of shape (P, d), ``P = m (m - 1) / 2``, i.e. ``O(m^2 d)`` floats (about ``5 P d``
    float64 at the peak). A ``ValueError`` is raised when ``P d > max_pair_floats``.

    Parameters
    ----------
    X : array_like, shape (m, n, d), or a list of m arrays (n_i, d)
        Machines of unequal sizes as a list are kept unpadded (each machine's rows are read
        from one concatenated array; padding to the largest machine would cost m max n_i d
        floats); the same iterations as the padded form with ``n_samples``, to rounding.
    y : array_like, shape (m, n), or a list of m arrays (n_i,)
    lam : float, default 0.5
        Penalty level ``lambda >= 0``; 0 means no fusion (every machine fits its own data).
    a : float, default 3.7
        SCAD shape, ``> 2``.
    xi : float, default 0.01
        Smoothing width, ``0 < xi < lam`` (any ``xi > 0`` when ``lam = 0``).
    rho : float, default 1.0
        Augmented Lagrangian parameter, ``> 1 / (a - 1)`` for SCAD (then the theta step's closed
        form is the exact minimizer), ``> 0`` for l1.
    lr : float or None, default None
        Local step size ``alpha > 0``. ``None``: ``1 / (L_f + 2 rho)`` with ``L_f`` the largest
        smoothness constant ``c lambda_max(X_i^T X_i) / n + l2`` over machines (``c`` = 2, 1/4, 1,
        1/2 for the squared, logistic, Huber, multinomial loss; the paper's bound
        ``alpha <= 1 / (L_f + 2 rho - L_-)`` with ``L_- = 0`` for a convex loss).
    local_steps : int, default 5
        Local gradient steps ``T_i``, ``>= 1``.
    n_rounds : int, default 300
        Communication rounds ``K``, ``>= 0``.
    nu : float, default 0.1
        Clustering threshold on ``||theta_ij||``, ``>= 0``.
    participation : float, default 1.0
        Fraction of machines drawn each round, in ``(0, 1]``: ``max(1, round(participation *
        m))`` machines.
        An int here is refused (``1`` is still read as ``1.0``, with a ``FutureWarning``):
        :func:`mixlinreg.ifca`'s ``participation`` counts machines instead.
    rng : None, int, SeedSequence or numpy.random.Generator
        Randomness of the participant draws (unused when every machine participates) and of
        ``init="common_normal"`` (drawn first, before round 1's participants).
    l2 : float, default 0
        Ridge coefficient in ``f_i``, ``>= 0``.
    loss : {"squared", "logistic", "huber", "multinomial"}
        The per-sample loss; ``"logistic"`` needs ``y`` in [0, 1], ``"multinomial"`` class labels
        and ``n_classes``.
    max_pair_floats : float, default 5e7
        Largest allowed ``P p`` (``p = d``, or ``d C`` numbers per model; memory guard, ``5e7``
        float64 is 400 MB per pair array).
    penalty : {"scad", "l1"}, default "scad"
        The fusion penalty: the smoothed SCAD of FPFC, or the convex ``lam ||omega_i - omega_j||``
        of FPFC-l1.
    huber_delta : float, default 1.0
        Threshold of the Huber loss, ``> 0``.
    n_classes : int, optional
        ``C >= 2`` classes of ``loss="multinomial"`` (required there, refused otherwise).
    n_samples : array_like of int, shape (m,), optional
        Machines of unequal sizes ``n_i``: machine ``i`` uses its first ``n_samples[i]`` rows
        (``X``, ``y`` padded to ``n`` rows, the padding finite and ignored), ``f_i`` is the mean
        over them, and a cluster's model is the ``n_i``-weighted mean of its ``omega_i`` as in the
        paper. Default: all ``n`` rows.
    verbose : bool, default False
        A tqdm bar (on stderr) over the ``n_rounds`` rounds.
    record_objective : bool, default True
        Evaluate ``F(omega)`` after every round for ``extra["objective"]`` (one pass over every
        machine's rows and the pair penalties per round); ``False`` skips it (``None`` then),
        and changes nothing else.
    callback : callable, optional
        Called after every round ``k`` (1-based) as ``callback(k, state)`` with ``state`` a dict
        of read-only copies: ``"omega"`` (m, p), ``"theta"`` and ``"v"`` (P, p) for the pairs
        ``i < j`` in row-major order (``"pairs"``: the (P, 2) indices), ``"zeta"`` (m, p); models
        flat (``p = d``, or ``d C``). For measuring the iterates (Theorem 1's stationarity
        measures, say) without changing the run.
    init : {"zeros", "common_normal"} or array_like, default "zeros"
        The machines' start ``omega^0``: ``"zeros"``; ``"common_normal"``, one draw of
        independent ``N(0, 1)`` entries, copied to every machine (the FPFC authors' start); an
        array of the model's shape (``(d,)``, or ``(d, C)`` for the multinomial loss), copied
        to every machine; or one of shape ``(m,) +`` the model's shape, one start per machine.
    n_participants : int, optional
        Machines drawn each round, in ``[1, m]``, as a count (the FPFC authors draw 30 of
        100): the same draws as ``participation = n_participants / m``. Give it or a
        ``participation`` other than 1, not both. Default: ``participation`` decides.

    Returns
    -------
    BaselineResult
        ``theta`` (L, d) (``(L, d, C)`` for the multinomial loss) the cluster models, ``L`` the
        number of clusters found; ``labels`` (m,)
        each machine's cluster; ``n_rounds`` the rounds performed; ``floats_sent_per_machine =
        2 d n_rounds`` (``zeta_i`` down and ``omega_i`` up each round; a machine that sits out a
        round sends nothing, so with partial participation this is an upper bound, the mean over
        machines is ``extra["floats_sent_mean"]``; ``d C`` in place of ``d`` for the multinomial
        loss). ``extra``: ``"omega"`` (m, d) (or (m, d, C)) the final machine models; ``"n_clusters"`` (int); ``"history"`` (n_rounds,) the primal residual
        ``sqrt(mean_{i<j} ||omega_i - omega_j - theta_ij||^2)`` after each round;
        ``"objective"`` (n_rounds,) ``F(omega)`` after each round (None with
        ``record_objective=False``); ``"lr"`` the step used;
        ``"floats_sent_mean"``; ``"diverged"`` (bool).

    Examples
    --------
    >>> import mixlinreg as mlr
    >>> from mixlinreg.baselines import fpfc
    >>> mix = mlr.make_mixture(m=12, n=50, d=3, k=2, R=3.0, sigma=0.1, theta_scale="norm", rng=1)
    >>> res = fpfc(mix.X, mix.y, n_rounds=100)
    >>> res.extra["n_clusters"], float(mlr.metrics.adjusted_rand(mix.labels, res.labels))
    (2, 1.0)

    References
    ----------
    Yu, Liu, Sun, Wang, "Clustered Federated Learning for Heterogeneous Data" (FPFC), AAAI 2023
    (student abstract), objective, smoothed SCAD and Algorithm 1. Fan and Li, "Variable selection
    via nonconcave penalized likelihood and its oracle properties", JASA 2001 (SCAD).
    """
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")
    # lists of machines of unequal sizes stay unpadded (RaggedRows); other forms are padded
    rows = ragged_rows(X, y, n_samples)
    if rows is None:
        X, y, n_samples = check_data(X, y, n_samples)
    X, y, (lam, a, xi, rho, lr, local_steps, n_rounds, nu, participation, l2), shape = _checked(
        X if rows is None else rows, y, lam, a, xi, rho, lr, local_steps, n_rounds, nu,
        participation, l2, (loss, penalty, huber_delta, n_classes), max_pair_floats)
    record_objective = check_bool("record_objective", record_objective)
    m = X.shape[0] if rows is None else rows.m
    start = _checked_init(init, m, shape)
    n_part = _checked_participants(n_participants, participation, m)
    d = int(np.prod(shape))  # numbers per model: models travel flat
    P = m * (m - 1) // 2
    gen = as_generator(rng)
    counts, smooth, grad, values = _loss_parts(X, y, rows, n_samples,
                                               (loss, huber_delta, shape, l2))
    if lr is None:
        lr = 1.0 / (smooth() + 2.0 * rho)
    pen = (lam, a, xi, penalty)

    I, J, D = _pair_index(m)
    # Algorithm 1, initialization: omega_1 = ... = omega_m (init), zeta_i = omega_i, theta = v = 0
    omega = _start_models(start, m, d, gen)
    zeta = omega.copy()
    theta = np.zeros((P, d))
    v = np.zeros((P, d))
    history = np.empty(n_rounds)
    objective = np.empty(n_rounds)
    participations = 0
    diverged = False
    done = 0
    bar = iterations_bar(n_rounds, "fpfc", enabled=check_bool("verbose", verbose), unit="round")
    with np.errstate(all="ignore"), bar as update:
        for k in range(n_rounds):
            update(k)
            # step 1: the participants A_k
            if n_part == m:
                part = np.arange(m)
            else:
                part = np.sort(gen.choice(m, size=n_part, replace=False))
            participations += part.size
            # steps 2-4: local gradient steps on f_i(w) + (rho/2) ||w - zeta_i||^2
            w, zp = omega[part], zeta[part]
            for _ in range(local_steps):
                w = w - lr * (grad(part, w) + rho * (w - zp))
            omega[part] = w
            diff = _fusion_step(omega, theta, v, (I, J, D), part, pen + (rho,))
            # last line: zeta_i = (1/m) sum_j (omega_j + theta_ij - v_ij / rho); the pair sums use
            # theta_ji = -theta_ij, v_ji = -v_ij (D^T scatters +row to i and -row to j)
            zeta = (omega.sum(axis=0)[None, :] + D.T @ (theta - v / rho)) / m
            done += 1
            primal = diff - theta
            history[k] = np.sqrt(np.mean(np.sum(primal * primal, axis=1))) if P else 0.0
            if record_objective:
                objective[k] = _objective(values, omega, D, pen, l2)
            if callback is not None:
                callback(k + 1, _state(omega, theta, v, zeta, I, J))
            if (not np.all(np.isfinite(omega))
                    or np.abs(omega).max() > _numerics.DIVERGE_THRESHOLD):
                diverged = True
                break

    labels = _clusters(m, I, J, theta, nu)
    n_clusters = int(labels.max()) + 1 if m else 0
    centers = _cluster_means(labels, omega, counts, n_clusters)
    warn_diverged("fpfc", diverged)
    return BaselineResult(
        theta=centers.reshape((n_clusters,) + shape), labels=labels, n_rounds=done,
        floats_sent_per_machine=float(2 * d * done),
        extra={"omega": omega.reshape((m,) + shape), "n_clusters": n_clusters,
               "history": history[:done],
               "objective": objective[:done] if record_objective else None, "lr": float(lr),
               "floats_sent_mean": float(2 * d * participations) / m, "diverged": diverged})


def _loss_parts(X, y, rows, n_samples, spec):
    """The machines' sizes, the smoothness constant (a callable), the gradient ``grad(idx, T)``
    and the losses ``values(omega)``: on the padded arrays ``X``, ``y`` (``n_samples``), or on
    ``rows`` (:class:`RaggedRows`, machines of unequal sizes unpadded)."""
    loss, huber_delta, shape, l2 = spec
    if rows is not None:
        return (rows.counts, lambda: rows.smoothness(loss, l2),
                rows.gradient(l2, loss, huber_delta, shape),
                lambda om: rows.loss_values(om, loss, huber_delta, shape))
    weights, counts = sample_weights(n_samples, X.shape[0], X.shape[1])
    return (counts, lambda: smoothness(X, loss, l2, weights),
            loss_gradient(X, y, l2, loss, huber_delta, shape, weights),
            lambda om: _loss_values(X, y, om, loss, huber_delta, shape, weights))


def _start_models(start, m, d, gen):
    """The machines' first models ``(m, d)``: zeros, one N(0, 1) draw copied to every machine
    (drawn from ``gen``), or the given start, one (copied to every machine) or one per machine."""
    if isinstance(start, str):
        return (np.zeros((m, d)) if start == "zeros"
                else np.repeat(gen.standard_normal(d)[None, :], m, axis=0))
    flat = start.reshape(-1, d)  # one start (1, d) or one per machine (m, d); C order
    return np.repeat(flat, m, axis=0) if flat.shape[0] == 1 else flat.copy()


def _cluster_means(labels, omega, counts, n_clusters):
    """The clusters' models: their machines' means, ``n_i``-weighted (the paper's) when the
    machines' sample counts differ."""
    centers = np.zeros((n_clusters, omega.shape[1]))
    if np.all(counts == counts[0]):
        np.add.at(centers, labels, omega)
        centers /= np.bincount(labels, minlength=n_clusters)[:, None]
    else:  # the paper's n_i-weighted means
        np.add.at(centers, labels, counts[:, None] * omega)
        centers /= np.bincount(labels, weights=counts, minlength=n_clusters)[:, None]
    return centers


def _state(omega, theta, v, zeta, I, J):
    """The iterates as read-only copies, for ``callback``."""
    out = {"omega": omega.copy(), "theta": theta.copy(), "v": v.copy(), "zeta": zeta.copy(),
           "pairs": np.stack([I, J], axis=1)}
    for a in out.values():
        a.flags.writeable = False
    return out


def _checked(X, y, lam, a, xi, rho, lr, local_steps, n_rounds, nu, participation, l2, objective,
             max_pair_floats):
    """:func:`fpfc`'s arguments checked (a ``ValueError`` naming the parameter otherwise), and the
    models' shape."""
    loss, penalty, huber_delta, n_classes = objective
    if isinstance(X, RaggedRows):  # already checked machine by machine
        check_choice("loss", loss, LOSS_NAMES)
        check_scale(X.X, X.y, loss, "fpfc")
        m, d, yv = X.m, X.d, X.y
    else:
        X, y, _ = check_data(X, y)
        check_choice("loss", loss, LOSS_NAMES)
        check_scale(X, y, loss, "fpfc")
        m, _, d = X.shape
        yv = y
    check_choice("penalty", penalty, ("scad", "l1"))
    check_float("huber_delta", huber_delta, low=0.0, low_open=True)
    if loss == "multinomial" and n_classes is None:
        raise ValueError("loss='multinomial' needs n_classes (an integer >= 2), got None")
    l2 = check_l2(l2)
    _, shape = model_start(None, n_classes, loss, yv, d)
    lam = check_float("lam", lam, low=0.0)
    a = check_float("a", a, low=2.0, low_open=True)
    xi = check_float("xi", xi, low=0.0, low_open=True)
    if penalty == "scad" and lam > 0.0 and xi >= lam:
        raise ValueError(f"xi must be smaller than lam (0 < xi < lam), got xi={xi!r}, lam={lam!r}")
    rho = check_float("rho", rho, low=0.0, low_open=True)
    if penalty == "scad" and rho * (a - 1.0) <= 1.0:
        raise ValueError(f"rho must exceed 1 / (a - 1) = {1.0 / (a - 1.0)!r} (the theta step is "
                         f"then convex), got rho={rho!r}")
    if lr is not None:
        lr = check_float("lr", lr, low=0.0, low_open=True)
    local_steps = check_int("local_steps", local_steps, low=1)
    n_rounds = check_int("n_rounds", n_rounds, low=0)
    nu = check_float("nu", nu, low=0.0)
    participation = check_participation_fraction(participation, "fpfc")
    max_pair_floats = check_float("max_pair_floats", max_pair_floats, low=0.0)
    P, p = m * (m - 1) // 2, int(np.prod(shape))
    if P * p > max_pair_floats:
        raise ValueError(f"FPFC stores m (m - 1) / 2 * p = {P * p} floats per pair array "
                         f"(m={m}, p={p} numbers per model), more than max_pair_floats="
                         f"{max_pair_floats:g}; raise max_pair_floats or use fewer machines")
    return X, y, (lam, a, xi, rho, lr, local_steps, n_rounds, nu, participation, l2), shape


#: the named starts of :func:`fpfc`'s ``init``
INIT_CHOICES = ("zeros", "common_normal")


def _checked_init(init, m, shape):
    """``init`` of :func:`fpfc`: one of :data:`INIT_CHOICES`, or a finite float array of the
    model's ``shape`` or ``(m,) + shape`` (a ``ValueError`` naming ``init`` otherwise)."""
    if isinstance(init, str):
        return check_choice("init", init, INIT_CHOICES)
    if init is None:
        raise ValueError(f"init must be one of {sorted(INIT_CHOICES)} or an array of shape "
                         f"{shape} or {(m,) + shape}, got None")
    arr = check_array("init", init, dtype=np.float64)
    if arr.shape not in (shape, (m,) + shape):
        raise ValueError(f"init must be one of {sorted(INIT_CHOICES)} or an array of shape "
                         f"{shape} (one start for every machine) or {(m,) + shape} (one per "
                         f"machine), got an array of shape {arr.shape}")
    return arr


def _checked_participants(n_participants, participation, m):
    """Machines per round: ``n_participants`` (an int in ``[1, m]``) or ``max(1,
    round(participation * m))``; both given (``participation != 1``) is refused."""
    if n_participants is None:
        return max(1, int(round(participation * m)))
    n_participants = check_int("n_participants", n_participants, low=1, high=m)
    if participation != 1.0:
        raise ValueError(f"give participation (a fraction) or n_participants (a count), not "
                         f"both: got participation={participation!r}, "
                         f"n_participants={n_participants}")
    return n_participants


def _fusion_step(omega, theta, v, pairs, part, penalty):
    """Algorithm 1, step 5, in place: ``delta_ij = omega_i - omega_j + v_ij / rho``, the
    closed-form ``theta_ij`` and the dual ``v_ij`` for the pairs touching the participants
    ``part`` (all pairs under full participation). Returns ``omega_i - omega_j`` of every pair."""
    I, J, D = pairs
    lam, a, xi, kind, rho = penalty
    m = omega.shape[0]
    diff = D @ omega  # omega_i - omega_j for every pair i < j
    if part.size == m:
        sel = slice(None)
    else:
        mask = np.zeros(m, dtype=bool)
        mask[part] = True
        sel = np.flatnonzero(mask[I] | mask[J])
    delta = diff[sel] + v[sel] / rho
    t = np.linalg.norm(delta, axis=1)
    s = _threshold(t, lam, a, xi, rho, kind)
    scale = np.divide(s, t, out=np.zeros_like(t), where=t > 0.0)
    theta[sel] = scale[:, None] * delta
    v[sel] += rho * (diff[sel] - theta[sel])
    return diff
