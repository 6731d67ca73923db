"""Each feedback page says the grade that goes back to the course platform.

nbgrader's feedback page (``make grade GRADE_FLAGS=--feedback``) heads itself with
the autograded score. The grade the platform gets can differ: the late policy
takes its share off, and the instructor's decisions (decisions.py) replace the
score or add or take off points, each with a reason, or move the due date. So
``make grade --feedback`` and ``make export`` put a box at the top of every page
in ``<course>/feedback/<student>/<assignment>/``: that grade, out of the
assignment's points, and each step from the autograded score to it, the reasons
quoted. Running either again replaces the box, so a page says the grade of the
latest decisions; the Moodle feedback zip and the pages uploaded by hand (Canvas)
carry it.
"""

from __future__ import annotations

import html
import re
from pathlib import Path


def number(x: float | None) -> str:
    """A score for a page or a CSV: rounded to 2 decimals, no float noise (2.4,
    not 2.4000000000000004); '' for none."""
    if x is None:
        return ""
    text = f"{round(x, 2):.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


BOX = re.compile(r"<!-- grade returned -->.*?<!-- /grade returned -->\n?", re.S)


def grade_box(row: dict) -> str:
    """The HTML box a feedback page opens with: the grade the platform gets."""
    out = number(row["max_score"])
    extension = [d for d in row["decided"] if d.startswith("Extension")]
    lines = []
    if row["autograded_score"] is not None:
        raw, late = row["raw_score"], row["late_submission_penalty"]
        lines.append(f"Autograded (the hidden tests): {number(raw)} of {out}")
        lines += extension
        if late:
            due = row["due_for_student"]
            when = f" (due {due:%Y-%m-%d %H:%M} UTC)" if due else ""
            lines.append(f"Late penalty{when}: -{number(late)}")
    lines += [d for d in row["decided"] if d not in extension]  # with reasons
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    title = f"Your grade for {row['assignment']}: {number(row['score'])} of {out}"
    return (
        '<!-- grade returned -->\n<div class="panel panel-primary" id="grade">'
        f'<div class="panel-heading"><h4>{html.escape(title)}</h4></div>'
        '<div class="panel-body"><p>This is the grade that goes back to the '
        f"course page.</p><ul>{items}</ul></div></div>\n<!-- /grade returned -->\n"
    )


def stamp_feedback(course: Path, rows: list[dict]) -> int:
    """Put ``grade_box`` at the top of each feedback page of ``rows`` (replacing
    the box an earlier run put there); the number of pages."""
    count = 0
    for row in rows:
        pages = course / "feedback" / row["student_id"] / row["assignment"]
        for page in sorted(pages.glob("*.html")) if row["score"] is not None else []:
            text = BOX.sub("", page.read_text(encoding="utf-8"))
            body = re.search(r"<body[^>]*>\n?", text)
            at = body.end() if body else 0
            page.write_text(text[:at] + grade_box(row) + text[at:], encoding="utf-8")
            count += 1
    return count
