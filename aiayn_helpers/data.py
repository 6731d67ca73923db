"""Multi30k (German -> English), a shared BPE vocabulary and length-bucketed batches.

The corpus is downloaded once from its public source, the ``multi30k/dataset``
repository on GitHub (folder ``data/task1/raw``), into a cache folder by pooch, which
checks every file against its SHA-256 sum before it keeps it. Set ``AIAYN_DATA_DIR``
(or pass ``data_dir``) to read a local copy instead: tests and CI never touch the
network.

Special token ids are fixed across the book: ``<pad>=0, <bos>=1, <eos>=2, <unk>=3``.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from .vocab import BOS_ID, EOS_ID, PAD_ID, SPECIAL_TOKENS, UNK_ID  # noqa: F401 (re-exported)

if TYPE_CHECKING:  # only for the annotations: tokenizers is imported when it is used
    from tokenizers import Tokenizer

MULTI30K_URL = (
    "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/"
)
MULTI30K_SHA256 = {
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "test_2016_flickr.de.gz": (
        "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8"
    ),
    "test_2016_flickr.en.gz": (
        "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9"
    ),
}
# The later WMT test sets (2017 and 2018), which no part of the book tunes on: read
# only to report how the shipped model does on sentences it was never chosen on. They
# are downloaded on first use, or read from a given folder that holds them.
HELDOUT_SHA256 = {
    "test_2017_flickr.de.gz": (
        "a2c89666db00c495cd8513b9d708d5a3acc205d7de312ef2bf5fb7ebc1540aee"
    ),
    "test_2017_flickr.en.gz": (
        "76a444ee25172e72695cddb13ae4a3bda59430617be88e0bb46b60504f054074"
    ),
    "test_2017_mscoco.de.gz": (
        "799e4854c25d601cb6cb6be29eabe5667734c61ace2f495e03e429031a0bc338"
    ),
    "test_2017_mscoco.en.gz": (
        "aab300bfb4427697987e02cd0aacd44bfe8aa50456231b6474c08038bbed2b58"
    ),
    "test_2018_flickr.de.gz": (
        "ddd0130c7d97482dc5197a02141dae8dd79f20f03586c480d675c09a32daf608"
    ),
    "test_2018_flickr.en.gz": (
        "ef4f4844037d4c5dea75c9a8ed5fd78905967a26f67c255e230cc9780032654d"
    ),
}
SPLITS = {
    "train": "train",
    "val": "val",
    "test2016": "test_2016_flickr",
    "test2017_flickr": "test_2017_flickr",
    "test2017_mscoco": "test_2017_mscoco",
    "test2018_flickr": "test_2018_flickr",
}
HELDOUT_SPLITS = ("test2017_flickr", "test2017_mscoco", "test2018_flickr")
DEFAULT_CACHE = Path("~/.cache/aiayn_helpers/multi30k")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify_file(path: str | os.PathLike) -> None:
    """Raise ``ValueError`` unless ``path`` exists and matches its entry in
    :data:`MULTI30K_SHA256`."""
    path = Path(path)
    known = {**MULTI30K_SHA256, **HELDOUT_SHA256}
    if path.name not in known:
        raise ValueError(
            f"{path.name!r} is not a Multi30k file; expected one of {sorted(known)}"
        )
    if not path.is_file():
        raise ValueError(f"Multi30k file {path} is missing")
    expected, actual = known[path.name], _sha256(path)
    if actual != expected:
        raise ValueError(
            f"checksum mismatch for {path}: expected sha256 {expected}, got {actual}. "
            "The file is corrupt or incomplete; delete it (it is downloaded again) or "
            "fix the copy."
        )


def _downloader():
    """pooch's HTTP downloader (requests underneath), with a tqdm progress bar."""
    import pooch

    return pooch.HTTPDownloader(progressbar=True, timeout=60)


def _download(name: str, folder: Path) -> None:
    """Fetch one file into ``folder`` with pooch, which checks its SHA-256 before it
    keeps it.

    pooch writes to a temporary file beside the target and moves it into place only
    once the hash matches, so a failed or corrupt download leaves nothing behind.
    """
    import pooch

    folder.mkdir(parents=True, exist_ok=True)
    try:
        pooch.retrieve(
            MULTI30K_URL + name,
            known_hash="sha256:" + {**MULTI30K_SHA256, **HELDOUT_SHA256}[name],
            fname=name,
            path=folder,
            downloader=_downloader(),
        )
    except ValueError as err:  # pooch's hash mismatch
        raise ValueError(f"checksum mismatch for downloaded {name}: {err}") from err
    except Exception as err:  # requests' connection errors, OSError
        raise ValueError(
            f"could not download {MULTI30K_URL + name} into {folder}: {err}. Without a "
            "network, set "
            "AIAYN_DATA_DIR (or pass data_dir=) to a folder holding the six Multi30k "
            ".gz files, "
            f"or copy them into {folder}."
        ) from err


def cache_dir() -> Path:
    """Where downloads go: ``$AIAYN_CACHE_DIR``, else
    ``~/.cache/aiayn_helpers/multi30k``."""
    return Path(os.environ.get("AIAYN_CACHE_DIR") or DEFAULT_CACHE).expanduser()


def multi30k_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The folder that holds the six Multi30k ``.gz`` files.

    ``data_dir`` if given, else ``$AIAYN_DATA_DIR`` if set, else the cache folder
    ``~/.cache/aiayn_helpers/multi30k`` (override with ``$AIAYN_CACHE_DIR``), where
    missing files are downloaded and checked. Only the cache folder is ever
    written to; a given folder must already hold the files.
    """
    if data_dir is None:
        data_dir = os.environ.get("AIAYN_DATA_DIR") or None
    if data_dir is not None:
        folder = Path(data_dir).expanduser()
        if not folder.is_dir():
            raise ValueError(
                f"Multi30k folder {folder} does not exist (from data_dir or "
                "$AIAYN_DATA_DIR)"
            )
        missing = [n for n in MULTI30K_SHA256 if not (folder / n).is_file()]
        if missing:
            raise ValueError(f"Multi30k folder {folder} lacks {missing}")
        return folder
    folder = cache_dir()
    for name in MULTI30K_SHA256:
        if not (folder / name).is_file():
            _download(name, folder)
    return folder


def _read_lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n").strip() for line in f]


def load_multi30k(
    split: str, data_dir: str | os.PathLike | None = None, limit: int | None = None
) -> list[tuple[str, str]]:
    """``(german, english)`` sentence pairs of ``split``.

    ``split`` is ``"train"``, ``"val"`` or ``"test2016"``, or one of the held-out
    sets ``HELDOUT_SPLITS`` (``"test2017_flickr"``, ``"test2017_mscoco"``,
    ``"test2018_flickr"``), which the folder of ``data_dir``/``$AIAYN_DATA_DIR``
    must hold or which are downloaded into the cache on first use. Both files are
    verified against their SHA-256 sums before they are read. ``limit`` keeps the
    first ``limit`` pairs (for quick experiments and tests).
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {sorted(SPLITS)}, got {split!r}")
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0
    ):
        raise ValueError(f"limit must be a positive int or None, got {limit!r}")
    folder = multi30k_dir(data_dir)
    paths = [folder / f"{SPLITS[split]}.{lang}.gz" for lang in ("de", "en")]
    if split in HELDOUT_SPLITS:
        for p in paths:
            if p.is_file():
                continue
            if folder != cache_dir():
                raise ValueError(
                    f"the held-out split {split!r} needs {p.name} in {folder}; copy "
                    f"it there from {MULTI30K_URL} or unset AIAYN_DATA_DIR to "
                    "download it into the cache"
                )
            _download(p.name, folder)
    for p in paths:
        verify_file(p)
    de, en = (_read_lines(p) for p in paths)
    if len(de) != len(en):
        raise ValueError(
            f"{paths[0].name} has {len(de)} lines but {paths[1].name} has {len(en)}"
        )
    pairs = list(zip(de, en, strict=True))
    return pairs[:limit] if limit is not None else pairs


# -- vocabulary ------------------------------------------------------------------------
# zero width space, non-joiner, joiner, word joiner, byte order mark, soft hyphen: the
# tokenizer removes them (book/_static/translator/tokenizer.js reads the same pattern
# from tokenizer.json)
ZERO_WIDTH_CHARACTERS = "[\u200b-\u200d\u2060\ufeff\u00ad]"


def train_bpe(
    texts: Iterable[str], vocab_size: int, min_frequency: int = 2
) -> Tokenizer:
    """Train one byte-pair-encoding vocabulary shared by German and English.

    Returns a ``tokenizers.Tokenizer`` with ``<pad> <bos> <eos> <unk>`` at ids 0-3.
    Words are split on spaces (kept as the ``▁`` marker, as in SentencePiece) and
    punctuation, text is *not* lower-cased, and ``tokenizer.decode(ids)`` gives
    back the original spacing, so BLEU is computed on real text. Text is first put in
    Unicode's composed form (NFC: a decomposed "a" + combining diaeresis, as macOS
    and some keyboards type it, becomes "ä") and the zero-width characters of
    ``ZERO_WIDTH_CHARACTERS`` are removed, so that what looks like a known word is one.
    """
    from tokenizers import (
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        trainers,
    )

    if (
        isinstance(vocab_size, bool)
        or not isinstance(vocab_size, int)
        or vocab_size <= len(SPECIAL_TOKENS)
    ):
        raise ValueError(
            f"vocab_size must be an int > {len(SPECIAL_TOKENS)}, got {vocab_size!r}"
        )
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence(
        [normalizers.NFC(), normalizers.Replace(Regex(ZERO_WIDTH_CHARACTERS), "")]
    )
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always"),
            pre_tokenizers.Punctuation(),
        ]
    )
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=SPECIAL_TOKENS,
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    for i, s in enumerate(SPECIAL_TOKENS):
        assert tok.token_to_id(s) == i, (s, tok.token_to_id(s))
    return tok


def encode_pairs(
    tokenizer, pairs: Sequence[tuple[str, str]], truncate_len: int | None = None
) -> list[tuple[list[int], list[int]]]:
    """Token ids of each pair: source ``ids + [<eos>]``, target
    ``[<bos>] + ids + [<eos>]``.

    ``truncate_len`` (if given) cuts both sides to at most ``truncate_len`` ids, the
    special tokens included (the closing ``<eos>`` is kept).
    """
    if truncate_len is not None and (
        isinstance(truncate_len, bool)
        or not isinstance(truncate_len, int)
        or truncate_len < 3
    ):
        raise ValueError(
            f"truncate_len must be an int >= 3 or None, got {truncate_len!r}"
        )
    if not pairs:
        return []
    src = tokenizer.encode_batch([p[0] for p in pairs], add_special_tokens=False)
    tgt = tokenizer.encode_batch([p[1] for p in pairs], add_special_tokens=False)
    out = []
    for s, t in zip(src, tgt, strict=True):
        s_ids, t_ids = list(s.ids), list(t.ids)
        if truncate_len is not None:
            s_ids, t_ids = s_ids[: truncate_len - 1], t_ids[: truncate_len - 2]
        out.append((s_ids + [EOS_ID], [BOS_ID] + t_ids + [EOS_ID]))
    return out


def length_batches(
    pairs_ids: Sequence[tuple[Sequence[int], Sequence[int]]],
    max_tokens: int,
    shuffle: bool = True,
    seed: int = 0,
) -> list[list[int]]:
    """Group pair indices into batches of similar length.

    Each batch's padded source (``batch * longest source``) and padded target
    (``batch * longest target``) both hold at most ``max_tokens`` ids, as the paper's
    "batches of approximately 25000 source and 25000 target tokens" (section 5.1).
    Pairs are sorted by length (ties broken at random), cut into batches and, with
    ``shuffle``, the batch order is shuffled; ``seed`` makes both reproducible.
    """
    if (
        isinstance(max_tokens, bool)
        or not isinstance(max_tokens, int)
        or max_tokens <= 0
    ):
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
    rng = random.Random(seed)
    lengths = [(len(s), len(t)) for s, t in pairs_ids]
    for i, (ls, lt) in enumerate(lengths):
        if max(ls, lt) > max_tokens:
            raise ValueError(
                f"pair {i} has {ls} source and {lt} target ids, more than "
                f"max_tokens={max_tokens}; "
                "raise max_tokens or truncate with encode_pairs(..., truncate_len=...)"
            )
    keys = [rng.random() for _ in lengths]
    order = sorted(
        range(len(lengths)), key=lambda i: (lengths[i][1], lengths[i][0], keys[i])
    )
    batches: list[list[int]] = []
    current: list[int] = []
    max_s = max_t = 0
    for i in order:
        ls, lt = lengths[i]
        new_s, new_t = max(max_s, ls), max(max_t, lt)
        if current and (len(current) + 1) * max(new_s, new_t) > max_tokens:
            batches.append(current)
            current, new_s, new_t = [], ls, lt
        current.append(i)
        max_s, max_t = new_s, new_t
    if current:
        batches.append(current)
    if shuffle:
        rng.shuffle(batches)
    return batches


def collate(
    batch_of_pairs_ids: Sequence[tuple[Sequence[int], Sequence[int]]],
    pad_id: int = PAD_ID,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pad a list of ``(src_ids, tgt_ids)`` into ``src (B, S)``, ``tgt_in (B, T)``,
    ``tgt_out (B, T)``.

    ``tgt_in`` is the target without its last id (the decoder input, starting with
    ``<bos>``); ``tgt_out`` is the target without its first id (what to predict).
    """
    if not batch_of_pairs_ids:
        raise ValueError("collate needs at least one pair")
    for i, (s, t) in enumerate(batch_of_pairs_ids):
        if len(s) < 1 or len(t) < 2:
            raise ValueError(
                f"pair {i}: source needs >= 1 id and target >= 2 ids, got {len(s)} and "
                f"{len(t)}"
            )
    b = len(batch_of_pairs_ids)
    s_len = max(len(s) for s, _ in batch_of_pairs_ids)
    t_len = max(len(t) for _, t in batch_of_pairs_ids) - 1
    src = torch.full((b, s_len), pad_id, dtype=torch.long)
    tgt_in = torch.full((b, t_len), pad_id, dtype=torch.long)
    tgt_out = torch.full((b, t_len), pad_id, dtype=torch.long)
    for i, (s, t) in enumerate(batch_of_pairs_ids):
        src[i, : len(s)] = torch.as_tensor(s, dtype=torch.long)
        tgt_in[i, : len(t) - 1] = torch.as_tensor(t[:-1], dtype=torch.long)
        tgt_out[i, : len(t) - 1] = torch.as_tensor(t[1:], dtype=torch.long)
    return src, tgt_in, tgt_out


def main(argv: Sequence[str] | None = None) -> int:
    """``make data``: fetch the corpus once (into the cache) or check the given folder;
    print where it is."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="make data",
        description="Download Multi30k into the cache (or check the folder in "
        "$AIAYN_DATA_DIR) and verify it.",
    )
    parser.add_argument(
        "--data-dir",
        default=None,
        help="a folder holding the six .gz files (default: see above)",
    )
    args = parser.parse_args(argv)
    try:
        folder = multi30k_dir(args.data_dir)
        for name in MULTI30K_SHA256:
            verify_file(folder / name)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    size = sum((folder / n).stat().st_size for n in MULTI30K_SHA256)
    print(f"Multi30k: {folder} (6 files, {size / 1e6:.1f} MB, SHA-256 verified)")
    return 0
