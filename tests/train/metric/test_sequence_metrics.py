"""CER, WER, BLEU and ROUGE-L (Burn main): torchmetrics over whole epochs, Burn's fixtures, a
plain-Python port of Burn's algorithms on any sequences (empty ones too), host syncs and a
checkpoint round trip. Two ranks: test_epoch_metrics_ranks.py."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torchmetrics.text import BLEUScore, ROUGEScore
from torchmetrics.text import CharErrorRate as TmCer
from torchmetrics.text import WordErrorRate as TmWer

from burnish.record import CompactRecorder
from burnish.train import SequenceOutput
from burnish.train.metric import (
    BleuInput,
    BleuScore,
    BleuSmoothing,
    CerInput,
    CharErrorRate,
    RougeLInput,
    RougeLScore,
    WerInput,
    WordErrorRate,
)

from tests.train.metric.helpers import no_host_sync

PAD = 0


# --- plain-Python references (Burn's cer.rs, wer.rs, bleu.rs, rouge.rs) ----------------------


def _edit(reference: list[int], hypothesis: list[int]) -> int:
    row = list(range(len(hypothesis) + 1))
    for i, r in enumerate(reference, 1):
        previous, row = row, [i] + [0] * len(hypothesis)
        for j, h in enumerate(hypothesis, 1):
            same = previous[j - 1] if r == h else 1 + min(previous[j - 1], previous[j], row[j - 1])
            row[j] = same
    return row[-1]


def _lcs(a: list[int], b: list[int]) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        previous, row = row, [0] * (len(b) + 1)
        for j, y in enumerate(b, 1):
            row[j] = previous[j - 1] + 1 if x == y else max(row[j - 1], previous[j])
    return row[-1]


def _before_pad(seq: list[int], pad: int | None) -> list[int]:
    return seq[: seq.index(pad)] if pad is not None and pad in seq else seq


def _without_pad_count(seq: list[int], pad: int | None) -> list[int]:
    return seq if pad is None else seq[: sum(t != pad for t in seq)]


def _error_rate(batches, pad, cer: bool) -> float:
    strip = _without_pad_count if cer else _before_pad
    pairs = [(strip(t, pad), strip(o, pad)) for outs, tgts in batches for o, t in zip(outs, tgts)]
    total, edits = sum(len(t) for t, _ in pairs), sum(_edit(t, o) for t, o in pairs)
    if total == 0:  # pooled over the epoch, as torchmetrics (Burn drops such a batch)
        return math.inf if edits else math.nan
    return 100.0 * edits / total


def _bleu(batches, max_n: int, pad, smoothing: BleuSmoothing) -> float:
    clipped, totals, cand, ref = [0] * max_n, [0] * max_n, 0, 0
    for outs, tgts in batches:
        for o, t in zip(outs, tgts):
            o, t = _before_pad(o, pad), _before_pad(t, pad)
            cand, ref = cand + len(o), ref + len(t)
            for n in range(1, max_n + 1):
                co = Counter(tuple(o[i : i + n]) for i in range(len(o) - n + 1))
                ct = Counter(tuple(t[i : i + n]) for i in range(len(t) - n + 1))
                clipped[n - 1] += sum(min(c, ct[g]) for g, c in co.items())
                totals[n - 1] += sum(co.values())
    if cand == 0:
        return 0.0
    bp = math.exp(1 - ref / cand) if cand < ref else 1.0
    log_sum, multiplier = 0.0, 1.0
    for c, total in zip(clipped, totals):
        if total == 0:
            return 0.0
        if c == 0:
            if smoothing.kind == "none":
                return 0.0
            if smoothing.kind == "add_epsilon":
                p = smoothing.epsilon / total
            else:
                multiplier *= 2.0
                p = 1.0 / (multiplier * total)
        else:
            p = c / total
        log_sum += math.log(p)
    return 100.0 * bp * math.exp(log_sum / max_n)


def _rouge(batches, pad) -> float:
    scores = []
    for outs, tgts in batches:
        for o, t in zip(outs, tgts):
            o, t = _before_pad(o, pad), _before_pad(t, pad)
            if not o and not t:
                scores.append(100.0)
            elif not o or not t:
                scores.append(0.0)
            else:
                lcs = _lcs(t, o)
                p, r = lcs / len(o), lcs / len(t)
                scores.append(100.0 * 2 * p * r / (p + r) if p + r else 0.0)
    return sum(scores) / len(scores) if scores else math.nan


# --- helpers ------------------------------------------------------------------------------------


def _run(metric, batches) -> list:
    inputs = {CharErrorRate: CerInput, WordErrorRate: WerInput, BleuScore: BleuInput}
    make = inputs.get(type(metric), RougeLInput)
    return [
        metric.update(make(torch.tensor(outs), torch.tensor(tgts)), None) for outs, tgts in batches
    ]


def _random_epoch(seed: int, pad: bool, vocab: int = 5, length: int = 9):
    gen = torch.Generator().manual_seed(seed)
    batches = []
    for size in (3, 1, 6, 4):
        outs = torch.randint(1, vocab, (size, length), generator=gen)
        tgts = torch.randint(1, vocab, (size, length), generator=gen)
        if pad:  # right padding of random lengths, some sequences empty
            for tokens in (outs, tgts):
                lengths = torch.randint(0, length + 1, (size,), generator=gen)
                tokens[torch.arange(length) >= lengths.unsqueeze(1)] = PAD
        batches.append((outs.tolist(), tgts.tolist()))
    return batches


def _words(seq: list[int]) -> str:
    return " ".join(f"w{t}" for t in seq if t != PAD)


def _chars(seq: list[int]) -> str:
    return "".join(chr(0x4E00 + t) for t in seq if t != PAD)


def _close(actual: float, expected: float) -> bool:
    if math.isnan(expected) or math.isinf(expected):
        return actual == expected or (math.isnan(actual) and math.isnan(expected))
    return abs(actual - expected) <= 1e-6 * max(1.0, abs(expected))


# --- torchmetrics over whole epochs -------------------------------------------------------------


@pytest.mark.parametrize("pad", [False, True], ids=["full", "right-padded"])
@pytest.mark.parametrize("seed", range(4))
def test_epoch_values_equal_torchmetrics(seed: int, pad: bool) -> None:
    batches = _random_epoch(seed, pad)
    token = PAD if pad else None
    ours = {
        "cer": CharErrorRate(pad_token=token),
        "wer": WordErrorRate(pad_token=token),
        "bleu": BleuScore(pad_token=token),
        "bleu2": BleuScore(2, pad_token=token),
        "rouge": RougeLScore(pad_token=token),
    }
    theirs = {
        "cer": TmCer(),
        "wer": TmWer(),
        "bleu": BLEUScore(),
        "bleu2": BLEUScore(n_gram=2),
        "rouge": ROUGEScore(rouge_keys="rougeL"),
    }
    for metric in ours.values():
        _run(metric, batches)
    for outs, tgts in batches:
        theirs["cer"].update([_chars(o) for o in outs], [_chars(t) for t in tgts])
        theirs["wer"].update([_words(o) for o in outs], [_words(t) for t in tgts])
        for name in ("bleu", "bleu2"):
            theirs[name].update([_words(o) for o in outs], [[_words(t)] for t in tgts])
        if not pad:  # torchmetrics scores two empty sequences 0, Burn 100 (see below)
            theirs["rouge"].update([_words(o) for o in outs], [_words(t) for t in tgts])
    for name, metric in ours.items():
        if name == "rouge" and pad:
            expected = _rouge(batches, token)
        else:
            result = theirs[name].compute()
            result = result["rougeL_fmeasure"] if name == "rouge" else result
            expected = 100.0 * float(result.double())
        # torchmetrics computes in float32
        assert float(metric.value()) == pytest.approx(expected, rel=1e-6, abs=1e-5), name


# --- Burn's own tests --------------------------------------------------------------------------


def _one(metric, outs, tgts) -> float:
    entries = _run(metric, [(outs, tgts)])
    return float(entries[0].value)


def test_burn_error_rate_fixtures() -> None:
    assert _one(CharErrorRate(), [[1, 2], [3, 4]], [[1, 2], [3, 4]]) == 0.0
    assert _one(CharErrorRate(), [[1, 2], [3, 5]], [[1, 3], [3, 4]]) == 50.0
    assert _one(CharErrorRate(pad_token=9), [[1, 2, 9], [3, 5, 9]], [[1, 3, 9], [3, 4, 9]]) == 50
    assert _one(WordErrorRate().with_pad_token(9), [[1, 2, 9], [3, 5, 9]], [[1, 3, 9], [3, 4, 9]])
    assert _one(WordErrorRate(), [[1, 2], [3, 5]], [[1, 3], [3, 4]]) == 50.0
    assert CharErrorRate().name == "CER" and WordErrorRate().name == "WER"


def test_burn_bleu_fixtures() -> None:
    assert _one(BleuScore(), [[1, 2, 3, 4, 5]], [[1, 2, 3, 4, 5]]) == pytest.approx(100.0)
    assert _one(BleuScore(), [[1, 2, 3, 4, 5]], [[6, 7, 8, 9, 10]]) == 0.0
    assert _one(BleuScore.with_max_n(1), [[1, 2, 3, 6, 7]], [[1, 2, 3, 4, 5]]) == pytest.approx(60)
    brevity = 100.0 * math.exp(1.0 - 5.0 / 3.0)
    bp = _one(BleuScore.with_max_n(1).with_pad_token(0), [[1, 2, 3, 0, 0]], [[1, 2, 3, 4, 5]])
    assert bp == pytest.approx(brevity)
    padded = BleuScore().with_pad_token(99)
    assert _one(padded, [[1, 2, 3, 4, 5, 99, 99]], [[1, 2, 3, 4, 5, 99, 99]]) == pytest.approx(100)
    pair = ([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]], [[1, 2, 3, 4, 5], [11, 12, 13, 14, 15]])
    assert _one(BleuScore.with_max_n(1), *pair) == pytest.approx(50.0)
    bigrams = 100.0 * math.exp((math.log(0.5) + math.log(1 / 3)) / 2)
    assert _one(BleuScore.with_max_n(2), [[1, 2, 3, 4]], [[1, 2, 5, 6]]) == pytest.approx(bigrams)
    assert _one(BleuScore().with_pad_token(0), [[1, 2, 3, 0, 0]], [[1, 2, 3, 4, 5]]) == 0.0
    sparse = ([[1, 3, 5, 7, 9]], [[1, 2, 3, 4, 5]])  # unigrams 3/5, bigrams 0/4
    assert _one(BleuScore.with_max_n(2), *sparse) == 0.0
    exponential = BleuScore.with_max_n(2).with_smoothing(BleuSmoothing.EXPONENTIAL)
    assert _one(exponential, *sparse) == pytest.approx(100 * math.sqrt(3 / 5 * 1 / (2 * 4)))
    epsilon = BleuScore.with_max_n(2).with_smoothing(BleuSmoothing.AddEpsilon(0.1))
    assert _one(epsilon, *sparse) == pytest.approx(100 * math.sqrt(3 / 5 * 0.1 / 4))
    assert BleuScore().name == "BLEU-4" and BleuScore.with_max_n(2).name == "BLEU-2"


def test_burn_rouge_fixtures() -> None:
    assert _one(RougeLScore(), [[1, 2, 3, 4, 5]], [[1, 2, 3, 4, 5]]) == pytest.approx(100.0)
    assert _one(RougeLScore(), [[1, 2, 3, 4, 5]], [[6, 7, 8, 9, 10]]) == 0.0
    assert _one(RougeLScore(), [[1, 3, 5, 7, 9]], [[1, 2, 3, 4, 5]]) == pytest.approx(60.0)
    shorter = RougeLScore().with_pad_token(99)
    assert _one(shorter, [[1, 2, 3, 99, 99]], [[1, 2, 3, 4, 5]]) == pytest.approx(75.0)
    pair = ([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]], [[1, 2, 3, 4, 5], [11, 12, 13, 14, 15]])
    assert _one(RougeLScore(), *pair) == pytest.approx(50.0)
    assert RougeLScore().name == "ROUGE-L"


def test_corpus_bleu_pools_the_epoch_not_the_batch_scores() -> None:
    """Burn averages batch scores (a TODO in bleu.rs); the epoch value is corpus BLEU."""
    batches = [([[1, 2, 3, 4, 5]], [[1, 2, 3, 4, 5]]), ([[1, 2, 9, 9, 9]], [[1, 2, 3, 4, 5]])]
    metric = BleuScore.with_max_n(2)
    entries = _run(metric, batches)
    corpus = _bleu(batches, 2, None, BleuSmoothing.NONE)
    assert float(metric.value()) == pytest.approx(corpus)
    assert corpus != pytest.approx(sum(float(e.value) for e in entries) / 2)


# --- any sequences, empty ones included ---------------------------------------------------------

_SEQUENCES = st.lists(
    st.lists(st.integers(0, 3), min_size=0, max_size=6), min_size=1, max_size=4
).map(lambda rows: [row + [PAD] * (6 - len(row)) for row in rows])
_PAIRS = _SEQUENCES.flatmap(
    lambda outs: st.tuples(
        st.just(outs),
        st.lists(
            st.lists(st.integers(0, 3), min_size=6, max_size=6),
            min_size=len(outs),
            max_size=len(outs),
        ),
    )
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches=st.lists(_PAIRS, min_size=1, max_size=3),
    pad=st.sampled_from([None, PAD]),
    max_n=st.integers(1, 4),
    smoothing=st.sampled_from(
        [BleuSmoothing.NONE, BleuSmoothing.EXPONENTIAL, BleuSmoothing.add_epsilon(0.1)]
    ),
)
def test_any_sequences_give_burns_values(batches, pad, max_n, smoothing) -> None:
    """Pads anywhere (so empty strings, and CER's count rule vs WER's first pad), repeated
    n-grams, short candidates: each metric equals the port of Burn's algorithm."""
    cases = [
        (CharErrorRate(pad), _error_rate(batches, pad, cer=True)),
        (WordErrorRate(pad), _error_rate(batches, pad, cer=False)),
        (BleuScore(max_n, pad, smoothing), _bleu(batches, max_n, pad, smoothing)),
        (RougeLScore(pad), _rouge(batches, pad)),
    ]
    for metric, expected in cases:
        entries = _run(metric, batches)
        assert _close(float(metric.value()), expected), (metric.name, expected)
        for entry in entries:  # a batch value is never NaN: empty references score 0 (Burn)
            assert not math.isnan(float(entry.value))


def test_empty_references() -> None:
    """A batch without reference tokens has the value 0 (Burn's); the epoch pools the edits:
    with no reference token at all, NaN without an edit, inf with one (torchmetrics')."""
    metric = CharErrorRate(pad_token=PAD)
    entries = _run(metric, [([[PAD, PAD]], [[PAD, PAD]])])
    assert float(entries[0].value) == 0.0 and math.isnan(float(metric.value()))
    entries = _run(metric, [([[1, 2]], [[PAD, PAD]])])
    assert float(entries[0].value) == 0.0 and float(metric.value()) == math.inf
    _run(metric, [([[1, 2]], [[1, 3]])])
    assert float(metric.value()) == 150.0  # 3 edits over 2 reference tokens


# --- protocol -------------------------------------------------------------------------------


def test_sequence_output_feeds_them() -> None:
    logits = torch.zeros(2, 3, 5)
    logits[0, :, 1] = logits[1, :, 2] = 1.0  # argmax: [1, 1, 1] and [2, 2, 2]
    targets = torch.tensor([[1, 1, 1], [2, 3, 4]])
    output = SequenceOutput(torch.tensor(0.0), logits, None, targets)
    cer, rouge = CharErrorRate(), RougeLScore()
    cer.update(output, None)
    rouge.update(output, None)
    assert float(cer.value()) == pytest.approx(100 * 2 / 6)
    assert float(rouge.value()) == pytest.approx((100 + 100 * 2 / 6) / 2)
    given_tokens = SequenceOutput(torch.tensor(0.0), logits, targets, targets)
    wer, bleu = WordErrorRate(), BleuScore.with_max_n(2)
    wer.update(given_tokens, None)
    bleu.update(given_tokens, None)
    assert float(wer.value()) == 0.0 and float(bleu.value()) == pytest.approx(100.0)


@pytest.mark.parametrize("build", [CharErrorRate, WordErrorRate, BleuScore, RougeLScore])
def test_update_never_reads_the_device(build, monkeypatch) -> None:
    metric = build(pad_token=PAD)
    make = {CharErrorRate: CerInput, WordErrorRate: WerInput, BleuScore: BleuInput}
    inputs = [
        make.get(build, RougeLInput)(torch.tensor(o), torch.tensor(t))
        for o, t in _random_epoch(0, True)
    ]
    with no_host_sync(monkeypatch):
        entries = [metric.update(data, None) for data in inputs]
        value = metric.value()
    assert all(isinstance(e.value, torch.Tensor) and e.value.dim() == 0 for e in entries)
    assert [e.count for e in entries] == [3, 1, 6, 4]
    assert value.dim() == 0 and value.dtype == torch.float64


@pytest.mark.parametrize("build", [CharErrorRate, WordErrorRate, BleuScore, RougeLScore])
def test_checkpoint_round_trip_resumes_the_epoch_exactly(build) -> None:
    batches = _random_epoch(5, True)
    straight = build(pad_token=PAD)
    _run(straight, batches)
    first = build(pad_token=PAD)
    _run(first, batches[:2])
    recorder = CompactRecorder()
    saved = recorder.from_bytes(recorder.to_bytes({"m": first.to_record()}))["m"]
    resumed = build(pad_token=PAD)
    resumed.load_record(saved)
    _run(resumed, batches[2:])
    assert float(resumed.value()) == float(straight.value())


def test_bad_inputs_are_refused_clearly() -> None:
    with pytest.raises(ValueError, match=r"CharErrorRate expects .*\[2, 3, 5\].*argmax"):
        CharErrorRate().update(CerInput(torch.zeros(2, 3, 5), torch.zeros(2, 3)), None)
    with pytest.raises(ValueError, match=r"BleuScore expects integer token indices.*float32"):
        BleuScore().update(BleuInput(torch.zeros(2, 3), torch.zeros(2, 3)), None)
    with pytest.raises(ValueError, match=r"`max_n` must be an int >= 1\. Received: max_n=0"):
        BleuScore.with_max_n(0)
    with pytest.raises(ValueError, match="`smoothing` must be BleuSmoothing"):
        BleuScore(smoothing="exponential")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`epsilon` must be > 0"):
        BleuSmoothing.add_epsilon(0.0)
