"""The HTML report's serving section (`tokspeed report ... --gpus N`, N > 1): the layout search of `tokspeed
serve` for the report's prompt and output lengths, its best configuration per layout and the frontier of
output tok/s per GPU against tok/s per user (``plots.frontier``)."""

from __future__ import annotations

from ..errors import UserError
from ..guard.escape import html as esc
from ..plots import to_svg
from ..plots.frontier import frontier_figure
from ..serving.document import layout_text
from ..serving_api import ServeQuery, serve

TOP = 8          # configurations listed


def _num(v, digits: int = 0) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def serving_table(doc: dict) -> str:
    rows = "".join(
        f"<tr><td class='s'>{esc(layout_text(c['layout']))}</td><td>{c['concurrency']:,}</td>"
        f"<td>{_num(c['output_tok_s_per_gpu'])}</td><td>{_num(c['tok_s_per_user'], 1)}</td>"
        f"<td>{_num(c['ttft_ms'].get('p50'))}</td><td>{_num(c['tpot_ms'].get('p50'), 1)}</td></tr>"
        for c in doc["configs"][:TOP])
    return ("<table><tr><th>layout</th><th>sequences</th><th>tok/s per GPU</th><th>tok/s per user</th>"
            f"<th>TTFT p50 ms</th><th>TPOT p50 ms</th></tr>{rows}</table>")


def serving_section(model, hw, gpus: int, *, quant, kv_dtype: str, engine: str, isl: int, osl: int,
                    engine_version: str | None = None, charts: bool = True) -> str:
    """The section's HTML; a setup no layout of ``gpus`` devices holds gets one line saying so."""
    head = f"<h2>Serving on {gpus} × {esc(hw.name)}</h2>"
    try:
        doc = serve(ServeQuery(model, hw, engine, quant=quant, kv_dtype=kv_dtype, isl=max(isl, 1), osl=max(osl, 1),
                               engine_version=engine_version, gpus=gpus))
    except UserError as e:
        return head + f"<p class='note'>{esc(e.message)}</p>"
    parts = [head, f"<p>The scheduler simulation of <code>tokspeed serve</code> ({esc(doc['engine'])}, ISL "
                   f"{doc['isl']:,} / OSL {doc['osl']:,}): every layout of {gpus} devices at rising concurrency, "
                   f"the best of each layout first. See docs/serving.md.</p>"]
    if charts and doc["frontier"]:
        parts.append(f"<figure>{to_svg(frontier_figure(doc))}<figcaption>Throughput against interactivity: output "
                     "tok/s per GPU against tok/s per user; the line joins the configurations no other beats on "
                     "both.</figcaption></figure>")
    parts.append(serving_table(doc))
    return "".join(parts)
