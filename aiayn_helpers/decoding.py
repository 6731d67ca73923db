"""Turning a trained Transformer into a translator: greedy decoding and beam search.

The paper (section 6.1): "We used beam search with a beam size of 4 and length
penalty alpha = 0.6 ... We set the maximum output length during inference to
input length + 50, but terminate early when possible."

Conventions shared by every function here:

* ``src`` is a ``(batch, S)`` tensor of source ids, padded with ``model.pad_id``.
* A hypothesis is returned as a list of ids **without** ``<bos>`` and ``<eos>``.
* ``max_new_tokens`` is the largest number of tokens generated per sentence, ``<eos>``
  included; ``None`` means "source length (without padding) + 50", the paper's rule.
  So a returned hypothesis shorter than its limit ended with ``<eos>``; one of exactly
  the limit's length was cut off.
* The next-token distribution never proposes ``<pad>`` or ``<bos>``: their logits are
  set to ``-inf`` before the log-softmax (neither is ever a correct output).
* The model is put in eval mode (no dropout) and run under ``torch.no_grad()``; its
  previous mode is restored afterwards.
* The inputs are checked once, on entry. The source is encoded once,
  ``memory, src_mask = model.encode(src)``; then every step calls
  ``model.next_token_logits(prefix, memory, src_mask, cache)``, which checks no ids.
* A step waits for the device once: the "all finished?" test (greedy) or "how many
  sentences are still open?" (beam search) reads one number back. Everything else
  (finished flags, scores, lengths, the finished hypotheses) stays on the device and
  is read back once, at the end; on a GPU each read-back stalls the queue of kernels
  (``tests/test_host_sync.py`` counts them).
* The special ids come from :mod:`aiayn_helpers.vocab` (or the arguments) and
  ``model.pad_id``: decoding needs a model and token ids, not the data pipeline.
* ``use_cache=True`` (the default) keeps a key/value cache (chapter 8,
  :class:`~aiayn_helpers.layers.KVCache`): each step runs the decoder on the newest
  token only, appending its self-attention keys and values to the cache, and the
  cross-attention keys and values are projected from the memory once. Beam search
  reorders the cache with its beams. ``use_cache=False`` re-runs the decoder over the
  whole prefix at every step; both give the same tokens and scores.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from ._checks import (
    check_int_in_range,
    check_non_negative_number,
    check_positive_int,
    check_token_ids,
)
from .vocab import BOS_ID, EOS_ID

__all__ = ["greedy_decode", "beam_search", "length_penalty_gnmt", "score_hypotheses"]


def length_penalty_gnmt(length: torch.Tensor | int, alpha: float) -> torch.Tensor:
    """GNMT length penalty ``lp(Y) = ((5 + |Y|) / 6) ** alpha`` (Wu et al., 2016).

    A hypothesis is ranked by ``log P(Y | X) / lp(Y)``. With ``alpha = 0`` this is the
    plain log-probability, which favours short outputs (every token multiplies in a
    probability below one); ``alpha > 0`` divides long hypotheses' (negative) scores by
    more, which compensates.
    """
    length = torch.as_tensor(length, dtype=torch.float64)
    return ((5.0 + length) / 6.0) ** alpha


# -- input checks (once per call, never per step) -------------------------------------
def _check_inputs(model: object, src: object, bos_id: int, eos_id: int) -> None:
    for attr in (
        "encode",
        "next_token_logits",
        "pad_id",
        "tgt_vocab_size",
        "src_vocab_size",
    ):
        if not hasattr(model, attr):
            raise ValueError(
                "model must be an encoder-decoder like aiayn_helpers.Transformer with "
                f".{attr}, "
                f"got {type(model).__name__}"
            )
    check_token_ids("src", src, model.src_vocab_size)
    assert isinstance(src, torch.Tensor)
    if src.shape[0] == 0:
        raise ValueError(
            f"src must hold at least one sentence, got shape {tuple(src.shape)}"
        )
    for name, value in (("bos_id", bos_id), ("eos_id", eos_id)):
        check_int_in_range(name, value, 0, model.tgt_vocab_size)
        if value == model.pad_id:
            raise ValueError(
                f"{name}={value} equals the model's pad_id; special ids must differ"
            )
    if bos_id == eos_id:
        raise ValueError(f"bos_id and eos_id must differ, got {bos_id} for both")


def _check_use_cache(model: object, use_cache: object) -> None:
    if not isinstance(use_cache, bool):
        raise ValueError(f"use_cache must be True or False, got {use_cache!r}")
    if use_cache and not hasattr(model, "init_cache"):
        raise ValueError(
            "use_cache=True needs a model with .init_cache (like "
            "aiayn_helpers.Transformer), "
            f"got {type(model).__name__}; pass use_cache=False"
        )


def _limits(
    model: nn.Module, src: torch.Tensor, max_new_tokens: int | None
) -> torch.Tensor:
    """Per-sentence budget of generated tokens, ``(batch,)`` long."""
    if max_new_tokens is None:
        return (src != model.pad_id).sum(dim=1).clamp(min=1) + 50
    check_positive_int("max_new_tokens", max_new_tokens)
    return torch.full(
        (src.shape[0],), max_new_tokens, dtype=torch.long, device=src.device
    )


def _next_log_probs(logits: torch.Tensor, pad_id: int, bos_id: int) -> torch.Tensor:
    """Log-softmax over the vocabulary with ``<pad>`` and ``<bos>`` excluded;
    ``(..., V)``."""
    logits = logits.clone()
    logits[..., pad_id] = float("-inf")
    logits[..., bos_id] = float("-inf")
    return torch.log_softmax(logits, dim=-1)


class _EvalMode:
    """Context manager: eval mode + no_grad, restoring the previous mode."""

    def __init__(self, model: nn.Module):
        self.model = model

    def __enter__(self) -> None:
        self.was_training = self.model.training
        self.model.eval()
        self.no_grad = torch.no_grad()
        self.no_grad.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.no_grad.__exit__(*exc)
        self.model.train(self.was_training)


# -- greedy -------------------------------------------------------------------------
def greedy_decode(
    model: nn.Module,
    src: torch.Tensor,
    max_new_tokens: int | None = None,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
    *,
    use_cache: bool = True,
) -> list[list[int]]:
    """Pick the most probable next token at every step, for a whole batch at once.

    Args:
        model: an :class:`aiayn_helpers.Transformer` (``encode`` and
            ``next_token_logits``).
        src: ``(batch, S)`` source ids, padded with ``model.pad_id``.
        max_new_tokens: most tokens generated per sentence (``<eos>`` included);
            ``None``: source length + 50.
        use_cache: keep a key/value cache (one decoder position per step) instead of
            re-running the decoder over the whole prefix; same result.

    Returns:
        ``batch`` lists of ids, without ``<bos>`` and ``<eos>``.
    """
    _check_inputs(model, src, bos_id, eos_id)
    _check_use_cache(model, use_cache)
    limits = _limits(model, src, max_new_tokens)
    batch = src.shape[0]
    with _EvalMode(model):
        # (batch, S, d_model) and (batch, 1, 1, S), computed once
        memory, src_mask = model.encode(src)
        cache = model.init_cache(memory, src_mask) if use_cache else None
        ys = torch.full((batch, 1), bos_id, dtype=torch.long, device=src.device)
        finished = torch.zeros(batch, dtype=torch.bool, device=src.device)
        special = (model.pad_id, bos_id)
        banned = _banned(model.tgt_vocab_size, special, memory.dtype, src.device)
        for step in range(1, int(limits.max()) + 1):
            # (a finished row goes on stepping on <pad>; what it generates then is
            # discarded)
            logits = model.next_token_logits(ys, memory, src_mask, cache)  # (batch, V)
            next_token = torch.log_softmax(logits + banned, dim=-1).argmax(dim=-1)
            # finished rows get padding
            next_token = next_token.masked_fill(finished, model.pad_id)
            ys = torch.cat([ys, next_token[:, None]], dim=1)
            finished |= (next_token == eos_id) | (limits <= step)
            if bool(finished.all()):  # the one host synchronisation of the step
                break
    out = []
    for row in ys[:, 1:].tolist():
        hyp = []
        for tok in row:
            if tok in (eos_id, model.pad_id):
                break
            hyp.append(tok)
        out.append(hyp)
    return out


# -- beam search ----------------------------------------------------------------------
def beam_search(
    model: nn.Module,
    src: torch.Tensor,
    beam_size: int = 4,
    max_new_tokens: int | None = None,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
    length_penalty: float = 0.6,
    *,
    return_scores: bool = False,
    use_cache: bool = True,
) -> list[list[int]] | tuple[list[list[int]], list[float]]:
    """Beam search with the GNMT length penalty, batched over sentences and beams.

    Every sentence keeps ``beam_size`` open hypotheses ("beams"). At each step all
    ``beam_size * V`` one-token extensions are scored by their summed log-probability
    and the best ``2 * beam_size`` are looked at in order:

    * an extension ending in ``<eos>`` that ranks within the best ``beam_size`` is a
      *finished* hypothesis, scored ``log P / lp(length)`` (length counts ``<eos>``);
      the sentence keeps its ``beam_size`` best finished hypotheses;
    * the best ``beam_size`` extensions not ending in ``<eos>`` become the new beams.

    A sentence stops when it holds ``beam_size`` finished hypotheses and its best open
    beam, penalised at the current length, scores no better than the worst of them
    (the rule of Hugging Face's ``BeamHypotheses``; stopping at the first
    ``beam_size`` finished ones would let early, poor ``<eos>`` extensions of weak
    beams end the search before the strong beam finishes), or when it reaches its
    length limit (its open beams are then finished as they are). The best finished
    hypothesis by penalised score is returned. With ``beam_size=1`` this is exactly
    :func:`greedy_decode`.

    Args:
        model: an :class:`aiayn_helpers.Transformer`.
        src: ``(batch, S)`` source ids, padded with ``model.pad_id``.
        beam_size: beams per sentence (4 in the paper).
        max_new_tokens: most tokens generated per sentence (``<eos>`` included);
            ``None``: source length + 50 (the paper's rule).
        length_penalty: ``alpha`` of :func:`length_penalty_gnmt` (0.6 in the paper);
            ``>= 0``.
        return_scores: also return each hypothesis' penalised score.
        use_cache: keep a key/value cache, reordered with the beams, instead of
            re-running the decoder over every prefix; same result.

    Returns:
        ``batch`` lists of ids without ``<bos>``/``<eos>``, and with ``return_scores``
        also a list of ``batch`` floats.
    """
    _check_inputs(model, src, bos_id, eos_id)
    check_positive_int("beam_size", beam_size)
    check_non_negative_number("length_penalty", length_penalty)
    _check_use_cache(model, use_cache)
    vocab = model.tgt_vocab_size
    if vocab - 3 < beam_size:  # <pad>, <bos> and <eos> never continue a beam
        raise ValueError(
            f"beam_size={beam_size} is too large for a target vocabulary of {vocab} "
            "tokens"
        )
    limits = _limits(model, src, max_new_tokens)
    with _EvalMode(model):
        special = (bos_id, eos_id)
        args = (beam_size, limits, special, length_penalty, use_cache)
        best = _beam_search(model, src, *args)
    # the best finished hypothesis of each sentence, read back once
    ids, scores = best
    lengths = (ids != model.pad_id).sum(dim=1)
    out = [row[:n] for row, n in zip(ids.tolist(), lengths.tolist(), strict=True)]
    if return_scores:
        return out, scores.tolist()
    return out


def _beam_search(
    model: nn.Module,
    src: torch.Tensor,
    k: int,
    limits: torch.Tensor,
    bos_eos: tuple[int, int],
    alpha: float,
    use_cache: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The search itself, on checked inputs; one host synchronisation per step.

    Returns each sentence's best finished hypothesis, on the device: ``(batch, L)`` ids
    padded with ``model.pad_id`` (a hypothesis never holds ``<pad>``) and its penalised
    score ``(batch,)``. The bookkeeping stays on the device (see :func:`_keep_best`).
    """
    bos_id, eos_id = bos_eos
    batch, device = src.shape[0], src.device
    vocab, pad_id = model.tgt_vocab_size, model.pad_id
    limits_host = limits.tolist()  # (a host synchronisation, once)
    longest, shortest = max(limits_host), min(limits_host)
    # encode and project the cross-attention keys and values once per sentence, then
    # treat (sentence, beam) pairs as one batch of n * k rows
    memory, src_mask = model.encode(src)
    beams = torch.arange(batch, device=device).repeat_interleave(k)  # (batch * k,)
    cache = model.init_cache(memory, src_mask).reorder(beams) if use_cache else None
    memory, src_mask = memory[beams], src_mask[beams]
    seqs, scores, fin, out = _start(batch, k, longest, (pad_id, bos_id), device)
    inf, banned = float("-inf"), _banned(vocab, (pad_id, bos_id), torch.float64, device)
    active = torch.arange(batch, device=device)  # the sentence of each open row group
    first_row = active[:, None] * k  # (n, 1): the first row of each open sentence
    for step in range(1, longest + 1):
        n = active.shape[0]
        logits = model.next_token_logits(seqs[:, :step], memory, src_mask, cache)
        logp = torch.log_softmax(logits.double() + banned, dim=-1).view(n, k, vocab)
        cand = (scores[:, :, None] + logp).view(n, k * vocab)  # (n, k * V)
        top_scores, top_idx = cand.topk(2 * k, dim=1)  # (n, 2k), sorted best first
        top_tok, top_row = top_idx % vocab, first_row + top_idx // vocab  # (n, 2k)
        is_eos = top_tok == eos_id
        penalty = length_penalty_gnmt(step, alpha)  # a CPU scalar: no synchronisation
        # 1) finished hypotheses: the <eos> candidates ranked within the best k
        eos_scores = torch.where(is_eos[:, :k], top_scores[:, :k] / penalty, inf)
        eos_ids = seqs[top_row[:, :k], 1:]  # (n, k, longest): their prefixes
        # 2) the new beams: the best k candidates that do not end in <eos>
        # (at most k of the 2k end in <eos>, one per beam); a stable sort, in rank order
        order = torch.sort(is_eos.long(), dim=1, stable=True).indices[:, :k]
        scores = top_scores.gather(1, order)
        parent = top_row.gather(1, order).view(-1)  # (n * k,)
        seqs = seqs[parent]  # each row extends its parent ...
        seqs[:, step] = top_tok.gather(1, order).view(-1)
        if cache is not None:  # ... and inherits its parent's keys and values
            cache.reorder(parent, cross=False)
        new = [(eos_scores, eos_ids)]
        # 3) a sentence out of budget finishes its open beams as they are (no <eos>)
        if step >= shortest:  # (before the shortest limit, none is)
            at_limit = limits[active] <= step  # (n,)
            cut_scores = torch.where(at_limit[:, None], scores / penalty, inf)
            new.append((cut_scores, seqs[:, 1:].view(n, k, longest)))
        # 4) each sentence keeps its k best finished hypotheses
        fin = _keep_best(fin, new)
        # 5) a sentence is done at its limit, or when it holds k finished hypotheses
        # and its best open beam, penalised now, scores no better than the worst
        worst = fin[0][:, k - 1]
        done = (worst > inf) & (scores[:, 0] / penalty <= worst)
        if step >= shortest:
            done |= at_limit
        n_open = n - int(done.sum())  # the one host synchronisation of the step
        if n_open < n:  # the done sentences leave the batch, their best hypothesis out
            order = done.to(torch.uint8).sort(stable=True).indices  # open ones first
            keep, gone = order[:n_open], order[n_open:]
            for o, f in zip(out, fin, strict=True):
                o[active[gone]] = f[gone, 0]
            if n_open == 0:
                break  # else every per-row input of the decoder follows:
            rows = (keep[:, None] * k + torch.arange(k, device=device)).view(-1)
            active, scores, first_row = active[keep], scores[keep], first_row[:n_open]
            fin = tuple(f[keep] for f in fin)
            memory, src_mask, seqs = memory[rows], src_mask[rows], seqs[rows]
            if cache is not None:
                cache.reorder(rows)
    return out[1], out[0]


def _banned(
    vocab: int,
    ids: tuple[int, int],
    dtype: torch.dtype,
    device: torch.device,
) -> torch.Tensor:
    """``(V,)``: ``-inf`` for the ``ids`` (``<pad>`` and ``<bos>``), 0 elsewhere.

    Added to the logits, it does what :func:`_next_log_probs` does, in one operation
    per step (``x + 0.0`` is ``x``, exactly).
    """
    banned = torch.zeros(vocab, dtype=dtype, device=device)
    banned[list(ids)] = float("-inf")
    return banned


def _start(batch: int, k: int, longest: int, pad_bos: tuple[int, int], device):
    """The state of a beam search before its first step.

    ``seqs`` ``(batch * k, longest + 1)``: every row's ``<bos>`` and tokens so far,
    then padding up to the longest limit.

    ``scores`` ``(batch, k)``: the beams' log-probabilities; only beam 0 is real at the
    start (the others are ``-inf``), so that the k beams do not pick the same tokens.
    ``fin``: each sentence's finished hypotheses (see :func:`_keep_best`), none yet.
    ``out``: each sentence's best one (scores, ids), filled when it is done.
    """
    pad_id, bos_id = pad_bos
    seqs = torch.full((batch * k, longest + 1), pad_id, dtype=torch.long, device=device)
    seqs[:, 0] = bos_id
    inf = float("-inf")
    scores = torch.full((batch, k), inf, dtype=torch.float64, device=device)
    scores[:, 0] = 0.0
    fin = (
        torch.full((batch, k), inf, dtype=torch.float64, device=device),
        torch.full((batch, k, longest), pad_id, dtype=torch.long, device=device),
    )
    return seqs, scores, fin, [t[:, 0].clone() for t in fin]


def _keep_best(
    fin: tuple[torch.Tensor, torch.Tensor],
    new: list[tuple[torch.Tensor, torch.Tensor]],
) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge new finished hypotheses into each sentence's ``k`` best.

    ``fin`` holds ``n`` sentences' finished hypotheses, best first: their scores
    ``(n, k)`` (``-inf``: an empty slot) and ids ``(n, k, L)``, padded. ``new`` is a
    list of ``(scores (n, m), ids (n, m, L))``, ``-inf`` for no hypothesis. Returns
    the new ``fin``. The stable sort keeps equal scores in the order they came, the
    older first.
    """
    k, longest = fin[1].shape[1:]
    scores = torch.cat([fin[0]] + [s for s, _ in new], dim=1)  # (n, k + m + ...)
    ids = torch.cat([fin[1]] + [i for _, i in new], dim=1)
    best = scores.sort(dim=1, descending=True, stable=True).indices[:, :k]  # (n, k)
    rows = best[:, :, None].expand(-1, -1, longest)
    return scores.gather(1, best), ids.gather(1, rows)


# -- scoring ---------------------------------------------------------------------------
def score_hypotheses(
    model: nn.Module,
    src: torch.Tensor,
    hypotheses: Sequence[Sequence[int]],
    length_penalty: float = 0.6,
    max_new_tokens: int | None = None,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
) -> list[float]:
    """The score beam search ranks by, ``log P(Y | X) / lp(|Y|)``, for given hypotheses.

    ``hypotheses`` are lists of ids as the decoders return them (no
    ``<bos>``/``<eos>``). A hypothesis shorter than its sentence's limit
    (``max_new_tokens``, same rule as the decoders) is scored with ``<eos>`` appended,
    since that is how it ended; one of exactly the limit's length is scored as it is.
    Useful to compare greedy and beam outputs under the same objective.
    """
    _check_inputs(model, src, bos_id, eos_id)
    if len(hypotheses) != src.shape[0]:
        raise ValueError(
            f"need one hypothesis per source sentence: {src.shape[0]} sentences, "
            f"{len(hypotheses)} given"
        )
    limits = _limits(model, src, max_new_tokens).tolist()
    targets = []
    for hyp, limit in zip(hypotheses, limits, strict=True):
        hyp = [int(t) for t in hyp]
        if len(hyp) > limit:
            raise ValueError(
                f"a hypothesis of {len(hyp)} tokens exceeds its limit of {limit}"
            )
        targets.append(hyp + [eos_id] if len(hyp) < limit else hyp)
    longest = max(len(t) for t in targets)
    tgt_out = torch.full(
        (len(targets), longest), model.pad_id, dtype=torch.long, device=src.device
    )
    for i, t in enumerate(targets):
        tgt_out[i, : len(t)] = torch.tensor(t, dtype=torch.long)
    tgt_in = torch.cat(
        [torch.full_like(tgt_out[:, :1], bos_id), tgt_out[:, :-1]], dim=1
    )
    with _EvalMode(model):
        # (batch, T, V)
        logp = _next_log_probs(model(src, tgt_in).double(), model.pad_id, bos_id)
    # gather on padded positions too (pad_id's log-prob is -inf there), then zero them
    # out
    picked = logp.gather(-1, tgt_out[..., None]).squeeze(-1)
    real = tgt_out != model.pad_id
    total = torch.where(real, picked, torch.zeros_like(picked)).sum(dim=1)
    lengths = torch.tensor(
        [len(t) for t in targets], dtype=torch.float64, device=src.device
    )
    return (
        total / length_penalty_gnmt(lengths, length_penalty).to(total.device)
    ).tolist()
