"""The Marian (Transformers) and CTranslate2 exports compute what the book's model does."""

import pytest
import torch

import aiayn_helpers as ah

transformers = pytest.importorskip("transformers")
ctranslate2 = pytest.importorskip("ctranslate2")

from aiayn_helpers.export import (  # noqa: E402
    ctranslate2_translate,
    export_ctranslate2,
    export_marian,
)
from aiayn_helpers.vocab import BOS_ID, EOS_ID, PAD_ID  # noqa: E402

SENTENCES = [
    "Ein Mann fährt Fahrrad.",
    "Zwei Hunde spielen im Schnee.",
    "Eine Frau liest ein Buch im Park.",
    "Kinder spielen Fußball auf einer grünen Wiese neben einem großen Haus.",
    "Ein Hund.",
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    torch.set_num_threads(1)
    model, tok = ah.load_pretrained()
    model.eval()
    d = tmp_path_factory.mktemp("export")
    marian = export_marian(model, tok, d / "marian")
    hf = transformers.MarianMTModel.from_pretrained(marian).eval()
    return model, tok, marian, hf, d


def _batch(tok, sentences):
    ids = [tok.encode(s).ids + [EOS_ID] for s in sentences]
    n = max(map(len, ids))
    return torch.tensor([i + [0] * (n - len(i)) for i in ids])


def test_logits_equal(exported):
    model, tok, _, hf, _ = exported
    src = _batch(tok, SENTENCES)
    tgt = _batch(tok, ["A man rides.", "Two dogs play in the snow.", "A", "B c", "Dog"])
    tgt = torch.cat([torch.full((len(SENTENCES), 1), BOS_ID), tgt[:, :-1]], 1)
    with torch.no_grad():
        ours = model(src, tgt)
        theirs = hf(
            input_ids=src,
            attention_mask=(src != 0).long(),
            decoder_input_ids=tgt,
            decoder_attention_mask=(tgt != 0).long(),
        ).logits
    real = tgt != 0
    assert torch.allclose(ours[real], theirs[real], atol=1e-4, rtol=1e-4)


def test_generate_greedy_equals_book(exported):
    model, tok, _, hf, _ = exported
    src = _batch(tok, SENTENCES)
    ours = ah.greedy_decode(model, src, max_new_tokens=60)
    out = hf.generate(
        input_ids=src,
        attention_mask=(src != 0).long(),
        num_beams=1,
        do_sample=False,
        max_new_tokens=60,
    )
    theirs = []
    for row in out.tolist():
        row = row[1:]
        theirs.append([i for i in row if i != PAD_ID])
    strip = [[i for i in r if i != EOS_ID] for r in ours]
    assert [[i for i in r if i != EOS_ID] for r in theirs] == strip


def test_ctranslate2_greedy_equals_book(exported):
    model, tok, marian, _, d = exported
    ct2 = export_ctranslate2(marian, d / "ct2")
    ours = ah.translate(model, tok, SENTENCES, beam_size=1)
    assert ctranslate2_translate(ct2, tok, SENTENCES) == ours


def test_bad_inputs(exported, tmp_path):
    model, tok, marian, _, _ = exported
    with pytest.raises(ValueError):
        export_marian("model", tok, tmp_path / "x")
    with pytest.raises(ValueError):
        export_marian(model, "tok", tmp_path / "x")
    with pytest.raises(ValueError):
        export_marian(model, tok, 3)
    with pytest.raises(ValueError):
        export_ctranslate2(marian, tmp_path / "y", quantization="int4")
    with pytest.raises(ValueError):
        export_ctranslate2(tmp_path / "nothing", tmp_path / "y")
    with pytest.raises(ValueError):
        ctranslate2_translate(tmp_path, tok, "a string")
