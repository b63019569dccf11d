"""The experiments of the reproduction (spec §6): train each run's homogeneous ensemble, the wider single model,
the identical-members control and the heterogeneous counter-example, and analyse the members' probabilities.

`measure` returns plain metrics (what results.json stores) and the member probabilities (for the figures); the
claims judged from the metrics are in `claims`, the plan that runs them in `reproduce`.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from iclr25.ensemble_homogeneity.config import Config, parse_run
from iclr25.shared.run import Run, is_follower

__all__ = ["LOSS_NAMES", "analyse", "check_scale_out", "curve_sizes", "get_dataset", "measure", "run_name"]

LOSS_NAMES = ("brier_true", "brier_multiclass", "nll", "error")


def run_name(spec: str) -> str:
    """ "digits:mlp:64:32" -> "digits_mlp_k64_M32" (a metrics key and claim suffix)."""
    dataset, model, width, members = parse_run(spec)
    return f"{dataset}_{model}_k{width}_M{members}"


def get_dataset(name: str, config: Config, seed: int = 0) -> tuple[Any, str]:
    """The dataset of a run and a note on where it came from (without data_dir, real image sets fall back to the
    generated image task, and the note says so)."""
    from iclr25.ensemble_homogeneity import data

    if name in data.SKLEARN_TASKS:
        return data.load_sklearn(name), f"{name}: scikit-learn, split of spec §6a"
    if name != "image" and config.data_dir:
        return data.load_image_dataset(name, config.data_dir), f"{name}: user files in data_dir"
    ds = data.make_image_task(n_train=config.image_train, n_test=max(1000, config.image_train // 5), seed=seed)
    why = "" if name == "image" else f" ({name} asked for, but no data_dir was given: NOT {name})"
    return data.standardise_images(ds), f"generated Gaussian-mixture image task{why}"


def check_scale_out(config: Config, scale_out: Any) -> None:
    """Refuse, before any work, member workers combined with Fabric ranks or checkpoints (two ways to scale out)."""
    scaled = scale_out is not None and (scale_out.wants_fabric or scale_out.checkpoint_every or scale_out.resume)
    if config.workers > 1 and scaled:
        raise ValueError(
            "workers > 1 trains an ensemble's members in separate processes; --devices, --num-nodes, "
            "--precision, --checkpoint-every and --resume scale out with Fabric ranks instead: use workers=1"
        )
    if config.workers > 1 and config.checkpoint_every:
        raise ValueError("workers > 1 trains members in separate processes without checkpoints; set checkpoint_every=0")


def _training(run: Run, config: Config, name: str) -> dict[str, Any]:
    """`train_homogeneous`'s scale-out arguments for one training (checkpoints in `checkpoints/<name>`), its logger
    and the member workers."""
    options = run.training_options(name, config.checkpoint_every)
    return {**options, "logger": run.logger, "prefix": f"{name}/", "workers": config.workers, "threads": config.threads}


def curve_sizes(config: Config, members: int) -> tuple[list[int], list[int]]:
    """The ensemble sizes M of a run's curves (those <= its members) and those of its two-model estimate."""
    sizes = [s for s in config.sizes if s <= members]
    return sizes, [s for s in config.estimate_sizes if s <= members] or sizes[:1]


def analyse(probs, y, config: Config, members: int, rng) -> dict[str, Any]:
    """Everything the claims and the README read from one pool of member probabilities (M, N, C)."""
    import numpy as np

    from iclr25.ensemble_homogeneity import analysis as A
    from iclr25.ensemble_homogeneity.metrics import error

    sizes, est_sizes = curve_sizes(config, members)
    de = A.distributional_equivalence(probs, y, alpha=config.de_alpha)
    out: dict[str, Any] = {
        "de": {k: de[k] for k in ("median_ks_p", "frac_ks_p_below_alpha", "median_w1", "mean_pointwise")}
        | {"mean_disagreement": de["mean_disagreement"]},
        "losses": {},
        "sizes": sizes,
    }
    for loss in LOSS_NAMES:
        j = A.jensen_gap(probs, y, loss)
        out["losses"][loss] = {k: j[k] for k in ("mean_member", "best_member", "worst_member", "ensemble", "gap")}
        out["losses"][loss]["member_sd"] = float(np.std(j["members"]))
        held = A.heldout_best_member(probs, y, loss, n_splits=50, seed=0)
        out["losses"][loss]["heldout_best_gain"] = held["mean_gain"]  # member (picked on other half) - ensemble
        out["losses"][loss]["heldout_best_win_rate"] = held["win_rate"]
    pairs = A.random_pairs(members, min(config.n_pairs, members * (members - 1) // 2), rng)
    for loss in ("brier_true", "brier_multiclass"):
        curve = A.subset_mean_curve(probs, y, sizes, loss)
        # the same curve measured directly: the loss of random M-member ensembles (own stream: the pairs stay put)
        direct = A.ensemble_curve(probs, y, sizes, config.curve_subsets, np.random.default_rng(1), loss)
        est = A.estimate_from_pairs(probs, y, est_sizes, pairs, loss)
        exact_at = A.subset_mean_curve(probs, y, est_sizes, loss)
        rel = (est["curve"] - exact_at) / exact_at
        bv = A.bias_variance(probs, y, loss)
        fit = A.fit_bias_variance_curve(sizes, curve)
        out[f"curve_{loss}"] = {
            "exact": curve,
            "direct": direct["mean"],
            "direct_se": direct["sd"] / np.sqrt(config.curve_subsets),
            "estimate_sizes": est_sizes,
            "estimate": est["curve"],
            "estimate_single_pair_sd": est["curve_sd"],
            "estimate_rel_error": rel,
            # the same pairs read under complete collapse (one-hot argmax), for the soft measured curve
            "estimate_collapse_rel_error": (
                A.estimate_from_pairs(probs, y, est_sizes, pairs, loss, collapse=True)["curve"] - exact_at
            )
            / exact_at,
            "B_inf": bv["B_inf"],
            "V": bv["V"],
            "fit": fit,
        }
    q = np.mean(np.argmax(probs, -1) == y, axis=0)  # q(x): fraction of members right at x (collapse reading)
    collapse = A.collapse_brier_closed_form(q, sizes)
    out["collapse"] = {"B_inf": collapse["B_inf"], "V": collapse["V"], "curve": collapse["curve"]}
    try:
        a, b = A.two_model_beta_fit(probs[pairs[0][0]], probs[pairs[0][1]], y)
        out["beta_fit"] = {
            "a": a,
            "b": b,
            "majority_accuracy": A.beta_majority_accuracy(a, b, sizes),
            "member_accuracy": float(1 - np.mean(error(probs, y))),
            "pool_vote_accuracy": A.vote_accuracy(probs, y),
        }
    except ValueError as e:
        out["beta_fit"] = {"error": str(e)}
    if config.mc_subsets:
        out["mc_curves"] = {
            loss: A.ensemble_curve(probs, y, sizes, config.mc_subsets, rng, loss)["mean"] for loss in ("nll", "error")
        }
    return out


def measure(config: Config, run: Run) -> tuple[dict[str, Any], dict[str, float], dict[str, tuple[Any, Any]]]:
    """Train every run's ensemble, the baselines and the control and analyse them: (metrics, throughput, and each
    run's member probabilities and test labels for the figures)."""
    import numpy as np

    from iclr25.ensemble_homogeneity import analysis as A
    from iclr25.ensemble_homogeneity.baselines import heterogeneous_ensemble, wider_single_model
    from iclr25.ensemble_homogeneity.data import EnsemblePredictions
    from iclr25.ensemble_homogeneity.metrics import brier_multiclass, brier_true, nll
    from iclr25.ensemble_homogeneity.training import TrainSettings, train_homogeneous
    from iclr25.shared.device import torch_threads

    device = run.device
    settings = TrainSettings(config.lr, config.batch_size, config.max_epochs, True, config.lr_schedule)
    rng = np.random.default_rng(run.seed)
    metrics: dict[str, Any] = {"runs": {}, "data": {}}
    pools: dict[str, tuple[Any, Any]] = {}
    samples, seconds = 0.0, 0.0
    cache: dict[str, Any] = {}

    def dataset(name: str):
        if name not in cache:
            cache[name], metrics["data"][name] = get_dataset(name, config, run.seed)
        return cache[name]

    check_scale_out(config, run.scale_out)
    threads = torch_threads(config.threads) if device == "cpu" else nullcontext()
    with threads:
        for spec in config.runs:
            name, (ds_name, model, width, members) = run_name(spec), parse_run(spec)
            ds = dataset(ds_name)
            probs, info = train_homogeneous(
                ds,
                model,
                width,
                members,
                run.seed,
                settings,
                device,
                progress=run.progress,
                **_training(run, config, name),
            )
            samples += info["member_samples_per_s"] * info["train_seconds"]
            seconds += info["train_seconds"]
            res = analyse(probs, ds.y_test, config, members, rng)
            res["train"] = {k: info[k] for k in ("epochs", "steps", "interpolated", "train_seconds")}
            res["train"]["min_train_acc"] = float(np.min(info["train_acc"]))
            res["params_per_member"] = info["n_params_per_member"]
            if config.wider_baseline and model == "mlp":
                options = _training(run, config, f"wider-{name}")
                options.pop("workers"), options.pop("threads")  # one model
                wp, winfo = wider_single_model(ds, width, members, run.seed, settings, device, **options)
                res["wider_model"] = {
                    "width": winfo["width"],
                    "epochs": winfo["epochs"],
                    "brier_true": float(brier_true(wp, ds.y_test)[0]),
                    "brier_multiclass": float(brier_multiclass(wp, ds.y_test)[0]),
                    "nll": float(nll(wp, ds.y_test)[0]),
                }
            metrics["runs"][name] = res
            pools[name] = (probs, ds.y_test)
            if config.save_preds and not is_follower():
                meta = {"run": spec, "seed": run.seed, "epochs": info["epochs"]}
                EnsemblePredictions(probs, ds.y_test, meta).to_npz(run.dir / f"preds_{name}.npz")

        gate_runs = [s for s in config.runs if parse_run(s)[2] >= config.gate_min_width]
        if config.control_members and gate_runs:
            ds_name, model, width, _ = parse_run(gate_runs[0])
            ds = dataset(ds_name)
            cp, cinfo = train_homogeneous(
                ds,
                model,
                width,
                config.control_members,
                run.seed,
                settings,
                device,
                True,
                **_training(run, config, "control-identical"),
            )
            de = A.distributional_equivalence(cp, ds.y_test, alpha=config.de_alpha)
            metrics["control_identical"] = {
                "run": f"{ds_name}:{model}:{width}:{config.control_members} (one shared seed)",
                "median_ks_p": de["median_ks_p"],
                "mean_disagreement": de["mean_disagreement"],
                "max_abs_prob_diff": float(np.max(np.abs(cp - cp[:1]))),
                "epochs": cinfo["epochs"],
            }

        if config.hetero_dataset:
            ds = dataset(config.hetero_dataset)
            parts = [
                (config.hetero_wide, 1, None),
                (config.hetero_narrow, config.hetero_narrow_members, config.hetero_narrow_epochs),
            ]
            hp, hinfo = heterogeneous_ensemble(
                ds, parts, run.seed, settings, device, lambda i: _training(run, config, f"heterogeneous-part{i}")
            )
            j = A.jensen_gap(hp, ds.y_test, "brier_true")
            de = A.distributional_equivalence(hp, ds.y_test, alpha=config.de_alpha)
            metrics["heterogeneous"] = {
                "parts": [
                    f"k={w} x{m}, {e} epochs" for w, m, e in ((p["width"], p["members"], p["epochs"]) for p in hinfo)
                ],
                "members": j["members"],
                "ensemble": j["ensemble"],
                "best_member": j["best_member"],
                "mean_member": j["mean_member"],
                "median_ks_p": de["median_ks_p"],
            }

    throughput = {"train_member_samples_per_s": samples / seconds if seconds > 0 else 0.0}
    return metrics, throughput, pools
