"""The experiments of the CtD reproduction: the plan of training runs (`experiments`), the runs themselves with
their seed summaries (`measure`), and the method-independent checks of spec 9 (`mechanics`). Plain metrics out; the
claims judging them are declared in `claims`."""

from __future__ import annotations

from typing import Any

import numpy as np

from iclr25.compose_decompose.config import Config

CBM_FIXTURE = [["1.2.0", "a.b"], ["1.3.0", "a.c"], ["4.2.0", "d.b"], ["4.3.0", "d.c"], ["1.1.0", "a"]]  # spec 9.4


def experiments(cfg: Config, seed: int = 0) -> list[tuple[str, dict[str, Any]]]:
    """(name, settings) of every training run of a reproduction; names are `dataset/channel/K<k>[/ablation]/s<seed>`."""
    out: list[tuple[str, dict[str, Any]]] = []
    for s in range(cfg.seeds):
        for ch in cfg.channels:
            out.append(
                (f"thing/{ch}/K{cfg.K}/s{seed + s}", {"dataset": "thing", "channel": ch, "K": cfg.K, "seed": seed + s})
            )
    if cfg.k_large:
        for s in range(cfg.seeds):
            for ch in cfg.channels:
                k = cfg.k_large
                out.append(
                    (f"thing/{ch}/K{k}/s{seed + s}", {"dataset": "thing", "channel": ch, "K": k, "seed": seed + s})
                )
    for ds in cfg.image_datasets:
        for s in range(cfg.image_seeds):
            for ch in cfg.channels:
                out.append(
                    (f"{ds}/{ch}/K{cfg.K}/s{seed + s}", {"dataset": ds, "channel": ch, "K": cfg.K, "seed": seed + s})
                )
    ablation_settings: dict[str, dict[str, Any]] = {
        "qt": {"channel": "qt"},
        "single_target": {"decompose_targets": 1},
        "no_decompose": {"train_phrase_size": cfg.compose_size, "train_distractors": "hard"},
        "uniform_init": {"init": "uniform"},
        "slots": {"sender": "slots"},
        "sum": {"combine": "sum"},
        "gru": {"combine": "gru"},
        "k24": {"K": 24},
    }
    for name in cfg.ablations:
        settings = {"dataset": "thing", "channel": "cb", "K": cfg.K, "seed": seed, **ablation_settings[name]}
        out.append((f"thing/{settings['channel']}/K{settings['K']}/{name}/s{seed}", settings))
    return out


def make_data(dataset: str, cfg: Config, seed: int) -> Any:
    """The ConceptData of a dataset name for a run."""
    from iclr25.compose_decompose.data import make_dataset

    return make_dataset(
        dataset, seed, cfg.noise, cfg.thing_per_combo, cfg.n_per_combo, cfg.image_size, cfg.shape_extended
    )


def mechanics(seed: int = 0) -> dict[str, float]:
    """The method-independent checks of spec 9: CBM fixture, AMI, straight-through VQ, hard distractors."""
    import torch

    from iclr25.compose_decompose.codebook import CodebookChannel
    from iclr25.compose_decompose.data import make_thing_dataset
    from iclr25.compose_decompose.games import GameSampler
    from iclr25.compose_decompose.metrics import ami, concept_best_match

    out: dict[str, float] = {}
    fx = concept_best_match([(m.split("."), p.split(".")) for m, p in CBM_FIXTURE], words_eos=True)
    out.update(
        {f"cbm_fixture_{k}": float(fx[k]) for k in ("match", "precision", "recall", "total_edges", "good_edges")}
    )
    rng = np.random.default_rng(seed)
    labels = rng.integers(12, size=2000)
    out["ami_bijection"] = ami([f"w{(x * 5) % 12}" for x in labels], [f"p{x}" for x in labels])
    out["ami_random"] = ami(rng.integers(12, size=2000).tolist(), labels.tolist())
    gen = torch.Generator().manual_seed(seed)
    ch = CodebookChannel(12, 16)
    ch.codebook.data.normal_(generator=gen)
    z = torch.randn(256, 16, generator=gen, requires_grad=True)
    res = ch(z, 2)
    brute = torch.cdist(z.detach(), ch.codebook.detach()).argsort(1)[:, :2]
    g = torch.randn(res.vectors.shape, generator=gen)
    (res.vectors * g).sum().backward()
    out["vq_nearest_match"] = float((res.words == brute).float().mean())
    out["vq_forward_err"] = float((res.vectors - ch.codebook[res.words]).detach().abs().max())
    out["vq_grad_err"] = float((z.grad - g.sum(1)).abs().max())  # straight-through: d q / d z = I per word
    data = make_thing_dataset(4, seed=seed)
    games = GameSampler(data, 3, 3, 2, "heldout", "hard", seed=seed).sample(2000)
    fvps = data.space.fvps_of(data.combos)
    cand = fvps[games.candidate_combos]  # (B, 6, m)
    attrs = data.space.fvp_attribute(games.phrases)  # (B, 2)
    have = np.take_along_axis(cand, np.repeat(attrs[:, None], cand.shape[1], 1), 2)  # (B, 6, 2)
    violated = (have != games.phrases[:, None]).sum(-1)  # (B, 6)
    out["hard_distractor_exact_one"] = float((violated[games.labels == 0] == 1).mean())
    out["targets_satisfy"] = float((violated[games.labels == 1] == 0).mean())
    return out


def _summary(runs: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for name, r in runs.items():
        groups.setdefault(name.rsplit("/", 1)[0], []).append(r)
    out = {}
    for group, rs in groups.items():
        keys = [k for k, v in rs[0].items() if isinstance(v, int | float)]
        out[group] = {f"{k}_mean": float(np.mean([r[k] for r in rs])) for k in keys}
        out[group].update({f"{k}_std": float(np.std([r[k] for r in rs])) for k in keys if "acc" in k or "cbm" in k})
        out[group]["n_seeds"] = len(rs)
    return out


WORKERS_AND_SCALE_OUT = (
    "workers > 1 trains the runs in separate processes; with --devices, --precision, checkpoints or --resume use "
    "workers=1"
)


def uses_scale_out(cfg: Config, scale_out: Any) -> bool:
    """Whether the loops train through the scale-out layer (several processes, a precision, checkpoints, resume)."""
    return bool(scale_out.wants_fabric or scale_out.checkpoint_every or cfg.checkpoint_every or scale_out.resume)


def experiment(
    s: dict[str, Any], cfg: Config, data: Any, device: str, tick: Any = None, log: Any = None, scale_out: Any = None
) -> dict[str, Any]:
    """One training run of `experiments(cfg)` (its settings `s`) on `data`: `training.decompose_then_compose`."""
    from iclr25.compose_decompose.training import decompose_then_compose

    keys = ("hidden", "beta1", "beta2", "init", "dead_after", "sender", "combine", "gs_word_init")
    agent = {k: getattr(cfg, k) for k in keys}
    kwargs = {**agent, **{k: v for k, v in s.items() if k not in ("dataset", "channel", "K", "seed")}}
    return decompose_then_compose(
        data,
        channel=s["channel"],
        steps=cfg.steps,
        compose_steps=cfg.compose_steps,
        batch=cfg.batch,
        lr=cfg.lr,
        K=s["K"],
        dim=cfg.dim,
        eval_games=cfg.eval_games,
        compose_size=cfg.compose_size,
        seed=s["seed"],
        device=device,
        zero_message=cfg.break_message,
        tick=tick,
        log=log,
        scale_out=scale_out,
        **kwargs,
    )


def run_experiment(job: tuple[str, dict[str, Any], Config, str]) -> dict[str, Any]:
    """`experiment` in a worker process, `job` = (name, settings, cfg, device): its data made here, its logged rows
    returned as `_rows` [(step, row)] for the parent to log."""
    import torch

    _, s, cfg, device = job
    torch.set_num_threads(cfg.threads)
    rows: list[tuple[int, dict[str, Any]]] = []
    res = experiment(
        s, cfg, make_data(s["dataset"], cfg, s["seed"]), device, log=lambda row, step: rows.append((step, row))
    )
    res["_rows"] = rows
    return res


def measure(cfg: Config, run: Any) -> dict[str, Any]:
    """Every run of `experiments(cfg)` plus the mechanics; returns the metrics dict of the report."""
    import torch

    from iclr25.compose_decompose.data import write_cbm_jsonl
    from iclr25.compose_decompose.training import evaluate, message_samples
    from iclr25.shared.parallel import map_in_processes
    from iclr25.shared.run import is_follower

    device = run.device  # resolving the device sets torch's thread count; ours comes after it
    torch.set_num_threads(cfg.threads)
    exps = experiments(cfg, run.seed)
    total = sum(cfg.steps + cfg.compose_steps for _ in exps)
    runs: dict[str, dict[str, Any]] = {}
    curves: dict[str, list[dict[str, float]]] = {}
    cache: dict[tuple[str, int], Any] = {}
    if uses_scale_out(cfg, run.scale_out) and cfg.workers > 1:
        raise ValueError(WORKERS_AND_SCALE_OUT)

    def logged(name: str, curve: list) -> Any:
        def log(row: dict[str, Any], step: int) -> None:
            if "decompose/train_game_acc" in row:  # the Decompose curve, for the figure
                curve.append({"step": step, "train_game_acc": row["decompose/train_game_acc"]})
            run.logger.log({f"{name}/{k}": v for k, v in row.items()}, step)

        return log

    def finished(name: str, res: dict[str, Any]) -> None:
        game = res.pop("game")
        if name == exps[0][0] and not is_follower():  # the first run's Decompose messages, in the CBM format
            key = (exps[0][1]["dataset"], exps[0][1]["seed"])
            data = cache[key] if key in cache else make_data(key[0], cfg, key[1])
            ev = evaluate(game, data, 500, 1, "train", device=device)
            samples = message_samples(ev["words"], ev["phrases"])
            names = [data.space.fvp_name(p[0]) for _, p in samples]
            write_cbm_jsonl(run.dir / "messages.jsonl", [(w, [n]) for (w, _), n in zip(samples, names, strict=True)])
        runs[name] = res

    with run.progress(total=total, desc="train", unit="step") as bar:
        if cfg.workers > 1:  # independent runs in spawned processes: the sequential results, logged as they come
            jobs = [(name, s, cfg, device) for name, s in exps]

            def done(index: int, res: dict[str, Any]) -> None:
                name = exps[index][0]
                curves[name] = []
                log = logged(name, curves[name])
                for step, row in res.pop("_rows"):
                    log(row, step)
                bar.update(cfg.steps + cfg.compose_steps)
                finished(name, res)

            map_in_processes(run_experiment, jobs, cfg.workers, threads=cfg.threads, on_result=done, desc="runs")
        for name, s in exps if cfg.workers == 1 else ():
            key = (s["dataset"], s["seed"])
            if key not in cache:
                cache[key] = make_data(s["dataset"], cfg, s["seed"])
            curves[name] = []

            def scale_out(phase: str, name: str = name) -> dict[str, Any]:
                return run.training_options(f"{name}/{phase}", cfg.checkpoint_every)

            res = experiment(s, cfg, cache[key], device, bar.update, logged(name, curves[name]), scale_out)
            finished(name, res)
    games_s = [r["games_per_s"] for n, r in runs.items() if n.startswith("thing/")]
    img_s = [r["games_per_s"] for n, r in runs.items() if not n.startswith("thing/")]
    return {
        "runs": runs,
        "summary": _summary(runs),
        "mechanics": mechanics(run.seed),
        "throughput": {
            "thing_train_games_per_s": float(np.mean(games_s)) if games_s else float("nan"),
            **({"image_train_games_per_s": float(np.mean(img_s))} if img_s else {}),
        },
        "_curves": curves,
    }
