"""aiayn_helpers: the canonical, tested implementation used by the chapters of
"Attention Is All You Need, from first principles".

Mask convention: boolean, True = may attend.
"""

from .attention import MultiHeadAttention, causal_mask, padding_mask, scaled_dot_product_attention
from .layers import Decoder, DecoderLayer, Encoder, EncoderLayer, PositionwiseFeedForward
from .model import Transformer
from .positional import PositionalEncoding, sinusoidal_encoding
from .utils import count_parameters, seed_everything, setup_notebook

__version__ = "0.1.0"

__all__ = [
    "scaled_dot_product_attention",
    "causal_mask",
    "padding_mask",
    "MultiHeadAttention",
    "sinusoidal_encoding",
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
