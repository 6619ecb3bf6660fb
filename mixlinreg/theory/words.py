"""The words of a study, as data: a Markdown file beside its module, read by :func:`words`.

A study's title, claim, location, summary templates, caveats and the labels of its sensitivity
lines are prose, not code: they live in ``<module>.md`` next to ``<module>.py`` (``t2.md`` beside
``t2.py``), and the module fills in the numbers. The file is a list of sections, each a line
``## name`` followed by its text::

    ## title
    Theorem 2: contraction 1 - p lambda / (8 L)

    ## summary
    The closest case is {loss} with p_j = {p_j:.2f}: measured {factor} against the bound
    {bound:.4f}.

    ## caveats
    - lambda and L are the extreme Hessian eigenvalues of the Monte Carlo population loss.
    - The contraction is measured on steps whose next error is above {floor_mult:g}x the run's
      floor.

    ## sensitivity
    - floor_mult: transient threshold floor_mult
    - margin: margin above the bound

A paragraph section is one sentence or more: its lines are joined with single spaces (so wrap
anywhere between words). A list section's items start with ``- ``, an item's further lines are
indented; each item is one string. ``{name:spec}`` is :meth:`str.format` with the values the
study passes (``{{`` and ``}}`` for literal braces); a value the template names but the study does
not pass is an error naming the study, the section and the name. Lines before the first section
and HTML comments ``<!-- ... -->`` on lines of their own are ignored.

The ``sensitivity`` section names, for every margin ``key`` of the study's config that has a list
``key_neighbours``, the words of its line (``- key: words``); :func:`sensitivity_lines` makes the
lines from the config and refuses a text that misses a margin with neighbours or names one
without.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

__all__ = ["Words", "words", "sensitivity_lines"]

_SECTION = re.compile(r"^## +(\S.*?)\s*$")
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")


@dataclass(frozen=True)
class Words:
    """The sections of one study's text (:func:`words` reads them from its Markdown file)."""

    path: str
    sections: dict = field(default_factory=dict)

    def raw(self, name: str):
        """Section ``name`` as written: a string (paragraph) or a list of strings (list)."""
        if name not in self.sections:
            raise KeyError(f"{self.path}: no section '## {name}' (it has: "
                           f"{', '.join(self.sections) or 'none'})")
        return self.sections[name]

    def has(self, name: str) -> bool:
        return name in self.sections

    def _fill(self, name, template, values):
        try:
            return template.format_map(values)
        except KeyError as exc:
            raise KeyError(f"{self.path}, section '## {name}': the text names {{{exc.args[0]}}}, "
                           f"which the study did not pass (it passed: {', '.join(sorted(values)) or 'nothing'})") from None
        except (ValueError, IndexError) as exc:
            raise ValueError(f"{self.path}, section '## {name}': {exc}") from None

    def text(self, name: str, /, **values) -> str:
        """Paragraph section ``name`` with ``values`` filled in."""
        raw = self.raw(name)
        if not isinstance(raw, str):
            raise TypeError(f"{self.path}, section '## {name}' is a list, not a paragraph")
        return self._fill(name, raw, values)

    def items(self, name: str, /, **values) -> list:
        """List section ``name``, each item with ``values`` filled in."""
        raw = self.raw(name)
        if isinstance(raw, str):
            raise TypeError(f"{self.path}, section '## {name}' is a paragraph, not a list")
        return [self._fill(name, item, values) for item in raw]

    def labels(self, name: str = "sensitivity", /, **values) -> dict:
        """List section ``name`` read as ``- key: words`` items: ``{key: words}`` in order."""
        out = {}
        for item in self.items(name, **values):
            key, sep, what = item.partition(": ")
            if not sep or not key.isidentifier():
                raise ValueError(f"{self.path}, section '## {name}': an item must read "
                                 f"'- key: words', got {item!r}")
            out[key] = what
        return out

    def names(self, name: str) -> set:
        """The ``{names}`` that section ``name`` asks for."""
        raw = self.raw(name)
        out = set()
        for text in [raw] if isinstance(raw, str) else raw:
            out.update(f for _, f, _, _ in string.Formatter().parse(text) if f)
        return out


def _parse(text: str, path: str) -> dict:
    sections, name, lines = {}, None, []

    def close():
        if name is None:
            return
        body = [ln for ln in lines if not _COMMENT.match(ln)]
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        if body and body[0].startswith("- "):
            items = []
            for ln in body:
                if ln.startswith("- "):
                    items.append(ln[2:].strip())
                elif not ln.strip():
                    continue
                elif ln.startswith((" ", "\t")) and items:
                    items[-1] += " " + ln.strip()
                else:
                    raise ValueError(f"{path}, section '## {name}': a list's line must start "
                                     f"with '- ' or be indented, got {ln!r}")
            sections[name] = items
        else:
            if any(not ln.strip() for ln in body):
                raise ValueError(f"{path}, section '## {name}': a paragraph section has no "
                                 "blank lines (one paragraph; use a list for several items)")
            sections[name] = " ".join(ln.strip() for ln in body)

    for line in text.splitlines():
        m = _SECTION.match(line)
        if m:
            close()
            name, lines = m.group(1), []
            if name in sections:
                raise ValueError(f"{path}: section '## {name}' appears twice")
        elif name is not None:
            lines.append(line)
    close()
    return sections


_CACHE = {}


def words(module_file) -> Words:
    """The :class:`Words` of the study defined in ``module_file`` (pass ``__file__``): its
    ``.md`` file beside it."""
    path = Path(module_file).with_suffix(".md")
    key = str(path)
    if key not in _CACHE:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise FileNotFoundError(f"the words of study module {Path(module_file).name} are "
                                    f"missing: cannot read {path} ({exc.strerror or exc})") from None
        _CACHE[key] = Words(f"mixlinreg/theory/studies/{path.name}", _parse(text, path.name))
    return _CACHE[key]


def sensitivity_lines(text: Words, params, verdict_at: Callable, *, made_by_study=(),
                      **values) -> list:
    """One sensitivity line per margin of ``params`` that has neighbours, in the order of
    ``text``'s ``sensitivity`` section: the verdict at each neighbouring value ``v`` is
    ``verdict_at(params with margins[key] = v, key)`` (the same measurements re-read, or
    measured again where ``key`` changes the measurement: the study's closure decides).
    ``made_by_study``: margins whose lines the study writes itself (a line over several margins
    at once, say), left out here; ``values`` fill the labels' ``{names}``."""
    from .study import sensitivity_line, with_margin

    mg = params["margins"]
    keys = [k[: -len("_neighbours")] for k in mg
            if k.endswith("_neighbours") and k[: -len("_neighbours")] not in made_by_study]
    labels = text.labels("sensitivity", **values)
    missing = [k for k in keys if k not in labels]
    extra = [k for k in labels if k not in keys]
    if missing or extra:
        raise ValueError(f"{text.path}, section '## sensitivity' must name every margin with "
                         f"neighbours and no other: missing {missing}, not margins with "
                         f"neighbours {extra}")
    return [sensitivity_line(what, mg[key],
                             lambda v, key=key: verdict_at(with_margin(params, key, v), key),
                             mg[f"{key}_neighbours"])
            for key, what in labels.items()]
