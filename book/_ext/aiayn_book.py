"""The book's own Sphinx extension (loaded through `local_extensions` in _config.yml).

1. Directives that render the instructor guide's tables from measured data.

``{syllabus}`` maps sessions to chapters; ``{notebook-times}`` lists every notebook.
Both read ``book/notebook_times.json``, which ``tools/chapters/execute_notebooks.py``
writes each time it executes a notebook, so no time in the guide is typed by hand.
Chapters are named by their number prefix (``02`` finds ``notebooks/02_*.ipynb``),
so a notebook that does not exist yet is shown as "in preparation" instead of
a broken link, and a new notebook is picked up on the next build.

Each notebook has two figures: ``seconds``, alone with the book's default thread
setting, and ``seconds_two_at_once``, while a second notebook runs on the same
machine (a shared classroom server); a figure not measured yet says so. The
run-time table also shows ``cpu_seconds``, the kernel's CPU time in the first run
(what the notebook takes on a core of its own, whatever else the machine ran), and
``peak_memory_mb``, the peak resident memory of its kernel, with the largest in its
last row: what a classroom hub must give each student.

2. Exercise numbers per chapter. sphinx-exercise numbers exercises across the whole
book (the third chapter's first exercise would be "Exercise 10"); the notebooks'
answer cells say "Exercise 3.1" (``aiayn_helpers.course.exercises.exercise_name``). After
Sphinx assigns its numbers, every exercise of ``notebooks/NN_*`` becomes ``N.k``
(``A.k`` for the appendix), so a reference reads "Exercise 3.1" as in the notebook.

3. A fix for a script that Jupyter Book 1 emits twice on notebook pages
(sphinx-thebe's `const THEBE_JS_URL = ...`): the second copy is a JavaScript
error ("Identifier 'THEBE_JS_URL' has already been declared") on every page.

4. The site's layout (``book/_static/aiayn.css``, on every page) and one search box:
pydata-sphinx-theme 0.17 puts a search field in the page header unless
``navbar_persistent`` is set, and sphinx-book-theme already has one at the top of its
sidebar, so a reader saw two; setting it empty keeps the sidebar's (and the small search
button of a phone's article header). Jupyter Book 1 does not pass theme options through
``_config.yml``'s ``html:`` section, so it is set here.

5. The chapters' figures, citations and links as JupyterLab follows them (the folder
``notebooks/figures``, links into ``notebooks/bibliography.md`` and ``api.md``) are read
back as the MyST roles the site is built from (``notebook_markdown.py``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx import addnodes
from sphinx.util.docutils import SphinxDirective

TIMES_FILE = "book/notebook_times.json"


def _format_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "not measured yet"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


class _TimesMixin(SphinxDirective):
    def times(self) -> dict[str, dict]:
        path = Path(self.env.srcdir) / TIMES_FILE
        self.env.note_dependency(str(path))
        if not path.exists():
            return {}
        return json.loads(path.read_text(encoding="utf-8"))

    def notebooks(self) -> list[Path]:
        folder = Path(self.env.srcdir) / "notebooks"
        for nb in folder.glob("*.ipynb"):
            self.env.note_dependency(str(nb))
        return sorted(folder.glob("*.ipynb"))

    def chapter_link(self, nb: Path) -> nodes.Node:
        docname = f"notebooks/{nb.stem}"
        if docname in self.env.found_docs:
            ref = addnodes.pending_xref(
                "", refdomain="std", reftype="doc", reftarget="/" + docname, refexplicit=False, refwarn=True
            )
            ref += nodes.inline(docname, docname)
            return ref
        return nodes.literal(nb.name, nb.name)

    @staticmethod
    def table(header: list[str], rows: list[list[nodes.Node | str]], widths: list[int]) -> nodes.table:
        table = nodes.table(classes=["colwidths-auto"])
        group = nodes.tgroup(cols=len(header))
        table += group
        for w in widths:
            group += nodes.colspec(colwidth=w)
        thead = nodes.thead()
        group += thead
        tbody = nodes.tbody()
        group += tbody
        for target, cells in ((thead, [header]), (tbody, rows)):
            for cells_row in cells:
                row = nodes.row()
                for cell in cells_row:
                    entry = nodes.entry()
                    para = nodes.paragraph()
                    for part in cell if isinstance(cell, list) else [cell]:
                        para += nodes.Text(part) if isinstance(part, str) else part
                    entry += para
                    row += entry
                target += row
        return table


KEYS = ("seconds", "seconds_two_at_once")  # alone (default threads), two notebooks at once


def _sum(entries: list[dict | None], key: str) -> float | None:
    """The total of ``key`` over ``entries``, or None when any of them lacks it."""
    values = [e.get(key) if e else None for e in entries]
    return None if not values or any(v is None for v in values) else float(sum(values))


def _format_memory(megabytes: float | None) -> str:
    return "not measured yet" if megabytes is None else f"{megabytes / 1000:.2f} GB"


def _largest(entries: list[dict | None], key: str) -> float | None:
    """The largest ``key`` over ``entries``, or None when any of them lacks it."""
    values = [e.get(key) if e else None for e in entries]
    return None if not values or any(v is None for v in values) else float(max(values))


class NotebookTimes(_TimesMixin):
    """One row per notebook: its link, its two measured execution times, its peak memory."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        times = self.times()
        rows, entries, measured = [], [], set()
        for nb in self.notebooks():
            entry = times.get(f"notebooks/{nb.name}")
            entries.append(entry)
            if entry:
                measured.add((entry.get("cpu_count"), entry.get("threads")))
            memory = _format_memory(entry.get("peak_memory_mb") if entry else None)
            seconds = [_format_seconds(entry.get(k) if entry else None) for k in (*KEYS, "cpu_seconds")]
            rows.append([self.chapter_link(nb), *seconds, memory])
        largest = "largest: " + _format_memory(_largest(entries, "peak_memory_mb"))
        totals = [_format_seconds(_sum(entries, k)) for k in (*KEYS, "cpu_seconds")]
        rows.append(["all notebooks", *totals, largest])
        header = ["Notebook", "Alone, default threads", "Two notebooks at once", "CPU time", "Peak memory"]
        table = self.table(header, rows, [32, 17, 17, 17, 17])
        machines = ", ".join(f"{c} CPU cores, {t} torch threads" for c, t in sorted(measured, key=str)) or "none yet"
        text = "Measured by tools/chapters/execute_notebooks.py (fresh kernel, CPU only) on: "
        text += f"{machines}."
        loads = [e["load_average"] for e in entries if e and "load_average" in e]
        if loads:  # how busy the machine was: wall-clock times grow with it
            text += (
                " The machine's 1-minute load average at the end of the runs alone was"
                f" {min(loads):.1f} to {max(loads):.1f}."
            )
        return [table, nodes.paragraph(text=text)]


class Syllabus(_TimesMixin):
    """Content: one session per line, ``number | topic | chapter prefixes | before the session``."""

    has_content = True
    option_spec = {"class": directives.class_option}

    def run(self) -> list[nodes.Node]:
        times = self.times()
        notebooks = self.notebooks()
        rows = []
        for line in self.content:
            if not line.strip():
                continue
            fields = [f.strip() for f in line.split("|")]
            if len(fields) != 4:
                raise self.error(f"syllabus line needs 4 fields separated by '|', got: {line!r}")
            number, topic, prefixes, before = fields
            links: list[nodes.Node | str] = []
            entries: list[dict | None] = []
            for prefix in prefixes.split():
                found = [nb for nb in notebooks if nb.name.startswith(prefix + "_")]
                if links:
                    links.append(", ")
                if not found:
                    links.append(f"chapter {prefix} (in preparation)")
                    entries.append(None)
                    continue
                for i, nb in enumerate(found):
                    if i:
                        links.append(", ")
                    links.append(self.chapter_link(nb))
                    entries.append(times.get(f"notebooks/{nb.name}"))
            rows.append([number, topic, links, *(_format_seconds(_sum(entries, k)) for k in KEYS), before])
        return [
            self.table(
                ["Session", "Topic", "Notebooks", "Run time alone", "Two at once", "Before the session"],
                rows,
                [7, 23, 26, 12, 12, 20],
            )
        ]


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree):
    """Keep the first of several identical <script> entries (same file, same inline body)."""
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen, unique = set(), []
    for js in scripts:
        attributes = getattr(js, "attributes", {}) or {}
        key = (str(getattr(js, "filename", js) or ""), tuple(sorted((k, str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    context["script_files"] = unique


def _chapter_of(docname: str) -> str | None:
    """``notebooks/03_multi_head_attention`` -> ``"3"``, ``notebooks/A_forward_pass_numpy`` -> ``"A"``."""
    m = re.fullmatch(r"notebooks/([0-9]+|[A-Z])_[^/]+", docname)
    if not m:
        return None
    return str(int(m[1])) if m[1].isdigit() else m[1]


def _number_exercises_by_chapter(app, env):
    """Renumber sphinx-exercise's exercises chapter by chapter: (chapter, k), shown as "Exercise 3.1"."""
    for docname, by_type in env.toc_fignumbers.items():
        chapter = _chapter_of(docname)
        numbers = by_type.get("exercise")
        if chapter is None or not numbers:
            continue
        ordered = sorted(numbers, key=lambda node_id: tuple(numbers[node_id]))
        by_type["exercise"] = {node_id: (chapter, k) for k, node_id in enumerate(ordered, start=1)}
    return []


def _one_search_box(app, config):
    """No search field in the page header: the sidebar's is the one (see the docstring)."""
    options = dict(config.html_theme_options or {})
    options.setdefault("navbar_persistent", [])
    config.html_theme_options = options


def setup(app):
    # the chapters' JupyterLab form of figures, citations and links, read back as MyST
    from notebook_markdown import setup_source_read

    setup_source_read(app)
    # the themes' pages made accessible, and the translator's file:// notice
    from site_fixes import setup as setup_site_fixes

    setup_site_fixes(app)
    app.connect("config-inited", _one_search_box)
    app.add_css_file("aiayn.css")
    app.add_directive("notebook-times", NotebookTimes)
    app.add_directive("syllabus", Syllabus)
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    # after Sphinx's own TocTreeCollector (priority 500) has assigned the figure numbers
    app.connect("env-get-updated", _number_exercises_by_chapter, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
