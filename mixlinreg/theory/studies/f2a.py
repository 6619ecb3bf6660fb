"""Study F2a: see :mod:`mixlinreg.theory.studies._f2`."""

from ._f2 import make_study

STUDY = make_study("a")
