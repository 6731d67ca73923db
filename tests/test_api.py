"""The package's public API: one name, one thing, and a table in its docstring that says
what each name takes and returns.

``python tests/test_api.py`` rewrites the table in ``aiayn_helpers/__init__.py`` from the
real signatures; the test fails while the table and the code disagree.
"""

from __future__ import annotations

import importlib.util
import inspect
import pkgutil
import re
import sys
import textwrap
from pathlib import Path

import aiayn_helpers as ah

INIT = Path(ah.__file__)
BEGIN = "The public API, ``ah.<name>(arguments in order) -> what it returns``"
END = "(End of the table; ``python tests/test_api.py`` rewrites it from the code.)"
WIDTH = 88


def _arguments(sig: inspect.Signature) -> str:
    parts, star = [], False
    for p in sig.parameters.values():
        if p.name == "self":
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{p.name}")
            star = True
        elif p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}")
        else:
            parts.append(p.name if p.default is p.empty else f"{p.name}=")
    return ", ".join(parts)


def api_entry(name: str) -> str:
    """One line of the table for ``ah.<name>``: its arguments and its return type."""
    obj = getattr(ah, name)
    if inspect.isclass(obj):
        sig = inspect.signature(obj.__init__)
        returns = name
    else:
        sig = inspect.signature(obj)
        ann = sig.return_annotation
        returns = "None" if ann is None else (ann if isinstance(ann, str) else ann.__name__)
        if ann is sig.empty:
            raise AssertionError(f"ah.{name} has no return annotation")
    return f"{name}({_arguments(sig)}) -> {returns}"


def api_table() -> str:
    """The table as it stands in the docstring: wrapped to 88 columns, four-space indent."""
    lines = []
    for name in ah.__all__:
        wrapped = textwrap.wrap(api_entry(name), WIDTH - 4, subsequent_indent="        ", break_on_hyphens=False)
        lines += ["    " + w for w in wrapped]
    return "\n".join(lines)


def _docstring_table() -> str:
    doc = ah.__doc__ or ""
    start, end = doc.find(BEGIN), doc.find(END)
    assert start >= 0 and end > start, f"the package docstring lacks the API table ({BEGIN!r})"
    body = doc[start:end].split("\n", 3)[3]  # after the two heading lines and a blank line
    return body.strip("\n")


def test_docstring_table_matches_the_signatures():
    expected, found = api_table(), _docstring_table()
    assert found == expected, (
        "the API table in aiayn_helpers/__init__.py disagrees with the code; "
        "run `python tests/test_api.py` to rewrite it"
    )


def test_every_documented_name_is_public_and_every_public_name_documented():
    names = re.findall(r"^    (\w+)\(", _docstring_table(), flags=re.M)
    assert names == list(ah.__all__)


def test_no_public_name_hides_a_module():
    """``ah.translate`` is a function; no submodule may share a public name."""
    modules = {m.name for m in pkgutil.iter_modules(ah.__path__)}
    assert not modules & set(ah.__all__), f"public names that are also modules: {modules & set(ah.__all__)}"
    for name in ah.__all__:
        assert importlib.util.find_spec(f"aiayn_helpers.{name}") is None, name


def test_one_translate():
    """One public function named translate, in translation.py; no other module defines one."""
    assert ah.translate.__module__ == "aiayn_helpers.translation"
    for path in Path(ah.__file__).parent.glob("*.py"):
        if path.name != "translation.py":
            assert not re.search(r"^def translate\(", path.read_text(encoding="utf-8"), re.M), path


def test_max_len_is_a_parameter_of_one_module_only():
    """``max_len`` means the size of the sinusoidal/learned position table, in positional.py."""
    holders = set()
    for name in dir(ah):
        obj = getattr(ah, name)
        targets = [obj.__init__] if inspect.isclass(obj) else [obj] if callable(obj) else []
        for target in targets:
            try:
                params = inspect.signature(target).parameters
            except (TypeError, ValueError):
                continue
            if "max_len" in params:
                holders.add(getattr(obj, "__module__", "?"))
    assert holders == {"aiayn_helpers.positional"}, holders


def _rewrite() -> None:
    text = INIT.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END)
    head = text[start:].split("\n", 3)
    new = "\n".join(head[:3]) + "\n" + api_table() + "\n\n"
    INIT.write_text(text[:start] + new + text[end:], encoding="utf-8")


if __name__ == "__main__":
    _rewrite()
    sys.exit(0)


def test_every_chapter_links_the_package_names_it_uses():
    """Each chapter's "In the package" paragraph links every public name its code uses."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    try:
        from chapters import api_links
    finally:
        sys.path.pop(0)
    assert api_links.main(["--check"]) == 0, "run `python tools/chapters/api_links.py`"
