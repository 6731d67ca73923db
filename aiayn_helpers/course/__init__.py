"""The course around the model: what the chapters use to check a reader's work.

The paper's Transformer is in the package's top level (attention, positional, layers,
model, ...); nothing there imports this subpackage. Here:

* :mod:`~aiayn_helpers.course.exercises`: ``check``, the check cells' judge of an
  exercise's answer, with ``Reference`` and ``OneOf`` for what counts as right;
* :mod:`~aiayn_helpers.course.answer_keys`: the answers, encoded so that a glance at a
  check cell does not give them away;
* :mod:`~aiayn_helpers.course.quizzes`: the self-check quizzes at each chapter's end;
* :mod:`~aiayn_helpers.course.reference`: copying PyTorch's reference modules'
  weights into the package's, so that the chapters can compare the two;
* :mod:`~aiayn_helpers.course.diagnoses`: for each exercise, the common slips it
  recognises and what to say about each.
"""
