"""The reproduction's pre-training runs, one function per run: an LDS run on K topics (spec §6a, `run_lds_job`), a
GINC run on K ID HMMs (§6b B, `ginc_run`), the SGLD run (§6b C, `sgld_run`), and `run_all`, which spreads
independent runs over worker processes or, when the run scales out, trains them one after another on the processes
of its Fabric with a checkpoint folder each.

Every run takes `logger` (metrics under the shared names, behind the run's name) and the training options of
`Run.training_options` (`fabric`, `checkpointer`, `resume`); without them it trains exactly as a plain loop, and a
run in a worker process returns its logged rows (`"logged"`) for the parent to log.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from iclr25.icl_emergence.config import Config

FRESH = 0  # K = 0 marks the "fresh topics every batch" run (K = infinity)


class _Rows:
    """A metrics logger that keeps its rows, for a run in a worker process (the parent logs them)."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, dict[str, Any]]] = []

    def log(self, row: dict[str, Any], step: int) -> None:
        self.rows.append((step, row))


def _sink(logger: Any) -> Any:
    return logger if logger is not None else _Rows()


def _returned(out: dict[str, Any], logger: Any, sink: Any) -> dict[str, Any]:
    if logger is None:
        out["logged"] = sink.rows
    return out


def run_all(
    fn: Callable[..., dict[str, Any]],
    items: Sequence[Any],
    names: Sequence[str],
    workers: int,
    *,
    logger: Any = None,
    scale: Callable[[str], dict[str, Any]] | None = None,
    desc: str = "training runs",
) -> list[dict[str, Any]]:
    """`fn(item)` for every item, results in item order. With `scale` (a run's name -> its `fabric`, `checkpointer`,
    `resume`), one after another in this process (the processes of a Fabric train each run together; checkpoints
    in `checkpoints/<name>`), logging live into `logger`; otherwise in `workers` processes
    (`iclr25.shared.parallel.map_in_processes`), each run's rows logged into `logger` as it finishes."""
    from iclr25.shared.parallel import map_in_processes
    from iclr25.shared.progress import progress

    if scale is not None:
        pairs = list(zip(items, names, strict=True))
        return [fn(item, logger=logger, **scale(name)) for item, name in progress(pairs, desc=desc, unit="run")]

    def log_rows(index: int, result: dict[str, Any]) -> None:
        for step, row in result.pop("logged", []):
            if logger is not None:
                logger.log(row, step=step)

    return map_in_processes(fn, items, workers, desc=desc, unit="run", on_result=log_rows)


# --------------------------------------------------------------------------------------------- LDS runs
@dataclass(frozen=True)
class LDSJob:
    """One AR-NTP pre-training run on K topics (K = 0: fresh topics every batch) with one seed."""

    K: int
    seed: int
    cfg: Config
    device: str = "cpu"

    @property
    def name(self) -> str:
        """`K64/s0`, `fresh/s0`."""
        return f"{'fresh' if self.K == FRESH else f'K{self.K}'}/s{self.seed}"

    @property
    def checkpoint_name(self) -> str:
        """`lds-K64-s0`, `lds-fresh-s0`: the run's checkpoint folder."""
        return "lds-" + self.name.replace("/", "-")


def eval_sets(cfg: Config) -> dict[str, Any]:
    """The fixed unseen-topic evaluation set (identical across K and seeds): topics, sequences (topics, per, T, d)."""
    from iclr25.icl_emergence.corpus import lds_corpus
    from iclr25.icl_emergence.lds import LDSTopicPrior

    prior = LDSTopicPrior(cfg.prior, cfg.d, cfg.rho, cfg.sigma)
    per = -(-cfg.eval_seqs // cfg.eval_topics)
    return {"prior": prior, "unseen": lds_corpus(prior, cfg.eval_topics, per, cfg.T, cfg.eval_seed)}


def run_lds_job(
    job: LDSJob, logger: Any = None, *, fabric: Any = None, checkpointer: Any = None, resume: str | None = None
) -> dict[str, Any]:
    """Train one model (spec §6a recipe) and measure losses, gaps, the ICL curve and the PAC-Bayes terms."""
    import torch

    from iclr25.icl_emergence.bounds import isotropic_gaussian_kl, two_level_bound
    from iclr25.icl_emergence.corpus import lds_corpus, seen_topic_eval
    from iclr25.icl_emergence.evaluation import generalization_report, late_start, loss_curve, predict
    from iclr25.icl_emergence.model import ARTransformer
    from iclr25.icl_emergence.training import train_ar

    if job.device == "cpu":
        torch.set_num_threads(1)
    device = fabric.device if fabric is not None else job.device
    cfg, K = job.cfg, job.K
    sets = eval_sets(cfg)
    prior, unseen = sets["prior"], sets["unseen"].data
    torch.manual_seed(job.seed)
    model = ARTransformer(
        input_dim=cfg.d, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads, max_len=cfg.T - 1
    )
    theta0 = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()
    g = torch.Generator().manual_seed(10_007 * job.seed + 1)
    if K == FRESH:
        corpus = None

        def next_batch(step: int) -> torch.Tensor:
            return prior.sample_sequences(prior.sample_topics(cfg.batch, g), 1, cfg.T, g)[:, 0].float()
    else:
        corpus = lds_corpus(prior, K, cfg.N, cfg.T, seed=1_000_003 * job.seed + K)
        flat = corpus.flat().float()

        def next_batch(step: int) -> torch.Tensor:
            return flat[torch.randint(len(flat), (cfg.batch,), generator=g)]

    late = late_start(cfg.T)

    def on_log(step: int, loss: float) -> dict[str, float]:
        curve = loss_curve(model, unseen, device)
        model.train()
        return {"unseen_late": float(curve[late:].mean())}

    sink, history = _sink(logger), []
    start = time.perf_counter()
    losses = train_ar(
        model, next_batch, cfg.steps, lr=cfg.lr, warmup=cfg.warmup, weight_decay=cfg.weight_decay,
        on_log=on_log, log_every=cfg.log_every, device=job.device, logger=sink, prefix=f"{job.name}/",
        epoch_size=None if corpus is None else K * cfg.N, history=history, generator=g,
        fabric=fabric, checkpointer=checkpointer, resume=resume,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    out: dict[str, Any] = {"name": job.name, "K": K, "seed": job.seed, "train_seconds": seconds}
    out["tokens_per_s"] = cfg.steps * cfg.batch * (cfg.T - 1) / seconds
    out["final_batch_loss"] = losses[-1]
    out["history"] = [{"step": r["step"], "train_batch_loss": r["loss"], "unseen_late": r["unseen_late"]}
                      for r in history]  # fmt: skip
    if corpus is None:
        curve = loss_curve(model, unseen, device)
        out.update(unseen_loss=float(curve.mean()), unseen_late=float(curve[late:].mean()), icl_curve=curve.tolist())
        return _returned(out, logger, sink)
    seen = seen_topic_eval(corpus, prior, cfg.eval_seqs, seed=cfg.eval_seed + 7 * K + job.seed)
    out.update(generalization_report(model, corpus.data, seen.data, unseen, device))
    # PAC-Bayes report (spec §6a): Gaussian posterior/prior around theta_hat / theta_0, s = sigma_frac * RMS(theta_0)
    theta = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).cpu()
    s = cfg.sigma_frac * float(theta0.pow(2).mean().sqrt())
    kl = isotropic_gaussian_kl(theta.double().numpy(), theta0.double().numpy(), s)
    err = ((predict(model, corpus.data, device=device) - corpus.data[..., 1:, :]) ** 2).sum(-1)
    emp = float(err.clamp(max=cfg.loss_clip).mean())
    out["kl"] = kl
    out["bound"] = two_level_bound(emp, kl, K, cfg.N, cfg.T, cfg.delta, cfg.loss_clip, cfg.n_eff)
    return _returned(out, logger, sink)


# --------------------------------------------------------------------------------------------- full extras
def ginc_run(
    K: int,
    cfg: Config,
    seed: int,
    device: str,
    logger: Any = None,
    *,
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
) -> dict[str, Any]:
    """Full preset (spec §6b B): pre-train a token transformer on K ID HMMs x N documents x T tokens (2K HMMs,
    half ID; batch 8) and measure ICL accuracy on ID_sample prompts for k in {3, 5, 8, 10}: {"K", "accuracy"}."""
    import numpy as np
    import torch

    from iclr25.icl_emergence.evaluation import icl_accuracy
    from iclr25.icl_emergence.ginc import GINC, GINCConfig
    from iclr25.icl_emergence.model import ARTransformer
    from iclr25.icl_emergence.training import train_ar

    ginc = GINC(GINCConfig(n_hmms=2 * K))
    rng = np.random.default_rng(seed)
    docs, _ = ginc.sample_documents(list(range(K)), cfg.ginc_N, cfg.ginc_T, rng)
    flat = torch.as_tensor(docs.reshape(-1, cfg.ginc_T), dtype=torch.long)
    torch.manual_seed(seed)
    model = ARTransformer(
        vocab_size=ginc.cfg.n_symbols, d_model=cfg.ginc_d_model, n_layers=cfg.ginc_layers,
        n_heads=max(1, cfg.ginc_d_model // 64), max_len=cfg.ginc_T,
    )  # fmt: skip
    g = torch.Generator().manual_seed(seed)
    sink = _sink(logger)
    train_ar(
        model, lambda step, x=flat, g=g: x[torch.randint(len(x), (8,), generator=g)], cfg.ginc_steps,
        lr=cfg.ginc_lr, warmup=min(1000, cfg.ginc_steps // 10), weight_decay=0.0, device=device,
        log_every=cfg.log_every, logger=sink, prefix=f"ginc/K{K}/", epoch_size=len(flat), generator=g,
        fabric=fabric, checkpointer=checkpointer, resume=resume,
    )  # fmt: skip
    where = fabric.device if fabric is not None else device
    acc: dict[str, dict[str, float]] = {}
    for k in (3, 5, 8, 10):
        acc[str(k)] = {}
        for n in (0, 1, 2, 4, 8, 16, 32, 64):
            if (k + 1) * n + k > cfg.ginc_T:
                continue
            prompts = ginc.make_prompts("ID_sample", k, n, min(cfg.ginc_prompts, 500), rng)
            acc[str(k)][str(n)] = icl_accuracy(model, [p["ids"] for p in prompts], [p["label_id"] for p in prompts],
                                               where)  # fmt: skip
    return _returned({"K": K, "accuracy": acc}, logger, sink)


def ginc_training(
    cfg: Config,
    seed: int,
    device: str,
    *,
    workers: int = 1,
    logger: Any = None,
    scale: Callable[[str], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Every GINC pre-training run of `cfg.ginc_Ks` (independent: in `workers` processes, or scaled out as
    `run_all` says): K -> k -> n_examples -> ICL accuracy."""
    fn = functools.partial(ginc_run, cfg=cfg, seed=seed, device=device)
    names = [f"ginc-K{K}" for K in cfg.ginc_Ks]
    results = run_all(fn, cfg.ginc_Ks, names, workers, logger=logger, scale=scale, desc="GINC runs")
    return {str(r["K"]): r["accuracy"] for r in results}


def sgld_run(
    cfg: Config,
    seed: int,
    device: str,
    logger: Any = None,
    *,
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
) -> dict[str, Any]:
    """Full preset (spec §6b C): SGLD at the largest K with a data-dependent prior objective on K_J = K/2 held-out
    topics; the Langevin KL estimate and the resulting bound (reported)."""
    import torch

    from iclr25.icl_emergence.bounds import data_dependent_bound, langevin_kl
    from iclr25.icl_emergence.corpus import lds_corpus
    from iclr25.icl_emergence.lds import LDSTopicPrior
    from iclr25.icl_emergence.model import ARTransformer
    from iclr25.icl_emergence.training import train_sgld

    prior = LDSTopicPrior(cfg.prior, cfg.d, cfg.rho, cfg.sigma)
    K = cfg.Ks[-1]
    K_J = max(1, K // 2)
    corpus = lds_corpus(prior, K + K_J, cfg.N, cfg.T, seed=seed + 99)
    target, held = corpus.split_seen_unseen(K)
    a, b = target.flat().float(), held.flat().float()
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = ARTransformer(input_dim=cfg.d, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
                          max_len=cfg.T - 1)  # fmt: skip
    log = train_sgld(
        model, lambda s: a[torch.randint(len(a), (cfg.batch,), generator=g)],
        lambda s: b[torch.randint(len(b), (cfg.batch,), generator=g)], cfg.steps,
        lr=cfg.lr, beta=cfg.sgld_beta, seed=seed, device=device, logger=logger, prefix="sgld/",
        log_every=cfg.log_every, epoch_size=len(a), generator=g, fabric=fabric, checkpointer=checkpointer,
        resume=resume,
    )  # fmt: skip
    kl = langevin_kl(log["grad_diff_sq"], log["step_sizes"], cfg.sgld_beta)
    emp = min(sum(log["losses"][-50:]) / len(log["losses"][-50:]), cfg.loss_clip)
    return {"K": K, "K_J": K_J, "beta": cfg.sgld_beta, "langevin_kl": kl,
            "bound": data_dependent_bound(emp, kl, K + K_J, K_J, cfg.N, cfg.T, delta=cfg.delta, c=cfg.loss_clip)}  # fmt: skip
