"""Chapters 0, 1 and 2: the model's size, Bahdanau and Luong attention, the temperature.

See :mod:`aiayn_helpers.course.diagnoses` for what a diagnosis is and how a check
calls it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch


def _count(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


def model_count_slips(
    answer: Any,
    namespace: Mapping[str, Any],
    *,
    vocab: int,
    d_model: int,
    d_ff: int,
    num_layers: int,
) -> list[str]:
    """Exercise 0.1: why ``answer`` is not the count of Table 3's big model.

    The student's model is looked for among the ``ah.Transformer`` objects of
    ``namespace`` (the notebook's globals): the one whose parameters, or whose
    ``state_dict()``, hold ``answer`` numbers. Its settings are read against the
    exercise's (the shared vocabulary, ``d_model``, ``d_ff``, ``num_layers``, the
    vocabulary size), and a count over ``state_dict()`` is named: it lists a tensor
    shared by three modules under each of its names.
    """
    if isinstance(answer, float) and answer.is_integer():
        answer = int(answer)
    if not isinstance(answer, int) or isinstance(answer, bool):
        return []
    from ...model import Transformer

    models = [m for m in namespace.values() if isinstance(m, Transformer)]
    for model in models:
        listed = sum(t.numel() for t in model.state_dict().values())
        if answer not in (_count(model), listed):
            continue
        found = []
        if not model.share_embeddings:
            found.append(
                "the vocabulary matrices are not shared (share_embeddings=False)"
            )
        elif answer == listed != _count(model):
            found.append(
                "the count is taken over state_dict(), which lists the shared "
                "vocabulary matrix once for each of its three names; "
                "ah.count_parameters counts each tensor once"
            )
        layer = model.encoder.layers[0]
        settings = {
            "d_model": (model.d_model, d_model),
            "d_ff": (layer.ff.linear1.out_features, d_ff),
            "N": (len(model.encoder.layers), num_layers),
            "the vocabulary size": (model.src_vocab_size, vocab),
        }
        found += [
            f"{name} is {got:,}, not Table 3's {want:,}"
            for name, (got, want) in settings.items()
            if got != want
        ]
        return found
    return []


def zero_score_slips(alpha: Any, context: Any, h: Any) -> list[str]:
    """Exercise 1.1: what the weights ``alpha`` (B, T_x) and the context vectors
    ``context`` (B, 2n) of the annotations ``h`` (B, T_x, 2n) show.

    Weights that sum to one over the batch axis (a softmax over dim 0), weights that
    are not a softmax at all (their rows do not sum to one and some are outside
    [0, 1] or every one is zero: the scores themselves), and a context that is the
    plain sum of the annotations or the mean of the weighted ones.
    """
    if not all(isinstance(t, torch.Tensor) for t in (alpha, context, h)):
        return []
    found = []
    alpha, context, h = alpha.double(), context.double(), h.double()
    if alpha.shape == h.shape[:2]:
        ones = torch.ones(h.shape[1], dtype=torch.float64)
        if alpha.shape[0] > 1 and torch.allclose(alpha.sum(0), ones, atol=1e-6):
            found.append(
                "the softmax is taken over the batch (dim 0): the weights sum to "
                "one over the sentences, not over each sentence's source positions"
            )
        elif not torch.allclose(alpha.sum(-1), ones[:1], atol=1e-6):
            found.append(
                "alpha_zero is not a softmax over the source: its rows sum to "
                f"{alpha.sum(-1)[0].item():.3g}, not 1 (the scores e_ij themselves?)"
            )
    if context.shape == h.shape[::2]:
        if torch.allclose(context, h.sum(1), atol=1e-6):
            found.append(
                "context_zero is the plain sum of the annotations, not weighted by "
                "alpha_zero"
            )
        elif alpha.shape == h.shape[:2]:
            weighted = torch.einsum("bt,btd->bd", alpha, h)
            consistent = torch.allclose(context, weighted, atol=1e-6)
            if not consistent and torch.allclose(
                context * h.shape[1], weighted, atol=1e-6
            ):
                found.append(
                    "context_zero is the mean of the weighted annotations "
                    "alpha_ij h_j, not their sum"
                )
    return found


def alignment_count_slips(alignment_model: Any, total: Any, model: Any) -> list[str]:
    """Exercise 1.2: the counts of the alignment model (``model.W_a``, ``U_a``,
    ``v_a``) and of the whole ``model``, swapped, or the alignment model's biases
    left out."""
    try:
        parts = (model.W_a, model.U_a, model.v_a)
        weights = sum(m.weight.numel() for m in parts)
    except AttributeError:
        return []
    found = []
    numbers = all(isinstance(v, int | float) for v in (alignment_model, total))
    if numbers and alignment_model > total:
        found.append(
            "alignment_model is larger than total: a part cannot hold more "
            "parameters than the whole model (the two are swapped?)"
        )
    elif alignment_model == weights != sum(_count(m) for m in parts):
        found.append("the bias of U_a is left out of the alignment model")
    return found


def general_score_slips(W: Any, scores: Any, h_t: Any, h_bar: Any) -> list[str]:
    """Exercise 1.3: Luong's general score ``h_t^T W h_bar_s`` with a rectangular
    ``W``: the scores (B, T_x) transposed, or turned into weights by a softmax, and
    ``W`` stored the other way round, (source size, decoder size)."""
    if not all(isinstance(t, torch.Tensor) for t in (W, scores, h_t, h_bar)):
        return []
    found = []
    if W.shape == (h_bar.shape[-1], h_t.shape[-1]) and W.shape[0] != W.shape[1]:
        found.append(
            "W_rect is stored as (source size, decoder size), the transpose of "
            "Luong's W_a: in h_t^T W_a h_s it has as many rows as h_t has entries"
        )
    if W.shape == (h_t.shape[-1], h_bar.shape[-1]):
        right = torch.einsum("bd,de,bje->bj", h_t.double(), W.double(), h_bar.double())
        got = scores.detach().double()
        if got.shape == right.shape[::-1] and torch.allclose(got.T, right, atol=1e-5):
            found.append("s_rect is transposed: (T_x, B), not (B, T_x)")
        elif got.shape == right.shape and torch.allclose(
            got, right.softmax(-1), atol=1e-6
        ):
            found.append(
                "s_rect holds the weights, the softmax of the scores, not the scores"
            )
    return found


def sharpness_slips(
    peaks: Any, top2: Any, model: Any, make_batch: Any, *, n: int = 100, seed: int = 4
) -> list[str]:
    """Exercise 1.4: how the mean largest weight ``peaks`` and the mean of the two
    largest ``top2`` (dicts: length -> number) were taken.

    The weights of ``model.greedy`` on the exercise's batches (``n`` sentences of
    ``make_batch``, generator seeded with ``seed``) are recomputed; named: a row's mean
    weight (1/T_x, as each row sums to one) and the largest weights taken over the
    target axis (dim 1, each column) instead of the source axis (each row).
    """
    if not isinstance(peaks, Mapping) or not isinstance(top2, Mapping):
        return []
    found = []
    for length in sorted(peaks):
        try:
            peak, two = float(peaks[length]), float(top2[length])
            src = make_batch(n, length, torch.Generator().manual_seed(seed))[0]
        except (KeyError, TypeError, ValueError, RuntimeError):
            return []
        if math.isclose(peak, 1 / length, rel_tol=1e-5):
            mean = (
                "peaks holds a row's mean weight, which is 1/T_x since each row sums "
                "to one, not its largest weight"
            )
            found += [] if mean in found else [mean]
            continue
        with torch.no_grad():
            weights = model.greedy(src, return_weights=True)[1].double()
        columns = (
            weights.max(dim=1).values.mean().item(),
            weights.topk(2, dim=1).values.sum(dim=1).mean().item(),
        )
        rows = (
            weights.max(dim=-1).values.mean().item(),
            weights.topk(2, dim=-1).values.sum(dim=-1).mean().item(),
        )
        # named only when the columns' value is not also the rows' (a weight matrix
        # whose row maxima are also its column maxima gives both the same mean)
        axis = any(
            math.isclose(got, col, rel_tol=1e-5)
            and not math.isclose(got, row, rel_tol=1e-5)
            for got, col, row in zip((peak, two), columns, rows)
        )
        if axis:
            found.append(
                "the largest weights are taken over the target axis (dim 1, each "
                "column): max_j alpha_ij runs over the source positions j, the last "
                "axis"
            )
            break
    return found


def temperature_slips(
    outputs: Mapping[float, Any], values: torch.Tensor, small: float, large: float
) -> list[str]:
    """Exercise 2.1: what the outputs of the soft look-up at each temperature show.

    A softmax over the keys gives weights that sum to one, so every output lies
    between the smallest and the largest value; scores multiplied by tau instead of
    divided give the hard look-up at the large tau and the average at the small one.
    """
    try:
        shown = {tau: float(outputs[tau]) for tau in (small, large)}
    except (KeyError, TypeError, ValueError):
        return []
    low, high = float(values.min()), float(values.max())
    if any(not low - 1e-9 <= v <= high + 1e-9 for v in shown.values()):
        return [
            "the weights do not sum to one over the keys: an output outside the "
            f"values' range ({low:g} to {high:g}) cannot be a weighted average of them "
            "- is the softmax taken over the keys?"
        ]
    mean = float(values.mean())
    if abs(shown[small] - mean) < 0.05 and abs(shown[large] - mean) > 0.05:
        return ["the scores are multiplied by tau, not divided by it"]
    return []
