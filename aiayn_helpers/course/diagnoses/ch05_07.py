"""Chapters 5, 6 and 7: the encoder, the decoder's masks, training batches and beams.

See :mod:`aiayn_helpers.course.diagnoses` for what a diagnosis is and how a check
calls it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

from ._common import _allclose

ENCODER_COUNT_SLIPS = {
    "biases": (
        ("self_attn.w_q.bias", "self_attn.w_k.bias", "self_attn.w_v.bias")
        + ("self_attn.w_o.bias", "ff.linear1.bias", "ff.linear2.bias"),
        "the biases (of W_Q, W_K, W_V, W_O and of the feed-forward network) are left "
        "out",
    ),
    "attention_biases": (
        ("self_attn.w_q.bias", "self_attn.w_k.bias", "self_attn.w_v.bias")
        + ("self_attn.w_o.bias",),
        "the biases of W_Q, W_K, W_V and W_O are left out",
    ),
    "ffn_biases": (
        ("ff.linear1.bias", "ff.linear2.bias"),
        "the feed-forward biases b_1 and b_2 are left out",
    ),
    "b1": (("ff.linear1.bias",), "the feed-forward bias b_1 is left out"),
    "b2": (("ff.linear2.bias",), "the feed-forward bias b_2 is left out"),
    "w_o": (("self_attn.w_o.",), "the output projection W_O is left out"),
    "norms": (
        ("norm1.", "norm2."),
        "the two LayerNorms (a gain and a bias each) are left out",
    ),
    "half_norms": (
        ("norm2.",),
        "half of the LayerNorms' numbers are counted (one LayerNorm a layer, or their "
        "gains only; a layer has two, each with a gain and a bias)",
    ),
}
ONE_LAYER = "one layer is counted, not the stack of N"
FINAL_NORM = "a final LayerNorm is counted (the exercise's stack has none)"


def parameter_count_slips(answer: Any, layer: Any, n_layers: int) -> list[str]:
    """Exercise 5.1: what a wrong count of an ``n_layers``-layer encoder leaves out.

    ``layer`` is an ``ah.EncoderLayer`` at the exercise's sizes: its parameters say
    how many numbers each part holds. Every way of making at most two slips (leaving
    out one or two parts of ``ENCODER_COUNT_SLIPS`` from each layer, counting one
    layer, adding a final LayerNorm) is counted; the fewest slips that give
    ``answer`` are named. When several give the same count (at the base sizes the
    two LayerNorms, the four attention biases and b_1 each hold 2,048 numbers), all
    are named, joined by "or": a count cannot tell them apart.
    """
    if isinstance(answer, float) and answer.is_integer():
        answer = int(answer)
    if not isinstance(answer, int) or isinstance(answer, bool):
        return []
    sizes = {name: p.numel() for name, p in layer.named_parameters()}
    whole = sum(sizes.values())

    def held(prefixes):
        names = {n for n in sizes if n.startswith(prefixes)}
        return names, sum(sizes[n] for n in names)

    parts = {key: held(prefixes) for key, (prefixes, _) in ENCODER_COUNT_SLIPS.items()}
    final = held(("norm2.",))[1]
    omissions = [()] + [(k,) for k in parts]
    omissions += [
        (a, b)
        for a, b in itertools.combinations(parts, 2)
        if not parts[a][0] & parts[b][0]
    ]
    found: dict[int, list[list[str]]] = {}
    for left_out in omissions:
        per_layer = whole - sum(parts[k][1] for k in left_out)
        for layers, extra in ((n_layers, 0), (1, 0), (n_layers, final), (1, final)):
            made = [ENCODER_COUNT_SLIPS[k][1] for k in left_out]
            made += [ONE_LAYER] if layers == 1 and n_layers != 1 else []
            made += [FINAL_NORM] if extra else []
            if made and len(made) <= 2 and layers * per_layer + extra == answer:
                found.setdefault(len(made), []).append(made)
    if not found:
        return []
    fewest = [" and ".join(made) for made in found[min(found)]]
    if len(fewest) == 1:
        return fewest
    return [", or ".join(fewest) + " (the count cannot tell these apart)"]


def permutation_slips(encoder: Any, x: Any, perm: Any, answer: Any) -> list[str]:
    """Exercise 5.2: why ``answer`` is not ``encoder(x)[:, perm]``, read off it.

    Dropout left on (two calls disagree), float32 (the answer is right to float32's
    rounding but the check compares to 1e-10), an output in the original order (the
    input not permuted, or the output permuted back) or in another order than
    ``perm``'s.
    """
    if not isinstance(answer, torch.Tensor) or not isinstance(x, torch.Tensor):
        return []
    with torch.no_grad():
        plain = encoder(x)
        if not torch.equal(plain, encoder(x)):
            return [
                "the encoder runs in training mode with dropout, so each call drops "
                "other entries and no two outputs agree (build it with dropout=0.0, "
                "or call .eval())"
            ]
        if answer.shape != plain.shape:
            return []
        if answer.dtype != torch.float64 and _allclose(answer, plain[:, perm], 1e-4):
            return [
                f"the encoder runs in {answer.dtype}: the permuted input's output "
                "agrees only to that precision's rounding, and the check compares to "
                "1e-10 (build the encoder and its input in float64, with .double())"
            ]
        if _allclose(answer, plain, 1e-8):
            return [
                "the output is in the input's original order: the input is not "
                "permuted (or the output is permuted back)"
            ]
        rows = []
        for i in range(answer.shape[1]):
            column = answer[:, i]
            match = [
                j for j in range(plain.shape[1]) if _allclose(column, plain[:, j], 1e-8)
            ]
            rows.append(match[0] if match else None)
    if None not in rows and sorted(rows) == list(range(answer.shape[1])):
        return [
            "the output's positions come in another order than perm's (perm drawn "
            "again after the output was computed, or the output permuted twice)"
        ]
    return []


def final_norm_slips(rms_without: Any, rms_with: Any) -> list[str]:
    """Exercise 5.3: what the two root-mean-squares show.

    A LayerNorm's output (gain 1, bias 0) has a root-mean-square of 1 to about 1e-5;
    the mean absolute value of such numbers is about 0.8 (sqrt(2/pi) for Gaussian
    ones); a mean of squares without its square root leaves a LayerNorm's output at
    1 but squares the grown stream.
    """
    try:
        without, with_ = float(rms_without), float(rms_with)
    except (TypeError, ValueError):
        return []
    if math.isnan(without) or math.isnan(with_):
        return []
    normed = [abs(v - 1) < 1e-4 for v in (without, with_)]
    if all(normed):
        return [
            "both stacks end in a LayerNorm: a post-norm stack (norm_first=False) "
            "ends every layer with one, and final_norm=True adds one"
        ]
    if normed[0] and with_ > 2 * without:
        return ["the two are swapped: rms_without holds the normalised output"]
    if abs(with_ - math.sqrt(2 / math.pi)) < 0.03:
        return [
            "the mean of the absolute values is taken, not the root-mean-square (for "
            "unit-variance numbers it is about 0.8)"
        ]
    if normed[1] and without > 10:
        return [
            "the square root of the mean of squares is not taken: a LayerNorm's "
            "output gives 1 either way, the grown stream its square"
        ]
    return []


def shared_layer_slips(
    n_shared: Any, n_stack: Any, same_output: Any, one: Any, six: Any
) -> list[str]:
    """Exercise 5.4: what the two counts and the comparison show.

    ``one`` and ``six`` are the :class:`~aiayn_helpers.course.exercises.Reference` of
    one layer's count and of the six-layer stack's, at the exercise's sizes (their
    ``difference(value)`` is None when ``value`` is the count).
    """
    counts = (n_shared, n_stack)
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in counts):
        return []
    if n_shared > n_stack:
        return ["the two counts are swapped: n_shared holds the stack's"]
    if n_shared == n_stack and six.difference(n_stack) is None:
        return [
            "the shared layer is counted once per use: a layer applied six times "
            "still holds one set of parameters"
        ]
    if n_shared == n_stack and one.difference(n_stack) is None:
        return [
            "the stack counted holds one layer object six times ([layer] * 6, or one "
            "layer reused), so its parameters are counted once"
        ]
    if n_stack == 6 * n_shared and one.difference(n_shared) is not None:
        return [
            "the counts are of layers of other sizes than the exercise's (d_model = "
            "32, h = 4, d_ff = 64)"
        ]
    if one.difference(n_shared) is None and six.difference(n_stack) is None:
        if not bool(same_output):
            return [
                "the stack's layers do not all hold the shared layer's weights, or "
                "dropout is still on (in training mode each call drops other entries)"
            ]
    return []


def mask_convention_slips(ours: Any, size: int) -> list[str]:
    """Exercise 6.1: the convention ``ours`` follows, read off its entries.

    ``ours`` should be a ``(size, size)`` boolean tensor, True where a position may
    attend: on and below the diagonal.
    """
    if not isinstance(ours, torch.Tensor) or tuple(ours.shape) != (size, size):
        return []
    allowed = torch.ones(size, size, dtype=torch.bool).tril()
    if ours.dtype != torch.bool:
        entries = set(ours.detach().flatten().tolist())
        if ours.is_floating_point() and entries <= {0.0, float("-inf")}:
            return [
                "ours is still PyTorch's additive float mask (0 and -inf), not "
                "converted to a boolean one"
            ]
        if entries <= {0, 1} and torch.equal(ours.bool(), allowed):
            return [
                f"ours holds the right entries as numbers ({ours.dtype}), not as a "
                "boolean tensor"
            ]
        return []
    if torch.equal(ours, ~allowed):
        return [
            "the mask is inverted: True where PyTorch blocks (its -inf entries), "
            "which is nn.MultiheadAttention's convention, not ours"
        ]
    if torch.equal(ours, allowed.T):
        return [
            "the wrong triangle is kept: True on and above the diagonal lets each "
            "position attend to later ones"
        ]
    return []


def source_change_slips(
    src_changed: Any, src: torch.Tensor, change: Any, *, pad: int, length: int
) -> list[str]:
    """Exercise 6.2: what is wrong with the changed source and the measured change.

    ``src`` is the ``(batch, S)`` source the chapter's logits were computed from,
    ``length`` the number of target positions, ``pad`` the padding id.
    """
    found = []
    if isinstance(src_changed, torch.Tensor) and src_changed.shape == src.shape:
        if src_changed is src or src_changed.data_ptr() == src.data_ptr():
            return [
                "src_changed is src itself (no .clone()), so changing it changed src "
                "too: run the chapter again from the cell that builds src"
            ]
        changed = src_changed != src
        if not changed.any():
            found.append("src_changed equals src: no token is changed")
        elif not changed[0].any():
            found.append("a token of another sentence is changed, not of sentence 0")
        elif bool((src[0][changed[0]] == pad).all()):
            found.append(
                "only padding of sentence 0 is changed, which the padding mask hides "
                "from every query"
            )
    if isinstance(change, torch.Tensor) and change.numel() > 1:
        if tuple(change.shape) == (src.shape[0], length):
            found.append(
                "change holds every sentence's positions (batch, T), not sentence 0's"
            )
        elif change.ndim == 1 and change.shape[0] != length:
            found.append(
                "the largest change is taken over the target positions (one number "
                "per vocabulary entry), not over the vocabulary"
            )
    elif isinstance(change, int | float | torch.Tensor):
        found.append("change is one number, not one per target position")
    return found


def target_padding_slips(
    model: Any,
    src: torch.Tensor,
    tgt_in: torch.Tensor,
    tgt_out: torch.Tensor,
    logits: torch.Tensor,
    logits_padded: Any,
    loss_padded: Any,
    *,
    pad: int,
) -> list[str]:
    """Exercise 6.4: where the pads went, read off the padded logits and loss.

    ``logits`` (batch, T, V) are the model's outputs for ``tgt_in`` (batch, T);
    ``tgt_out`` the targets; the answer pads both with ``pad`` at the end.
    """
    if not isinstance(logits_padded, torch.Tensor) or logits_padded.ndim != 3:
        return []
    batch, length = tgt_in.shape
    close = dict(rtol=0, atol=1e-10)
    if logits_padded.shape == logits.shape:
        if torch.allclose(logits_padded.detach(), logits.detach(), **close):
            return [
                "logits_padded are the logits of tgt_in without pads: the model is "
                "run on tgt_in, not on tgt_in with the pads appended"
            ]
        return []
    extra = logits_padded.shape[1] - length
    if extra <= 0 or logits_padded.shape[0] != batch:
        return []
    pads = torch.full((batch, extra), pad, dtype=tgt_in.dtype)
    with torch.no_grad():
        if not torch.allclose(logits_padded[:, :length], logits, **close):
            first = model(src, torch.cat([pads, tgt_in], 1))
            if first.shape == logits_padded.shape and torch.allclose(
                first, logits_padded, **close
            ):
                return ["the pads are put before tgt_in's tokens, not after them"]
            return []
        try:
            loss = float(loss_padded)
        except (TypeError, ValueError, RuntimeError):
            return []
        flat = logits_padded.reshape(-1, logits_padded.shape[-1])
        after, before = torch.cat([tgt_out, pads], 1), torch.cat([pads, tgt_out], 1)
        slips = {
            "the pad positions are counted in the loss (no ignore_index=PAD)": (
                F.cross_entropy(flat, after.reshape(-1))
            ),
            "tgt_out is padded at the front and tgt_in at the end, so each "
            "prediction is compared with another position's token": F.cross_entropy(
                flat, before.reshape(-1), ignore_index=pad
            ),
            "the loss is summed over the tokens (reduction='sum'), while the "
            "chapter's loss is their mean": F.cross_entropy(
                flat, after.reshape(-1), ignore_index=pad, reduction="sum"
            ),
        }
    return [
        text
        for text, value in slips.items()
        if math.isclose(loss, float(value), rel_tol=1e-9, abs_tol=1e-12)
    ][:1]


def beam_sweep_slips(
    sweep: Any, greedy_share: float, beam_mean: float, *, sentences: int = 100
) -> list[str]:
    """Exercise 7.3: what the sweep's numbers show.

    ``greedy_share`` is the exact-match share of greedy decoding on the same
    ``sentences``, ``beam_mean`` the mean penalised score of beam size 4.
    """
    try:
        entries = {k: (float(v[0]), float(v[1])) for k, v in dict(sweep).items()}
    except (TypeError, ValueError, IndexError):
        return []
    found = []
    shares = [share for share, _ in entries.values()]
    if greedy_share > 0.5 and all(share < 0.05 for share in shares):
        found.append(
            "almost no hypothesis equals its reference: each hypothesis is compared "
            "with another sentence's reference"
        )
    elif all(1 < share <= sentences for share in shares):
        found.append("the exact matches are counted, not divided by the sentences")
    if 4 in entries and math.isclose(
        entries[4][1], sentences * beam_mean, rel_tol=1e-4
    ):
        found.append(
            f"the penalised scores are summed over the {sentences} sentences, not "
            "averaged"
        )
    return found


def padded_batch_slips(
    used: Any, largest: Any, batches: Sequence[Sequence[int]], pairs: Sequence[Any]
) -> list[str]:
    """Exercise 7.4: what ``used`` and ``largest`` show about the batches.

    ``pairs`` are the (source ids, target ids) pairs that ``batches`` index.
    """
    found = []
    everything = list(range(len(pairs)))
    if isinstance(used, set | frozenset):
        found.append(
            "used is a set, which drops repeats: the check needs the sorted list, "
            "repeats included"
        )
    elif isinstance(used, list | tuple) and list(used) != everything:
        if sorted(used) == everything:
            found.append("used is not sorted")
        elif len(used) == len(batches):
            found.append("used holds one index per batch, not every index in it")
    if isinstance(largest, bool) or not isinstance(largest, int | float):
        return found

    def biggest(size) -> int:
        return max(size(b, side) for b in batches for side in (0, 1))

    padded = [
        max(len(b) * max(len(pairs[i][side]) for i in b) for b in batches)
        for side in (0, 1)
    ]
    if largest == max(padded):
        return found
    if largest == biggest(lambda b, side: sum(len(pairs[i][side]) for i in b)):
        found.append(
            "largest counts the tokens before padding (the sum of the lengths), "
            "not the padded size"
        )
    elif largest in padded:
        found.append("largest looks at one side only: the sources or the targets")
    elif largest == max(len(b) for b in batches):
        found.append("largest counts sentences (the batch size), not tokens")
    return found


# exercise 5.1's slips: the parts of an encoder layer a count can leave out (the
# prefixes of ah.EncoderLayer's parameter names), and what leaving them out is called
