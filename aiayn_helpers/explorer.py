"""The data behind the site's attention explorer: every map of the shipped model.

For each German sentence, :func:`attention_maps` translates it as
:func:`aiayn_helpers.translate` does (beam search with the model's own settings), then
runs the model once more on its own translation with teacher forcing and keeps, for
every layer and head, the encoder's self-attention ``(S, S)``, the decoder's masked
self-attention ``(T, T)`` and the cross-attention ``(T, S)``. Row ``i`` of a decoder
map is the step that predicts output token ``i``; its keys are the tokens before it
(``<bos>`` first). The site's page (``book/attention_explorer.md``) draws them; the
book's Sphinx extension (``book/_ext/attention_explorer.py``) writes them beside the
page at build time, so the page needs no kernel and no other host.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .attention import capture_attention
from .data import BOS_ID
from .decoding import beam_search, greedy_decode
from .translation import encode_sources

# Chapter 8's sentences that appear nowhere in Multi30k (tests/test_explorer.py checks
# the list against the chapter).
HELD_OUT = [
    "Zwei Hunde spielen im Schnee.",
    "Eine Frau liest ein Buch auf einer Bank.",
    "Ein schwarzer Hund rennt über eine grüne Wiese.",
    "Ein Mann in einem blauen Hemd fährt ein Fahrrad die Straße hinunter.",
    "Drei Kinder springen in einen See.",
    "Ein älterer Mann sitzt auf einer Bank und liest eine Zeitung.",
]
KINDS = ("encoder", "decoder", "cross")


@torch.no_grad()
def attention_maps(
    model: nn.Module, tokenizer, sentences: Sequence[str], scale: int = 100
) -> list[dict]:
    """One record per sentence: its tokens, its translation and every attention map.

    Each record holds ``german``, ``english`` (the detokenized translation),
    ``source`` (the source tokens, ``<eos>`` last), ``target`` (the decoder's input
    tokens, ``<bos>`` first) and ``output`` (the tokens it predicts, ``<eos>`` last),
    and ``maps[kind][layer][head]``, a list of rows of weights times ``scale``, rounded
    to integers (100: percent, which keeps the site's data small), for ``kind`` in
    ``("encoder", "decoder", "cross")``.
    """
    if isinstance(sentences, str) or not all(
        isinstance(s, str) and s.strip() for s in sentences
    ):
        raise ValueError("sentences must be a list of non-empty strings")
    defaults = {
        "beam_size": 4,
        "length_penalty": 0.6,
        **getattr(model, "decoding_defaults", {}),
    }
    src = encode_sources(tokenizer, sentences)  # all at once on the fast (fused) path
    if defaults["beam_size"] > 1:
        hyps = beam_search(
            model,
            src,
            beam_size=defaults["beam_size"],
            length_penalty=defaults["length_penalty"],
        )
    else:
        hyps = greedy_decode(model, src)
    return [
        _one(model, tokenizer, s, ids, scale)
        for s, ids in zip(sentences, hyps, strict=True)
    ]


def _one(
    model: nn.Module, tokenizer, sentence: str, ids: list[int], scale: int
) -> dict:
    src = encode_sources(tokenizer, [sentence])
    tgt_in = torch.tensor([[BOS_ID, *ids]])
    with capture_attention(model) as weights:
        model(src, tgt_in)  # teacher forcing on the model's own translation

    def rows(name: str) -> list:  # (1, h, Tq, Tk) -> [head][query][key]
        return (weights[name][0] * scale).round().to(torch.int64).tolist()

    layers = range(len(model.decoder.layers))
    maps = {
        "encoder": [
            rows(f"encoder.layers.{i}.self_attn")
            for i in range(len(model.encoder.layers))
        ],
        "decoder": [rows(f"decoder.layers.{i}.self_attn") for i in layers],
        "cross": [rows(f"decoder.layers.{i}.cross_attn") for i in layers],
    }
    token = tokenizer.id_to_token
    return {
        "german": sentence,
        "english": tokenizer.decode(ids, skip_special_tokens=True),
        "source": [token(i) for i in src[0].tolist()],
        "target": ["<bos>", *(token(i) for i in ids)],
        "output": [*(token(i) for i in ids), "<eos>"],
        "maps": maps,
    }
