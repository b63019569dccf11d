"""Token-level NLL and the zero-shot multiple-choice scorer on tiny generated task files."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from iclr25.patch_train.data import ByteTokenizer
from iclr25.patch_train.evaluate import continuation_logprob, evaluate_nll, load_mc_task, score_multiple_choice


def test_evaluate_nll_near_log_v_at_init(tiny_model):
    ids = np.random.default_rng(0).integers(0, 64, 2000)
    nll, ppl = evaluate_nll(tiny_model, ids, 16, n_windows=20)
    assert abs(nll - math.log(64)) < 0.2 and ppl == pytest.approx(math.exp(nll))
    assert tiny_model.training  # mode restored
    with pytest.raises(ValueError, match="at least"):
        evaluate_nll(tiny_model, ids[:10], 16)


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_load_task_formats(tmp_path):
    hs = _write(tmp_path / "hellaswag.jsonl", [{"ctx": "A man", "endings": ["runs", "sits", "is", "x"], "label": 2}])
    piqa = _write(tmp_path / "piqa.jsonl", [{"goal": "open jar", "sol1": "twist", "sol2": "bite", "label": 0}])
    arc = _write(
        tmp_path / "arc.jsonl",
        [{"question": {"stem": "Sky?", "choices": [{"text": "blue", "label": "A"}, {"text": "red", "label": "B"}]},
          "answerKey": "B"}],
    )  # fmt: skip
    (h,), (p,), (a,) = load_mc_task(hs), load_mc_task(piqa), load_mc_task(arc)
    assert h.context == "A man" and h.choices[2] == " is" and h.label == 2
    assert p.choices == (" twist", " bite") and p.label == 0
    assert a.choices == (" blue", " red") and a.label == 1
    bad = _write(tmp_path / "bad.jsonl", [{"ctx": "c", "endings": ["a"], "label": 3}])
    with pytest.raises(ValueError, match="out of range"):
        load_mc_task(bad)
    with pytest.raises(ValueError, match="unknown task format"):
        load_mc_task(_write(tmp_path / "odd.jsonl", [{"foo": 1}]))
    wikihow = {"activity_label": "Cooking", "ctx_a": "Boil water. [title] Add salt", "ctx_b": "then", "label": 0}
    (w,) = load_mc_task(_write(tmp_path / "hs2.jsonl", [{**wikihow, "endings": ["stir [step] it", "sit"]}]))
    assert w.context == "Cooking: Boil water.. Add salt Then" and w.choices == (" stir it", " sit")
    with pytest.raises(ValueError, match=r"missing\.jsonl:1: piqa record lacks the field 'sol2'"):
        load_mc_task(_write(tmp_path / "missing.jsonl", [{"goal": "g", "sol1": "a", "label": 0}]))
    with pytest.raises(ValueError, match=r"list\.jsonl:1: expected a JSON object"):
        load_mc_task(_write(tmp_path / "list.jsonl", [[1, 2]]))


class _Oracle(torch.nn.Module):
    """A 'model' whose next-token distribution always favours byte 'b' (for scorer tests)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(256, 4)

    def get_input_embeddings(self):
        return self.emb

    def forward(self, input_ids=None, **kw):
        logits = torch.zeros(*input_ids.shape, 256)
        logits[..., ord("b")] = 5.0
        return type("Out", (), {"logits": logits})()


def test_scorer_picks_likely_choice_and_normalises(tmp_path):
    tok = ByteTokenizer()
    model = _Oracle()
    assert continuation_logprob(model, tok, "x", "bb", 64) > continuation_logprob(model, tok, "x", "ab", 64)
    task = _write(
        tmp_path / "hellaswag.jsonl",
        [
            {"ctx": "q", "endings": ["aa", "bb"], "label": 1},
            {"ctx": "q", "endings": ["bbb", "b"], "label": 0},  # acc picks the short one; acc_norm the long one
        ],
    )
    scores = score_multiple_choice(model, tok, load_mc_task(task))
    assert scores["acc"] == 0.5 and scores["acc_norm"] == 1.0 and scores["n"] == 2


def test_scorer_runs_on_llama(tiny_model, tmp_path):
    task = _write(tmp_path / "piqa.jsonl", [{"goal": "g", "sol1": "a", "sol2": "b", "label": 1}] * 2)
    from iclr25.patch_train.data import HFTokenizer  # noqa: F401 (import check)

    class Tok(ByteTokenizer):
        vocab_size = 64

        def encode(self, text):
            return [b % 64 for b in text.encode()]

    scores = score_multiple_choice(tiny_model, Tok(), load_mc_task(task), max_len=64)
    assert 0.0 <= scores["acc"] <= 1.0 and scores["n"] == 2
