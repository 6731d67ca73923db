"""Grading a term's assignments, one module per stage, in the order a term uses them.

collect   a course platform's zip into ``<course>/submitted/`` (``make collect``)
roster    who the students are: the platform's id, the display name, the email
repair    each submission made gradable (misnamed notebook, stripped metadata)
sandbox   the bubblewrap sandbox a submission's code runs in
autograde nbgrader's autograde with the execution in the sandbox; feedback
decisions due dates and the late policy (book/autograder/deadlines.toml)
cli       ``make grade`` (tools/grade.py): the stages above for one assignment
"""
