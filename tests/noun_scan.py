"""Which modules of tokspeed/ name a noun (a format, an engine, an architecture family) in their code.

A module names a noun when one of its string literals (docstrings and comments aside: they explain, they do not
decide) holds it as a whole word. Data files (.toml) may name anything: they are the tables.
"""

import ast
import re
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "tokspeed"


@lru_cache(maxsize=1)
def _literals() -> dict[str, tuple[str, ...]]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text())
        docs = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
                first = node.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                    docs.add(id(first.value))
        out[str(path.relative_to(ROOT))] = tuple(
            n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs)
    return out


def files_naming(word: str, ignore_case: bool = False) -> list[str]:
    """The modules (paths under tokspeed/) whose string literals hold ``word`` as a whole word."""
    pat = re.compile(r"(?<![A-Za-z0-9_-])" + re.escape(word) + r"(?![A-Za-z0-9_])", re.I if ignore_case else 0)
    return [f for f, lits in _literals().items() if any(pat.search(s) for s in lits)]
