"""Multi30k loader (local copy only: these tests never touch the network), BPE, batching, collate."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from aiayn_helpers import data
from aiayn_helpers.data import (
    BOS_ID,
    EOS_ID,
    MULTI30K_SHA256,
    collate,
    encode_pairs,
    length_batches,
    load_multi30k,
    multi30k_dir,
    train_bpe,
    verify_file,
)


def local_multi30k() -> Path:
    """The corpus the tests read: $AIAYN_DATA_DIR (the Makefile sets it to the copy beside the
    repository when there is one), else the loader's cache, which `make data` fills. Never the network."""
    env = os.environ.get("AIAYN_DATA_DIR")
    folder = Path(env) if env else data.cache_dir()
    missing = [n for n in MULTI30K_SHA256 if not (folder / n).is_file()]
    if missing:
        pytest.fail(f"no Multi30k copy in {folder} (missing {missing}): run `make data` once, or set AIAYN_DATA_DIR")
    return folder


@pytest.fixture(scope="module")
def corpus_dir() -> Path:
    return local_multi30k()


@pytest.fixture(scope="module")
def small_pairs(corpus_dir):
    return load_multi30k("train", corpus_dir, limit=300)


@pytest.fixture(scope="module")
def tokenizer(small_pairs):
    return train_bpe([s for p in small_pairs for s in p], vocab_size=500)


@pytest.fixture
def no_network(monkeypatch):
    def refuse(url, output_file, pooch_object):
        raise ConnectionError("network disabled in tests")

    monkeypatch.setattr(data, "_downloader", lambda: refuse)


# -- the loader ------------------------------------------------------------------------------------
def test_local_copy_matches_the_published_checksums(corpus_dir):
    assert len(MULTI30K_SHA256) == 6
    for name in MULTI30K_SHA256:
        verify_file(corpus_dir / name)  # raises on any mismatch


@pytest.mark.parametrize(("split", "size"), [("val", 1014), ("test2016", 1000)])
def test_split_sizes(corpus_dir, split, size):
    pairs = load_multi30k(split, corpus_dir)
    assert len(pairs) == size
    de, en = pairs[0]
    assert isinstance(de, str) and isinstance(en, str) and de and en and de != en


def test_train_limit_and_environment_variable(corpus_dir, monkeypatch):
    monkeypatch.setenv("AIAYN_DATA_DIR", str(corpus_dir))
    assert multi30k_dir() == corpus_dir
    pairs = load_multi30k("train", limit=5)
    assert len(pairs) == 5
    assert pairs[0][0].startswith("Zwei junge") and pairs[0][1].startswith("Two young")


def test_corrupted_copy_fails_with_a_clear_message(corpus_dir, tmp_path):
    for name in MULTI30K_SHA256:
        shutil.copy(corpus_dir / name, tmp_path / name)
    assert len(load_multi30k("val", tmp_path)) == 1014  # the intact copy loads
    path = tmp_path / "val.en.gz"
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"checksum mismatch for .*val\.en\.gz: expected sha256 14f7d25d"):
        load_multi30k("val", tmp_path)
    assert len(load_multi30k("test2016", tmp_path)) == 1000  # other splits are unaffected


def test_missing_files_and_bad_arguments(corpus_dir, tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        multi30k_dir(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="lacks"):
        multi30k_dir(tmp_path)
    with pytest.raises(ValueError, match="split must be one of"):
        load_multi30k("test", corpus_dir)
    with pytest.raises(ValueError, match="limit"):
        load_multi30k("val", corpus_dir, limit=0)


def test_download_is_verified(corpus_dir, tmp_path, monkeypatch):
    """The download path, with pooch's HTTP downloader replaced: good bytes are kept, bad bytes are refused."""
    monkeypatch.delenv("AIAYN_DATA_DIR", raising=False)
    monkeypatch.setenv("AIAYN_CACHE_DIR", str(tmp_path / "cache"))
    requested = []

    def fake_download(url, output_file, pooch_object):
        requested.append(url)
        name = url.rsplit("/", 1)[1]
        body = (corpus_dir / name).read_bytes()
        if name == "val.de.gz" and corrupt["on"]:
            body = body[:-10]
        Path(output_file).write_bytes(body)

    corrupt = {"on": True}
    monkeypatch.setattr(data, "_downloader", lambda: fake_download)
    with pytest.raises(ValueError, match=r"checksum mismatch for downloaded val\.de\.gz"):
        multi30k_dir()
    assert not (tmp_path / "cache" / "val.de.gz").exists()  # nothing half-verified is left behind
    kept = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert kept == ["train.de.gz", "train.en.gz"]  # the files before it, checked; no temporary file
    corrupt["on"] = False
    folder = multi30k_dir()
    assert requested[0].startswith("https://raw.githubusercontent.com/multi30k/dataset/")
    assert "/data/task1/raw/" in requested[0]
    assert len(load_multi30k("val")) == 1014 and folder == tmp_path / "cache"


def test_clone_without_local_copy_reads_a_filled_cache_offline(corpus_dir, tmp_path, monkeypatch, no_network, capsys):
    """A reader's clone: no AIAYN_DATA_DIR, the cache already filled by `make data`, no network."""
    monkeypatch.delenv("AIAYN_DATA_DIR", raising=False)
    cache = tmp_path / "cache"
    cache.mkdir()
    for name in MULTI30K_SHA256:
        shutil.copy(corpus_dir / name, cache / name)
    monkeypatch.setenv("AIAYN_CACHE_DIR", str(cache))
    assert multi30k_dir() == cache == data.cache_dir()
    assert len(load_multi30k("test2016")) == 1000 and len(load_multi30k("val", limit=5)) == 5
    assert data.main([]) == 0 and str(cache) in capsys.readouterr().out


def test_makefile_uses_the_local_copy_only_when_it_exists(tmp_path):
    """`AIAYN_DATA_DIR` is ../shared/data/multi30k when that folder holds the corpus, else empty (the cache)."""
    repo = tmp_path / "clone"
    repo.mkdir()
    shutil.copy(Path(__file__).resolve().parents[1] / "Makefile", repo / "Makefile")
    env = {k: v for k, v in os.environ.items() if k not in ("AIAYN_DATA_DIR", "MAKEFLAGS", "MAKELEVEL")}

    def data_dir() -> str:
        show = "show: ; @echo [$(AIAYN_DATA_DIR)]"
        return subprocess.run(
            ["make", "-s", "-C", str(repo), "--eval", show, "show"], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()

    assert data_dir() == "[]"
    local = tmp_path / "shared" / "data" / "multi30k"
    local.mkdir(parents=True)
    (local / "train.de.gz").write_bytes(b"")
    assert data_dir() == f"[{local}]"


def test_no_network_gives_a_clear_error(tmp_path, monkeypatch, no_network):
    monkeypatch.delenv("AIAYN_DATA_DIR", raising=False)
    monkeypatch.setenv("AIAYN_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(ValueError, match="AIAYN_DATA_DIR"):
        multi30k_dir()


def test_held_out_splits_are_read_checked_and_downloaded_on_demand(corpus_dir, tmp_path, monkeypatch):
    """The 2017/2018 test sets: a given folder without them says which file is missing and where it comes
    from; the cache downloads only the two files the split needs, checked against their SHA-256."""
    given = tmp_path / "given"
    given.mkdir()
    for name in MULTI30K_SHA256:
        (given / name).symlink_to(corpus_dir / name)
    with pytest.raises(ValueError, match=r"held-out split 'test2017_mscoco' needs test_2017_mscoco\.de\.gz"):
        load_multi30k("test2017_mscoco", given)
    monkeypatch.delenv("AIAYN_DATA_DIR", raising=False)
    cache = tmp_path / "cache"
    cache.mkdir()
    for name in MULTI30K_SHA256:
        (cache / name).symlink_to(corpus_dir / name)
    monkeypatch.setenv("AIAYN_CACHE_DIR", str(cache))
    requested = []

    def fake_download(url, output_file, pooch_object):  # a file of the right name, not the right bytes
        requested.append(url.rsplit("/", 1)[1])
        Path(output_file).write_bytes(gzip.compress(b"Ein Hund.\n"))

    monkeypatch.setattr(data, "_downloader", lambda: fake_download)
    with pytest.raises(ValueError, match=r"checksum mismatch for downloaded test_2017_mscoco\.de\.gz"):
        load_multi30k("test2017_mscoco")
    assert requested == ["test_2017_mscoco.de.gz"]
    assert set(data.HELDOUT_SPLITS) <= set(data.SPLITS)
    assert {f"{data.SPLITS[s]}.{lang}.gz" for s in data.HELDOUT_SPLITS for lang in ("de", "en")} == set(
        data.HELDOUT_SHA256
    )


# -- vocabulary and encoding -------------------------------------------------------------------
def test_bpe_special_ids_and_exact_round_trip(tokenizer, small_pairs):
    assert [tokenizer.token_to_id(t) for t in ("<pad>", "<bos>", "<eos>", "<unk>")] == [0, 1, 2, 3]
    assert tokenizer.get_vocab_size() == 500
    for de, en in small_pairs[:50]:  # no lower-casing, spacing and punctuation come back exactly
        assert tokenizer.decode(tokenizer.encode(de).ids) == de
        assert tokenizer.decode(tokenizer.encode(en).ids) == en
    with pytest.raises(ValueError, match="vocab_size"):
        train_bpe(["a b"], vocab_size=4)


def test_encode_pairs_wraps_and_truncates(tokenizer, small_pairs):
    ids = encode_pairs(tokenizer, small_pairs[:20])
    for (s, t), (de, en) in zip(ids, small_pairs[:20], strict=True):
        assert s[-1] == EOS_ID and BOS_ID not in s
        assert t[0] == BOS_ID and t[-1] == EOS_ID
        assert tokenizer.decode(t) == en and tokenizer.decode(s) == de  # specials are skipped
    short = encode_pairs(tokenizer, small_pairs[:20], truncate_len=6)
    assert all(len(s) <= 6 and len(t) <= 6 and s[-1] == EOS_ID and t[-1] == EOS_ID for s, t in short)
    assert encode_pairs(tokenizer, []) == []


# -- batching ------------------------------------------------------------------------------------
def test_length_batches_respect_max_tokens(tokenizer, small_pairs):
    ids = encode_pairs(tokenizer, small_pairs)
    for max_tokens in (100, 300, 1000):
        batches = length_batches(ids, max_tokens, seed=1)
        assert sorted(i for b in batches for i in b) == list(range(len(ids)))  # each pair exactly once
        for b in batches:
            src, tgt_in, _ = collate([ids[i] for i in b])
            assert src.numel() <= max_tokens and (tgt_in.shape[0] * (tgt_in.shape[1] + 1)) <= max_tokens
    # similar lengths go together: far less padding than random batches of the same sizes
    batches = length_batches(ids, 300, seed=0)
    padded = sum(collate([ids[i] for i in b])[1].numel() for b in batches)
    real = sum(len(t) - 1 for _, t in ids)
    assert padded < 1.1 * real


def test_length_batches_reproducible_and_errors(tokenizer, small_pairs):
    ids = encode_pairs(tokenizer, small_pairs)
    assert length_batches(ids, 300, seed=3) == length_batches(ids, 300, seed=3)
    assert length_batches(ids, 300, seed=3) != length_batches(ids, 300, seed=4)
    ordered = length_batches(ids, 300, shuffle=False)
    lengths = [max(len(ids[i][1]) for i in b) for b in ordered]
    assert lengths == sorted(lengths)
    with pytest.raises(ValueError, match="more than max_tokens=5"):
        length_batches(ids, 5)
    with pytest.raises(ValueError, match="max_tokens"):
        length_batches(ids, 0)


def test_collate_shapes_and_shift():
    batch = [([5, 6, 7, EOS_ID], [BOS_ID, 8, 9, EOS_ID]), ([5, EOS_ID], [BOS_ID, 10, 11, 12, 13, EOS_ID])]
    src, tgt_in, tgt_out = collate(batch)
    assert src.shape == (2, 4) and tgt_in.shape == (2, 5) and tgt_out.shape == (2, 5)
    assert src.dtype == tgt_in.dtype == tgt_out.dtype == torch.long
    assert src[1].tolist() == [5, EOS_ID, 0, 0]
    assert tgt_in[0].tolist() == [BOS_ID, 8, 9, 0, 0] and tgt_out[0].tolist() == [8, 9, EOS_ID, 0, 0]
    assert tgt_in[1].tolist() == [BOS_ID, 10, 11, 12, 13] and tgt_out[1].tolist() == [10, 11, 12, 13, EOS_ID]
    with pytest.raises(ValueError, match="at least one pair"):
        collate([])


def test_gzip_lines_are_aligned(corpus_dir):
    with gzip.open(corpus_dir / "val.de.gz", "rt", encoding="utf-8") as f:
        assert sum(1 for _ in f) == 1014
