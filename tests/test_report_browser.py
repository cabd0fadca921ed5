"""The HTML report as a browser shows it (Debian's Chromium through Playwright): the headline cards sit in one
row on a wide window and in even rows on a narrow one (never 5 + 1), the page never scrolls sideways (wide
tables scroll inside their own box), and a setup that does not fit shows its banner above the cards.
Screenshots are kept in test-artifacts/ to be looked at."""

import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
sync_api = pytest.importorskip("playwright.sync_api")
pytest.importorskip("matplotlib")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


@pytest.fixture(scope="module")
def page():
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser.new_page()
        browser.close()


def _card_rows(page) -> list[int]:
    tops = page.eval_on_selector_all(".cards .card", "cs => cs.map(c => Math.round(c.getBoundingClientRect().top))")
    rows: dict[int, int] = {}
    for t in tops:
        rows[t] = rows.get(t, 0) + 1
    return [rows[t] for t in sorted(rows)]


@pytest.mark.parametrize("width,expected", [(1400, [6]), (820, [3, 3]), (390, [2, 2, 2])])
def test_report_layout(tmp_path, page, width, expected):
    from tokspeed.report.html import render_report

    out = tmp_path / "r.html"
    out.write_text(render_report("llama-3.1-70b", "rtx-4090", quant="Q4_K_M"), encoding="utf-8")
    page.set_viewport_size({"width": width, "height": 1000})
    page.goto(out.as_uri())
    assert _card_rows(page) == expected
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    banner = page.locator(".nofit").bounding_box()
    first_card = page.locator(".cards .card").first.bounding_box()
    assert banner["y"] < first_card["y"]
    assert "Does not fit" in page.locator(".nofit h2").inner_text()
    page.screenshot(path=str(ARTIFACTS / f"report-70b-4090-{width}.png"), full_page=False)
