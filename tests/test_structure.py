"""The shape of the code (issues 22 and 36): import arrows run one way and down the layers (the
library, the paper layer, the command line), private names are imported from their owner, one
place per name, and no function grows past what a reader can hold."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "mixlinreg"
#: the hand-written hot kernels (and the JAX copy of the direct path): long by design
KERNELS = {"_kernels.py", "_gram.py", "_jax.py"}


def _modules():
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
            pkg = parts
        else:
            pkg = parts[:-1]
        out[".".join(parts)] = (p, pkg, ast.parse(p.read_text()))
    return out


MODULES = _modules()


def _resolve(name):
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(mod):
    """``(target module, names, node)`` of every import of the package in ``mod`` (module level
    and inside functions)."""
    p, pkg, tree = MODULES[mod]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("mixlinreg"):
                    yield _resolve(a.name), [], node
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(pkg[: len(pkg) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if not base.startswith("mixlinreg"):
                continue
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in MODULES:  # `from . import module`
                    yield full, [], node
                else:
                    yield _resolve(base), [a.name], node


def cycles():
    """The import graph's circles (Tarjan's strongly connected components of more than one
    module) and its number of arrows."""
    edges = {m: {t for t, _, _ in _imports(m) if t and t != m} for m in MODULES}
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in MODULES:
        if v not in index:
            visit(v)
    return found, sum(map(len, edges.values()))


def test_the_import_graph_has_no_cycle_even_through_imports_inside_functions():
    found, arrows = cycles()
    assert not found, found
    assert arrows > 200  # the walk saw the package's imports


def _defined(mod):
    """Names a module defines itself (functions, classes, assignments at module level)."""
    _, _, tree = MODULES[mod]
    out = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        out.add(n.id)
    return out


def test_private_names_are_imported_only_from_their_owner():
    bad = []
    for mod in MODULES:
        for target, names, node in _imports(mod):
            for name in names:
                if name.startswith("_") and not name.startswith("__") and name not in _defined(target):
                    bad.append(f"{mod}:{node.lineno} imports {name} from {target}, which does not "
                               "define it")
    assert not bad, bad


def _code_lines(fn):
    n = fn.end_lineno - fn.lineno + 1
    first = fn.body[0] if fn.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
            and isinstance(first.value.value, str):
        n -= first.end_lineno - first.lineno + 1
    return n


#: The layers (issue 36), each a set of rooms (a module, or a package with everything in it):
#: the command line on top, the papers' experiments and checks in the middle, the library below.
#: An import may go down or stay within a layer, never up. README's "Where things are" shows them.
APP = ("mixlinreg.cli", "mixlinreg._cli_faults", "mixlinreg._cli_options")
PAPER = ("mixlinreg.theory", "mixlinreg.harness", "mixlinreg.compare", "mixlinreg.digits",
         "mixlinreg.teach", "mixlinreg.bench", "mixlinreg.plots")


def _room(mod, rooms):
    return any(mod == r or mod.startswith(r + ".") for r in rooms)


def layer(mod):
    """2 for the command line, 1 for the paper layer, 0 for the library."""
    return 2 if _room(mod, APP) else 1 if _room(mod, PAPER) else 0


def test_imports_go_down_the_layers_never_up():
    up = sorted({f"{mod}:{node.lineno} imports {target}" for mod in MODULES
                 for target, _, node in _imports(mod) if target and layer(target) > layer(mod)})
    assert not up, up
    # every room named exists, and the library is what a user reads: the kernel, the losses,
    # ifca and the estimator, the baselines, data, metrics, the runner and its store
    for room in APP + PAPER:
        assert room in MODULES, room
    library = {m for m in MODULES if layer(m) == 0}
    assert {"mixlinreg.ifca", "mixlinreg.estimator", "mixlinreg.losses", "mixlinreg._kernels",
            "mixlinreg.baselines", "mixlinreg.data", "mixlinreg.metrics", "mixlinreg.runner",
            "mixlinreg.runner.store"} <= library


def test_readme_names_the_layers_and_their_rooms():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Where things are"):]
    section = section[:section.index("\n## ", 4)]
    for room in APP + PAPER:
        path = room.replace(".", "/")
        assert f"`{path}" in section, f"README's 'Where things are' does not name {path}"
    for word in ("library", "paper layer", "command line"):
        assert word in section, word


def test_no_function_over_80_lines_of_code():
    # modules have no line cap: they are cut where the ideas part (issue 36); a function over 80
    # lines of code outside the hand-written kernels is still too long to hold
    long_functions = []
    for p, _, tree in MODULES.values():
        if p.name in KERNELS:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _code_lines(node) > 80:
                long_functions.append(f"{p.relative_to(ROOT)}:{node.lineno} {node.name} "
                                      f"({_code_lines(node)} lines)")
    assert not long_functions, long_functions


def test_one_place_per_name():
    from mixlinreg import config
    from mixlinreg.theory import STUDIES
    from mixlinreg.theory.studies import get

    # the preset list is written once (mixlinreg.config.PRESETS)
    literal = re.compile(r"\(\s*\"smoke\",\s*\"quick\",\s*\"paper\"\s*\)")
    where = [str(p.relative_to(ROOT)) for p, _, _ in MODULES.values() if literal.search(p.read_text())]
    assert where == ["mixlinreg/config.py"], where
    assert config.PRESETS == ("smoke", "quick", "paper")
    # one module per kind of thing: no second module called config
    assert not [p for p, _, _ in MODULES.values() if p.stem == "config" and p.parent != PKG]
    # every study: discovered, configured, and its decision a registered pure function
    assert list(STUDIES) == sorted(STUDIES, key=lambda s: (get(s).order, s))
    for sid in STUDIES:
        study = get(sid)
        assert callable(study.decide), sid
        assert study.decide.__module__.startswith("mixlinreg.theory"), sid


def test_a_loss_is_defined_once():
    # the per-sample formulas live in mixlinreg/losses.py; theory/ reads them from there
    text = (PKG / "theory" / "constants.py").read_text()
    assert "logaddexp" not in text and "np.clip(r" not in text
    from mixlinreg import losses
    from mixlinreg.theory import constants

    assert constants.LOSSES == tuple(losses.LOSSES)


@pytest.mark.parametrize("name", ["_config", "harness.config"])
def test_modules_are_named_for_what_they_hold(name):
    assert f"mixlinreg.{name}" not in MODULES
