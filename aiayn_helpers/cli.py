"""The book's translator at the command line.

    aiayn-translate "Ein Mann fährt Fahrrad."            # sentences as arguments
    echo "Ein Hund läuft." | aiayn-translate             # or one per line on stdin
    aiayn-translate --input german.txt > english.txt     # or from a file
    python -m aiayn_helpers translate "Ein Hund läuft."  # the same, without the script

With ``--input`` a progress bar goes to standard error.

One translation is printed per input sentence, in order. Beam size and length penalty
default to the shipped model's own (chosen on the validation split, see its
``config.json``). A line (or argument) that is empty or not UTF-8 is reported on
standard error by its number and left empty in the output, so that the output still
lines up with the input; the others are translated, and the exit status is then 1. A
missing file or a bad option is exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path


def translate_parser(prog: str = "aiayn-translate") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "sentences", nargs="*", help="German sentences (default: read standard input)"
    )
    p.add_argument(
        "-i",
        "--input",
        type=Path,
        default=None,
        help="a UTF-8 file, one German sentence per line",
    )
    p.add_argument(
        "--model", default="multi30k", help="a shipped model's name (default: multi30k)"
    )
    p.add_argument(
        "--beam-size",
        type=int,
        default=None,
        help="1 is greedy decoding (default: the model's)",
    )
    p.add_argument(
        "--length-penalty",
        type=float,
        default=None,
        help="GNMT alpha (default: the model's)",
    )
    p.add_argument(
        "--batch-size",
        type=int,
        default=32,
        help="sentences translated together (default: 32)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="PyTorch CPU threads (default: PyTorch's choice)",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar on standard error (default: on for --input when stderr is "
        "a terminal)",
    )
    return p


def read_lines(
    data: bytes | Sequence[bytes], what: str = "line"
) -> tuple[list[str | None], list[str]]:
    """``(lines, problems)``: the decoded lines (``None`` if unusable), the problems.

    ``data`` is the bytes of a file (split into lines here) or the lines themselves;
    ``what`` names one in the problems ("line 3 is empty", "argument 2 is ...").
    """
    lines: list[str | None] = []
    problems = []
    rows = data.splitlines() if isinstance(data, bytes) else data
    for number, raw in enumerate(rows, start=1):
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError as err:
            problems.append(
                f"{what} {number} is not valid UTF-8 "
                f"({err.reason} at byte {err.start}); left empty"
            )
            lines.append(None)
            continue
        if not text:
            problems.append(f"{what} {number} is empty; left empty")
            lines.append(None)
        else:
            lines.append(text)
    return lines, problems


def translate_main(
    argv: Sequence[str] | None = None, prog: str = "aiayn-translate"
) -> int:
    """Run the translator; return 0 (all translated), 1 (lines skipped) or 2 (usage)."""
    parser = translate_parser(prog)
    args = parser.parse_args(argv)
    if args.sentences and args.input is not None:
        parser.error("give sentences as arguments or --input FILE, not both")
    if args.input is not None:
        try:
            data = args.input.read_bytes()
        except FileNotFoundError:
            parser.error(f"no such file: {args.input}")
        except IsADirectoryError:
            parser.error(f"{args.input} is a folder; --input takes a file")
        except OSError as err:
            parser.error(f"cannot read {args.input}: {err.strerror or err}")
        lines, problems = read_lines(data)
    elif args.sentences:
        # one sentence per argument (its line breaks made spaces), as the shell passed
        # its bytes, so that an argument that is not UTF-8 is reported, not a traceback
        rows = [os.fsencode(" ".join(s.split())) for s in args.sentences]
        lines, problems = read_lines(rows, what="argument")
    elif sys.stdin.isatty():
        parser.error(
            "no sentences: give them as arguments, with --input FILE, or on standard "
            "input"
        )
    else:
        lines, problems = read_lines(sys.stdin.buffer.read())
    if not lines:
        parser.error("the input holds no lines to translate")
    progress = (
        args.progress
        if args.progress is not None
        else (args.input is not None and sys.stderr.isatty())
    )

    import torch

    from .pretrained import load_pretrained
    from .translation import translate

    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        model, tokenizer = load_pretrained(args.model)
        todo = [s for s in lines if s is not None]
        english = translate(
            model,
            tokenizer,
            todo,
            beam_size=args.beam_size,
            length_penalty=args.length_penalty,
            batch_size=args.batch_size,
            progress=progress,
        )
    except ValueError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    out = iter(english)
    for line in lines:
        print(next(out) if line is not None else "")
    for problem in problems:
        print(f"{prog}: {problem}", file=sys.stderr)
    return 1 if problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m aiayn_helpers <command>``: translate, train or evaluate."""
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"translate": "translate German sentences with the shipped model",
                "train": "train a model on Multi30k (python -m aiayn_helpers.train)",
                "evaluate": "score a finished run (python -m "
                            "aiayn_helpers.evaluate)"}  # fmt: skip
    if not argv or argv[0] not in commands:
        usage = "\n".join(f"  {name:10s} {text}" for name, text in commands.items())
        print(
            f"usage: python -m aiayn_helpers <command> [options]\n\ncommands:\n{usage}",
            file=sys.stderr,
        )
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    command, rest = argv[0], argv[1:]
    if command == "translate":
        return translate_main(rest, prog="python -m aiayn_helpers translate")
    from . import _cli, evaluate, train

    _cli.run(lambda: (train if command == "train" else evaluate).main(rest))
    return 0


def console_translate() -> None:
    """The ``aiayn-translate`` console script."""
    sys.exit(translate_main())
