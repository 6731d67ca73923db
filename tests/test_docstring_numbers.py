"""Every number in the API page's docstrings comes from the code it documents.

book/api.md prints the docstring of each public name (``autofunction``, ``autoclass``
and their ``:members:``). A docstring's numbers are defaults ("beam 4 and alpha 0.6
for a model without them"), the paper's settings ("N = 6 in the paper") and worked
examples ("12 heads: ... 2^-2.5, 2^-3.5"). tests/test_page_numbers.py reads the
pages around the chapters; this test reads these docstrings the same way (its
``page_numbers``: not a year, a version, or a number that names something) and fails
on a number that the code does not hold, so that a default changed in the code and
not in its description fails here.

A number of a docstring's prose must be held by the code of the object itself, with
every docstring and comment taken out (the docstring being checked would otherwise be
its own source): a default, a constant, a formula's factor. A number inside inline code
(``beam_size=1``, ``2^(-8/n)``, a shape) may also be held by its module's code or by
``aiayn_helpers/config.py`` (the paper's settings, table 3 and section 5). "15%"
counts as 0.15; a number that is part of a name (SHA-256, GPT-2, sacreBLEU's 13a) is
not a quantity. A number held nowhere in that code may stay only where ``TRACED``
names the file and pattern that holds it (the paper's setting, a quotation of the
paper, a measurement, a helper the object calls) or ``WORKED`` computes it from the
package itself.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import math
import re
import textwrap
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
import torch
from test_page_numbers import _add, backed, page_numbers

import aiayn_helpers as ah
from aiayn_helpers import vocab

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "book" / "api.md"
DIRECTIVE = re.compile(r"^\.\. auto(?:function|class):: (\S+)\n(?:\s+:members: (.*)\n)?", re.M)
PERCENT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*%")
NAME = re.compile(r"\b[A-Za-z]+-\d+\b|(?<![\w.])\d+[a-z](?![-+\w])")  # SHA-256, GPT-2, 13a
INLINE = re.compile(r"``[^`]*``|:[\w:]+:`[^`]*`")  # ``code`` and :func:`role`
DECODING = ("aiayn_helpers/decoding.py", r"\.sum\(dim=1\)\.clamp\(min=1\) \+ 50\n")

# (name, number as written): (file, pattern) -- a number the documented object's code
# does not hold; the pattern must match the file, with the number in it
TRACED: dict[tuple[str, str], tuple[str, str]] = {
    # "N = 6 in the paper": the paper's base model, config.py's BASE
    ("aiayn_helpers.Encoder", "6"): ("aiayn_helpers/config.py", r"num_layers: int = 6\n"),
    ("aiayn_helpers.Decoder", "6"): ("aiayn_helpers/config.py", r"num_layers: int = 6\n"),
    # the paper's words, which chapter 7 quotes (section 5.1)
    ("aiayn_helpers.data.length_batches", "25000"): (
        "notebooks/07_full_model.ipynb",
        r"approximately 25000\\n\",\n\s*\"> source tokens and 25000 target tokens. . "
        r"\[Vaswani et al. \(2017\)\]",
    ),
    # "source length + 50": the budget of the helper they decode with
    ("aiayn_helpers.greedy_decode", "50"): DECODING,
    ("aiayn_helpers.beam_search", "50"): DECODING,
    ("aiayn_helpers.translate", "50"): DECODING,
    # "replaced by mask_id 80% of the time, by a random token 10% ...": the package's
    # test of mask_tokens measures both shares (of about 7,500 chosen tokens)
    **{
        ("aiayn_helpers.mask_tokens", share): (
            "tests/test_descendants.py",
            r"abs\(masked - 0.8\) < 0.02 and abs\(replaced - 0.1\) < 0.02",
        )
        for share in ("0.8", "0.1")
    },
    # "two notebooks with 2 threads each on 2 cores ran several times slower"
    ("aiayn_helpers.setup_notebook", "2"): (
        "book/instructor_guide.md",
        r"1,153\.7 s with two threads each and 142\.2 s with one thread each",
    ),
}


def _alibi() -> set[float]:
    """The numbers of alibi_slopes' example: 8 heads end at 1/256; 12 heads are 8
    heads' slopes, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5."""
    eight, twelve = ah.alibi_slopes(8), ah.alibi_slopes(12)
    found = {float(len(eight)), float(len(twelve)), 1 / float(eight[-1])}
    if torch.equal(twelve[:8], eight):
        found |= set(torch.log2(twelve[8:]).tolist())
    return found


def _diagonal() -> set[float]:
    """alibi_bias' "0 on the diagonal", for as many queries as keys and for fewer."""
    square, last = ah.alibi_bias(4, 5, 5), ah.alibi_bias(4, 2, 5)
    on_diagonal = torch.cat(
        [square.diagonal(dim1=1, dim2=2).flatten(), last[:, :, 3:].diagonal(dim1=1, dim2=2).flatten()]
    )
    return set(on_diagonal.tolist())


def _specials() -> set[float]:
    """train_bpe's "<pad> <bos> <eos> <unk> at ids 0-3"."""
    ids = [vocab.PAD_ID, vocab.BOS_ID, vocab.EOS_ID, vocab.UNK_ID]
    names = ["<pad>", "<bos>", "<eos>", "<unk>"]
    return {0.0, 3.0} if ids == [0, 1, 2, 3] and vocab.SPECIAL_TOKENS == names else set()


def _signature() -> set[float]:
    """translate_and_score's "default 13a tokenisation, cased": the signature of the
    sacreBLEU BLEU() it scores with."""
    from sacrebleu.metrics import BLEU

    metric = BLEU()
    metric.corpus_score(["a cat"], [["a cat"]])
    return {13.0} if re.search(r"\|case:mixed\|.*\|tok:13a\|", str(metric.get_signature())) else set()


# (name, number as written): what the package gives for the docstring's example
WORKED: dict[tuple[str, str], Callable[[], set[float]]] = {
    **{("aiayn_helpers.alibi_slopes", n): _alibi for n in ("256", "12", "8", "-0.5", "-1.5", "-2.5", "-3.5")},
    ("aiayn_helpers.alibi_bias", "0"): _diagonal,
    ("aiayn_helpers.data.train_bpe", "0"): _specials,
    ("aiayn_helpers.data.train_bpe", "3"): _specials,
}


def documented() -> list[str]:
    """The dotted names whose docstrings the API page prints, in its order."""
    names = []
    for name, members in DIRECTIVE.findall(API.read_text()):
        names.append(name)
        names += [f"{name}.{m.strip()}" for m in members.split(",") if m.strip()]
    return names


def resolve(name: str):
    parts = name.split(".")
    obj = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], start=2):
        if hasattr(obj, part):
            obj = getattr(obj, part)
        else:
            obj = importlib.import_module(".".join(parts[:i]))
    return obj.fget if isinstance(obj, property) else obj


def code_only(source: str) -> str:
    """Python source without its docstrings and comments."""
    tree = ast.parse(textwrap.dedent(source))
    for node in ast.walk(tree):
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        if isinstance(node, kinds) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    node.body[0] = ast.Pass()
    return ast.unparse(tree)  # comments are not in the tree


def numbers_of(code: str) -> frozenset[float]:
    found: set[float] = set()
    _add(found, code_only(code))
    return frozenset(found)


@cache
def numbers_of_file(path: Path) -> frozenset[float]:
    return numbers_of(path.read_text())


def docstring_numbers(doc: str) -> tuple[list[str], list[str]]:
    """The numbers of the docstring's prose and of its inline code; a percentage as the
    fraction it is (15% is 0.15); no number that is part of a name."""
    doc = NAME.sub(" ", PERCENT.sub(lambda m: repr(float(m.group(1)) / 100), doc))
    inline = " ".join(m.group(0).strip(":`") for m in INLINE.finditer(doc))
    return page_numbers(INLINE.sub(" ", doc)), page_numbers(inline)


def unsourced(name: str, doc: str, own, near) -> list[str]:
    """The docstring's numbers that ``own`` (the object's code) does not hold, nor
    ``near`` (its module's and config.py's) for those in inline code, nor an entry of
    TRACED or WORKED."""
    in_prose, in_code = docstring_numbers(doc)
    explained = TRACED.keys() | WORKED.keys()
    missing = [t for t in in_prose if not backed(t, own)]
    missing += [t for t in in_code if not backed(t, own | near)]
    return [t for t in missing if (name, t) not in explained]


NAMES = documented()


def test_the_api_page_documents_the_public_names():
    assert len(NAMES) >= 60, NAMES
    assert "aiayn_helpers.Transformer.encode" in NAMES  # a :members: entry


@pytest.mark.parametrize("name", NAMES)
def test_every_number_in_a_docstring_is_in_its_code(name):
    obj = resolve(name)
    doc = inspect.getdoc(obj) or ""
    assert doc, f"{name} is on the API page with no docstring"
    module = Path(inspect.getsourcefile(obj))
    near = numbers_of_file(module) | numbers_of_file(ROOT / "aiayn_helpers" / "config.py")
    missing = unsourced(name, doc, numbers_of(inspect.getsource(obj)), near)
    assert not missing, (
        f"{name}'s docstring writes numbers that its code does not hold (a default "
        f"changed in the code only?): {missing}; correct the docstring, or trace the "
        f"number in TRACED or WORKED"
    )


def written(name: str) -> list[str]:
    return [t for part in docstring_numbers(inspect.getdoc(resolve(name))) for t in part]


@pytest.mark.parametrize("key", sorted(TRACED))
def test_a_traced_number_is_still_written_and_still_in_its_source(key):
    name, number = key
    assert number in written(name), f"{key} is stale: the docstring no longer writes it"
    path, pattern = TRACED[key]
    assert number in pattern, (key, pattern)
    assert re.search(pattern, (ROOT / path).read_text()), (
        f"{name} writes {number} as {path} has it, which no longer matches {pattern!r}"
    )


@pytest.mark.parametrize("key", sorted(WORKED))
def test_a_worked_example_is_what_the_package_gives(key):
    name, number = key
    assert number in written(name), f"{key} is stale: the docstring no longer writes it"
    given = WORKED[key]()
    assert backed(number, {round(v, 9) for v in given}), (
        f"{name}'s docstring works out {number}; the package gives {sorted(given)}"
    )


def test_the_example_of_alibi_is_the_slopes_in_order():
    """The docstring's 12-head example, in its order (the sets above do not see it)."""
    expected = [-(i + 1) for i in range(8)] + [-0.5, -1.5, -2.5, -3.5]
    assert torch.log2(ah.alibi_slopes(12)).tolist() == pytest.approx(expected)


def test_the_check_catches_a_default_changed_in_the_code_only():
    def beam(sentences, beam_size=5, alpha=0.6):
        """Beam search; the paper's beam 4 and alpha 0.6, ``2 * beam_size`` looked at,
        15% of the time, in 2017, SHA-256 checked, GPT-2's choice, eps 1e-9, 13a."""
        return sentences, beam_size, alpha

    own = numbers_of(inspect.getsource(beam))
    assert 4.0 not in own and 5.0 in own  # the docstring is not its own source
    doc = inspect.getdoc(beam)
    assert unsourced("beam", doc, own, frozenset()) == ["4", "0.15", "1e-9", "2"]
    assert unsourced("beam", doc, own, frozenset({2.0})) == ["4", "0.15", "1e-9"]  # module's 2
    assert unsourced("beam", doc, own | {0.15, 1e-9}, frozenset({4.0, 2.0})) == ["4"]  # prose
    assert math.isclose(float(docstring_numbers("p = 15%")[0][0]), 0.15)
