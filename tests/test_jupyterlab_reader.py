"""The reader's JupyterLab that ``make setup`` installs (issue 55, items 1, 2, 5 and 6).

In a fresh clone, the Makefile's ``reader-lab`` step (which ``make setup`` runs) installs
tools/chapters/jupyterlab/ into a prefix of the test's own (``LAB_PREFIX``, in place of
``.venv``); ``jupyter lab notebooks/`` then starts in the clone as the README says, with
that prefix on JUPYTER_PATH and JUPYTER_CONFIG_PATH, where JupyterLab reads the
environment's own ``share/jupyter`` and ``etc/jupyter``. In Chromium (Playwright):

* no Nbgrader menu, no Validate button, no Create Assignment bar, and no
  "No nbgrader_config.py file found" in the server's log;
* at a phone's width (390 x 844) a chapter opens with the notebook at least 300 px wide
  (the file browser closed), by its address and from the file browser;
* a link to a bibliography entry, an API entry, another chapter's common-mistake box or
  heading, and a box of the same chapter, clicked, shows its target in the window once
  the page is drawn (not merely present in the file), and it stays there.

Screenshots land in AIAYN_SCREENSHOTS (if set).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import test_jupyterlab  # noqa: E402
from test_jupyterlab import _jupyter_lab  # noqa: E402

browser = test_jupyterlab.browser  # one Chromium per module, as test_jupyterlab starts it
clone = test_jupyterlab.clone

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.lab]

SHOTS = os.environ.get("AIAYN_SCREENSHOTS")
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 900}


@pytest.fixture(scope="module")
def reader_lab(clone, tmp_path_factory):
    """``(base URL, token, log)`` of the reader's JupyterLab: ``make reader-lab`` into a
    prefix, then ``jupyter lab notebooks/`` in the clone with that prefix's folders."""
    tmp = tmp_path_factory.mktemp("reader")
    prefix = tmp / "prefix"
    made = subprocess.run(
        ["make", "--no-print-directory", "reader-lab", f"LAB_PREFIX={prefix}"],
        cwd=clone, capture_output=True, text=True,
    )  # fmt: skip
    assert made.returncode == 0, f"make reader-lab failed:\n{made.stdout}\n{made.stderr}"
    env = {
        "JUPYTER_PATH": str(prefix / "share" / "jupyter"),
        "JUPYTER_CONFIG_PATH": str(prefix / "etc" / "jupyter"),
    }
    lab = tmp / "lab"
    lab.mkdir()
    with _jupyter_lab(clone, lab, env=env) as (base, token):
        yield base, token, lab / "lab.log"


def _page(browser, viewport: dict):
    context = browser.new_context(viewport=viewport)
    context.set_default_timeout(180_000)
    return context, context.new_page()


def _shot(page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"jupyterlab_reader_{name}.png"))


def _open(page, base: str, token: str, name: str) -> None:
    page.goto(f"{base}/lab/tree/{name}?token={token}&reset")
    page.wait_for_selector(".jp-Notebook .jp-MarkdownCell.jp-mod-rendered")


_JS_WIDTH = """() => {
    const panel = [...document.querySelectorAll('.jp-NotebookPanel')]
        .find(p => !p.classList.contains('lm-mod-hidden') && p.getClientRects().length);
    return panel ? panel.getBoundingClientRect().width : 0;
}"""


def _settled_width(page, at_least: float = 300, seconds: float = 20) -> float:
    """The current notebook's width once it reaches ``at_least`` px, or after ``seconds``."""
    deadline = time.time() + seconds
    width = page.evaluate(_JS_WIDTH)
    while width < at_least and time.time() < deadline:
        page.wait_for_timeout(500)
        width = page.evaluate(_JS_WIDTH)
    return width


def test_no_grader_tools_in_the_readers_jupyterlab(browser, reader_lab):
    base, token, log = reader_lab
    context, page = _page(browser, LAPTOP)
    try:
        _open(page, base, token, "00_a_first_look.ipynb")
        page.wait_for_timeout(3000)  # the toolbar's items and the cell bars are added late
        menus = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
        toolbar = " ".join(page.locator(".jp-NotebookPanel-toolbar").all_inner_texts())
        text = page.evaluate("() => document.body.innerText")
        _shot(page, "laptop")
    finally:
        context.close()
    assert "File" in menus, menus
    assert not [m for m in menus if "grader" in m.lower()], f"an Nbgrader menu: {menus}"
    assert "Validate" not in toolbar, f"a Validate button: {toolbar!r}"
    assert "Create Assignment" not in text
    assert "nbgrader_config.py" not in log.read_text(), "nbgrader's server extension started"


@pytest.mark.parametrize("how", ["address", "file browser"])
def test_a_phone_width_opens_the_chapter_usable(browser, reader_lab, how):
    """At 390 px the notebook gets the screen: JupyterLab alone opens a fresh session with
    the file browser over it (the notebook 55 px wide), and keeps the browser open when a
    document is opened from it."""
    base, token, _ = reader_lab
    context, page = _page(browser, PHONE)
    try:
        _open(page, base, token, "03_multi_head_attention.ipynb")
        if how == "file browser":
            page.locator('.jp-SideBar [data-id="filebrowser"]').first.click()
            page.locator(".jp-DirListing-item", has_text="05_encoder").first.dblclick()
            page.wait_for_function(
                "() => [...document.querySelectorAll('.lm-TabBar-tab.jp-mod-current')]"
                ".some(t => t.innerText.includes('05_encoder'))"
            )
        width = _settled_width(page)
        _shot(page, f"phone_{how.replace(' ', '_')}")
    finally:
        context.close()
    assert width >= 300, f"opened by its {how}, the notebook is {width:.0f} px wide at 390 px"


# (chapter, the link's file and anchor, the file it opens): a sample of each kind of link
LINKS = [
    ("03_multi_head_attention.ipynb", "bibliography.md#vaswani2017attention", "bibliography.md"),
    ("10_after_the_paper.ipynb", "api.md#aiayn_helpers.mask_tokens", "api.md"),
    ("05_encoder.ipynb", "03_multi_head_attention.ipynb#mistake-mha-bool-mask", None),
    ("06_decoder.ipynb", "02_scaled_dot_product_attention.ipynb#mistake-inverted-mask", None),
    ("10_after_the_paper.ipynb", "04_positional_encoding.ipynb#ch04-learned", None),
    ("04_positional_encoding.ipynb", "#mistake-pe-i-vs-2i", "04_positional_encoding.ipynb"),
]

_JS_TARGET = """(id) => {
    const tab = document.querySelector('.lm-DockPanel .lm-TabBar-tab.jp-mod-current');
    const area = document.querySelector('#jp-main-dock-panel').getBoundingClientRect();
    const found = [...document.querySelectorAll('[id], [data-jupyter-id]')]
        .filter(e => (e.id === id || e.dataset.jupyterId === id) && e.getClientRects().length);
    const box = found.length ? found[0].getBoundingClientRect() : null;
    const aside = found.length ? found[0].closest('aside.myst-admonition') : null;
    return {tab: tab ? tab.innerText.trim() : null, found: found.length,
            top: box ? box.top - area.top : null, height: area.height,
            in_view: !!box && box.top >= area.top - 2 && box.top < area.bottom - 20,
            box: aside ? aside.innerText.slice(0, 60) : null};
}"""


def _click(page, selector: str) -> None:
    """Click the first link ``selector`` finds; jupyterlab-myst draws a cell again as the
    chapter renders, so a link found may be replaced before the click lands."""
    for _ in range(10):
        try:
            page.locator(selector).first.click(timeout=15_000)
            return
        except Exception:  # noqa: BLE001 (Playwright's errors: detached, not visible)
            page.wait_for_timeout(1000)
    page.locator(selector).first.click(timeout=15_000)


@pytest.mark.parametrize(("chapter", "link", "opens"), LINKS, ids=[k[1] for k in LINKS])
def test_a_link_lands_on_its_target(browser, reader_lab, chapter, link, opens):
    base, token, _ = reader_lab
    path, anchor = link.split("#")
    opens = opens or path
    context, page = _page(browser, LAPTOP)
    try:
        _open(page, base, token, chapter)
        # JupyterLab writes a file's link as /files/NAME?_xsrf=...#ANCHOR once it is drawn
        selector = f'.jp-MarkdownCell a[href$="#{anchor}"]' + (f'[href*="{path}"]' if path else "")
        page.wait_for_selector(selector, state="attached")
        page.wait_for_timeout(2000)
        _click(page, selector)
        deadline, facts = time.time() + 60, {}
        while time.time() < deadline:
            facts = page.evaluate(_JS_TARGET, anchor)
            if facts["tab"] == opens and facts["in_view"]:
                break
            page.wait_for_timeout(500)
        page.wait_for_timeout(3000)  # it stays: nothing scrolls it away as the page settles
        after = page.evaluate(_JS_TARGET, anchor)
        _shot(page, f"link_{anchor}")
    finally:
        context.close()
    assert facts.get("tab") == opens, f"{link} from {chapter} opened {facts.get('tab')}"
    assert facts["found"], f"{link}: no element with that id or data-jupyter-id is shown"
    assert facts["in_view"] and after["in_view"], f"{link}: the target is not in view: {after}"
    if anchor.startswith("mistake-"):
        assert (after["box"] or "").startswith("Common mistake"), after
