"""A new gradebook without the venv's ``bin`` on PATH.

nbgrader creates ``gradebook.db`` by asking the ``alembic`` command on PATH for the
newest schema version (``nbgrader.api.get_alembic_version``). Run as
``.venv/bin/python tools/grade.py`` (``make grade``) or ``.venv/bin/nbgrader`` with the
venv not activated, there is no ``alembic`` on PATH, and the first grading of a course
without a gradebook fails with ``FileNotFoundError: 'alembic'``. ``use_this_python``
makes nbgrader read that version in this process, with this interpreter's alembic; it
is called by cli.main and by autograde.configure (so a course's nbgrader_config.py
sets it for a plain ``nbgrader autograde`` too).
"""

from __future__ import annotations


def alembic_head() -> str:
    """The newest revision of nbgrader's gradebook schema, read in this process: what
    ``alembic heads`` prints first for nbgrader's migrations."""
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    head = ScriptDirectory(ALEMBIC_DIR).get_current_head()
    if not head:
        raise RuntimeError(f"nbgrader's migrations in {ALEMBIC_DIR} have no head")
    return head


def use_this_python() -> None:
    """Make nbgrader create gradebooks with ``alembic_head`` instead of the ``alembic``
    command on PATH."""
    import nbgrader.api

    nbgrader.api.get_alembic_version = alembic_head
