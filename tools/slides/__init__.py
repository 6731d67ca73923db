"""The lecture slides, generated from the chapters (``make slides``).

``make_slides.py`` is the command: one deck per syllabus session, with speaker notes, in
``_build/slides/`` (offline HTML, MathJax and the diagrams beside it). ``chapter.py``
reads a chapter's cells into blocks (its lead, sections, figures, common-mistake boxes
with their fix and check, summary) and renders Markdown to HTML; ``lecture.py`` turns a
chapter's blocks into slides; ``deck.css`` and ``deck.js`` are the deck's style and its
keys (arrows, F for full screen). The slides are never edited by hand: a change to what a
slide says is a change to its chapter. It imports only ``book/_ext``'s MyST reader, not the
package (ARCHITECTURE.md).
"""
