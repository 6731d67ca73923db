"""The translator at the command line (aiayn-translate, python -m aiayn_helpers translate) and
the helpers a reader meets first: ah.translate's progress bar, ah.expect_error."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

import aiayn_helpers as ah
from aiayn_helpers.cli import main, read_lines, translate_main

BIN = Path(sys.executable).parent


class FakeStdin:
    def __init__(self, data: bytes, tty: bool = False):
        self.buffer, self._tty = io.BytesIO(data), tty

    def isatty(self) -> bool:
        return self._tty


@pytest.fixture(scope="module")
def english():
    """The shipped model's translations of three sentences, through the Python API."""
    model, tokenizer = ah.load_pretrained()
    german = ["Ein Mann fährt Fahrrad.", "Ein Hund läuft.", "Zwei Frauen spielen Fußball."]
    return dict(zip(german, ah.translate(model, tokenizer, german), strict=True))


def test_console_script_translates_standard_input(english):
    script = BIN / "aiayn-translate"
    if not script.exists():
        pytest.skip("the package is not installed with its console script (pip install -e .)")
    out = subprocess.run([str(script)], input="Ein Mann fährt Fahrrad.\n", capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout == english["Ein Mann fährt Fahrrad."] + "\n"
    assert out.stdout.startswith("A man")  # an English sentence, not an echo


def test_arguments_file_and_module_entry_give_the_same_lines(english, tmp_path, capsys, monkeypatch):
    german = list(english)
    assert translate_main(german) == 0
    assert capsys.readouterr().out.splitlines() == [english[s] for s in german]
    path = tmp_path / "de.txt"
    path.write_text("\n".join(german) + "\n", encoding="utf-8")
    assert main(["translate", "--input", str(path), "--beam-size", "1"]) == 0
    greedy = capsys.readouterr().out.splitlines()
    assert len(greedy) == 3 and all(line.strip() for line in greedy)
    monkeypatch.setattr(sys, "stdin", FakeStdin("\n".join(german).encode()))
    assert translate_main([]) == 0
    assert capsys.readouterr().out.splitlines() == [english[s] for s in german]


def test_bad_lines_are_reported_and_the_others_translated(english, capsys, monkeypatch):
    data = "Ein Hund läuft.\n\n".encode() + b"\xff\xfe kaputt\n" + "Ein Mann fährt Fahrrad.\n".encode()
    monkeypatch.setattr(sys, "stdin", FakeStdin(data))
    assert translate_main([]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [english["Ein Hund läuft."], "", "", english["Ein Mann fährt Fahrrad."]]
    assert "line 2 is empty" in captured.err
    assert "line 3 is not valid UTF-8" in captured.err


def test_each_argument_is_one_sentence_and_bad_ones_are_reported(english, capsys):
    """An empty argument, one that is not UTF-8 (the shell's bytes, as Python passes them
    on: a surrogate escape) and a trailing empty one keep their place in the output."""
    args = ["Ein Hund läuft.", "", "Ein Mann\nfährt Fahrrad.", "kaputt \udcff", " "]
    assert translate_main(args) == 1
    captured = capsys.readouterr()
    assert captured.out.split("\n") == [english["Ein Hund läuft."], "", english["Ein Mann fährt Fahrrad."], "", "", ""]
    assert "argument 2 is empty" in captured.err and "argument 5 is empty" in captured.err
    assert "argument 4 is not valid UTF-8" in captured.err


def test_usage_errors_exit_with_status_2(tmp_path, capsys, monkeypatch):
    with pytest.raises(SystemExit) as missing:
        translate_main(["--input", str(tmp_path / "missing.txt")])
    assert missing.value.code == 2 and "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as folder:
        translate_main(["--input", str(tmp_path)])
    assert folder.value.code == 2 and "is a folder; --input takes a file" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", FakeStdin(b"", tty=True))
    with pytest.raises(SystemExit) as nothing:
        translate_main([])
    assert nothing.value.code == 2 and "no sentences" in capsys.readouterr().err
    assert translate_main(["--beam-size", "0", "Ein Hund läuft."]) == 2
    assert "beam_size must be a positive int" in capsys.readouterr().err
    assert main(["frobnicate"]) == 2


def test_read_lines_keeps_line_numbers():
    lines, problems = read_lines(b"a\n \nb\xff\n")
    assert lines == ["a", None, None]
    assert [p.split()[1] for p in problems] == ["2", "3"]
    assert read_lines([b"a", b""], what="argument") == (["a", None], ["argument 2 is empty; left empty"])


def test_translate_shows_a_progress_bar_only_when_asked(capsys):
    model, tokenizer = ah.load_pretrained()
    ah.translate(model, tokenizer, ["Ein Hund läuft.", "Ein Mann fährt Fahrrad."], batch_size=1, progress=True)
    assert "translate" in capsys.readouterr().err  # tqdm's bar, on standard error
    ah.translate(model, tokenizer, ["Ein Hund läuft."])
    assert capsys.readouterr().err == ""


def test_translate_defaults_come_from_the_model_config():
    model, tokenizer = ah.load_pretrained()
    assert set(model.decoding_defaults) == {"beam_size", "length_penalty"}
    german = ["Eine Frau mit einem roten Hut sitzt auf einer Bank im Park."]
    by_default = ah.translate(model, tokenizer, german)
    assert by_default == ah.translate(model, tokenizer, german, **model.decoding_defaults)


def test_expect_error_prints_the_error_and_fails_when_nothing_is_raised(capsys):
    with ah.expect_error(AssertionError, match="sum to one"):
        raise AssertionError("weights do not sum to one")  # (pytest rewrites a plain assert's message)
    assert capsys.readouterr().out == "AssertionError: weights do not sum to one\n"
    with pytest.raises(AssertionError, match="ran without an error"):
        with ah.expect_error(ValueError):
            pass
    with pytest.raises(KeyError):  # another error type is not swallowed
        with ah.expect_error(ValueError):
            raise KeyError("x")
    with pytest.raises(AssertionError, match="saying"):
        with ah.expect_error(ValueError, match="shape"):
            raise ValueError("dtype")
    with pytest.raises(ValueError, match="exception class"):
        ah.expect_error("ValueError")


def readme_examples(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The README's "Translate a sentence" examples: ``ah.translate`` calls with the output in the comment
    that follows, and console commands with the line they print."""
    section = text.split("## Translate a sentence", 1)[1].split("\n## ", 1)[0]
    python = re.findall(r"```python\n(.*?)```", section, re.S)
    console = re.findall(r"```console\n(.*?)```", section, re.S)
    assert len(python) == 1 and len(console) == 1, "the section shows one Python and one command-line example"
    lines = console[0].splitlines()
    commands = [(line[2:], lines[i + 1]) for i, line in enumerate(lines[:-1]) if line.startswith("$ ")]
    return python[0].splitlines(), [(cmd, out) for cmd, out in commands if not out.startswith("$ ")]


def test_the_readme_and_the_introduction_show_real_translations(capsys, monkeypatch):
    """The README's and the introduction's examples print what they say. The commands run in this process
    (`aiayn-translate` is `translate_main`, `python -m aiayn_helpers` is `main`; test_console_script_translates_
    standard_input runs the installed script itself), so the model is loaded once."""
    import ast
    import shlex

    root = Path(__file__).resolve().parents[1]
    python, commands = readme_examples((root / "README.md").read_text())
    model, tokenizer = ah.load_pretrained()
    intro = re.search(
        r"ah\.translate\(model, tokenizer, (\[.*?\])\)  # (\[.*?\])", (root / "book" / "intro.md").read_text()
    )
    calls = [(intro[1], intro[2])] + [
        (re.match(r"ah\.translate\(model, tokenizer, (\[.*\])\)$", line)[1], python[i + 1].lstrip("# "))
        for i, line in enumerate(python)
        if line.startswith("ah.translate(")
    ]
    for german, expected in calls:
        assert ah.translate(model, tokenizer, ast.literal_eval(german)) == ast.literal_eval(expected), german
    assert len(commands) == 2, commands
    monkeypatch.setattr(ah, "load_pretrained", lambda name="multi30k": (model, tokenizer))
    monkeypatch.setattr("aiayn_helpers.pretrained.load_pretrained", ah.load_pretrained)
    for command, printed in commands:
        if command.startswith("echo "):
            echoed, command = command.split(" | ", 1)
            monkeypatch.setattr(sys, "stdin", FakeStdin((shlex.split(echoed)[1] + "\n").encode()))
        argv = shlex.split(command)
        if argv[0] == ".venv/bin/aiayn-translate":
            status = translate_main(argv[1:])
        else:
            assert argv[:3] == [".venv/bin/python", "-m", "aiayn_helpers"], command
            status = main(argv[3:])
        assert (status, capsys.readouterr().out) == (0, printed + "\n"), command
