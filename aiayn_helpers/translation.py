"""From German text to English text with a trained model, and its sacreBLEU score.

This module holds the package's one public :func:`translate` (``ah.translate``). It
turns sentences into source ids (the BPE tokenizer, then ``<eos>``), pads them into
batches of similar length, decodes with :func:`~aiayn_helpers.beam_search` (or
:func:`~aiayn_helpers.greedy_decode` for a beam of 1) and turns the ids back into text.
:func:`translate_and_score` does that for ``(german, english)`` pairs and scores the
translations against the references with sacreBLEU. Training (``--eval-bleu``) and
evaluation (``python -m aiayn_helpers.evaluate``) both use it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:  # only for the annotation: sacrebleu is imported when it is used
    from sacrebleu.metrics.bleu import BLEUScore

from ._checks import check_non_negative_number, check_positive_int
from .data import EOS_ID, PAD_ID
from .decoding import beam_search, greedy_decode

__all__ = ["encode_sources", "translate", "translate_and_score"]


def translate(
    model: nn.Module,
    tokenizer,
    sentences: Sequence[str],
    beam_size: int | None = None,
    length_penalty: float | None = None,
    batch_size: int = 64,
    progress: bool = False,
) -> list[str]:
    """Translate plain German ``sentences`` into detokenized English, in their order.

    Beam search with the GNMT length penalty and a key/value cache; ``beam_size=1`` is
    greedy decoding. ``None`` takes the model's own settings, chosen on the validation
    split and stored in its ``config.json`` (:func:`~aiayn_helpers.load_pretrained`
    attaches them as ``model.decoding_defaults``), or the paper's beam 4 and alpha 0.6
    for a model without them. Each sentence may grow to its own source length + 50
    tokens (the paper's rule). ``progress=True`` shows a progress bar on standard
    error, one step per batch.
    """
    defaults = {
        "beam_size": 4,
        "length_penalty": 0.6,
        **getattr(model, "decoding_defaults", {}),
    }
    beam_size = defaults["beam_size"] if beam_size is None else beam_size
    length_penalty = (
        defaults["length_penalty"] if length_penalty is None else length_penalty
    )
    if isinstance(sentences, str) or not all(isinstance(s, str) for s in sentences):
        raise ValueError(
            "sentences must be a list of strings (one per sentence), "
            f"got {type(sentences).__name__}"
            + (
                " (wrap a single sentence in a list)"
                if isinstance(sentences, str)
                else ""
            )
        )
    check_positive_int("beam_size", beam_size)
    check_non_negative_number("length_penalty", length_penalty)
    check_positive_int("batch_size", batch_size)
    if not sentences:
        return []
    return _translate_batches(
        model,
        tokenizer,
        list(sentences),
        beam_size,
        length_penalty,
        batch_size,
        progress,
    )


@torch.no_grad()
def _translate_batches(
    model: nn.Module,
    tokenizer,
    sentences: list[str],
    beam_size: int,
    length_penalty: float,
    batch_size: int,
    progress: bool,
) -> list[str]:
    from tqdm import tqdm

    # similar lengths batch together
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    chunks = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    device = next(model.parameters()).device
    result = [""] * len(sentences)
    for chunk in tqdm(
        chunks, desc="translate", disable=not progress, file=sys.stderr, leave=False
    ):
        src = encode_sources(tokenizer, [sentences[i] for i in chunk]).to(device)
        if beam_size > 1:
            hyps = beam_search(
                model, src, beam_size=beam_size, length_penalty=length_penalty
            )
        else:
            hyps = greedy_decode(model, src)
        for i, ids in zip(chunk, hyps, strict=True):
            result[i] = tokenizer.decode(ids, skip_special_tokens=True)
    return result


def encode_sources(tokenizer, sentences: Sequence[str]) -> torch.Tensor:
    """Source ids ``(batch, S)``: each sentence's BPE ids and ``<eos>``, padded."""
    ids = [
        e.ids + [EOS_ID]
        for e in tokenizer.encode_batch(list(sentences), add_special_tokens=False)
    ]
    width = max(len(x) for x in ids)
    return torch.tensor(
        [x + [PAD_ID] * (width - len(x)) for x in ids], dtype=torch.long
    )


def translate_and_score(
    model: nn.Module,
    tokenizer,
    pairs: Sequence[tuple[str, str]],
    beam_size: int | None = None,
    length_penalty: float | None = None,
    progress: bool = False,
) -> tuple[BLEUScore, str, list[str]]:
    """Translate the German side of ``pairs`` and score it against the English side.

    Returns ``(score, signature, hypotheses)``: sacreBLEU's corpus score (default 13a
    tokenisation, cased), its signature string, and the translations.
    """
    from sacrebleu.metrics import BLEU

    sources = [de for de, _ in pairs]
    hyps = translate(
        model, tokenizer, sources, beam_size, length_penalty, progress=progress
    )
    metric = BLEU()
    score = metric.corpus_score(hyps, [[en for _, en in pairs]])
    return score, str(metric.get_signature()), hyps
