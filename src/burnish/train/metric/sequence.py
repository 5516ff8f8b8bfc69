"""Token-sequence kernels for CER, WER, BLEU and ROUGE-L, batched on the device.

Burn reads the token tensors back to the host and loops over the sequences in Rust. Here every
sequence of a batch advances together: the dynamic programmes run one reference position at a
time (`seq_len` steps of a few kernels each, whatever the batch size) and pick each sequence's
cell at its own lengths, so an update reads nothing back to the host.
"""

from __future__ import annotations

import dataclasses

import torch

__all__ = [
    "TokenSequences",
    "check_tokens",
    "edit_distance",
    "lcs_length",
    "length_before_pad",
    "length_without_pad",
    "ngram_matches",
]


@dataclasses.dataclass
class TokenSequences:
    """Predicted and reference token indices, `[batch_size, seq_len]` each: what CER, WER,
    BLEU and ROUGE-L read (each metric has its own input type of these fields, as Burn).

    Attributes:
        outputs: predicted token indices `[batch_size, seq_len]`.
        targets: reference token indices `[batch_size, seq_len]`.
    """

    outputs: torch.Tensor
    targets: torch.Tensor

    @property
    def batch_size(self) -> int:
        """The number of sequences."""
        return self.targets.shape[0]


def check_tokens(metric: str, outputs: torch.Tensor, targets: torch.Tensor) -> None:
    """Outputs and targets must be `[batch_size, seq_len]` token indices, one batch size.

    Raises:
        ValueError: naming `metric`, the shapes received and the fix.
    """
    if outputs.ndim != 2 or targets.ndim != 2 or outputs.shape[0] != targets.shape[0]:
        raise ValueError(
            f"{metric} expects outputs and targets of token indices [batch_size, seq_len] "
            f"with one batch size. Received: outputs {list(outputs.shape)}, targets "
            f"{list(targets.shape)}. Give the predicted tokens (e.g. `logits.argmax(-1)`), "
            "not the logits."
        )
    for name, tokens in (("outputs", outputs), ("targets", targets)):
        if tokens.is_floating_point() or tokens.is_complex():
            raise ValueError(
                f"{metric} expects integer token indices. Received: {name} of dtype "
                f"{tokens.dtype}. Give the predicted tokens (e.g. `logits.argmax(-1)`)."
            )


def length_without_pad(tokens: torch.Tensor, pad: int | None) -> torch.Tensor:
    """Per sequence, the number of tokens other than `pad` (all tokens without one)."""
    if pad is None:
        return torch.full(tokens.shape[:1], tokens.shape[1], device=tokens.device)
    return (tokens != pad).sum(dim=1)


def length_before_pad(tokens: torch.Tensor, pad: int | None) -> torch.Tensor:
    """Per sequence, the tokens before its first `pad` (all tokens without one)."""
    if pad is None:
        return torch.full(tokens.shape[:1], tokens.shape[1], device=tokens.device)
    return (tokens != pad).long().cumprod(dim=1).sum(dim=1)


def edit_distance(
    reference: torch.Tensor,
    hypothesis: torch.Tensor,
    reference_lengths: torch.Tensor,
    hypothesis_lengths: torch.Tensor,
) -> torch.Tensor:
    """Levenshtein distance between each sequence's prefixes of the given lengths.

    Insertions, deletions and substitutions cost 1. Row `i` of the table holds the distances
    from the first `i` reference tokens to every hypothesis prefix: `D[i][j] = min(D[i-1][j-1]
    + (r[i] != h[j]), D[i-1][j] + 1, D[i][j-1] + 1)`; the last term runs along the row, so it is
    a prefix minimum: `D[i][j] - j = cummin_k (T[i][k] - k)` over the row without it.

    Args:
        reference: `[B, L]` tokens.
        hypothesis: `[B, M]` tokens.
        reference_lengths: `[B]` ints in [0, L].
        hypothesis_lengths: `[B]` ints in [0, M].

    Returns:
        `[B]` int64 distances.
    """
    batch, length = reference.shape
    columns = torch.arange(hypothesis.shape[1] + 1, device=reference.device)
    row = columns.expand(batch, -1).contiguous()  # D[0][j] = j
    wanted = hypothesis_lengths.long().unsqueeze(1)
    distance = row.gather(1, wanted).squeeze(1)  # reference of length 0
    for i in range(1, length + 1):
        differs = (reference[:, i - 1 : i] != hypothesis).long()
        inner = torch.minimum(row[:, :-1] + differs, row[:, 1:] + 1)
        start = torch.full((batch, 1), i, dtype=row.dtype, device=row.device)
        row = torch.cat((start, inner), dim=1).sub_(columns).cummin(dim=1).values.add_(columns)
        here = row.gather(1, wanted).squeeze(1)
        distance = torch.where(reference_lengths == i, here, distance)
    return distance


def lcs_length(
    reference: torch.Tensor,
    hypothesis: torch.Tensor,
    reference_lengths: torch.Tensor,
    hypothesis_lengths: torch.Tensor,
) -> torch.Tensor:
    """Length of the longest common subsequence of each sequence's prefixes.

    `C[i][j] = max(C[i-1][j], C[i][j-1], C[i-1][j-1] + (r[i] == h[j]))`: the middle term runs
    along the row, a prefix maximum of the row without it.

    Returns:
        `[B]` int64 lengths.
    """
    batch, length = reference.shape
    row = torch.zeros(batch, hypothesis.shape[1] + 1, dtype=torch.long, device=reference.device)
    wanted = hypothesis_lengths.long().unsqueeze(1)
    common = torch.zeros(batch, dtype=torch.long, device=reference.device)
    for i in range(1, length + 1):
        same = (reference[:, i - 1 : i] == hypothesis).long()
        inner = torch.maximum(row[:, 1:], row[:, :-1] + same)
        row = torch.cat((row[:, :1], inner), dim=1).cummax(dim=1).values
        here = row.gather(1, wanted).squeeze(1)
        common = torch.where(reference_lengths == i, here, common)
    return common


def ngram_matches(
    candidate: torch.Tensor,
    reference: torch.Tensor,
    candidate_lengths: torch.Tensor,
    reference_lengths: torch.Tensor,
    n: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BLEU's clipped and total n-gram counts of order `n`, summed over the batch.

    Each distinct n-gram of a candidate counts `min(count in candidate, count in reference)`
    (clipped); every candidate n-gram counts in the total. Exact: n-grams are compared token
    by token, all pairs of a sequence at once (`O(B · L²)` memory per order).

    Returns:
        Two 0-dim int64 tensors: clipped matches and candidate n-grams.
    """
    device = candidate.device
    if candidate.shape[1] < n:
        zero = torch.zeros((), dtype=torch.long, device=device)
        return zero, zero
    grams = candidate.unfold(1, n, 1)  # [B, M-n+1, n]
    valid = torch.arange(grams.shape[1], device=device) + n <= candidate_lengths.unsqueeze(1)
    own = _same_grams(grams, grams) & valid.unsqueeze(1)
    counts = own.sum(dim=2)
    earlier = torch.ones(grams.shape[1], grams.shape[1], dtype=torch.bool, device=device).tril(-1)
    first = valid & ~(own & earlier).any(dim=2)  # one position per distinct n-gram
    if reference.shape[1] >= n:
        reference_grams = reference.unfold(1, n, 1)
        positions = torch.arange(reference_grams.shape[1], device=device)
        in_reference = positions + n <= reference_lengths.unsqueeze(1)
        matches = (_same_grams(grams, reference_grams) & in_reference.unsqueeze(1)).sum(dim=2)
    else:
        matches = torch.zeros_like(counts)
    clipped = torch.where(first, torch.minimum(counts, matches), 0).sum()
    return clipped, valid.sum()


def _same_grams(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """`[B, I, J]`: whether n-gram `i` of `left` equals n-gram `j` of `right`."""
    same = left[:, :, None, 0] == right[:, None, :, 0]
    for k in range(1, left.shape[2]):
        same &= left[:, :, None, k] == right[:, None, :, k]
    return same
