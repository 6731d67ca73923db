"""aiayn_helpers: the canonical, tested implementation used by the chapters of
"Attention Is All You Need, from first principles".

Mask convention: boolean, True = may attend.

The model, one concept per module in the paper's order: ``attention.py`` (section 3.2),
``positional.py`` (3.5), ``layers.py`` (3.1 and 3.3), ``model.py`` (figure 1). Around
it, the path of one German sentence, "Ein Mann fährt Fahrrad.", from
``python -m aiayn_helpers.train --preset multi30k --out runs/m --eval-bleu`` to a BLEU
score, one file at a time:

1. ``train.py``: ``main()`` reads the flags and runs the steps below, top to bottom.
2. ``config.py``: the preset and the flags become one ``Config``, every setting of the
   run.
3. ``data.py``: ``load_multi30k`` reads the sentence and its English reference,
   ``train_bpe`` learns one vocabulary for both languages, ``encode_pairs`` turns the
   pair into ids (source ``... <eos>``, target ``<bos> ... <eos>``) and
   ``length_batches`` puts it in a batch of sentences of similar length.
4. ``training.py``: ``make_batch`` pads that batch into ``src``, ``tgt_in`` and
   ``tgt_out``; ``train_step`` runs the model on it (``Transformer.forward``), takes the
   label-smoothed loss, backpropagates, and lets Adam and the warmup schedule update the
   weights.
5. ``checkpoint.py``: after every epoch ``save_checkpoint`` writes ``last.pt`` (weights,
   Adam, the schedule, the ``TrainState``, the RNG states, the tokenizer and the
   ``Config``); ``--resume`` continues from it with ``resume``.
6. ``decoding.py``: after training, ``beam_search`` encodes the sentence once
   (``Transformer.encode``: the memory and the source mask) and grows four hypotheses
   a token at a time (``Transformer.next_token_logits``), ranked with a length penalty.
7. ``translation.py``: ``translate`` turned the sentence into those source ids and turns
   the best hypothesis back into English text; ``translate_and_score`` scores all of
   test2016 against the references with sacreBLEU, and ``train.py`` writes the score
   to ``metrics.json``. ``python -m aiayn_helpers.evaluate`` repeats 6 and 7 for a
   finished run, from ``last.pt`` or the average of its last epochs.

The public API, ``ah.<name>(arguments in order) -> what it returns`` (``name=`` marks an
argument with a default; a class returns an instance of itself):

    scaled_dot_product_attention(query, key, value, mask=, *, bias=, dropout_p=) ->
            tuple[torch.Tensor, torch.Tensor]
    causal_mask(size, device=) -> torch.Tensor
    padding_mask(tokens, pad_id) -> torch.Tensor
    MultiHeadAttention(d_model, num_heads, dropout=, *, fused=, d_k=) ->
            MultiHeadAttention
    capture_attention(model) -> Iterator[dict[str, torch.Tensor]]
    sinusoidal_encoding(length, d_model, dtype=) -> torch.Tensor
    LearnedPositionalEncoding(d_model, dropout=, max_len=) -> LearnedPositionalEncoding
    PositionalEncoding(d_model, dropout=, max_len=, *, extend=) -> PositionalEncoding
    PositionwiseFeedForward(d_model, d_ff, dropout=) -> PositionwiseFeedForward
    EncoderLayer(d_model, num_heads, d_ff, dropout=, *, norm_first=, fused=, d_k=) ->
            EncoderLayer
    Encoder(num_layers, d_model, num_heads, d_ff, dropout=, *, norm_first=, final_norm=,
            fused=, d_k=) -> Encoder
    DecoderLayer(d_model, num_heads, d_ff, dropout=, *, norm_first=, fused=, d_k=) ->
            DecoderLayer
    Decoder(num_layers, d_model, num_heads, d_ff, dropout=, *, norm_first=, final_norm=,
            fused=, d_k=) -> Decoder
    Transformer(src_vocab_size, tgt_vocab_size, d_model=, num_heads=, num_layers=,
            d_ff=, dropout=, share_embeddings=, pad_id=, *, norm_first=, max_positions=,
            fused=, d_k=, positional=) -> Transformer
    count_parameters(model, trainable_only=) -> int
    seed_everything(seed=) -> None
    setup_notebook(seed=, threads=) -> None
    expect_error(error=, match=) -> expect_error
    greedy_decode(model, src, max_new_tokens=, bos_id=, eos_id=, *, use_cache=) ->
            list[list[int]]
    beam_search(model, src, beam_size=, max_new_tokens=, bos_id=, eos_id=,
            length_penalty=, *, return_scores=, use_cache=) -> list[list[int]] |
            tuple[list[list[int]], list[float]]
    length_penalty_gnmt(length, alpha) -> torch.Tensor
    score_hypotheses(model, src, hypotheses, length_penalty=, max_new_tokens=, bos_id=,
            eos_id=) -> list[float]
    load_multi30k(split, data_dir=, limit=) -> list[tuple[str, str]]
    multi30k_dir(data_dir=) -> Path
    train_bpe(texts, vocab_size, min_frequency=) -> Tokenizer
    encode_pairs(tokenizer, pairs, truncate_len=) -> list[tuple[list[int], list[int]]]
    length_batches(pairs_ids, max_tokens, shuffle=, seed=) -> list[list[int]]
    collate(batch_of_pairs_ids, pad_id=) -> tuple[torch.Tensor, torch.Tensor,
            torch.Tensor]
    label_smoothed_cross_entropy(logits, target, epsilon=, ignore_index=, reduction=) ->
            torch.Tensor
    noam_lr(step, d_model, warmup) -> float
    make_optimizer(model) -> torch.optim.Adam
    make_noam_scheduler(optimizer, d_model, warmup, scale=) ->
            torch.optim.lr_scheduler.LambdaLR
    train_epoch(model, pairs_ids, batches, optimizer, scheduler=, *, epsilon=,
            clip_norm=, on_step=) -> dict
    evaluate_loss(model, pairs_ids, max_tokens=, epsilon=) -> dict
    KVCache(self_k, self_v, cross_k, cross_v, memory_mask) -> KVCache
    load_pretrained(name=, *, dtype=) -> tuple[nn.Module, object]
    translate(model, tokenizer, sentences, beam_size=, length_penalty=, batch_size=,
            progress=) -> list[str]
    encode_sources(tokenizer, sentences) -> torch.Tensor
    translate_and_score(model, tokenizer, pairs, beam_size=, length_penalty=, progress=)
            -> tuple[BLEUScore, str, list[str]]
    apply_rotary(x, positions=, base=) -> torch.Tensor
    alibi_slopes(num_heads) -> torch.Tensor
    alibi_bias(num_heads, t_q, t_k, *, dtype=, device=) -> torch.Tensor
    RelativeAttention(d_model, num_heads, dropout=, *, positional, fused=) ->
            RelativeAttention
    CausalLM(vocab_size, d_model=, num_heads=, num_layers=, d_ff=, dropout=,
            max_positions=, *, positional=, norm_first=, tie_embeddings=, fused=) ->
            CausalLM
    lm_loss(logits, ids, pad_id=) -> torch.Tensor
    mask_tokens(ids, vocab_size, mask_id, special_ids=, p=, generator=) ->
            tuple[torch.Tensor, torch.Tensor]

(End of the table; ``python tests/test_api.py`` rewrites it from the code.)
"""

from .attention import (
    MultiHeadAttention,
    capture_attention,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
)
from .layers import (
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    PositionwiseFeedForward,
)
from .model import Transformer
from .positional import (
    LearnedPositionalEncoding,
    PositionalEncoding,
    sinusoidal_encoding,
)
from .utils import count_parameters, expect_error, seed_everything, setup_notebook


def _version() -> str:
    """The package's version, from one place: pyproject.toml's ``[project] version``.

    In a checkout the file itself is read (an editable install's metadata keeps the
    version it was installed with); an installed wheel carries the same number in its
    metadata.
    """
    import tomllib
    from importlib.metadata import PackageNotFoundError, version
    from pathlib import Path

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        if project.get("name") == "aiayn_helpers":
            return str(project["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        pass
    try:
        return version("aiayn_helpers")
    except PackageNotFoundError:
        return "unknown"


__version__ = _version()

__all__ = [
    "scaled_dot_product_attention",
    "causal_mask",
    "padding_mask",
    "MultiHeadAttention",
    "capture_attention",
    "sinusoidal_encoding",
    "LearnedPositionalEncoding",
    "PositionalEncoding",
    "PositionwiseFeedForward",
    "EncoderLayer",
    "Encoder",
    "DecoderLayer",
    "Decoder",
    "Transformer",
    "count_parameters",
    "seed_everything",
    "setup_notebook",
    "expect_error",
]

# chapter 7: decoding
from .decoding import beam_search, greedy_decode, length_penalty_gnmt, score_hypotheses  # noqa: E402

__all__ += ["greedy_decode", "beam_search", "length_penalty_gnmt", "score_hypotheses"]

# chapter 7: data and training
from .data import (  # noqa: E402
    collate,
    encode_pairs,
    length_batches,
    load_multi30k,
    multi30k_dir,
    train_bpe,
)
from .training import (  # noqa: E402
    evaluate_loss,
    label_smoothed_cross_entropy,
    make_noam_scheduler,
    make_optimizer,
    noam_lr,
    train_epoch,
)

__all__ += [
    "load_multi30k",
    "multi30k_dir",
    "train_bpe",
    "encode_pairs",
    "length_batches",
    "collate",
    "label_smoothed_cross_entropy",
    "noam_lr",
    "make_optimizer",
    "make_noam_scheduler",
    "train_epoch",
    "evaluate_loss",
]

# chapter 8: the shipped translator
from .layers import KVCache  # noqa: E402
from .pretrained import load_pretrained  # noqa: E402
from .translation import encode_sources, translate, translate_and_score  # noqa: E402

__all__ += [
    "KVCache",
    "load_pretrained",
    "translate",
    "encode_sources",
    "translate_and_score",
]

# chapter 10: after the paper (rotary embeddings, ALiBi, a decoder-only language model,
# BERT's masking)
from .descendants import (  # noqa: E402
    CausalLM,
    RelativeAttention,
    alibi_bias,
    alibi_slopes,
    apply_rotary,
    lm_loss,
    mask_tokens,
)

__all__ += [
    "apply_rotary",
    "alibi_slopes",
    "alibi_bias",
    "RelativeAttention",
    "CausalLM",
    "lm_loss",
    "mask_tokens",
]
