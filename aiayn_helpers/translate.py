"""From German text to English text with a trained model, and its sacreBLEU score.

:func:`translate` turns sentences into source ids (the BPE tokenizer, then ``<eos>``),
pads them into batches of similar length, decodes with :func:`~aiayn_helpers.beam_search`
(or :func:`~aiayn_helpers.greedy_decode` for a beam of 1) and turns the ids back into
text. :func:`translate_and_score` does that for ``(german, english)`` pairs and scores
the translations against the references with sacreBLEU. Training (``--eval-bleu``) and
evaluation (``python -m aiayn_helpers.evaluate``) both use it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import torch
from torch import nn

from .data import EOS_ID, PAD_ID
from .decoding import beam_search, greedy_decode


@torch.no_grad()
def translate(
    model: nn.Module,
    tokenizer,
    sentences: Sequence[str],
    beam_size: int = 4,
    length_penalty: float = 0.6,
    batch_size: int = 64,
    progress: bool = False,
) -> list[str]:
    """Translate ``sentences`` with beam search (greedy if ``beam_size == 1``), in their order.

    Each sentence may grow to its own source length + 50 tokens (the paper's rule).
    """
    from tqdm import tqdm

    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))  # similar lengths batch together
    chunks = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    device = next(model.parameters()).device
    result = [""] * len(sentences)
    for chunk in tqdm(chunks, desc="translate", disable=not progress, file=sys.stderr, leave=False):
        src = encode_sources(tokenizer, [sentences[i] for i in chunk]).to(device)
        if beam_size > 1:
            hyps = beam_search(model, src, beam_size=beam_size, length_penalty=length_penalty)
        else:
            hyps = greedy_decode(model, src)
        for i, ids in zip(chunk, hyps, strict=True):
            result[i] = tokenizer.decode(ids, skip_special_tokens=True)
    return result


def encode_sources(tokenizer, sentences: Sequence[str]) -> torch.Tensor:
    """Source ids ``(batch, S)``: each sentence's BPE ids and ``<eos>``, padded with ``<pad>``."""
    ids = [e.ids + [EOS_ID] for e in tokenizer.encode_batch(list(sentences), add_special_tokens=False)]
    width = max(len(x) for x in ids)
    return torch.tensor([x + [PAD_ID] * (width - len(x)) for x in ids], dtype=torch.long)


def translate_and_score(
    model: nn.Module,
    tokenizer,
    pairs: Sequence[tuple[str, str]],
    beam_size: int = 4,
    length_penalty: float = 0.6,
    progress: bool = False,
):
    """Translate the German side of ``pairs`` and score it against the English side.

    Returns ``(score, signature, hypotheses)``: sacreBLEU's corpus score (default 13a
    tokenisation, cased), its signature string, and the translations.
    """
    from sacrebleu.metrics import BLEU

    hyps = translate(model, tokenizer, [de for de, _ in pairs], beam_size, length_penalty, progress=progress)
    metric = BLEU()
    score = metric.corpus_score(hyps, [[en for _, en in pairs]])
    return score, str(metric.get_signature()), hyps


if __name__ == "__main__":  # `python -m aiayn_helpers.translate "Ein Hund läuft."`: the translator's command line
    from .cli import translate_main

    sys.exit(translate_main(prog="python -m aiayn_helpers.translate"))
