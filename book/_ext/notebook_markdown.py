"""The chapters' Markdown, written for JupyterLab, read back as MyST for the site.

A chapter's markdown cells hold their figures, citations and links in a form that
JupyterLab (started in ``notebooks/`` as the README says), VS Code and nbviewer follow
without the site (``tools/chapters/lab_markdown.py`` writes it):

* a figure is ``figures/NAME.svg``, a folder beside the chapters;
* ``{cite:t}`` is ``[Vaswani et al. (2017)](bibliography.md#KEY)`` and ``{cite:p}``
  is ``([Vaswani et al., 2017](bibliography.md#KEY); ...)``, links into a local copy of
  the bibliography;
* a box's label (a common-mistake box that the chapter links) is the first line of its
  body, ``(label)=`` after the directive's options, where jupyterlab-myst gives the
  paragraph it labels an id (it gives an admonition none, so a label before the box
  led nowhere); the site has it before the box, as it was;
* an exercise carries its site number, ``:enumerator: 3.1`` after its label, which
  jupyterlab-myst shows ("Exercise 3.1", where it would count "Exercise 1") and the
  site's sphinx-exercise does not know (the site numbers it itself);
* a chapter link is ``[chapter 4](04_positional_encoding.ipynb)``, a label of another
  chapter ``[text](04_positional_encoding.ipynb#LABEL)``, the API page ``api.md`` (a
  local summary) and a page of the site its published address.

``to_myst`` turns that form back into the MyST roles the site was built from, so the
site (sphinxcontrib-bibtex's citations and bibliography page, the nitpicky build) stays
as it was: ``setup_source_read`` applies it to every notebook when Sphinx reads it.
A chapter still in the old form passes through unchanged.
"""

from __future__ import annotations

import json
import re

BIBLIOGRAPHY = "bibliography.md"
API = "api.md"
FIGURES = "figures/"

_KEY = r"[^\s)#]+"
_CITE_P_ONE = rf"\[[^\[\]]+?, \d{{4}}[a-z]?\]\({re.escape(BIBLIOGRAPHY)}#{_KEY}\)"
CITE_P = re.compile(rf"\(({_CITE_P_ONE}(?:; {_CITE_P_ONE})*)\)")
CITE_T = re.compile(rf"\[[^\[\]]+? \(\d{{4}}[a-z]?\)\]\({re.escape(BIBLIOGRAPHY)}#(?P<key>{_KEY})\)")
_KEY_OF = re.compile(rf"\]\({re.escape(BIBLIOGRAPHY)}#({_KEY})\)")
API_PAGE = re.compile(rf"(?<!!)\[(?P<text>[^\[\]]+)\]\({re.escape(API)}\)")
API_ENTRY = re.compile(rf"\]\({re.escape(API)}(?P<anchor>#[\w.]+)\)")
CHAPTER = r"(?:\d\d|[A-Z])_[\w-]+"
CHAPTER_REF = re.compile(rf"(?<!!)\[(?P<text>[^\[\]]+)\]\((?P<page>{CHAPTER})\.ipynb#(?P<label>[\w-]+)\)")
CHAPTER_DOC = re.compile(rf"(?<!!)\[(?P<text>[^\[\]]+)\]\((?P<page>{CHAPTER})\.ipynb\)")
SITE_PAGE = re.compile(r"(?<!!)\[(?P<text>[^\[\]]+)\]\(https://[\w.-]+\.github\.io/[\w.-]+/book/(?P<page>\w+)\.html\)")
FIGURE = re.compile(rf"(?P<head>!\[[^\]]*\]\(){re.escape(FIGURES)}(?P<name>[\w-]+\.svg)\)")
# an exercise's opening line, its options up to its label; the number after it (lab form only)
EXERCISE_NUMBER = re.compile(
    r"(?m)^(?P<open>(?:`{3,}|:{3,})\{exercise(?:-start)?\}[^\n]*\n(?::[\w-]+:[^\n]*\n)*?:label: (?P<label>[\w-]+)\n)"
    r":enumerator: [^\n]*\n"
)
_BOX = r"(?:`{3,}|:{3,})\{(?:admonition|note|tip|hint|important|warning|caution|attention|danger|error|seealso)\}"
# a box's opening line and its options; the label in its body (lab form) or before it (site form)
BOX_LABEL_INSIDE = re.compile(rf"(?m)^(?P<open>{_BOX}[^\n]*\n(?::[\w-]+:[^\n]*\n)*)\((?P<label>[\w-]+)\)=\n")
BOX_LABEL_BEFORE = re.compile(rf"(?m)^\((?P<label>[\w-]+)\)=\n(?P<open>{_BOX}[^\n]*\n(?::[\w-]+:[^\n]*\n)*)")


def to_myst(text: str) -> str:
    """A markdown cell's text with the JupyterLab form of figures, citations and links
    turned back into the MyST the site is built from."""
    text = CITE_P.sub(lambda m: "{cite:p}`" + ",".join(_KEY_OF.findall(m[0])) + "`", text)
    text = CITE_T.sub(lambda m: "{cite:t}`" + m["key"] + "`", text)
    text = API_PAGE.sub(lambda m: "{doc}`" + m["text"] + " <../book/api>`", text)
    text = API_ENTRY.sub(lambda m: "](" + m["anchor"] + ")", text)
    text = CHAPTER_REF.sub(lambda m: "{ref}`" + m["text"] + " <" + m["label"] + ">`", text)
    text = CHAPTER_DOC.sub(lambda m: "{doc}`" + m["text"] + " <" + m["page"] + ">`", text)
    text = SITE_PAGE.sub(lambda m: "{doc}`" + m["text"] + " <../book/" + m["page"] + ">`", text)
    text = EXERCISE_NUMBER.sub(lambda m: m["open"], text)
    text = BOX_LABEL_INSIDE.sub(lambda m: "(" + m["label"] + ")=\n" + m["open"], text)
    return FIGURE.sub(lambda m: m["head"] + "../book/figures/" + m["name"] + ")", text)


def notebook_to_myst(source: str) -> str:
    """The text of a notebook (JSON) with every markdown cell passed through ``to_myst``."""
    nb = json.loads(source)
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = to_myst(text)
    return json.dumps(nb, ensure_ascii=False, indent=1)


def _source_read(app, docname: str, source: list[str]) -> None:
    if str(app.env.doc2path(docname)).endswith(".ipynb"):
        source[0] = notebook_to_myst(source[0])


def setup_source_read(app) -> None:
    app.connect("source-read", _source_read)
