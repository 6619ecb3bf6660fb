"""The optional early stop as a variant of an experiment's protocol.

The early stop freezes a run once its assignments did not change and its largest relative step is
at most ``tol``. With ``tol = 0`` it is exact (a run whose parameters stopped changing bitwise would
repeat the same iteration forever); with ``tol > 0`` a slowly moving run could be frozen a little
before its end point. Whether that changes any result is measured by ``mixlinreg check-agreement
--candidate early-stop`` (:func:`mixlinreg.harness.agreement.check_agreement`), against the full
iterations.
"""

from __future__ import annotations

import dataclasses


def with_early_stop(exp, tol):
    """The same experiment with the early stop on (``tol``), or off (``tol=None``)."""
    if tol is None:
        protocol = dict(exp.protocol, early_stop=False)
    else:
        protocol = dict(exp.protocol, early_stop=True, tol=float(tol))
    return dataclasses.replace(exp, protocol=protocol)
