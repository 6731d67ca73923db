"""The trained translator that ships with the book (chapter 8).

``aiayn_helpers/pretrained/<name>/`` holds four files, written by
``tools/ship/export_pretrained.py`` from a training run's checkpoint:

* ``weights.safetensors``: the model's state dict in float16, in the safetensors format
  (a header of names, shapes and dtypes, then raw numbers: nothing is unpickled);
* ``tokenizer.json``: the shared German-English BPE tokenizer;
* ``config.json``: the run's :class:`~aiayn_helpers.config.Config`, with the beam size
  and length penalty chosen on the validation split, which
  :func:`~aiayn_helpers.translate` uses by default;
* ``manifest.json``: the SHA-256 of the three files above, the training command,
  hardware, time and epochs, and the test2016 sacreBLEU of these weights.

:func:`load_pretrained` checks every SHA-256 before it reads a file, so a truncated or
altered file is a ``ValueError``, never a silently different model.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch
from torch import nn

from .config import build_model, config_from_dict

ROOT = Path(__file__).with_name("pretrained")
# what the manifest's hashes cover
FILES = ("weights.safetensors", "tokenizer.json", "config.json")
MANIFEST = "manifest.json"

__all__ = [
    "available_models",
    "load_pretrained",
    "load_pretrained_dir",
    "read_manifest",
    "read_safetensors",
    "sha256",
    "write_safetensors",
]


def sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, as 64 hex digits."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def available_models() -> list[str]:
    """The names :func:`load_pretrained` accepts: the shipped models' folders."""
    if not ROOT.is_dir():
        return []
    return sorted(p.name for p in ROOT.iterdir() if (p / MANIFEST).is_file())


def read_manifest(directory: str | os.PathLike) -> dict:
    """``manifest.json`` of a model folder (``ValueError`` if missing or not JSON)."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        raise ValueError(
            f"{directory} holds no {MANIFEST}: not a pretrained model folder"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} is not valid JSON ({err})") from err
    if not isinstance(manifest, dict) or not isinstance(manifest.get("sha256"), dict):
        raise ValueError(f"{path} has no 'sha256' table of the model's files")
    return manifest


def load_pretrained(
    name: str = "multi30k", *, dtype: torch.dtype = torch.float32
) -> tuple[nn.Module, object]:
    """``(model, tokenizer)`` of the shipped model ``name``, in eval mode on the CPU.

    The float16 weights are widened to ``dtype`` (float32 by default; float64 gives
    the same translations on every CPU, chapter 8). An unknown ``name`` or a file whose
    SHA-256 does not match the manifest raises ``ValueError``.
    """
    if not isinstance(name, str) or name not in available_models():
        raise ValueError(
            f"unknown pretrained model {name!r}; available: {available_models()}"
        )
    return load_pretrained_dir(ROOT / name, dtype=dtype)


def load_pretrained_dir(
    directory: str | os.PathLike, *, dtype: torch.dtype = torch.float32
) -> tuple[nn.Module, object]:
    """:func:`load_pretrained` from a folder laid out as ``pretrained/<name>``."""
    from tokenizers import Tokenizer

    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    directory = Path(directory)
    manifest = read_manifest(directory)
    for file in FILES:
        path = directory / file
        if not path.is_file():
            raise ValueError(f"{path} is missing")
        expected = manifest["sha256"].get(file)
        if sha256(path) != expected:
            raise ValueError(
                f"{path} is corrupt or was changed: its SHA-256 is {sha256(path)}, the "
                f"manifest says {expected}"
            )
    try:
        tokenizer = Tokenizer.from_str(
            (directory / "tokenizer.json").read_text(encoding="utf-8")
        )
        cfg = config_from_dict(
            json.loads((directory / "config.json").read_text(encoding="utf-8"))
        )
        weights = read_safetensors(directory / "weights.safetensors")
    # files that match their hashes but do not parse: a bad export
    except Exception as err:
        raise ValueError(f"could not read the model in {directory}: {err}") from err
    model = build_model(cfg, tokenizer.get_vocab_size())
    try:
        model.load_state_dict({k: v.to(torch.float32) for k, v in weights.items()})
    except (RuntimeError, AttributeError) as err:
        raise ValueError(
            f"the weights in {directory} do not fit its config: {err}"
        ) from err
    model = model.to(dtype).eval()
    # the decoding settings chosen for this model on the validation split: translate()'s
    # defaults
    model.decoding_defaults = {
        "beam_size": cfg.beam_size,
        "length_penalty": cfg.length_penalty,
    }
    return model, tokenizer


def write_safetensors(
    state_dict: dict[str, torch.Tensor], path: str | os.PathLike, dtype=torch.float16
) -> None:
    """Write a state dict as ``.safetensors``, floating tensors in ``dtype``.

    Tied weights (one tensor under several names, such as the shared embeddings and the
    output projection) are stored once; the other names are kept in the file's metadata
    as ``aliases`` (safetensors refuses shared tensors), and :func:`read_safetensors`
    restores them.
    """
    from safetensors.torch import save_file

    tensors: dict[str, torch.Tensor] = {}
    aliases: dict[str, str] = {}
    first_name: dict[tuple, str] = {}
    for name, value in state_dict.items():
        key = (
            value.untyped_storage().data_ptr(),
            value.storage_offset(),
            tuple(value.shape),
            tuple(value.stride()),
        )
        if key in first_name:
            aliases[name] = first_name[key]
            continue
        first_name[key] = name
        value = value.detach().to("cpu")
        tensors[name] = (
            value.to(dtype) if value.is_floating_point() else value
        ).contiguous()
    save_file(
        tensors,
        str(path),
        metadata={"format": "pt", "aliases": json.dumps(aliases, sort_keys=True)},
    )


def read_safetensors(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """The tensors of a ``.safetensors`` file on the CPU, tied names restored.

    See :func:`write_safetensors`.
    """
    from safetensors import safe_open

    with safe_open(str(path), framework="pt", device="cpu") as f:
        tensors = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118 (safe_open has no __iter__)
        aliases = json.loads((f.metadata() or {}).get("aliases", "{}"))
    for alias, name in aliases.items():
        tensors[alias] = tensors[name]
    return tensors
