"""aiayn_helpers.explorer, the data of the site's attention explorer (book/attention_explorer.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest
import torch

import aiayn_helpers as ah
from aiayn_helpers.data import BOS_ID
from aiayn_helpers.explorer import HELD_OUT, KINDS, attention_maps
from aiayn_helpers.translation import encode_sources

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def records():
    model, tokenizer = ah.load_pretrained()
    return model, tokenizer, attention_maps(model, tokenizer, HELD_OUT[:3])


def test_held_out_sentences_are_chapter_8s():
    nb = nbformat.read(ROOT / "notebooks" / "08_using_the_model.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith("SENTENCES = ["))
    assert ast.literal_eval(cell.source.split("=", 1)[1].split("]", 1)[0] + "]") == HELD_OUT


def test_every_map_has_its_shape_and_rows_sum_to_one(records):
    model, tokenizer, recs = records
    layers, heads = len(model.encoder.layers), model.encoder.layers[0].self_attn.num_heads
    for r in recs:
        s, t = len(r["source"]), len(r["output"])
        assert len(r["target"]) == t and r["target"][0] == "<bos>" and r["output"][-1] == "<eos>"
        assert r["target"][1:] == r["output"][:-1]  # teacher forcing: input shifted by one
        shapes = {"encoder": (s, s), "decoder": (t, t), "cross": (t, s)}
        for kind in KINDS:
            maps = torch.tensor(r["maps"][kind])  # (layers, heads, queries, keys), percent
            assert maps.shape == (layers, heads, *shapes[kind]), kind
            sums = maps.sum(-1)
            assert ((sums - 100).abs() <= maps.shape[-1] / 2).all(), kind  # rounding of each entry
        future = torch.ones(t, t, dtype=torch.bool).triu(1)
        assert (torch.tensor(r["maps"]["decoder"])[..., future] == 0).all()  # the causal mask


def test_translation_is_the_one_ah_translate_gives(records):
    model, tokenizer, recs = records
    assert [r["english"] for r in recs] == ah.translate(model, tokenizer, [r["german"] for r in recs])


def test_maps_equal_the_weights_of_an_explicit_forward_pass(records):
    model, tokenizer, recs = records
    r = recs[2]
    ids = [tokenizer.token_to_id(tok) for tok in r["target"][1:]]
    src = encode_sources(tokenizer, [r["german"]])
    last = model.decoder.layers[-1].cross_attn
    with torch.no_grad():  # the last cross-attention's input, then its weights asked for directly
        memory, src_mask = model.encode(src)
        inputs = []
        handle = last.register_forward_hook(lambda module, args, out: inputs.append(args[0]))
        try:
            model.decode(torch.tensor([[BOS_ID, *ids]]), memory, src_mask)
        finally:
            handle.remove()
        cross = last(inputs[0], memory, memory, src_mask, need_weights=True)[1][0]
    assert torch.equal((cross * 100).round().long(), torch.tensor(r["maps"]["cross"][-1]))


def test_bad_input():
    model, tokenizer = ah.load_pretrained()
    with pytest.raises(ValueError, match="list of non-empty strings"):
        attention_maps(model, tokenizer, "Ein Hund.")
    with pytest.raises(ValueError, match="list of non-empty strings"):
        attention_maps(model, tokenizer, ["Ein Hund.", ""])
