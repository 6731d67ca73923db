"""What a chapter's check says about a wrong answer: the slips it shows.

Each function here is handed to :func:`aiayn_helpers.exercises.check` as
``diagnose=``: called only when the answer is wrong, it returns the slips the answer
shows (a list of phrases that complete "This is what you get when ..."), found from
the answer's properties, or nothing. A slip is named only when the answer has the
property that slip gives (the weights summing to one over the wrong axis, the
projections' weights transposed, a bias missing); an answer that shows none gets the
check's hint instead. A function that cannot tell returns nothing.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F

__all__ = [
    "alignment_count_slips",
    "beam_sweep_slips",
    "final_norm_slips",
    "fit_residual_slips",
    "general_score_slips",
    "head_swap_slips",
    "mask_convention_slips",
    "model_count_slips",
    "multi_head_slips",
    "padded_batch_slips",
    "parameter_count_slips",
    "permutation_slips",
    "projection_slips",
    "shared_layer_slips",
    "sharpness_slips",
    "shift_back_slips",
    "source_change_slips",
    "t2t_frequency_slips",
    "target_padding_slips",
    "temperature_slips",
    "zero_score_slips",
]

# exercise 3.1's slips, in the order they are named
MULTI_HEAD_SLIPS = {
    "split": "each projection is split into heads by a single view to "
    "(batch, h, T, d_k), which deals the features of several positions out to one "
    "head",
    "bias_qkv": "the biases of w_q, w_k and w_v are left out",
    "transpose_qkv": "the inputs are multiplied by w_q, w_k and w_v's weights as "
    "stored (x @ W; nn.Linear computes x @ W.T + b)",
    "scale": "the scores are not divided by sqrt(d_k)",
    "softmax": "the softmax runs over the queries (dim -2): each key's weights sum "
    "to one, not each query's",
    "merge": "the heads are merged by a reshape to (batch, T, d_model) straight "
    "from (batch, h, T, d_k): each position's row then holds pieces of other "
    "positions",
    "w_o": "the output projection w_o is not applied",
    "transpose_o": "the merged heads are multiplied by w_o's weight as stored "
    "(x @ W, not x @ W.T)",
    "bias_o": "w_o's bias is left out",
}


def _linear(x: torch.Tensor, layer: torch.nn.Linear, slips: set[str], which: str):
    weight = layer.weight if f"transpose_{which}" not in slips else layer.weight.T
    out = x @ weight.T
    return out if f"bias_{which}" in slips else out + layer.bias


def multi_head_by_hand(module: Any, x: torch.Tensor, slips: set[str]) -> torch.Tensor:
    """``module(x, x, x)`` computed step by step, with the given ``slips`` made.

    ``module`` is an ``ah.MultiHeadAttention`` (square weights); ``x`` is
    ``(batch, T, d_model)``; ``slips`` holds keys of ``MULTI_HEAD_SLIPS``.
    """
    batch, length, d_model = x.shape
    h = module.num_heads
    d_k = d_model // h

    def split(t):
        if "split" in slips:
            return t.reshape(batch, h, length, d_k)
        return t.reshape(batch, length, h, d_k).transpose(1, 2)

    q, k, v = (
        split(_linear(x, layer, slips, "qkv"))
        for layer in (module.w_q, module.w_k, module.w_v)
    )
    scores = q @ k.transpose(-2, -1)
    if "scale" not in slips:
        scores = scores / math.sqrt(d_k)
    heads = scores.softmax(dim=-2 if "softmax" in slips else -1) @ v
    if "merge" in slips:
        merged = heads.reshape(batch, length, d_model)
    else:
        merged = heads.transpose(1, 2).reshape(batch, length, d_model)
    if "w_o" in slips:
        return merged
    return _linear(merged, module.w_o, slips, "o")


def multi_head_slips(
    module: Any, x: torch.Tensor, answer: Any, *, tol: float = 1e-8
) -> list[str]:
    """Exercise 3.1: the fewest slips whose by-hand output is ``answer``.

    Every combination of the slips of ``MULTI_HEAD_SLIPS`` is computed, the smallest
    first; the first whose output equals ``answer`` (to ``tol``, in float64) is named.
    None matches (another slip, or an answer of the wrong shape): nothing is named.
    """
    if not isinstance(answer, torch.Tensor) or answer.shape != x.shape:
        return []
    answer = answer.detach().to(torch.float64)
    names = list(MULTI_HEAD_SLIPS)
    with torch.no_grad():
        for size in range(1, len(names) + 1):
            for combo in itertools.combinations(names, size):
                if "w_o" in combo and ("transpose_o" in combo or "bias_o" in combo):
                    continue
                made = multi_head_by_hand(module, x.to(torch.float64), set(combo))
                if torch.allclose(made, answer, rtol=tol, atol=tol):
                    return [MULTI_HEAD_SLIPS[name] for name in combo]
    return []


def _blocks(weight: torch.Tensor, h: int, dim: int) -> list[torch.Tensor]:
    return list(weight.chunk(h, dim=dim))


def _order(new: torch.Tensor, old: torch.Tensor, h: int, dim: int) -> list[int] | None:
    """The head order ``p``: block i of ``new`` == block p[i] of ``old`` (or None)."""
    found = []
    old_blocks = _blocks(old, h, dim)
    for block in _blocks(new, h, dim):
        match = [j for j, o in enumerate(old_blocks) if torch.equal(block, o)]
        if not match:
            return None
        found.append(match[0])
    return found


def head_swap_slips(
    swapped: Any, original: Any, order: Sequence[int], *, ours: Any = None
) -> list[str]:
    """Exercise 3.2: what is wrong with ``swapped``, read off its parameters.

    ``original`` holds the weights before the swap (a copy nobody edited), ``order``
    the head order wanted (``[2, 1, 0, 3]``); ``ours``, the student's module the
    weights were taken from, is checked for sharing its tensors with ``swapped``.
    """
    if not all(hasattr(swapped, n) for n in ("w_q", "w_k", "w_v", "w_o")):
        return []
    found = []
    if ours is not None:
        theirs = {p.data_ptr() for p in ours.parameters()}
        if swapped is ours or any(p.data_ptr() in theirs for p in swapped.parameters()):
            found.append(
                "swapped is ours, or shares its tensors, so that editing one edits "
                "the other: ours has changed too (run the chapter again from the cell "
                "that builds ours)"
            )
    h, order = original.num_heads, list(order)
    with torch.no_grad():
        rows = {
            n: _order(getattr(swapped, n).weight, getattr(original, n).weight, h, 0)
            for n in ("w_q", "w_k", "w_v")
        }
        biases = {
            n: _order(getattr(swapped, n).bias, getattr(original, n).bias, h, 0)
            for n in ("w_q", "w_k", "w_v")
        }
        columns = _order(swapped.w_o.weight, original.w_o.weight, h, 1)
        o_rows = _order(swapped.w_o.weight, original.w_o.weight, h, 0)
    moved = {tuple(p) for p in rows.values() if p is not None}
    if len(moved) == 1 and moved != {tuple(order)}:
        (other,) = moved
        heads = [i for i, j in enumerate(other) if i != j]
        if len(heads) == 2:
            found.append(f"heads {heads[0]} and {heads[1]} are swapped, not 0 and 2")
    if all(p == order for p in rows.values()):
        if all(b == list(range(h)) for b in biases.values()):
            found.append(
                "the biases of w_q, w_k and w_v are not permuted with their rows"
            )
        elif any(b is None for b in biases.values()):
            found.append("the biases of w_q, w_k and w_v are not copied from ours")
        if columns == list(range(h)) and o_rows != order:
            found.append("w_o.weight is not permuted")
        elif o_rows == order and columns != order:
            found.append(
                "the rows of w_o.weight (its outputs) are permuted, not its columns "
                "(its inputs, where the heads enter)"
            )
        if not torch.equal(swapped.w_o.bias, original.w_o.bias):
            found.append("w_o's bias is changed: it belongs to the outputs, not a head")
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


def _allclose(a: Any, b: Any, tol: float) -> bool:
    try:
        return bool(torch.allclose(a.double(), b.double(), rtol=tol, atol=tol))
    except (AttributeError, RuntimeError, TypeError):
        return False


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

    ``one`` and ``six`` are the :class:`~aiayn_helpers.exercises.Reference` of one
    layer's count and of the six-layer stack's, at the exercise's sizes (their
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


# ---------------------------------------------------------------- chapters 0 and 1


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
    from .model import Transformer

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


# ---------------------------------------------------------------- chapter 4


def _table_at(positions: torch.Tensor, d_model: int) -> torch.Tensor:
    """The paper's sinusoidal table at ``positions`` (negative ones too), float64."""
    pos = positions.to(torch.float64)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angles = pos * 10000.0 ** (-two_i / d_model)
    table = torch.empty(len(positions), d_model, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return table


def _steps(matrix: torch.Tensor, offset: int, d_model: int) -> bool:
    """Does ``matrix`` map PE_pos to PE_{pos + offset} (as M_k does, column vectors)?"""
    table = _table_at(torch.arange(0, 50), d_model)
    moved = table @ matrix.detach().to(torch.float64).T
    return _allclose(moved, _table_at(torch.arange(offset, 50 + offset), d_model), 1e-8)


def shift_back_slips(
    back_shifted: Any, round_trip: Any, *, length: int, k: int
) -> list[str]:
    """Exercise 4.1: which positions ``back_shifted`` holds, and where ``round_trip``
    steps.

    ``back_shifted`` should hold PE_{pos-k} for pos = k ... length - 1, one row each,
    and ``round_trip`` = M_-k M_k should step nowhere. A row vector times M_-k (no
    transpose) applies M_-k^T = M_k, a step forward; mapping the table's first rows
    gives the positions -k ... length - 2k - 1.
    """
    tensors = (back_shifted, round_trip)
    if not all(isinstance(t, torch.Tensor) and t.dim() == 2 for t in tensors):
        return []
    d_model = round_trip.shape[0]
    if round_trip.shape != (d_model, d_model) or d_model % 2:
        return []
    found = []
    forward = _steps(round_trip, 2 * k, d_model)
    if back_shifted.shape == (length - k, d_model):
        rows = back_shifted.detach().to(torch.float64)
        ahead = _table_at(torch.arange(2 * k, length + k), d_model)
        early = _table_at(torch.arange(-k, length - 2 * k), d_model)
        if _allclose(rows, ahead, 1e-8):
            if forward:
                found.append(
                    f"M_back steps forward: back_shifted holds PE_{{pos+{k}}}, and "
                    f"round_trip steps {2 * k} positions forward instead of none "
                    f"(M_back is M_{k}, not M_-{k})"
                )
                forward = False
            else:
                found.append(
                    f"the rows are multiplied by M_back itself: a row vector times a "
                    f"matrix applies its transpose, and M_-{k}^T = M_{k} steps {k} "
                    f"positions forward (back_shifted holds PE_{{pos+{k}}})"
                )
        elif _allclose(rows, early, 1e-8):
            found.append(
                f"the table's first rows are mapped, PE_0 to PE_{length - k - 1}, so "
                f"back_shifted holds PE_-{k} to PE_{length - 2 * k - 1}; the exercise "
                f"maps PE_{k} to PE_{length - 1}"
            )
    if forward:
        found.append(
            f"round_trip steps {2 * k} positions forward instead of none: its first "
            f"factor steps forward too (M_{k}, or M_-{k} transposed)"
        )
    return found


def projection_slips(W_q: Any, W_k: Any, W: Any) -> list[str]:  # noqa: N803
    """Exercise 4.2: the student's projections, read for the two slips that change
    the answers: one matrix for both W^Q and W^K (the scores are then symmetric in the
    two positions), and a W whose 2 x 2 blocks are not scaled rotations (W^T W is then
    no multiple of the identity on a pair, so the position does not cancel)."""
    found = []
    if isinstance(W_q, torch.Tensor) and isinstance(W_k, torch.Tensor):
        if W_q.shape == W_k.shape and torch.equal(W_q, W_k):
            found.append(
                "W_q and W_k are the same matrix: the scores s(p, q) are then "
                "symmetric in p and q, so the diagonals at offsets +3 and -3 agree "
                "(the exercise draws two independent matrices)"
            )
    if isinstance(W, torch.Tensor) and W.dim() == 2 and W.shape[0] == W.shape[1]:
        n = W.shape[0]
        w = W.detach().to(torch.float64)
        pairs = torch.arange(n) // 2
        if n % 2 == 0:
            off_blocks = w[pairs[:, None] != pairs[None, :]]
            if off_blocks.abs().max() > 1e-12:
                found.append(
                    "W is not block-diagonal: it mixes different sine-cosine pairs, "
                    "which turn at different speeds, so the position does not cancel"
                )
            else:
                gram = w.T @ w
                a, b, c = gram.diagonal()[0::2], gram.diagonal()[1::2], gram[0::2, 1::2]
                tol = 1e-9 * max(gram.abs().max().item(), 1e-300)
                if (a - b).abs().max() > tol or c.diagonal().abs().max() > tol:
                    found.append(
                        "W's 2 x 2 blocks are not scaled rotations a R(alpha): W^T W "
                        "is then not a multiple of the identity on each pair, and only "
                        "such a W commutes with the shifts M_k"
                    )
    return found


def fit_residual_slips(residuals: Any) -> list[str]:
    """Exercise 4.3: a d_model = 6 residual of float32's rounding size (about 1e-7)
    means a float32 table (ah.sinusoidal_encoding's default): in float64 the fit is
    exact to about 1e-15."""
    try:
        even = float(residuals[6])
    except (KeyError, TypeError, ValueError, IndexError):
        return []
    if 1e-8 < even < 1e-5:
        return [
            f"the table is float32, ah.sinusoidal_encoding's default dtype: the "
            f"d_model = 6 fit then misses by {even:.0e}, float32's rounding error, not "
            f"1e-9 (build it with dtype=torch.float64)"
        ]
    return []


def t2t_frequency_slips(omega: Any, d_model: int) -> list[str]:
    """Exercise 4.4: what Tensor2Tensor-like ``omega`` does instead of falling
    geometrically from 1 to exactly 1/10000: the paper's ratio 10000^(-2/d_model)
    (its last frequency 10000^(-(d_model-2)/d_model)), an exponent over the column
    index 2i (its last frequency 1e-8), a rise to 10000 (the timescales,
    1/frequency), even spacing, float32 rounding, or NaN."""
    half = d_model // 2
    if not isinstance(omega, torch.Tensor) or omega.shape != (half,):
        return []
    w = omega.detach().to(torch.float64)
    if not bool(torch.isfinite(w).all()):
        nan = int(torch.isnan(w).sum())
        return [f"{nan} of the {half} frequencies are NaN (not a number)"] * (nan > 0)
    if bool((w <= 0).any()):
        return []
    ratios = w[1:] / w[:-1]
    geometric = _allclose(ratios, ratios[:1].expand(half - 1), 1e-5)
    steps = w[1:] - w[:-1]
    if not geometric and _allclose(steps, steps[:1].expand(half - 1), 1e-9):
        return [
            "the frequencies are evenly spaced: each one is the previous one minus "
            "the same amount, while Tensor2Tensor's fall by the same factor"
        ]
    if not geometric or abs(w[0].item() - 1) > 1e-6:
        return []
    last = w[-1].item()
    if abs(ratios[0].item() - 10000.0 ** (-2 / d_model)) < 1e-9:
        return [
            f"the ratio between neighbours is the paper's, 10000^(-2/{d_model}): the "
            f"last frequency is then {last:.3g}, not 1/10000 (the paper's spacing is "
            f"used, not Tensor2Tensor's)"
        ]
    if abs(last * 1e8 - 1) < 1e-5:
        return [
            "the last frequency is 1e-08, the square of 1/10000: the exponent runs "
            "over the column index 0, 2, 4, ... (that is 2i) where Tensor2Tensor's "
            "runs over the pair index i"
        ]
    if abs(last / 10000.0 - 1) < 1e-5:
        return [
            "omega_t2t rises from 1 to 10000: those are Tensor2Tensor's timescales, "
            "1 / frequency (the minus sign of the exponent is lost)"
        ]
    if omega.dtype != torch.float64 and abs(last * 10000.0 - 1) < 1e-5:
        return [
            f"omega_t2t is {omega.dtype}: right to that precision's rounding, but the "
            "check compares 6 significant digits of the float64 values (give "
            "torch.arange dtype=torch.float64)"
        ]
    return []
