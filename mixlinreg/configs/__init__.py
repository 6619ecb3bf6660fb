"""The grids of mixlinreg, shipped inside the package (read with :mod:`importlib.resources`).

``<name>.toml`` here: the Figure 2 panels (``fig2a`` ... ``fig2d``), ``compare``, ``digits`` and
``bench``; ``studies/<ID>.toml``: one per study record of :mod:`mixlinreg.theory.studies`. Each
holds the presets ``smoke``, ``quick`` and ``paper`` (the file's own values). They are found by
name however the package is installed (a venv, ``pip --user``, ``pip --target``, a wheel, an
editable clone); a config of your own is passed as a path to a ``.toml`` file. See
:mod:`mixlinreg.config`.
"""
