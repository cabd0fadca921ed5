"""No cache keyed by ``id()``: an address outlives its object, so a new object at an old address (or one changed in
place) would be handed the old one's numbers. Derived values live on the frozen object they come from, or under keys
made of values (``tokspeed.derived``)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "tokspeed"
# bench-server's record bookkeeping: which of a run's records to drop, within one call (no cache)
ALLOWED = {"serverbench/summary.py"}


def _id_calls(path: Path) -> list[int]:
    tree = ast.parse(path.read_text())
    return [n.lineno for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "id"]


def test_no_id_keyed_cache():
    found = {str(p.relative_to(ROOT)): _id_calls(p) for p in ROOT.rglob("*.py")}
    bad = {f: lines for f, lines in found.items() if lines and f not in ALLOWED}
    assert not bad, f"id() in {bad}: key a cache by value, or keep it on the object (tokspeed.derived)"


def test_the_scan_finds_an_id_call(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("cache = {}\ndef f(x):\n    return cache.get((id(x), 1))\n")
    assert _id_calls(p) == [3]
