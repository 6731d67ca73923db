"""The special token ids, fixed across the book: ``<pad>=0, <bos>=1, <eos>=2, <unk>=3``.

A module of its own so that decoding (which needs ``<bos>`` and ``<eos>``) does not
import the data pipeline; :mod:`aiayn_helpers.data` re-exports these names.
"""

from __future__ import annotations

PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
SPECIAL_TOKENS = ["<pad>", "<bos>", "<eos>", "<unk>"]

__all__ = ["PAD_ID", "BOS_ID", "EOS_ID", "UNK_ID", "SPECIAL_TOKENS"]
