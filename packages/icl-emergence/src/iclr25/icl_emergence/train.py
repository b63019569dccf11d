"""The `train` and `eval` verbs as library functions: one AR-NTP pre-training run on an LDS or GINC corpus
(checkpoint + report.json with what `bound` needs), fitted with the shared Lightning trainer (`lit.fit_ar`) or
the plain loop, and ICL accuracy of a token checkpoint on a GINC prompt file."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import torch

from iclr25.icl_emergence.config import TrainConfig
from iclr25.shared.files import save_torch
from iclr25.shared.results import atomic_write_json


def _device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA device is available")
    return device


def train_run(
    cfg: TrainConfig, folder: Path, *, seed: int = 0, device: str = "auto", ginc_dir: Path | None = None
) -> dict[str, Any]:
    """Pre-train on K = cfg.topics topics x N = cfg.seqs sequences x T = cfg.length; write model.pt and
    report.json (losses, G_seq, G_top, the Gaussian KL to the initialisation; GINC: ICL accuracy)."""
    from iclr25.icl_emergence.bounds import isotropic_gaussian_kl
    from iclr25.icl_emergence.corpus import lds_corpus, seen_topic_eval
    from iclr25.icl_emergence.evaluation import generalization_report, icl_accuracy
    from iclr25.icl_emergence.ginc import GINC, GINCConfig
    from iclr25.icl_emergence.lds import LDSTopicPrior
    from iclr25.icl_emergence.model import ARTransformer
    from iclr25.icl_emergence.training import ar_loss, train_ar

    device = _device(device)
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    K, N, T = cfg.topics, cfg.seqs, cfg.length
    report: dict[str, Any] = {"config": dataclasses.asdict(cfg), "seed": seed, "K": K, "N": N, "T": T}
    extra: dict[str, Any] = {}
    if cfg.data == "lds":
        prior = LDSTopicPrior(cfg.prior, cfg.d, 1.0, cfg.sigma)
        corpus = lds_corpus(prior, K, N, T, seed)
        flat = corpus.flat().float()
        model_kw: dict[str, Any] = {"input_dim": cfg.d}
        kind = "vectors"
    else:
        if ginc_dir is not None:
            from iclr25.icl_emergence.data import load_ginc_dir

            loaded = load_ginc_dir(ginc_dir)
            docs = [d for d in loaded.train if int(d.get("hmm_idx", 0)) < K]
            pieces = [d["ids"][i : i + T] for d in docs for i in range(0, len(d["ids"]) - T + 1, T)][: K * N]
            if not pieces:
                raise ValueError(f"{ginc_dir}: no training document holds {T} tokens")
            vocab = [w for w, _ in sorted(loaded.tokenizer.vocab.items(), key=lambda kv: kv[1])]
            flat = torch.tensor(pieces, dtype=torch.long)
            report["N"] = max(1, len(pieces) // K)
        else:
            ginc = GINC(GINCConfig(n_hmms=max(2, 2 * K)))
            docs_np, _ = ginc.sample_documents(list(range(K)), N, T, np.random.default_rng(seed))
            flat = torch.as_tensor(docs_np.reshape(-1, T), dtype=torch.long)
            vocab = ginc.vocab
        model_kw = {"vocab_size": len(vocab)}
        kind = "tokens"
        extra["vocab"] = vocab
    model_kw.update(d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads, max_len=T)
    model = ARTransformer(**model_kw)
    theta0 = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()
    warmup = min(100, cfg.steps // 10)
    if cfg.trainer == "lightning":
        from iclr25.icl_emergence.lit import fit_ar

        losses = fit_ar(model, flat, folder, steps=cfg.steps, batch=cfg.batch, lr=cfg.lr, warmup=warmup,
                        device=device, seed=seed)  # fmt: skip
    else:
        losses = train_ar(
            model, lambda step: flat[torch.randint(len(flat), (cfg.batch,), generator=g)], cfg.steps,
            lr=cfg.lr, warmup=warmup, device=device,
        )  # fmt: skip
    model.cpu()
    theta = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    s = 0.01 * float(theta0.pow(2).mean().sqrt())
    report["kl"] = isotropic_gaussian_kl(theta.double().numpy(), theta0.double().numpy(), s)
    report["sigma_posterior"] = s
    report["final_batch_loss"] = losses[-1]
    with torch.no_grad():
        report["emp_loss"] = float(ar_loss(model, flat[:4096]))
    if kind == "vectors":
        unseen = lds_corpus(prior, 64, 4, T, seed + 10_000).data
        seen = seen_topic_eval(corpus, prior, 256, seed + 20_000).data
        report.update(generalization_report(model, corpus.data, seen, unseen))
    elif ginc_dir is None:
        prompts = ginc.make_prompts("ID_sample", 3, min(8, max(0, (T - 2) // 4)), 200, np.random.default_rng(seed))
        report["icl_accuracy"] = icl_accuracy(model, [p["ids"] for p in prompts], [p["label_id"] for p in prompts])
    ckpt = {"state_dict": model.state_dict(), "model": model_kw, "kind": kind, "config": report["config"], **extra}
    save_torch(folder / "model.pt", ckpt)
    atomic_write_json(folder / "report.json", report)
    return report


def eval_prompts(ckpt: dict[str, Any], prompts_file: Path) -> dict[str, Any]:
    """Argmax next-token accuracy of a token checkpoint on a GINC prompt file, per n_examples."""
    from iclr25.icl_emergence.data import WordLevelTokenizer, load_prompts
    from iclr25.icl_emergence.evaluation import icl_accuracy
    from iclr25.icl_emergence.model import ARTransformer

    vocab = list(ckpt["vocab"])
    tok = WordLevelTokenizer({w: i for i, w in enumerate(vocab)})
    rows = load_prompts(prompts_file, tok)
    model = ARTransformer(**ckpt["model"])
    model.load_state_dict(ckpt["state_dict"])
    by_n: dict[str, dict[str, Any]] = {}
    for n in sorted({int(r.get("n_examples", 0)) for r in rows}):
        sel = [r for r in rows if int(r.get("n_examples", 0)) == n and len(r["ids"]) <= model.max_len]
        if sel:
            acc = icl_accuracy(model, [r["ids"] for r in sel], [r["label_id"] for r in sel])
            by_n[str(n)] = {"prompts": len(sel), "accuracy": acc}
    if not by_n:
        raise ValueError(f"{prompts_file}: no prompt fits the model's context of {model.max_len} tokens")
    return {"prompts_file": str(prompts_file), "by_n_examples": by_n}
