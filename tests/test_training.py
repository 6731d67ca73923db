"""Label smoothing, the Noam schedule and the training loop helpers."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from aiayn_helpers import Transformer
from aiayn_helpers.data import BOS_ID, EOS_ID, length_batches
from aiayn_helpers.training import (
    evaluate_loss,
    label_smoothed_cross_entropy,
    make_noam_scheduler,
    make_optimizer,
    noam_lr,
    train_epoch,
)


# -- label smoothing ------------------------------------------------------------------------------
@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.3])
def test_label_smoothing_equals_torch(epsilon):
    logits = torch.randn(3, 7, 13, dtype=torch.float64)
    target = torch.randint(0, 13, (3, 7))
    target[0, :3] = 0  # some padding
    mine = label_smoothed_cross_entropy(logits, target, epsilon, ignore_index=0)
    ref = F.cross_entropy(logits.reshape(-1, 13), target.reshape(-1), label_smoothing=epsilon, ignore_index=0)
    torch.testing.assert_close(mine.double(), ref, rtol=1e-6, atol=1e-6)
    total = label_smoothed_cross_entropy(logits, target, epsilon, reduction="sum")
    torch.testing.assert_close(total.double(), ref * (target != 0).sum(), rtol=1e-6, atol=1e-6)


def test_label_smoothing_gradient_equals_torch():
    logits = torch.randn(10, 9, requires_grad=True)
    target = torch.randint(1, 9, (10,))
    label_smoothed_cross_entropy(logits, target, 0.1).backward()
    mine = logits.grad.clone()
    logits.grad = None
    F.cross_entropy(logits, target, label_smoothing=0.1, ignore_index=0).backward()
    torch.testing.assert_close(mine, logits.grad)


def test_confident_predictions_have_no_log0_trap():
    logits = torch.tensor([[200.0, 0.0, -200.0, 0.0]])  # float32 softmax underflows to exact 0
    target = torch.tensor([1])
    naive = -(torch.log(torch.softmax(logits, -1))).mean()  # log(0) = -inf: the trap
    assert math.isinf(naive.item())
    loss = label_smoothed_cross_entropy(logits, target, 0.1, ignore_index=-100)
    ref = F.cross_entropy(logits, target, label_smoothing=0.1)
    assert math.isfinite(loss.item())
    torch.testing.assert_close(loss, ref)


def test_minus_inf_logits_stay_finite():
    logits = torch.randn(4, 6)
    logits[:, 5] = float("-inf")  # a forbidden class
    logits = logits.requires_grad_()
    target = torch.tensor([1, 2, 3, 0])
    loss = label_smoothed_cross_entropy(logits, target, 0.1)
    assert math.isfinite(loss.item())
    loss.backward()
    assert torch.isfinite(logits.grad).all()
    # without smoothing, it is still the ordinary cross-entropy
    torch.testing.assert_close(
        label_smoothed_cross_entropy(logits, target, 0.0), F.cross_entropy(logits, target, ignore_index=0)
    )


def test_all_padding_gives_zero_and_bad_inputs_raise():
    assert label_smoothed_cross_entropy(torch.randn(2, 3, 5), torch.zeros(2, 3, dtype=torch.long)).item() == 0.0
    with pytest.raises(ValueError, match="must agree"):
        label_smoothed_cross_entropy(torch.randn(2, 5), torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="epsilon"):
        label_smoothed_cross_entropy(torch.randn(2, 5), torch.ones(2, dtype=torch.long), epsilon=1.0)
    with pytest.raises(ValueError, match=r"target ids must be in \[0, 5\)"):
        label_smoothed_cross_entropy(torch.randn(2, 5), torch.tensor([1, 5]))
    with pytest.raises(ValueError, match="integer"):
        label_smoothed_cross_entropy(torch.randn(2, 5), torch.ones(2))


# -- the schedule --------------------------------------------------------------------------------
def test_noam_peaks_at_warmup_with_the_papers_value():
    lrs = [noam_lr(s, 512, 4000) for s in range(1, 20001)]
    assert max(range(len(lrs)), key=lrs.__getitem__) + 1 == 4000
    assert lrs[3999] == pytest.approx((512 * 4000) ** -0.5)
    assert f"{lrs[3999]:.3e}" == "6.988e-04"
    assert lrs[0] == pytest.approx(512**-0.5 * 4000**-1.5)  # linear warmup from step 1
    assert lrs[7999] == pytest.approx(lrs[3999] / math.sqrt(2))  # then 1/sqrt(step)
    with pytest.raises(ValueError, match="steps count from 1"):
        noam_lr(0, 512, 4000)


def test_scheduler_follows_noam_lr():
    model = torch.nn.Linear(3, 3)
    opt = make_optimizer(model)
    assert opt.defaults["betas"] == (0.9, 0.98) and opt.defaults["eps"] == 1e-9
    sched = make_noam_scheduler(opt, d_model=64, warmup=10, scale=2.0)
    for step in range(1, 30):
        assert opt.param_groups[0]["lr"] == pytest.approx(2.0 * noam_lr(step, 64, 10))
        opt.step()
        sched.step()
    with pytest.raises(ValueError, match="lr=1.0"):
        make_noam_scheduler(torch.optim.Adam(model.parameters(), lr=1e-3), 64, 10)


# -- the loops ----------------------------------------------------------------------------------
def _copy_task(n=64, vocab=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    pairs = []
    for _ in range(n):
        seq = torch.randint(4, vocab, (int(torch.randint(3, 7, (1,), generator=g)),), generator=g).tolist()
        pairs.append((seq + [EOS_ID], [BOS_ID] + seq + [EOS_ID]))
    return pairs


def test_train_epoch_learns_a_copy_task():
    """train_epoch lowers the loss: trained epoch by epoch until the loss is half its initial value.

    A loss target rather than a fixed number of epochs keeps this portable: the trajectory differs
    between kernel sets and thread counts, but every one of them crosses the target."""
    torch.set_num_threads(1)  # a tiny model: threads only add synchronisation
    pairs = _copy_task()
    model = Transformer(12, 12, d_model=32, num_heads=2, num_layers=1, d_ff=64, dropout=0.0, share_embeddings=True)
    opt = make_optimizer(model)
    sched = make_noam_scheduler(opt, 32, warmup=20, scale=0.5)
    before = evaluate_loss(model, pairs, max_tokens=200)["loss"]
    seen = []
    for epoch in range(1, 41):
        stats = train_epoch(
            model,
            pairs,
            length_batches(pairs, 100, seed=epoch),
            opt,
            sched,
            epsilon=0.1,
            on_step=lambda info: seen.append(info) and False,
        )
        after = evaluate_loss(model, pairs, max_tokens=200)
        if after["loss"] < 0.5 * before:
            break
    # Epochs to half the initial loss, under ATEN_CPU_CAPABILITY=default/avx2/avx512, 1, 2 and 4 threads,
    # model seeds 0-3 (12 runs): 13 epochs at most (seeds 0 and 2); 40 allowed.
    assert after["loss"] < 0.5 * before, f"loss {after['loss']:.3f} after 40 epochs, initial {before:.3f}"
    assert stats["steps"] == len(length_batches(pairs, 100)) and stats["tokens"] == sum(len(t) - 1 for _, t in pairs)
    assert len(seen) == epoch * stats["steps"] and seen[-1]["lr"] == opt.param_groups[0]["lr"]
    assert after["ppl"] == pytest.approx(math.exp(after["loss"]))


def test_on_step_can_stop_the_epoch():
    pairs = _copy_task()
    model = Transformer(12, 12, d_model=16, num_heads=2, num_layers=1, d_ff=32)
    opt = make_optimizer(model)
    stats = train_epoch(
        model, pairs, length_batches(pairs, 60), opt, make_noam_scheduler(opt, 16, 10), on_step=lambda info: True
    )
    assert stats["steps"] == 1
