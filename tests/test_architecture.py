"""The shape of the package: its files import each other one way (no circle, counting the imports made inside
functions), the library never imports its surfaces, the advising verbs stand above predict, and no file is over
600 lines.

The import graph is read from the source (every ``import`` and ``from ... import`` anywhere in a file, relative
ones resolved), so an import hidden inside a function to dodge a circle at load time still counts as the edge it is.
``from P import n`` is an edge to ``P.n`` where that is a module of the package, otherwise to ``P``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tokspeed"
MAX_LINES = 600
# engines/profile.py is a data record plus its lookups since the rates moved out (issue 25)
PROFILE_MAX_LINES = 400


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the package (a package's name -> its __init__.py)."""
    out = {}
    for p in PACKAGE.rglob("*.py"):
        parts = ("tokspeed", *p.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that the file ``name`` imports, anywhere in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:
                found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base)
    return {m for m in found if m in modules and m != name}


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_reader_sees_function_level_and_relative_imports():
    graph = import_graph()
    # tokspeed/resolve.py imports the file loader inside a function, as ``from .files.loader import ...``
    assert "tokspeed.files.loader" in graph["tokspeed.resolve"]
    # a circle made of such edges is found
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle_between_the_package_files():
    found = [c for c in circles(import_graph()) ]
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


SURFACES = ("tokspeed.cli", "tokspeed.web", "tokspeed.report", "tokspeed.plots", "tokspeed.__main__")


def _under(name: str, packages) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def test_the_library_imports_no_surface():
    graph = import_graph()
    up = {f"{a} -> {b}" for a, deps in graph.items() if not _under(a, SURFACES)
          for b in deps if _under(b, SURFACES)}
    assert not up, f"library modules importing the CLI / web / report / plots: {sorted(up)}"


def reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for w in graph.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def test_the_advising_verbs_stand_above_predict():
    """plan, runs_here and alternatives ask predict many times; nothing predict stands on asks them."""
    graph = import_graph()
    below = reach(graph, "tokspeed.predict") | {"tokspeed.predict"}
    assert not {m for m in below if _under(m, ["tokspeed.advise"])}
    assert "tokspeed.predict" in reach(graph, "tokspeed.advise.plan")


def test_no_file_over_600_lines():
    over = {}
    for p in PACKAGE.rglob("*.py"):
        rel = p.relative_to(PACKAGE).as_posix()
        n = len(p.read_text(encoding="utf-8").splitlines())
        if n > (PROFILE_MAX_LINES if rel == "engines/profile.py" else MAX_LINES):
            over[rel] = n
    assert not over, f"files over {MAX_LINES} lines: {over}"


def test_the_serving_simulation_stands_below_predict():
    """The simulation resolves a setup through ``tokspeed.prediction_setup`` (below predict), never through predict."""
    graph = import_graph()
    up = {m for m, deps in graph.items() if _under(m, ["tokspeed.serving"]) and "tokspeed.predict" in deps}
    assert not up, f"serving modules importing predict: {sorted(up)}"
    assert "tokspeed.predict" not in reach(graph, "tokspeed.prediction_setup")


def test_the_serving_package_stands_below_predicts_setup():
    """The layer rule of the serving package: no module of ``tokspeed.serving`` imports predict or predict's
    setup, nor reaches them through another module; predict's resolution comes in as an argument
    (``tokspeed.serving_api.make_setup`` passes ``prediction_setup.resolve``), and the entry point stands above
    both."""
    graph = import_graph()
    serving = [m for m in graph if _under(m, ["tokspeed.serving"])]
    assert len(serving) > 10
    above = {"tokspeed.predict", "tokspeed.prediction_setup", "tokspeed.serving_api"}
    up = {f"{m} -> {sorted(reach(graph, m) & above)}" for m in serving if reach(graph, m) & above}
    assert not up, f"serving modules reaching predict or its setup: {sorted(up)}"
    assert {"tokspeed.prediction_setup", "tokspeed.serving.run"} <= reach(graph, "tokspeed.serving_api")


def _function_level_imports():
    """(file, line, text) of every import made inside a function of the package."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        for fn in ast.walk(ast.parse(source)):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        out.append((path.relative_to(PACKAGE), node.lineno, lines[node.end_lineno - 1]))
    return sorted(set(out))


def test_imports_stand_at_the_top_unless_a_reason_is_written_beside_them():
    """An import inside a function is there for an optional dependency or for start-up time, and says which
    (``# lazy: ...`` on its line); the rest stand at the top of their module, where a reader looks for them."""
    inside = _function_level_imports()
    assert len(inside) <= 150, len(inside)
    unexplained = [f"{p}:{n}" for p, n, text in inside if "# lazy:" not in text]
    assert not unexplained, unexplained


def test_no_name_is_re_exported():
    """A name has one home: no module imports a name only to hand it on (``noqa: F401`` marks such a line)."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "noqa: F401" in line and "# lazy:" not in line:
                offenders.append(f"{path.relative_to(PACKAGE)}:{n}")
    assert not offenders, offenders
