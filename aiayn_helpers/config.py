"""Every setting of a training run in one :class:`Config`, the presets, and the model.

A preset is :func:`dataclasses.replace` of :data:`BASE`, the paper's base model and
training recipe (sections 3 and 5) on all of Multi30k. ``python -m aiayn_helpers.train``
starts from a preset and applies the flags given on the command line; a checkpoint
stores the whole config, so ``--resume`` restores every setting except the two
limits of one invocation (:data:`INVOCATION_FIELDS`).

Three lengths that are easy to confuse have three names:

* ``Config.truncate_len``: sentences longer than this many ids (specials included)
  are cut when the corpus is encoded (``encode_pairs(..., truncate_len=...)``);
* ``Transformer(max_positions=...)``: the size of the positional table (5000 by
  default), passed on as ``PositionalEncoding(max_len=...)``, PyTorch's name for it;
* ``greedy_decode``/``beam_search(max_new_tokens=...)``: the decoding budget, the most
  tokens generated per sentence (by default the paper's source length + 50).
"""

from __future__ import annotations

import dataclasses

from .data import PAD_ID
from .model import Transformer


@dataclasses.dataclass
class Config:
    preset: str = "base"
    # the model: the arguments of Transformer (table 3, base model)
    d_model: int = 512
    num_layers: int = 6
    num_heads: int = 8
    d_ff: int = 2048
    dropout: float = 0.1
    share_embeddings: bool = True
    # query/key width per head; None: d_model / num_heads (table 3, row B)
    d_k: int | None = None
    # or "learned": a trained table of LEARNED_MAX_LEN rows (table 3, row E)
    positional: str = "sinusoidal"
    # vocabulary and data
    vocab_size: int = 10000  # one BPE vocabulary shared by German and English
    min_frequency: int = 2
    truncate_len: int = 128  # longest sentence kept, in ids (see the module docstring)
    max_tokens: int = 4096  # source (and target) tokens per batch, padding included
    limit: int | None = None  # only the first N training pairs
    eval_limit: int | None = None  # only the first N validation and test pairs
    # the Multi30k folder (None: $AIAYN_DATA_DIR or the download cache)
    data_dir: str | None = None
    # optimisation (section 5)
    epochs: int = 60
    warmup: int = 4000
    lr_scale: float = 1.0
    label_smoothing: float = 0.1
    clip_norm: float | None = None
    seed: int = 0
    amp_bf16: bool = False
    # checkpoints
    # also write last.pt every N steps (0: only at the end of each epoch)
    save_every: int = 0
    keep_epochs: bool = False  # also keep each finished epoch's weights as epochNNN.pt
    # evaluation (section 6.1)
    beam_size: int = 4
    length_penalty: float = 0.6
    eval_bleu: bool = False  # translate test2016 at the end and report sacreBLEU
    # limits of one invocation: never restored from a checkpoint
    max_steps: int | None = None
    time_budget_min: float | None = None


BASE = Config()

# One block per preset, each naming every field it changes from BASE, so that a preset
# reads on its own (the blocks share their shape, not their values).
PRESETS: dict[str, Config] = {
    # a tiny model on 200 pairs: a few seconds, for tests and for trying the CLI
    "quick": dataclasses.replace(
        BASE,
        preset="quick",
        d_model=32,
        num_layers=1,
        num_heads=2,
        d_ff=64,
        vocab_size=400,
        max_tokens=600,
        epochs=2,
        warmup=20,
        limit=200,
        eval_limit=40,
    ),
    # the CPU recipe for readers without a GPU, 50 minutes (see book/results.md)
    "multi30k-cpu": dataclasses.replace(
        BASE,
        preset="multi30k-cpu",
        d_model=128,
        num_layers=3,
        num_heads=4,
        d_ff=512,
        vocab_size=6000,
        max_tokens=2500,
        epochs=30,
        warmup=500,
        lr_scale=0.5,
        time_budget_min=50.0,
    ),
    # the full recipe: d_model 256, 3+3 layers, 7.6 M parameters; about 100 minutes on 2
    # CPU cores (book/results.md), minutes on a GPU
    "multi30k": dataclasses.replace(
        BASE,
        preset="multi30k",
        d_model=256,
        num_layers=3,
        num_heads=4,
        d_ff=1024,
        dropout=0.2,
        vocab_size=8000,
        max_tokens=3000,
        epochs=40,
        warmup=1000,
        lr_scale=0.7,
    ),
    # the paper's base model (6+6 layers, d_model 512) with the heavier regularisation a
    # 29k-pair corpus needs (dropout 0.3, 4 heads, d_ff 1024): a GPU run, not yet made
    "multi30k-base": dataclasses.replace(
        BASE, preset="multi30k-base", num_heads=4, d_ff=1024, dropout=0.3
    ),
}

# The fields that fix the shape of the model: a checkpoint and the flags must agree on
# them.
ARCH_FIELDS = (
    "d_model",
    "num_layers",
    "num_heads",
    "d_ff",
    "vocab_size",
    "share_embeddings",
    "d_k",
    "positional",
)
# Rows of a learned position table: the longest sentence kept (truncate_len <= 128 in
# every preset) plus the 50 tokens decoding may add (section 6.1), rounded up.
LEARNED_MAX_LEN = 256
# The limits of one invocation: on --resume they come from the preset (or the flags),
# not the checkpoint.
INVOCATION_FIELDS = ("max_steps", "time_budget_min")
# Checkpoints of format 1 (before this module) stored three fields under older names.
FORMAT1_NAMES = {
    "layers": "num_layers",
    "heads": "num_heads",
    "max_len": "truncate_len",
}


def config_from_dict(values: dict, renames: dict[str, str] | None = None) -> Config:
    """A :class:`Config` from stored values, old field names renamed (``renames``).

    Fields missing from ``values`` (settings added since it was stored) take their
    defaults; an unknown field is an error.
    """
    values = {(renames or {}).get(k, k): v for k, v in values.items()}
    names = {f.name for f in dataclasses.fields(Config)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ValueError(
            f"unknown config fields {unknown}; expected some of {sorted(names)}"
        )
    return Config(**values)


def resolve_config(
    preset: str, overrides: dict, stored: Config | None = None
) -> Config:
    """The run's config: the preset (or, resuming, the ``stored`` one), then overrides.

    When resuming, the limits of one invocation (:data:`INVOCATION_FIELDS`) are not
    taken from ``stored`` but from its preset, and an override that changes the shape
    of the model (:data:`ARCH_FIELDS`) is an error.
    """
    if stored is None:
        if preset not in PRESETS:
            raise ValueError(
                f"unknown preset {preset!r}; expected one of {sorted(PRESETS)}"
            )
        return dataclasses.replace(PRESETS[preset], **overrides)
    clash = {
        k: (getattr(stored, k), v)
        for k, v in overrides.items()
        if k in ARCH_FIELDS and v != getattr(stored, k)
    }
    if clash:
        detail = ", ".join(
            f"{k}: checkpoint {a!r}, requested {b!r}" for k, (a, b) in clash.items()
        )
        raise ValueError(
            f"the checkpoint was trained with a different model ({detail})"
        )
    preset_cfg = PRESETS.get(stored.preset, BASE)
    limits = {"max_steps": None, "time_budget_min": preset_cfg.time_budget_min}
    return dataclasses.replace(stored, **{**limits, **overrides})


def build_model(cfg: Config, vocab_size: int) -> Transformer:
    """The Transformer that ``cfg`` describes, for one shared vocabulary."""
    return Transformer(
        vocab_size,
        vocab_size,
        d_model=cfg.d_model,
        num_heads=cfg.num_heads,
        num_layers=cfg.num_layers,
        d_ff=cfg.d_ff,
        dropout=cfg.dropout,
        share_embeddings=cfg.share_embeddings,
        pad_id=PAD_ID,
        fused=True,
        d_k=cfg.d_k,
        positional=cfg.positional,
        **(
            {"max_positions": max(LEARNED_MAX_LEN, cfg.truncate_len + 50)}
            if cfg.positional == "learned"
            else {}
        ),
    )
