"""What a chapter's check says about a wrong answer: the slips it shows.

Each function here is handed to :func:`aiayn_helpers.course.exercises.check` as
``diagnose=``: called only when the answer is wrong, it returns the slips the answer
shows (a list of phrases that complete "This is what you get when ..."), found from
the answer's properties, or nothing. A slip is named only when the answer has the
property that slip gives (the weights summing to one over the wrong axis, the
projections' weights transposed, a bias missing); an answer that shows none gets the
check's hint instead. A function that cannot tell returns nothing.

One module per part of the book: ch00_02 (chapters 0-2), ch03_04, ch05_07 and
ch10_a (chapter 10 and appendix A); every function is imported from here.
"""

from .ch00_02 import (
    alignment_count_slips,
    general_score_slips,
    model_count_slips,
    sharpness_slips,
    temperature_slips,
    zero_score_slips,
)
from .ch03_04 import (
    fit_residual_slips,
    head_swap_slips,
    multi_head_slips,
    projection_slips,
    shift_back_slips,
    t2t_frequency_slips,
)
from .ch05_07 import (
    beam_sweep_slips,
    final_norm_slips,
    mask_convention_slips,
    padded_batch_slips,
    parameter_count_slips,
    permutation_slips,
    shared_layer_slips,
    source_change_slips,
    target_padding_slips,
)
from .ch10_a import (
    alibi_bias_slips,
    causality_slips,
    greedy_slips,
    masking_fraction_slips,
    online_softmax_slips,
    pre_norm_slips,
    state_dict_count_slips,
)

__all__ = [
    "alibi_bias_slips",
    "alignment_count_slips",
    "beam_sweep_slips",
    "causality_slips",
    "final_norm_slips",
    "fit_residual_slips",
    "general_score_slips",
    "greedy_slips",
    "head_swap_slips",
    "mask_convention_slips",
    "masking_fraction_slips",
    "model_count_slips",
    "multi_head_slips",
    "online_softmax_slips",
    "padded_batch_slips",
    "parameter_count_slips",
    "permutation_slips",
    "pre_norm_slips",
    "projection_slips",
    "shared_layer_slips",
    "sharpness_slips",
    "shift_back_slips",
    "source_change_slips",
    "state_dict_count_slips",
    "t2t_frequency_slips",
    "target_padding_slips",
    "temperature_slips",
    "zero_score_slips",
]
