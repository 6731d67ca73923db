"""Grading a term's assignments, one module per stage, in the order a term uses them.

handin    the "Am I done?" cell make student adds to every released assignment
collect   a course platform's zip into ``<course>/submitted/`` (``make collect``)
roster    who the students are: the platform's id, the display name, the email
repair    each submission made gradable (misnamed notebook, stripped metadata)
folders   every student folder checked (a safe name, no links) before nbgrader sees it
sandbox   the bubblewrap sandbox a submission's code runs in: running it, reporting;
bwrap     its command line, environment and the checks that one can start;
limits    its limits: a uid and a cgroup of its own, sizes
budget    the total grading time of one student's submission
kernel    the copy a submission's kernel runs: the hidden tests as code objects, in a
          namespace of the grader's that no name of the student reaches
verdict   each hidden test judged in the grader's process, from data the sandbox sends
outputs   the outputs a sandbox sends back, merged into the grader's copy
autograde nbgrader's autograde with the execution in the sandbox; feedback
confine   nbgrader's own processing of one submission in a child process under
          limits of its own (memory, CPU, time), and reading a notebook so
workers   a class shared among workers, a confined child per student
gradebook a new gradebook made without the venv's bin on PATH
cli       ``make grade`` (tools/grade.py): the stages above for one assignment
decisions due dates and the late policy (book/autograder/deadlines.toml);
          extensions and manual grades (_grading/decisions.toml)
feedback  the grade that goes back to the platform, at the top of each feedback page
export    grades.csv and term-grades.csv, and grades and feedback in the platforms'
          import formats (``make export``)
"""
