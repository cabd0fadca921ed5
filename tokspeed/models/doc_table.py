"""The catalog as a Markdown table for docs/models.md: ``python -m tokspeed.models.doc_table`` rewrites
the part of docs/models.md between the ``catalog-table`` markers from the TOML files (a test checks the
page lists every entry)."""

from __future__ import annotations

import sys
from pathlib import Path

from .catalog import DATA, all_models, load_entry_raw
from .markers import markers

START, END = "<!-- catalog-table:start -->", "<!-- catalog-table:end -->"


def _b(n: float) -> str:
    return f"{n / 1e9:,.2f}" if n >= 1e9 else f"{n / 1e9:.3f}"


def table() -> str:
    rows = ["| id | params (B) | active (B) | published (B) | features | use | aliases | source |",
            "|---|---:|---:|---:|---|---|---|---|"]
    for m in sorted(all_models(), key=lambda m: m.id):
        aliases = ", ".join(f"`{a}`" for a in load_entry_raw(DATA / f"{m.id}.toml").get("aliases", []))
        pub = f"{m.published_params:g}" + (f" / {m.published_active_params:g}" if m.published_active_params else "")
        sure = f" ({m.source_status.split(' (')[0].split(';')[0]})" if m.source_status else ""
        feats = ", ".join(markers(m))
        rows.append(f"| `{m.id}` | {_b(m.n_params + m.vision_params)} | {_b(m.n_active_params) if m.is_moe else ''} | "
                    f"{pub} | {feats} | {', '.join(m.use)} | {aliases} | [link]({m.source}){sure} |")
    return "\n".join(rows)


def main(path: str = "docs/models.md") -> int:
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    if START not in text or END not in text:
        sys.stderr.write(f"{p}: no {START} ... {END} markers\n")
        return 2
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    p.write_text(head + START + "\n" + table() + "\n" + END + tail, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
