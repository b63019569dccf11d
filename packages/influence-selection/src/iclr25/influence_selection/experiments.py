"""The measurements of the reproduction (spec 6a): each function returns plain numbers, judged in claims.py."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from iclr25.influence_selection.baselines import iv_scores
from iclr25.influence_selection.config import Config
from iclr25.influence_selection.data import digits_split, two_gaussians, two_moons
from iclr25.influence_selection.fi import fi_util
from iclr25.influence_selection.models import LogisticModel, MLPModel, fit_mlp_batch
from iclr25.influence_selection.selection import active_learning_loop, make_strategy, removed_indices, trim_dataset

if TYPE_CHECKING:
    from iclr25.shared.run import Run


def check_scale_out(config: Config, scale_out: Any) -> None:
    """Refuse, before any work, scale-out flags that no loop of `config` would apply: only the CNN of the image
    active learning (the full preset, `image_runs` > 0) trains on Fabric and checkpoints; sharded parameters
    (`--strategy fsdp`) are refused, as checkpoints hold one full state dict from rank 0."""
    if scale_out is None:
        return
    if scale_out.strategy == "fsdp":
        raise ValueError(
            "--strategy fsdp: the CNN's checkpoints hold one full state dict from rank 0; use ddp (or auto)"
        )
    asked = scale_out.wants_fabric or scale_out.checkpoint_every or scale_out.resume or scale_out.strategy != "auto"
    if asked and not config.image_runs:
        raise ValueError(
            "--devices, --num-nodes, --strategy, --precision, --checkpoint-every and --resume apply to the CNN of the "
            "image active learning (--scale full, image_runs >= 1); this preset trains no network"
        )


def _acc(model: Any, X: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(model.predict(X) == y))


def linear_trimming_seed(seed: int, budgets: tuple[int, ...], l2: float, random_repeats: int = 5) -> dict[str, Any]:
    """One seed of the 2-D linear trimming experiment (paper Table 1): accuracies after removing b points."""
    s = two_gaussians(seed)
    m = LogisticModel(l2=l2).fit(s.X_train, s.y_train)
    t = time.perf_counter()
    fi = fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val)
    t_fi = time.perf_counter() - t
    t = time.perf_counter()
    iv = iv_scores(m, s.X_train, s.y_train, s.X_val, s.y_val)
    t_iv = time.perf_counter() - t
    fi_drop = fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val, metric_form="drop_n")
    rng = np.random.default_rng(10_000 + seed)

    def retrain(keep: np.ndarray) -> float:
        return _acc(LogisticModel(l2=l2).fit(s.X_train[keep], s.y_train[keep]), s.X_test, s.y_test)

    out: dict[str, Any] = {"full": _acc(m, s.X_test, s.y_test), "t_fi": t_fi, "t_iv": t_iv, "n": len(s.y_train)}
    for b in budgets:
        out[f"fi_{b}"] = retrain(trim_dataset(fi, b, "top"))
        out[f"iv_{b}"] = retrain(trim_dataset(iv, b, "bottom"))
        out[f"fi_bottom_{b}"] = retrain(trim_dataset(fi, b, "bottom"))
        out[f"fi_drop_n_{b}"] = retrain(trim_dataset(fi_drop, b, "top"))
        out[f"random_{b}"] = float(
            np.mean([retrain(trim_dataset(rng.random(len(fi)), b, "top")) for _ in range(random_repeats)])
        )
        out[f"skew_fi_{b}"] = float(np.mean(s.y_train[removed_indices(fi, b, "top")]))
        out[f"skew_iv_{b}"] = float(np.mean(s.y_train[removed_indices(iv, b, "bottom")]))
    return out


def label_noise_seed(seed: int, budgets: tuple[int, ...], l2: float, noise: float) -> dict[str, Any]:
    """One seed of label-noise trimming: the fraction of each method's b removals that are flipped points."""
    s = two_gaussians(seed, label_noise=noise)
    m = LogisticModel(l2=l2).fit(s.X_train, s.y_train)
    fi = fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val)
    fi_drop = fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val, metric_form="drop_n")
    fi_main = fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val, metric_form="main_text")
    iv = iv_scores(m, s.X_train, s.y_train, s.X_val, s.y_val)
    rnd = np.random.default_rng(20_000 + seed).random(len(fi))
    flipped = set(s.flipped.tolist())

    def frac(scores: np.ndarray, b: int, mode: str) -> float:
        return float(np.mean([i in flipped for i in removed_indices(scores, b, mode)]))

    out: dict[str, Any] = {}
    for b in budgets:
        out[f"fi_{b}"] = frac(fi, b, "top")
        out[f"fi_bottom_{b}"] = frac(fi, b, "bottom")
        out[f"fi_drop_n_{b}"] = frac(fi_drop, b, "top")
        out[f"fi_main_text_{b}"] = frac(fi_main, b, "top")
        out[f"random_{b}"] = frac(rnd, b, "top")
        out[f"iv_{b}"] = frac(iv, b, "bottom")
        keep = trim_dataset(fi, b, "top")
        out[f"acc_fi_{b}"] = _acc(LogisticModel(l2=l2).fit(s.X_train[keep], s.y_train[keep]), s.X_test, s.y_test)
    out["acc_full"] = _acc(m, s.X_test, s.y_test)
    return out


def moons_trimming(seeds: list[int], budgets: tuple[int, ...], steps: int, weight_decay: float) -> list[dict]:
    """2-D nonlinear trimming (paper Table 2): MLP 2-16-16-1, full-parameter FI; all retrains trained as one batch."""
    splits = [two_moons(seed) for seed in seeds]
    tmpl = MLPModel(steps=steps, weight_decay=weight_decay)
    X = np.stack([s.X_train for s in splits])
    Y = np.stack([s.y_train for s in splits])
    thetas = fit_mlp_batch(tmpl, X, Y, None, seeds)
    outs, masks, owners = [], [], []
    for j, (seed, s) in enumerate(zip(seeds, splits, strict=True)):
        m = MLPModel(steps=steps, weight_decay=weight_decay, seed=seed)
        m.d, m.theta = 2, thetas[j]
        t = time.perf_counter()
        fi = fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val)
        t_fi = time.perf_counter() - t
        iv = iv_scores(m, s.X_train, s.y_train, s.X_val, s.y_val)
        outs.append({"full": _acc(m, s.X_test, s.y_test), "t_fi": t_fi, "n": len(s.y_train)})
        for b in budgets:
            for name, sc, mode in (("fi", fi, "top"), ("iv", iv, "bottom")):
                w = np.zeros(len(s.y_train))
                w[trim_dataset(sc, b, mode)] = 1.0
                masks.append(w)
                owners.append((j, f"{name}_{b}"))
    idx = [j for j, _ in owners]
    retrained = fit_mlp_batch(tmpl, X[idx], Y[idx], np.stack(masks), [seeds[j] for j in idx])
    for (j, key), th in zip(owners, retrained, strict=True):
        m = MLPModel(steps=steps, weight_decay=weight_decay)
        m.d, m.theta = 2, th
        outs[j][key] = _acc(m, splits[j].X_test, splits[j].y_test)
    return outs


def digits_al_seed(
    seed: int, strategies: tuple[str, ...], rounds: int, acquire: int, n_init: int, n_pool: int, l2: float, sub: int
) -> dict[str, Any]:
    """One seed of active learning on digits with multinomial LR: curve, AUC and scoring time per strategy."""
    sp = digits_split(seed, n_init=n_init, n_pool=n_pool)

    out: dict[str, Any] = {}
    for name in strategies:
        last: dict[str, np.ndarray] = {}

        def fit(X, y, last=last):  # warm start from the previous round: a strictly convex objective, same optimum
            m = LogisticModel(l2=l2, n_classes=10, tol=1e-8).fit(X, y, theta0=last.get("theta"))
            last["theta"] = m.theta
            return m

        strat = make_strategy(name, X_val=sp.X_val, y_val=sp.y_val, sub=sub)
        res = active_learning_loop(
            strat,
            sp.X_init,
            sp.y_init,
            sp.X_pool,
            sp.y_pool,
            rounds,
            acquire,
            fit,
            lambda m: _acc(m, sp.X_test, sp.y_test),
            rng=np.random.default_rng(1000 * seed + 7),
        )
        flat = [i for q in res.queried for i in q]
        out[name] = {
            "curve": res.curve,
            "auc": res.auc,
            "final": res.curve[-1],
            "sizes": res.sizes,
            "duplicates": len(flat) - len(set(flat)),
            "score_s": res.score_seconds,
            "scored": res.scored_points,
        }
    return out


def kfsvd_check(seed: int, steps: int, weight_decay: float, rank: int) -> dict[str, Any]:
    """KFSVD (Sec. 5: K-FAC H and rank-k M) against exact FI on one moons seed: rank agreement and time."""
    from scipy.stats import spearmanr

    s = two_moons(seed)
    m = MLPModel(steps=steps, weight_decay=weight_decay, seed=seed).fit(s.X_train, s.y_train)
    t = time.perf_counter()
    exact = fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val)
    t_exact = time.perf_counter() - t
    t = time.perf_counter()
    approx = fi_util(m, s.X_train, s.y_train, s.X_val, s.y_val, hessian="kfac", svd_rank=rank)
    t_approx = time.perf_counter() - t
    top = set(np.argsort(-exact)[:20].tolist())
    top_a = set(np.argsort(-approx)[:20].tolist())
    return {
        "rank": rank,
        "spearman": float(spearmanr(exact, approx).statistic),
        "top20_overlap": len(top & top_a) / 20,
        "exact_s": t_exact,
        "kfsvd_s": t_approx,
    }


def _mean(values: list[float]) -> float:
    return float(sum(values) / len(values)) if values else float("nan")


def measure(config: Config, run: Run) -> dict[str, Any]:
    """Run every experiment of the preset; returns summary metrics (accuracies in %, AUCs in [0, 1])."""
    m: dict[str, Any] = {}
    # ---- 2-D linear trimming (Table 1)
    lin = [
        linear_trimming_seed(s + run.seed, config.budgets, config.l2, config.random_repeats)
        for s in run.progress(range(config.linear_seeds), desc="2-D linear trimming", unit="seed")
    ]
    m["linear"] = {"untrimmed": 100 * _mean([r["full"] for r in lin]), "seeds": config.linear_seeds}
    for b in config.budgets:
        row = {k: 100 * _mean([r[f"{k}_{b}"] for r in lin]) for k in ("fi", "iv", "random", "fi_bottom", "fi_drop_n")}
        row["fi_wins"] = int(sum(r[f"fi_{b}"] > r[f"iv_{b}"] for r in lin))
        row["fi_std"] = 100 * float(np.std([r[f"fi_{b}"] for r in lin]))
        row["iv_std"] = 100 * float(np.std([r[f"iv_{b}"] for r in lin]))
        row["skew_fi"] = _mean([r[f"skew_fi_{b}"] for r in lin])
        row["skew_iv"] = _mean([r[f"skew_iv_{b}"] for r in lin])
        m["linear"][f"b{b}"] = row
    run.log_scalars(m["linear"], prefix="linear/")
    t_fi, t_iv = sum(r["t_fi"] for r in lin), sum(r["t_iv"] for r in lin)
    n_pts = sum(r["n"] for r in lin)
    m["speed"] = {"fi_util_points_per_s": n_pts / t_fi, "iv_points_per_s": n_pts / t_iv}
    # ---- label-noise trimming
    noise = [
        label_noise_seed(s + run.seed, config.noise_budgets, config.l2, config.label_noise)
        for s in run.progress(range(config.noise_seeds), desc="label-noise trimming", unit="seed")
    ]
    m["noise"] = {"seeds": config.noise_seeds, "untrimmed_acc": 100 * _mean([r["acc_full"] for r in noise])}
    for b in config.noise_budgets:
        keys = ("fi", "fi_bottom", "fi_drop_n", "fi_main_text", "random", "iv")
        row = {k: _mean([r[f"{k}_{b}"] for r in noise]) for k in keys}
        row["acc_fi"] = 100 * _mean([r[f"acc_fi_{b}"] for r in noise])
        m["noise"][f"b{b}"] = row
    run.log_scalars(m["noise"], prefix="noise/")
    # ---- 2-D nonlinear trimming (Table 2) and the KFSVD check
    if config.moons_seeds:
        seeds = [s + run.seed for s in range(config.moons_seeds)]
        with run.progress(total=1, desc="moons trimming (batched MLPs)", unit="run") as bar:
            mo = moons_trimming(seeds, config.moons_budgets, config.moons_steps, config.moons_weight_decay)
            bar.update()
        m["moons"] = {"untrimmed": 100 * _mean([r["full"] for r in mo]), "seeds": len(seeds)}
        for b in config.moons_budgets:
            m["moons"][f"b{b}"] = {
                "fi": 100 * _mean([r[f"fi_{b}"] for r in mo]),
                "iv": 100 * _mean([r[f"iv_{b}"] for r in mo]),
                "fi_wins": int(sum(r[f"fi_{b}"] > r[f"iv_{b}"] for r in mo)),
            }
        m["speed"]["fi_util_mlp_points_per_s"] = sum(r["n"] for r in mo) / sum(r["t_fi"] for r in mo)
        m["kfsvd"] = kfsvd_check(seeds[0], config.moons_steps, config.moons_weight_decay, config.kfsvd_rank)
        run.log_scalars({"moons": m["moons"], "kfsvd": m["kfsvd"]})
    # ---- active learning on digits
    al: dict[str, list[dict[str, Any]]] = {s: [] for s in config.al_strategies}
    for s in run.progress(range(config.al_seeds), desc="active learning (digits)", unit="seed"):
        res = digits_al_seed(
            s + run.seed,
            config.al_strategies,
            config.al_rounds,
            config.al_acquire,
            config.al_init,
            config.al_pool,
            config.al_l2,
            config.al_sub,
        )
        for name, r in res.items():
            al[name].append(r)
        run.log_scalars({name: {"auc": r["auc"], "final": r["final"]} for name, r in res.items()}, step=s, prefix="al/")
    m["al"] = {"seeds": config.al_seeds}
    for name, rs in al.items():
        m["al"][name] = {
            "auc": _mean([r["auc"] for r in rs]),
            "final": _mean([r["final"] for r in rs]),
            "curve": np.mean([r["curve"] for r in rs], axis=0).round(5).tolist(),
            "auc_per_seed": [round(r["auc"], 5) for r in rs],
            "duplicates": int(sum(r["duplicates"] for r in rs)),
            "grew_by_acquire": bool(all(np.all(np.diff(r["sizes"]) == config.al_acquire) for r in rs)),
            "score_s": float(sum(r["score_s"] for r in rs)),
            "pool_points_per_s": float(sum(r["scored"] for r in rs) / max(sum(r["score_s"] for r in rs), 1e-9)),
        }
        m["speed"][f"al_{name}_pool_points_per_s"] = m["al"][name]["pool_points_per_s"]
    # ---- image active learning with the paper's CNN (full preset)
    if config.image_runs:
        from iclr25.influence_selection.training import image_active_learning

        m["image_al"] = image_active_learning(config, run)
    return m
