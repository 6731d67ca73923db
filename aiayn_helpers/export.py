"""Export the book's Transformer to Hugging Face Transformers (Marian) and CTranslate2.

Marian is the same post-norm encoder-decoder with sinusoidal positions, embeddings
scaled by sqrt(d_model) and tied weights. One difference needs care: Marian's
sinusoidal table puts all sines first, then all cosines; the book interleaves them
(even columns sin, odd columns cos). Permuting the residual (d_model) dimension of
every weight by the same permutation is exact (LayerNorm, attention and the
feed-forward are unchanged by a permutation of their d_model axis), so the exported
model computes the same logits as the book's.

``transformers`` and ``ctranslate2`` are imported only when used.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

__all__ = ["export_marian", "export_ctranslate2", "ctranslate2_translate"]


def _require(name: str):
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as err:  # pragma: no cover - the package is pinned
        raise ImportError(
            f"aiayn_helpers.export needs the package {name!r}: "
            f"pip install -r requirements.txt (or pip install {name})"
        ) from err


def _perm(d_model: int) -> torch.Tensor:
    """Marian column j holds the book's column perm[j]: sines first, then cosines."""
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


def _marian_state(model, perm: torch.Tensor) -> dict[str, torch.Tensor]:
    sd = {k: v.detach().float().clone() for k, v in model.state_dict().items()}
    out: dict[str, torch.Tensor] = {}
    emb = sd["src_embed.weight"][:, perm]
    out["model.shared.weight"] = emb
    out["model.encoder.embed_tokens.weight"] = emb
    out["model.decoder.embed_tokens.weight"] = emb
    out["lm_head.weight"] = emb
    out["final_logits_bias"] = torch.zeros(1, emb.shape[0])
    names = {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj", "w_o": "out_proj"}

    def attn(src: str, dst: str) -> None:
        for a, b in names.items():
            w, bias = sd[f"{src}.{a}.weight"], sd[f"{src}.{a}.bias"]
            if a == "w_o":
                out[f"{dst}.{b}.weight"] = w[perm, :]
                out[f"{dst}.{b}.bias"] = bias[perm]
            else:
                out[f"{dst}.{b}.weight"] = w[:, perm]
                out[f"{dst}.{b}.bias"] = bias

    def norm(src: str, dst: str) -> None:
        out[f"{dst}.weight"] = sd[f"{src}.weight"][perm]
        out[f"{dst}.bias"] = sd[f"{src}.bias"][perm]

    def ff(src: str, dst: str) -> None:
        out[f"{dst}.fc1.weight"] = sd[f"{src}.ff.linear1.weight"][:, perm]
        out[f"{dst}.fc1.bias"] = sd[f"{src}.ff.linear1.bias"]
        out[f"{dst}.fc2.weight"] = sd[f"{src}.ff.linear2.weight"][perm, :]
        out[f"{dst}.fc2.bias"] = sd[f"{src}.ff.linear2.bias"][perm]

    for i in range(len(model.encoder.layers)):
        s, d = f"encoder.layers.{i}", f"model.encoder.layers.{i}"
        attn(f"{s}.self_attn", f"{d}.self_attn")
        norm(f"{s}.norm1", f"{d}.self_attn_layer_norm")
        ff(s, d)
        norm(f"{s}.norm2", f"{d}.final_layer_norm")
    for i in range(len(model.decoder.layers)):
        s, d = f"decoder.layers.{i}", f"model.decoder.layers.{i}"
        attn(f"{s}.self_attn", f"{d}.self_attn")
        norm(f"{s}.norm1", f"{d}.self_attn_layer_norm")
        attn(f"{s}.cross_attn", f"{d}.encoder_attn")
        norm(f"{s}.norm2", f"{d}.encoder_attn_layer_norm")
        ff(s, d)
        norm(f"{s}.norm3", f"{d}.final_layer_norm")
    return out


def _check_export_inputs(model, tokenizer, path, max_length) -> dict[str, int]:
    """Raise ``ValueError`` unless :func:`export_marian` can export ``model``; return
    the special tokens' ids."""
    from .model import Transformer

    if not isinstance(model, Transformer):
        raise ValueError(
            f"model must be an aiayn_helpers.Transformer, got {type(model).__name__}"
        )
    if getattr(model, "norm_first", False) or any(
        getattr(layer, "norm_first", False) for layer in model.encoder.layers
    ):
        raise ValueError(
            "model must be post-norm (Marian's layout), got norm_first=True"
        )
    if not hasattr(tokenizer, "token_to_id") or not hasattr(tokenizer, "to_str"):
        raise ValueError(
            "tokenizer must be a tokenizers.Tokenizer (ah.load_pretrained()'s second "
            f"value), got {type(tokenizer).__name__}"
        )
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(
            f"path must be a str or os.PathLike, got {type(path).__name__}"
        )
    if not isinstance(max_length, int) or max_length < 2:
        raise ValueError(f"max_length must be an int >= 2, got {max_length!r}")
    sd = model.state_dict()
    if not (
        torch.equal(sd["src_embed.weight"], sd["tgt_embed.weight"])
        and torch.equal(sd["src_embed.weight"], sd["generator.weight"])
    ):
        raise ValueError("model must share its embeddings and output layer (tied)")
    ids = {t: tokenizer.token_to_id(t) for t in ("<pad>", "<bos>", "<eos>", "<unk>")}
    if any(v is None for v in ids.values()):
        raise ValueError(f"tokenizer lacks special tokens: {ids}")
    return ids


def export_marian(model, tokenizer, path, max_length: int = 128) -> Path:
    """Write ``model`` (the book's Transformer) as a MarianMTModel directory, ``path``.

    Writes config.json, model.safetensors, generation_config.json and a fast tokenizer
    built from the book's own BPE ``tokenizer``. Returns the directory.
    """
    ids = _check_export_inputs(model, tokenizer, path, max_length)
    sd = model.state_dict()
    tr = _require("transformers")

    d_model = model.d_model
    enc0 = model.encoder.layers[0]
    vocab, d = sd["src_embed.weight"].shape
    cfg = tr.MarianConfig(
        vocab_size=vocab,
        decoder_vocab_size=vocab,
        d_model=d_model,
        encoder_layers=len(model.encoder.layers),
        decoder_layers=len(model.decoder.layers),
        encoder_attention_heads=enc0.self_attn.num_heads,
        decoder_attention_heads=enc0.self_attn.num_heads,
        encoder_ffn_dim=enc0.ff.linear1.out_features,
        decoder_ffn_dim=enc0.ff.linear1.out_features,
        activation_function="relu",
        max_position_embeddings=max(max_length, 512),
        scale_embedding=True,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        pad_token_id=ids["<pad>"],
        eos_token_id=ids["<eos>"],
        bos_token_id=ids["<bos>"],
        decoder_start_token_id=ids["<bos>"],
        forced_eos_token_id=None,
    )
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    hf = tr.MarianMTModel(cfg)
    state = _marian_state(model, _perm(d_model))
    missing, unexpected = hf.load_state_dict(state, strict=False)
    missing = [k for k in missing if "embed_positions" not in k]
    if missing or unexpected:
        raise RuntimeError(f"weight mapping incomplete: {missing} {unexpected}")
    hf.eval()
    hf.save_pretrained(out)
    gen = tr.GenerationConfig(
        decoder_start_token_id=ids["<bos>"],
        bos_token_id=ids["<bos>"],
        eos_token_id=ids["<eos>"],
        pad_token_id=ids["<pad>"],
        bad_words_ids=[[ids["<pad>"]], [ids["<bos>"]]],
        max_length=max_length,
        num_beams=1,
    )
    gen.save_pretrained(out)
    fast = tr.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="<pad>",
        bos_token="<bos>",
        eos_token="<eos>",
        unk_token="<unk>",
    )
    fast.save_pretrained(out)

    return out


def export_ctranslate2(marian_dir, out_dir, quantization: str | None = None) -> Path:
    """Convert an :func:`export_marian` directory to CTranslate2 at ``out_dir``."""
    if quantization not in (None, "int8"):
        raise ValueError(f"quantization must be None or 'int8', got {quantization!r}")
    if (
        not isinstance(marian_dir, (str, os.PathLike))
        or not (Path(marian_dir) / "config.json").is_file()
    ):
        raise ValueError(f"marian_dir must hold an exported model, got {marian_dir!r}")
    ct2 = _require("ctranslate2")
    from ctranslate2.converters import transformers as ct2tr

    class _BookMarianLoader(ct2tr.MarianMTLoader):
        # CTranslate2's Marian loader assumes <pad> is the last token and that the
        # decoder starts from a zero embedding; the book's <pad> is id 0 and its
        # decoder starts from <bos>, so keep the whole vocabulary and start token.
        def get_model_spec(self, model):
            model.config.normalize_before = False
            model.config.normalize_embedding = False
            return ct2tr.BartLoader.get_model_spec(self, model)

        def set_config(self, config, model, tokenizer):
            ct2tr.BartLoader.set_config(self, config, model, tokenizer)

        def set_decoder(self, spec, decoder):
            ct2tr.BartLoader.set_decoder(self, spec, decoder)

        def get_vocabulary(self, model, tokenizer):
            return ct2tr.BartLoader.get_vocabulary(self, model, tokenizer)

    saved = ct2tr._MODEL_LOADERS["MarianConfig"]
    ct2tr._MODEL_LOADERS["MarianConfig"] = _BookMarianLoader()
    try:
        conv = ct2.converters.TransformersConverter(str(marian_dir))
        conv.convert(str(out_dir), quantization=quantization, force=True)
    finally:
        ct2tr._MODEL_LOADERS["MarianConfig"] = saved
    return Path(out_dir)


def ctranslate2_translate(
    ct2_dir,
    tokenizer,
    sentences: list[str],
    beam_size: int = 1,
    max_length: int = 128,
    threads: int = 1,
) -> list[str]:
    """Translate ``sentences`` with a CTranslate2 model; returns the decoded strings."""
    if isinstance(sentences, str) or not all(isinstance(s, str) for s in sentences):
        raise ValueError("sentences must be a list of str")
    if not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"beam_size must be an int >= 1, got {beam_size!r}")
    ct2 = _require("ctranslate2")
    tr = ct2.Translator(
        str(ct2_dir), device="cpu", inter_threads=1, intra_threads=threads
    )
    eos = tokenizer.id_to_token(tokenizer.token_to_id("<eos>"))
    toks = [tokenizer.encode(s).tokens + [eos] for s in sentences]
    res = tr.translate_batch(
        toks,
        beam_size=beam_size,
        max_decoding_length=max_length,
        target_prefix=None,
        return_scores=False,
    )
    return [
        tokenizer.decode([tokenizer.token_to_id(t) for t in r.hypotheses[0]])
        for r in res
    ]
