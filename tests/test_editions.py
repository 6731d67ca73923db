"""The published editions (tools/editions/make_editions.py, tools/editions/plain_markdown.py): what the Colab,
Binder and class links open reads cleanly without MyST and installs the package at the release."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from chapters import lab_markdown  # noqa: E402
from editions import (  # noqa: E402
    make_editions,
    make_student,
    set_repository_url,
)
from editions import plain_markdown as pm  # noqa: E402

pytestmark = pytest.mark.slow  # builds the student edition (nbgrader) once: about 40 s

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SITE = "https://someone.github.io/book/"

SAMPLE = """\
(sec-x)=
## A section

{cite:t}`vaswani2017attention` and {cite:p}`vaswani2017attention`; see {ref}`sec-x`,
{ref}`the box <box-1>`, {doc}`chapter 2 <02_scaled_dot_product_attention>`,
{py:obj}`ah.Transformer <aiayn_helpers.Transformer>`, {math}`x^2`, `{ref}` in code.

(box-1)=
```{admonition} Common mistake: dividing by $d_k$
:class: warning
The variance is $1/d_k$:

$$\\operatorname{Var} = 1$$
```

```{exercise-start}
:label: ch02-ex1
```
Do it.
```{exercise-end}
```

```{solution-start} ch02-ex1
:class: dropdown
```
![A figure of masks](../book/figures/ch02_masks.svg)

```python
(not-a-label)=
```
```{solution-end}
```"""

EXPECTED = """\
## A section

[Vaswani et al. (2017)](URL) and ([Vaswani et al., 2017](URL)); see [A section](SITEnotebooks/02_x.html#sec-x),
[the box](SITEnotebooks/02_x.html#box-1), [chapter 2](SITEnotebooks/02_scaled_dot_product_attention.html),
[`ah.Transformer`](SITEbook/api.html#aiayn_helpers.Transformer), $x^2$, `{ref}` in code.

> **Common mistake: dividing by $d_k$**
>
> The variance is $1/d_k$:
>
> $$\\operatorname{Var} = 1$$

#### Exercise 2.1

Do it.

#### Solution to Exercise 2.1

![A figure of masks](MASKS)

```python
(not-a-label)=
```"""


def _context() -> pm.Context:
    return pm.Context(
        site=SITE,
        labels=pm.collect_labels({"notebooks/02_x.html": SAMPLE}),
        references=pm.load_bibliography(),
    )


def test_plain_markdown_of_each_construct():
    url = pm.load_bibliography()["vaswani2017attention"].url
    masks = pm.figure_data_uri("../book/figures/ch02_masks.svg")
    expected = EXPECTED.replace("SITE", SITE).replace("URL", url).replace("MASKS", masks)
    assert pm.plain(SAMPLE, _context()) == expected
    # the same sample as the chapters hold it in JupyterLab's form (tools/chapters/lab_markdown.py)
    assert pm.plain(lab_markdown.Converter().convert(SAMPLE, "notebooks/02_x.html"), _context()) == expected
    assert pm.myst_syntax(pm.plain(SAMPLE, _context())) == []
    assert len(pm.myst_syntax(SAMPLE)) >= 10, "the check finds the syntax it must"


def test_myst_syntax_finds_every_kind_and_nothing_in_code():
    kinds = {
        "```{note}\nx\n```": "directive",
        ":::{tip}\nx\n:::": "directive",
        "see {numref}`fig-1`": "role",
        "(label-1)=\n# Title": "label",
        "text\n:label: ch01-ex1": "directive option",
        "{{ glued }}": "substitution",
        "+++\nnext": "block break",
    }
    for text, kind in kinds.items():
        assert [f.split(":")[0] for f in pm.myst_syntax(text)] == [kind], text
    assert pm.myst_syntax("`{ref}` and\n```python\n(x)=\n```\n$V_{\\text{tgt}}$") == []


def test_plain_markdown_refuses_what_it_cannot_render():
    ctx = _context()
    with pytest.raises(ValueError, match=r"directive \{code-cell\}"):
        pm.plain("```{code-cell} ipython3\n1 + 1\n```", ctx)
    with pytest.raises(ValueError, match=r"role \{glue:text\}"):
        pm.plain("{glue:text}`x`", ctx)
    with pytest.raises(ValueError, match="not in the bibliography"):
        pm.plain("{cite:t}`nobody2099`", ctx)
    with pytest.raises(ValueError, match="no label 'missing'"):
        pm.plain("{ref}`missing`", ctx)
    with pytest.raises(ValueError, match="not closed"):
        pm.plain("```{note}\nnever closed", ctx)
    with pytest.raises(ValueError, match="site must be an https:// address"):
        pm.Context(site="http://example.org")


def test_citation_names_in_author_year_style():
    assert pm.cited_names("Vaswani, Ashish and Shazeer, Noam and Parmar, Niki") == "Vaswani et al."
    assert pm.cited_names("Press, Ofir and Wolf, Lior") == "Press and Wolf"
    assert pm.cited_names("Rush, Alexander M.") == "Rush"
    with pytest.raises(ValueError, match="author list"):
        pm.cited_names(" ")


# ----------------------------------------------------------------------- the editions


@pytest.fixture(scope="module")
def editions(tmp_path_factory):
    return make_editions.build(tmp_path_factory.mktemp("editions") / "out")


def _notebooks(folder: Path) -> list[Path]:
    return sorted((folder / "notebooks").glob("*.ipynb"))


def _shown_markdown(nb) -> list[str]:
    """What Colab and GitHub render as Markdown: markdown cells and text/markdown outputs."""
    texts = [c.source for c in nb.cells if c.cell_type == "markdown"]
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            texts.append("".join(out.get("data", {}).get("text/markdown", "")))
    return texts


@pytest.mark.parametrize("edition", sorted(make_editions.EDITIONS))
def test_every_notebook_the_links_open_reads_without_myst(editions, edition):
    folder = editions[edition]
    assert [p.name for p in _notebooks(folder)] == [p.name for p in NOTEBOOKS]
    for path in _notebooks(folder):
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        for text in _shown_markdown(nb):
            assert pm.myst_syntax(text) == [], f"{edition}/{path.name}: {pm.myst_syntax(text)}"
        exercises = [c.source for c in nb.cells if c.cell_type == "markdown" and "#### Exercise " in c.source]
        original = "\n".join(c.source for c in nbformat.read(ROOT / "notebooks" / path.name, 4).cells)
        assert len(exercises) == original.count("{exercise-start}"), f"{path.name}: an exercise lost its heading"


@pytest.mark.parametrize("edition", sorted(make_editions.EDITIONS))
def test_install_cell_installs_the_release_not_a_local_wheel(editions, edition):
    """Colab and Binder have no wheel beside the notebook: the package comes from the repository at the tag."""
    url, tag = set_repository_url.repository_url(), set_repository_url.release_tag()
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url) and re.fullmatch(r"v\d+\.\d+\.\d+", tag)
    for path in _notebooks(editions[edition]):
        nb = nbformat.read(path, as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "code")
        assert set_repository_url.install_specs(first.source) == [("[reader]", url, tag)], path.name
        assert "import aiayn_helpers" in first.source and "except ImportError" in first.source
        assert not any(".whl" in c.source or "../dist" in c.source for c in nb.cells), path.name
    binder = (editions[edition] / "binder" / "requirements.txt").read_text()
    assert make_editions.package_spec() == f"aiayn_helpers[lab] @ git+{url}@{tag}"
    assert binder.splitlines()[-1] == make_editions.package_spec()
    full = dict(
        ln.split("==") for ln in (ROOT / "requirements.txt").read_text().splitlines() if "==" in ln and "#" not in ln
    )
    for line in binder.splitlines():
        if "==" in line:
            name, version = line.split("==")
            assert full[name] == version, f"binder pins {line}, requirements.txt {full[name]}"


@pytest.mark.parametrize("edition", sorted(make_editions.EDITIONS))
def test_an_edition_holds_only_what_works_for_its_reader(editions, edition):
    folder = editions[edition]
    names = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    allowed = re.compile(
        r"README\.md|binder/(requirements|runtime)\.txt|notebooks/[^/]+\.ipynb|assignments/[^/]+\.ipynb"
    )
    assert all(allowed.fullmatch(n) for n in names), sorted(n for n in names if not allowed.fullmatch(n))
    assert ("assignments/assignment1.ipynb" in names) == (edition == "student")
    readme = (folder / "README.md").read_text()
    branch = make_editions.EDITIONS[edition]
    assert (
        make_editions.colab_link(set_repository_url.owner_repo(set_repository_url.repository_url()), branch) in readme
    )
    assert make_editions.package_spec() in readme
    assert f"Python {make_editions.python_range()}," in readme and make_editions.python_range() == "3.11 to 3.14"
    # the README's command serves every folder the edition has (the assignments too)
    command = "\n  jupyter lab\n" if edition == "student" else "\n  jupyter lab notebooks/\n"
    assert command in readme, readme


def test_student_edition_has_no_solution(editions):
    for path in _notebooks(editions["student"]):
        original = nbformat.read(ROOT / "notebooks" / path.name, as_version=4)
        inside, solutions = False, []
        for cell in original.cells:
            if cell.cell_type == "markdown":
                for m in re.finditer(r"\{solution-(start|end)\}", cell.source):
                    inside = m[1] == "start"
            elif inside and cell.source.strip():
                solutions.append(cell.source.strip())
        student = nbformat.read(path, as_version=4)
        code = [c.source for c in student.cells if c.cell_type == "code"]
        assert not any(s in c for s in solutions for c in code), path.name
        assert not any("Solution to Exercise" in c.source for c in student.cells), path.name


def _site_pages() -> set[str]:
    """The pages of the published site, the student edition's (tools/editions/make_student.py)."""
    assert {f"book/{name}" for name in pm.NOT_PUBLISHED} == make_student.INSTRUCTOR_ONLY
    book = {pm.page_of(p) for p in (ROOT / "book").glob("*.md") if p.stem not in pm.NOT_PUBLISHED}
    return {pm.page_of(p) for p in NOTEBOOKS} | book


def test_figures_travel_inside_the_notebooks(editions):
    """Every image of the editions' Markdown is a diagram embedded as a data: address of
    its PNG, drawn by its code (tools/editions/plain_markdown.py says why not the SVG), so it shows
    offline, in Colab, VS Code and on GitHub (they pointed at the published site, which
    offline or before publishing shows none)."""
    import base64

    drawn = {pm.figure_png(p.stem) for p in (ROOT / "book" / "figures").glob("*.svg")}
    seen = 0
    for edition in ("student", "instructor"):
        for path in _notebooks(editions[edition]):
            cells = nbformat.read(path, as_version=4).cells
            text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
            for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", text):
                seen += 1
                prefix = "data:image/png;base64,"
                assert target.startswith(prefix), f"{edition}/{path.name}: an image at {target[:80]!r}"
                assert base64.b64decode(target[len(prefix) :]) in drawn, f"{edition}/{path.name}: not a diagram"
    assert seen > 40


def test_links_point_at_pages_and_anchors_the_site_has(editions):
    site = set_repository_url.site_url()
    ctx = pm.book_context()
    import aiayn_helpers

    seen = 0
    for path in _notebooks(editions["instructor"]):
        text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
        for target in re.findall(r"\]\((" + re.escape(site) + r"[^)\s]*)\)", text):
            seen += 1
            rest = target[len(site) :]
            page, _, anchor = rest.partition("#")
            assert page in _site_pages(), f"{path.name}: {target} is no page of the site"
            if page == "book/api.html" and anchor:
                obj = aiayn_helpers
                for part in anchor.split(".")[1:]:
                    obj = getattr(obj, part)
            elif anchor:
                assert ctx.labels.get(anchor, ("",))[0] == page, f"{path.name}: no {anchor} on {page}"
    assert seen > 100, f"only {seen} links to the site"


# ----------------------------------------------------------------------- the links to them


def _links(text: str) -> list[tuple[str, str, str]]:
    """(service, branch, path) of every Colab and Binder link to the repository."""
    repo = set_repository_url.owner_repo(set_repository_url.repository_url())
    found = [
        ("colab", m[1], m[2])
        for m in re.finditer(rf"https://colab\.research\.google\.com/github/{repo}/blob/([\w-]+)/([^)\s\"']+)", text)
    ]
    found += [
        ("binder", m[1], m[2])
        for m in re.finditer(rf"https://mybinder\.org/v2/gh/{repo}/([\w-]+)\?urlpath=lab/tree/([^)\s\"']+)", text)
    ]
    return found


def test_readme_links_open_the_editions(editions):
    """The README's class links open the student edition; the others, the instructor one; no link opens main."""
    readme = (ROOT / "README.md").read_text()
    links = _links(readme)
    assert {(service, branch) for service, branch, _ in links} == {
        (s, b) for s in ("colab", "binder") for b in ("student", "instructor")
    }, links
    folders = {branch: editions[name] for name, branch in make_editions.EDITIONS.items()}
    for service, branch, path in links:
        assert (folders[branch] / path).exists(), f"{service} link to {branch}/{path}: no such file"
    class_part = readme[readme.index("For a class") :][:600]
    assert "/blob/student/" in class_part and "/student?urlpath" in class_part


def _launch_links(config: dict, page: str) -> dict[str, str]:
    """Jupyter Book 1's launch buttons for ``page`` (sphinx-book-theme's header_buttons/launch.py)."""
    repo = config["repository"]
    org_repo = set_repository_url.owner_repo(repo["url"])
    branch, book = repo.get("branch", "master"), repo.get("path_to_book", "").strip("/")
    path = f"{book + '/' if book else ''}{page}.ipynb"
    launch = config["launch_buttons"]
    return {
        "colab": f"{launch['colab_url'].strip('/')}/github/{org_repo}/blob/{branch}/{path}",
        "binder": f"{launch['binderhub_url'].strip('/')}/v2/gh/{org_repo}/{branch}?urlpath=lab/tree/{path}",
    }


@pytest.mark.parametrize("edition", ["student", "instructor"])
def test_site_launch_buttons_open_the_edition(editions, edition):
    """The student site's buttons open the student branch; the instructor site's, the instructor branch."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    if edition == "student":
        config = make_student.student_config(config)
    branch = make_editions.EDITIONS[edition]
    for path in NOTEBOOKS:
        for service, url in _launch_links(config, f"notebooks/{path.stem}").items():
            ((_, linked_branch, file),) = _links(url)
            assert linked_branch == branch, f"the {edition} site's {service} button opens {linked_branch}"
            assert (editions[edition] / file).exists(), url


@pytest.mark.site
def test_built_site_buttons_open_the_instructor_branch():
    """In the site `make book` built, each chapter's Colab button opens the instructor branch's notebook."""
    html = ROOT / "_build" / "html" / "notebooks"
    if not html.is_dir():
        pytest.skip("no built site: run `make book` first")
    for path in NOTEBOOKS:
        links = _links((html / f"{path.stem}.html").read_text(encoding="utf-8"))
        assert ("colab", "instructor", f"notebooks/{path.name}") in links, path.name
        assert not any(branch == "main" for _, branch, _ in links), path.name


def test_release_workflow_publishes_both_editions_once_the_tag_exists():
    pages = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text())
    build_runs = "\n".join(s.get("run", "") for s in pages["jobs"]["build"]["steps"])
    assert "tools/editions/make_editions.py --student _student --out _editions" in build_runs
    job = pages["jobs"]["editions"]
    assert job["needs"] == "build" and job["permissions"] == {"contents": "write"}
    runs = "\n".join(s.get("run", "") for s in job["steps"])
    assert "git ls-remote --exit-code" in runs and "refs/tags/$TAG" in runs, "publishes only a release that exists"
    # ... whose package is this commit's, which the cells' git+REPO@TAG then installs
    assert 'git diff --quiet "$TAG" "$SHA" -- aiayn_helpers pyproject.toml' in runs
    for name, branch in make_editions.EDITIONS.items():
        assert f"publish {name} {branch}" in runs
    assert "release_tag()" in build_runs, "the tag is set_repository_url.release_tag(), what the cells install"


def test_hub_links_open_the_student_branch(editions, capsys):
    """`make hub-links` (nbgitpuller) pulls the branch student and opens its notebooks, which exist there."""
    from urllib.parse import parse_qs, urlsplit

    from editions import hub_links

    assert hub_links.main(["--hub", "https://hub.example.edu"]) == 0
    urls = re.findall(r"https://hub\.example\.edu/\S+", capsys.readouterr().out)
    assert len(urls) == len(NOTEBOOKS)
    for url in urls:
        query = parse_qs(urlsplit(url).query)
        assert query["branch"] == [make_editions.EDITIONS["student"]]
        clone = hub_links.clone_folder(query["repo"][0])
        path = query["urlpath"][0].removeprefix(f"lab/tree/{clone}/")
        assert (editions["student"] / path).is_file(), url


def test_plain_markdown_of_tabs_figures_and_small_roles():
    ctx = _context()
    text = (
        "::::{tab-set}\n:::{tab-item} PyTorch\nUse `nn.Linear`.\n:::\n:::{tab-item} NumPy\n$x W^\\top$\n:::\n::::\n\n"
        "```{figure} ../book/figures/ch02_masks.svg\n:alt: Three masks as grids\nThe masks.\n```\n\n"
        "```{margin} Aside\nA note.\n```\n\n"
        "H{sub}`2`O, x{sup}`2`, {kbd}`Ctrl`, {abbr}`BPE (byte-pair encoding)`"
    )
    assert pm.plain(text, ctx) == (
        "**PyTorch**\n\nUse `nn.Linear`.\n\n**NumPy**\n\n$x W^\\top$\n\n"
        f"![Three masks as grids]({pm.figure_data_uri('ch02_masks.svg')})\n\nThe masks.\n\n"
        "> **Aside**\n>\n> A note.\n\n"
        'H<sub>2</sub>O, x<sup>2</sup>, <kbd>Ctrl</kbd>, <abbr title="byte-pair encoding">BPE</abbr>'
    )
