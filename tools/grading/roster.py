"""Who the students are: each keyed by an id nbgrader and a file system can take."""

from __future__ import annotations

import re


def student_id(text: str) -> str:
    """A name from a platform as an nbgrader student id: lower case, a-z 0-9 - _."""
    slug = re.sub(r"[^a-z0-9_]+", "-", text.lower()).strip("-_")
    if not slug:
        raise ValueError(f"expected a student's name or id, got {text!r}")
    return slug
