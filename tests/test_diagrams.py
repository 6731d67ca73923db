"""book/figures/: up to date, shown with alt text, self-contained and legible.

tools/diagrams/ draws them; a committed SVG that differs from a fresh drawing
(byte for byte) fails here, and so does one that no chapter shows.
"""

from __future__ import annotations

import html
import math
import re
import sys
from pathlib import Path
from xml.etree import ElementTree

import nbformat
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import diagrams  # noqa: E402

import aiayn_helpers as ah  # noqa: E402
from aiayn_helpers.config import BASE  # noqa: E402

FIGURES = ROOT / "book" / "figures"
INSERTS = FIGURES / "INSERTS.md"
# ../book/figures/X.svg, or figures/X.svg (the copy beside the chapters, tools/chapters/lab_markdown.py)
IMAGE = re.compile(r"!\[([^\]]*)\]\((?:\.\./book/)?figures/([\w-]+\.svg)\)")
NAMESPACES = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
NUMBER = re.compile(r"\d+(?:\.\d+)?")
PLAIN_SIZE = re.compile(r'<text style="[^"]*font-size: ([\d.]+)px')
# mathtext writes its glyphs one by one
GLYPH_SIZE = re.compile(r"<tspan [^>]*font-size: ([\d.]+)px")
# the white rectangle behind the whole figure, matplotlib's first patch
BACKGROUND = re.compile(
    r'<g id="patch_1">\s*<path d="M 0 [\d.]+ \s*L [\d.]+ [\d.]+ \s*L [\d.]+ 0 \s*'
    r'L 0 0 \s*z\s*" style="fill: #ffffff"'
)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("figures")
    diagrams.write_all(folder)
    return folder


def references() -> list[tuple[str, str, str]]:
    """(where, alt text, file) of each diagram a notebook shows or INSERTS.md lists."""
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                found += [(path.name, *m) for m in IMAGE.findall(cell.source)]
    if INSERTS.is_file():
        found += [(INSERTS.name, *m) for m in IMAGE.findall(INSERTS.read_text())]
    return found


def svg_text(svg: str) -> str:
    """The words of an SVG: its text, and the strings matplotlib keeps in comments."""
    comments = re.findall(r"<!-- (.*?) -->", svg)
    return " ".join(comments + re.findall(r">([^<>]+)</t", svg))


def test_committed_diagrams_are_the_drawn_ones(fresh):
    drawn = sorted(p.name for p in fresh.glob("*.svg"))
    committed = sorted(p.name for p in FIGURES.glob("*.svg"))
    assert committed == drawn, "book/figures/ holds other SVGs than the drawn ones"
    stale = [n for n in drawn if (FIGURES / n).read_bytes() != (fresh / n).read_bytes()]
    assert not stale, f"out of date (run python tools/diagrams): {stale}"


def test_check_flag_names_stale_files(tmp_path, fresh, capsys, monkeypatch):
    # each diagram as the fixture drew it, not drawn twice more (83 s of 170 here):
    # the comparison and the naming are what this checks; render is checked above
    drawn = {path.stem: path.read_bytes() for path in fresh.glob("*.svg")}
    monkeypatch.setattr(diagrams, "render", lambda draw: drawn[draw.__name__])
    for path in fresh.glob("*.svg"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    (tmp_path / "ch05_encoder_layer.svg").write_bytes(b"<svg/>")
    (tmp_path / "ch02_masks.svg").unlink()
    names = [Path(p).name for p in diagrams.stale(tmp_path)]
    assert names == ["ch02_masks.svg", "ch05_encoder_layer.svg"]
    assert diagrams.main(["--check"]) == 0, capsys.readouterr().out


def chapter_of(name: str) -> str:
    """The notebook prefix a diagram belongs to: "02" for ch02_*, "A_" for chA_*."""
    return name[2:4] if name.startswith("ch") else ""


def waiting(notebook: str) -> set[str]:
    """The diagrams INSERTS.md lists for ``notebook`` (its "## notebooks/NAME" section)."""
    sections = re.split(r"^## notebooks/", INSERTS.read_text(), flags=re.M)[1:]
    mine = [s for s in sections if s.startswith(notebook)]
    return {name for s in mine for _, name in IMAGE.findall(s)}


def test_every_chapter_shows_a_diagram_and_where_it_sits():
    """Issue #37: every chapter, appendix A included, has a diagram, and each but
    chapter 0 shows its locator (chNN_where) in the whole model; chapter 0 opens with
    the whole model, before its first section."""
    names = [p.stem for p in FIGURES.glob("*.svg")]
    assert len(names) >= 30
    refs = references()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        mine = {name for where, _, name in refs if where == path.name}
        listed = waiting(path.name)
        assert mine or waiting(path.name), f"{path.name} shows no diagram"
        if not path.name.startswith("00"):
            where = f"ch{path.name[:2].rstrip('_')}_where.svg"
            assert where in mine | listed, f"{path.name} does not show {where}"
    cells = nbformat.read(ROOT / "notebooks" / "00_a_first_look.ipynb", as_version=4).cells
    markdown = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    first_section = markdown.index("\n## ")
    assert 0 < markdown.find("overview_transformer.svg") < first_section


def test_every_diagram_is_shown_with_alt_text():
    refs = references()
    shown = {name for _, _, name in refs}
    missing = sorted(p.name for p in FIGURES.glob("*.svg") if p.name not in shown)
    assert not missing, f"shown by no notebook and not in INSERTS.md: {missing}"
    for where, alt, name in refs:
        assert (FIGURES / name).is_file(), f"{where} shows {name}, which is not drawn"
        assert len(alt.split()) > 8 and alt.rstrip().endswith("."), (
            f"{where}: give {name} alt text of a sentence or more: {alt!r}"
        )
        assert "<" not in alt, f"{where}: markdown drops <...> from alt text: {alt!r}"
        if where.endswith(".ipynb") and chapter_of(name):  # chNN_*: chapter NN's
            assert chapter_of(name) == where[:2], f"{where} shows {name}, another chapter's"


def test_alt_text_numbers_are_on_the_diagram():
    """A number the alt text states (a size, a weight) is one the diagram prints."""
    for where, alt, name in references():
        shown = set(NUMBER.findall(svg_text((FIGURES / name).read_text())))
        extra = set(NUMBER.findall(alt)) - shown
        assert not extra, f"{where}: the alt text of {name} states {sorted(extra)}"


@pytest.mark.parametrize("path", sorted(FIGURES.glob("*.svg")), ids=lambda p: p.name)
def test_svg_is_self_contained_and_legible(path):
    svg = path.read_text()
    root = ElementTree.fromstring(svg)  # well-formed XML
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    hosts = set(re.findall(r"https?://[^\s\"'<>)]+", svg)) - NAMESPACES
    assert not hosts, f"the SVG names other hosts: {sorted(hosts)}"
    assert "<image" not in svg and "base64" not in svg, "drawn, not embedded"
    assert "<text" in svg, "text must stay text (svg.fonttype none)"
    assert BACKGROUND.search(svg), "no white background (the site's dark mode)"
    width_pt = float(re.search(r'<svg[^>]*width="([\d.]+)pt"', svg)[1])
    assert width_pt <= diagrams.MAX_WIDTH_IN * 72, "too wide to read on a phone"
    # text sizes, in points of the figure: plain strings at least MIN_FONT_PT, the
    # glyphs of mathtext ($d_k$) at least 70% of it (a subscript is drawn at 70%)
    plain = [float(s) for s in PLAIN_SIZE.findall(svg)]
    glyphs = [float(s) for s in GLYPH_SIZE.findall(svg)]
    assert plain and min(plain) >= diagrams.MIN_FONT_PT, f"text of {min(plain)} pt"
    assert min(glyphs, default=99) >= 0.7 * diagrams.MIN_FONT_PT - 1e-9, "subscript"
    # scaled to a phone (343 CSS px of a 375 px screen), plain text keeps 9 px or more
    css_width = width_pt * 4 / 3
    assert min(plain) * 4 / 3 * min(1.0, 343 / css_width) >= 9


def test_sizes_come_from_the_config():
    shown = (diagrams.D_MODEL, diagrams.HEADS, diagrams.D_FF, diagrams.N_LAYERS)
    assert shown == (BASE.d_model, BASE.num_heads, BASE.d_ff, BASE.num_layers)
    assert diagrams.D_K == BASE.d_model // BASE.num_heads
    d_k = BASE.d_model // BASE.num_heads
    words = svg_text((FIGURES / "ch03_multi_head.svg").read_text())
    assert f"{BASE.d_model} / {BASE.num_heads} = {d_k}" in words
    words = svg_text((FIGURES / "ch05_encoder_layer.svg").read_text())
    assert f"{BASE.d_model}→{BASE.d_ff}→{BASE.d_model}" in words
    assert f"= {BASE.num_layers}" in words


def test_drawn_sinusoids_are_the_package_table():
    table = ah.sinusoidal_encoding(41, BASE.d_model, dtype=torch.float64)
    mine = [[diagrams.pe_value(p, c) for c in range(BASE.d_model)] for p in range(41)]
    mine = torch.tensor(mine, dtype=torch.float64)
    torch.testing.assert_close(mine, table, atol=1e-12, rtol=0)


def plus_problems(svg: str) -> list[str]:
    """What is wrong with the residual-add circles of an SVG (issue #37).

    ``draw.plus`` names each circle ``residual-add-K`` and its strokes
    ``residual-add-K-plus``. A circle is right when its "+" comes after it in the
    document (SVG paints in document order, so an earlier "+" is hidden under the
    white circle), is drawn in a visible colour, and is one horizontal and one
    vertical stroke through the circle's centre, inside it.
    """
    order = list(ElementTree.fromstring(svg).iter())
    groups = {el.get("id"): (n, el) for n, el in enumerate(order) if el.get("id")}
    circles = [k for k in groups if re.fullmatch(r"residual-add-\d+", k)]
    problems = []
    for name in circles:
        n_circle, circle = groups[name]
        xy = [float(v) for v in NUMBER.findall(circle.find(".//{*}path").get("d"))]
        xs, ys = xy[0::2], xy[1::2]
        cx, cy = (min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2
        r = (max(xs) - min(xs)) / 2
        if f"{name}-plus" not in groups:
            problems.append(f"{name}: no plus")
            continue
        n_plus, plus = groups[f"{name}-plus"]
        path = plus.find(".//{*}path")
        if n_plus < n_circle:
            problems.append(f"{name}: the plus is painted under the circle")
        stroke = re.search(r"stroke: (#[0-9a-f]{6})", path.get("style", ""))
        if not stroke or stroke[1] in ("#ffffff", "none"):
            problems.append(f"{name}: the plus is not drawn in a visible colour")
        strokes = re.findall(r"M ([\d.]+) ([\d.]+)\s*L ([\d.]+) ([\d.]+)", path.get("d"))
        segments = [tuple(float(v) for v in s) for s in strokes]
        flat = [s for s in segments if abs(s[1] - s[3]) < 1e-6 and abs(s[1] - cy) < 0.5]
        tall = [s for s in segments if abs(s[0] - s[2]) < 1e-6 and abs(s[0] - cx) < 0.5]
        if len(segments) != 2 or len(flat) != 1 or len(tall) != 1:
            problems.append(f"{name}: the plus is not two strokes through the centre")
        elif max(abs(v - c) for s in segments for v, c in zip(s, (cx, cy) * 2)) >= r:
            problems.append(f"{name}: the plus reaches outside its circle")
    return problems


RESIDUAL_ADDS = {"ch05_encoder_layer": 2, "ch05_post_vs_pre": 2, "ch06_decoder_layer": 3}


@pytest.mark.parametrize("name", sorted(RESIDUAL_ADDS))
def test_every_residual_add_circle_carries_its_plus(name):
    svg = (FIGURES / f"{name}.svg").read_text()
    assert svg.count('id="residual-add-') == 2 * RESIDUAL_ADDS[name], "circles drawn"
    assert plus_problems(svg) == []


def test_a_plus_under_its_circle_is_caught():
    """The glitch of issue #37: the white circle drawn over the strokes of its plus."""

    def hidden_plus():
        fig, ax = diagrams.draw.canvas(2.0, 1.0)
        diagrams.draw.plus(ax, 1.0, 0.5)
        ax.lines[-1].set_zorder(1)  # the strokes under the circle (zorder 3)
        return fig

    svg = diagrams.render(hidden_plus).decode()
    assert plus_problems(svg) == ["residual-add-0: the plus is painted under the circle"]


def outputs_of(notebook: str) -> str:
    """Everything a notebook's code cells print, as committed."""
    cells = nbformat.read(ROOT / "notebooks" / notebook, as_version=4).cells
    return "\n".join(out.get("text", "") for c in cells if c.cell_type == "code" for out in c.outputs)


def source_of(notebook: str) -> str:
    cells = nbformat.read(ROOT / "notebooks" / notebook, as_version=4).cells
    return "\n".join(c.source for c in cells if c.cell_type == "code")


def test_walkthrough_is_the_chapter_2_look_up():
    """ch02_walkthrough draws the soft look-up that chapter 2 prints at strength 1."""
    _, weights, output = diagrams.ch02.lookup()
    shown = " ".join(f"{w:.3f}" for w in weights)
    printed = outputs_of("02_scaled_dot_product_attention.ipynb")
    assert f"query strength    1: weights [{shown}], output {output:.2f}" in printed
    assert "query = strength * keys[2]" in source_of("02_scaled_dot_product_attention.ipynb")


def test_reversal_is_the_chapter_1_example():
    """ch01_reversal draws the source and target chapter 1 prints for its task."""
    src, tgt = diagrams.ch01.reversal_example()
    assert tgt == src[::-1]
    assert f"source: {src} \ntarget: {tgt}" in outputs_of("01_history_of_attention.ipynb")
    source = source_of("01_history_of_attention.ipynb")
    assert "make_batch(2, 6, torch.Generator().manual_seed(0))" in source
    assert "VOCAB = 21" in source


def test_masked_row_and_speed_sizes_are_chapter_2_s():
    """ch02_fully_masked_row draws chapter 2's mask; ch02_dot_vs_additive its sizes."""
    ch02 = diagrams.ch02
    source = source_of("02_scaled_dot_product_attention.ipynb")
    rows = ", ".join("[" + ", ".join(str(m) for m in row) + "]" for row in ch02.MASKED_ROW)
    assert f"mask = torch.tensor([{rows}])" in source
    t, d = ch02.SPEED_T, ch02.SPEED_D
    printed = outputs_of("02_scaled_dot_product_attention.ipynb")
    assert f"T = {t}, d = d_a = {d}:" in printed
    assert f"largest intermediate: dot {t * t:,} numbers, additive {t * t * d:,} numbers" in printed


def test_path_lengths_follow_the_chapter_9_formulas():
    ch09 = diagrams.ch09
    n, k = ch09.N_POS, ch09.KERNEL
    assert ch09.layers_needed(lambda layer: 1) == math.ceil((n - 1) / (k - 1))
    assert ch09.layers_needed(lambda layer: k**layer) == math.ceil(math.log(n, k) - 1e-9)
    source = source_of("09_what_the_paper_measured.ipynb")
    assert "math.ceil((n - 1) / (k - 1))" in source  # the formulas the chapter checks
    assert "math.ceil(math.log(n) / math.log(k) - 1e-9)" in source


def test_export_permutation_is_the_exports():
    """ch08_export_permutation draws the column order aiayn_helpers.export writes."""
    from aiayn_helpers.export import _perm

    ch08 = diagrams.ch08
    for d_model in (ch08.EXPORT_D, BASE.d_model):
        assert ch08.export_order(d_model) == _perm(d_model).tolist()


def test_every_overview_block_names_the_chapter_that_builds_it():
    """Each block of the whole-model figure carries a chapter tag (an add & LayerNorm
    box too: its tag once did not fit the short box and was left out), written on the
    block's second line, and every chapter a tag names lights the block in its locator
    (the review checklist's locators-and-overview sweep)."""
    overview = diagrams.overview
    svg = (FIGURES / "overview_transformer.svg").read_text()
    # (x, y, text) of every text element, in the order drawn (y grows downwards)
    element = re.compile(r'<text [^>]*x="([\d.]+)" y="([\d.]+)"[^>]*>([^<]+)<')
    texts = [(float(x), float(y), html.unescape(t)) for x, y, t in element.findall(svg)]
    for key, label, _, ref in overview.ENCODER + overview.DECODER:
        assert ref, f"the overview's {key} ({label}) names no chapter"
        numbers = re.search(r"ch\. ([\d, ]+)$", ref)
        assert numbers, f"{key}: no chapter at the end of its tag {ref!r}"
        for number in numbers.group(1).split(","):
            lit, _ = overview.LOCATORS[f"{int(number):02d}"]
            assert key in lit, f"{key} says ch. {number.strip()}; its locator greys it"
    norms = [k for k, *_ in overview.ENCODER + overview.DECODER if "norm" in k]
    labels = [i for i, (_, _, t) in enumerate(texts) if t == "add & LayerNorm"]
    assert len(labels) == len(norms) == 5
    for i in labels:  # the tag: the next text, under the name, inside the same box
        (x, y, _), (x_tag, y_tag, tag) = texts[i], texts[i + 1]
        assert re.fullmatch(r"ch\. \d", tag) and x_tag == x and 0 < y_tag - y < 25, (
            f"an add & LayerNorm box without its chapter tag: {texts[i : i + 2]}"
        )


def test_chapter_10_diagrams_use_the_chapter_sizes():
    ch10 = diagrams.ch10
    printed = outputs_of("10_after_the_paper.ipynb")
    slopes = ah.alibi_slopes(ch10.ALIBI_HEADS).tolist()
    assert f"ALiBi slopes for {ch10.ALIBI_HEADS} heads: {slopes}" in printed
    assert f"T = {ch10.TILE_T} (not a multiple of the block)" in printed
    assert f"def tiled_attention(Q, K, V, block={ch10.TILE_BLOCK}):" in source_of("10_after_the_paper.ipynb")
    assert sum(ch10.tiles()) == ch10.TILE_T and max(ch10.tiles()) == ch10.TILE_BLOCK
    scores = ch10.rope_scores()  # the same m - n, the same score
    assert len(set(m - n for m, n in ch10.ROPE_CASES)) == 1
    assert abs(scores[0] - scores[1]) < 1e-12


def test_appendix_a_shapes_are_the_appendix_model():
    source = source_of("A_forward_pass_numpy.ipynb")
    ref = diagrams.ch_a.REFERENCE
    sizes = f"D_MODEL, HEADS, LAYERS, D_FF = {ref['D_MODEL']}, {ref['HEADS']}, "
    assert sizes + f"{ref['LAYERS']}, {ref['D_FF']}" in source
    assert f"SRC_VOCAB, TGT_VOCAB, PAD = {ref['SRC_VOCAB']}, {ref['TGT_VOCAB']}, 0" in source
    shape = f"({ref['B']}, {ref['T']}, {ref['TGT_VOCAB']})"
    assert f"reference logits {shape}" in outputs_of("A_forward_pass_numpy.ipynb")
    assert f"memory ({ref['B']}, {ref['S']}, {ref['D_MODEL']})" in outputs_of("A_forward_pass_numpy.ipynb")


def test_sequence_first_batch_is_the_chapter_3_batch():
    """ch03_sequence_first draws the batch chapter 3 hands nn.MultiheadAttention."""
    ch03 = diagrams.ch03
    source = source_of("03_multi_head_attention.ipynb")
    assert f"x = torch.randn({ch03.SEQ_B}, {ch03.SEQ_T}, d_model, dtype=torch.float64)" in source
    assert f"d_model, h = {ch03.SEQ_D}, 4" in source
    shape = f"({ch03.SEQ_B}, {ch03.SEQ_T}, {ch03.SEQ_D})"
    assert f"runs; output shape {shape}" in outputs_of("03_multi_head_attention.ipynb")


def test_ownership_is_what_pytorch_does():
    """ch04_ownership's yes and no are PyTorch's: trained (a parameter), moved and cast
    by .double() (its dtype after it), saved (a key of state_dict())."""

    class Holder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            table = torch.zeros(3, 2)
            self.proj = torch.nn.Linear(2, 2)
            self.register_buffer("saved", table.clone())
            self.register_buffer("unsaved", table.clone(), persistent=False)
            self.plain = table.clone()

    module = Holder().double()
    tensors = [module.proj.weight, module.saved, module.unsaved, module.plain]
    names = ["proj.weight", "saved", "unsaved", "plain"]
    trained = {id(p) for p in module.parameters()}
    for (kind, _, flags), tensor, name in zip(diagrams.ch04.OWNERSHIP, tensors, names, strict=True):
        said = (id(tensor) in trained, tensor.dtype == torch.float64, name in module.state_dict())
        assert said == flags, f"{kind}: the diagram says {flags}, PyTorch {said}"


def test_mask_conventions_are_the_chapter_5_batch():
    """ch05_mask_conventions draws the padded batch that chapter 5 hands to nn.TransformerEncoder."""
    rows = ",\n".join(f"        {row}" for row in diagrams.ch05.MASK_TOKENS)
    assert f"tokens = torch.tensor(\n    [\n{rows},\n    ]\n)" in source_of("05_encoder.ipynb")
    source = source_of("05_encoder.ipynb")
    assert "ours(x, ah.padding_mask(tokens, 0))" in source and "src_key_padding_mask=tokens == 0" in source
