"""The shape of the package in numbers (issue 36's "Must show"): import cycles, imports up a
layer, the library layer's size, the largest study module and the share of string literals.

    python probes/code_facts.py            # this tree
    python probes/code_facts.py --root DIR # another checkout (a worktree of an older commit):
                                           # its package, with this file's layers

The layers and the import walk are the ones ``tests/test_structure.py`` tests (imports inside
functions included). A string literal is a STRING token of Python's tokenizer (f-strings included,
on Python 3.11) that is not a docstring; its share is of all characters of the files.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
ROOT = Path(sys.argv[sys.argv.index("--root") + 1]).resolve() if "--root" in sys.argv else HERE
sys.path.insert(0, str(HERE / "tests"))

import test_structure as ts  # noqa: E402  (the layers and the import walk, one definition)

if ROOT != HERE:  # the import walk over the other checkout's package
    ts.ROOT, ts.PKG = ROOT, ROOT / "mixlinreg"
    ts.MODULES.clear()
    ts.MODULES.update(ts._modules())


def _docstring_lines(tree):
    """``(first, last)`` line spans of every docstring (module, class, function)."""
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                spans.append((body[0].lineno, body[0].end_lineno))
    return spans


def literal_share(path: Path):
    """``(string-literal characters outside docstrings, all characters, lines holding a string
    literal (docstrings included), all lines)`` of one file."""
    text = path.read_text()
    docs = _docstring_lines(ast.parse(text))
    strings, lines = 0, set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.STRING:
            lines.update(range(tok.start[0], tok.end[0] + 1))
            if not any(a <= tok.start[0] <= b for a, b in docs):
                strings += len(tok.string)
    return strings, len(text), len(lines), len(text.splitlines())


def main():
    found, n_edges = ts.cycles()
    up = sorted({f"{m} -> {t}" for m in ts.MODULES for t, _, _ in ts._imports(m)
                 if t and ts.layer(t) > ts.layer(m)})
    lines = {m: len(p.read_text().splitlines()) for m, (p, _, _) in ts.MODULES.items()}
    by_layer = {0: [], 1: [], 2: []}
    for m in ts.MODULES:
        by_layer[ts.layer(m)].append(m)
    print(f"modules: {len(ts.MODULES)}, import arrows (module pairs): {n_edges}")
    print(f"import cycles: {len(found)} {found if found else ''}")
    print(f"imports up a layer: {len(up)} {up if up else ''}")
    for lay, name in ((0, "library"), (1, "paper layer"), (2, "command line")):
        mods = by_layer[lay]
        print(f"{name}: {len(mods)} modules, {sum(lines[m] for m in mods)} lines")
    studies = {m: lines[m] for m in ts.MODULES if m.startswith("mixlinreg.theory.studies.")}
    big = max(studies, key=studies.get)
    print(f"largest study module: {big} ({studies[big]} lines)")
    words = sorted((ROOT / "mixlinreg" / "theory" / "studies").glob("*.md"))
    print(f"study words files: {len(words)} ({sum(len(p.read_text().splitlines()) for p in words)} lines)")
    for label, folder in (("theory/", "mixlinreg/theory"), ("theory/studies/", "mixlinreg/theory/studies"),
                          ("whole package", "mixlinreg")):
        s = c = sl = ln = 0
        for p in sorted((ROOT / folder).rglob("*.py")):
            a, b, x, y = literal_share(p)
            s, c, sl, ln = s + a, c + b, sl + x, ln + y
        print(f"{label}: string literals outside docstrings {100 * s / c:.1f}% of {c} characters; "
              f"lines holding a string literal (docstrings included) {sl} of {ln}")


if __name__ == "__main__":
    main()
