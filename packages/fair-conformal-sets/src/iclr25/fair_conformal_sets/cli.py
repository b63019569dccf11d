"""`iclr25-fair-conformal-sets`: reproduce the paper's claims, build sets for your model outputs, re-analyse the
released human-study data.

    iclr25-fair-conformal-sets reproduce --scale quick
    iclr25-fair-conformal-sets sets --npz outputs.npz --score lac --mode ess --alpha 0.1 --out runs/sets
    iclr25-fair-conformal-sets analyze-study --dir results --task bios --out runs/bios

Standard library only at module level, so `--help` answers at once.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from iclr25.fair_conformal_sets.config import PRESETS, SetsConfig, StudyConfig
from iclr25.shared.cli import (
    CliError,
    add_config_args,
    add_run_args,
    config_from_args,
    make_parser,
    package_main,
)

SLUG = "fair-conformal-sets"
PROG = f"iclr25-{SLUG}"


def _parser() -> argparse.ArgumentParser:
    parser = make_parser(PROG, __doc__ or "")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run a reproduction preset and check the claims")
    add_run_args(rep, scales=tuple(PRESETS), presets=PRESETS)
    for name, config, text in (
        ("sets", SetsConfig(), "conformal sets + per-group report for model outputs in an .npz"),
        ("analyze-study", StudyConfig(), "per-group accuracy, delta and Delta of the released human study"),
    ):
        verb = sub.add_parser(name, help=text)
        add_config_args(verb, config)
        verb.add_argument("--out", type=Path, help="output folder (default: runs/<paper>/<command>-<time>)")
        verb.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
        verb.add_argument("--overwrite", action="store_true", help="replace a folder an earlier run made")
    return parser


def _out(args: argparse.Namespace, command: str) -> Path:
    from iclr25.shared.run import default_run_dir

    return args.out or default_run_dir(SLUG, command, "user")


def _sets(args: argparse.Namespace) -> int:
    cfg = config_from_args(args, SetsConfig())
    if not cfg.npz:
        raise CliError("--npz is required (an .npz with logits or probs, labels, groups)")
    import numpy as np

    from iclr25.fair_conformal_sets import calibrate, data, metrics
    from iclr25.fair_conformal_sets.decision import SimulatedDecisionMaker
    from iclr25.fair_conformal_sets.predictor import ConformalSets
    from iclr25.shared.files import save_arrays
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.run import open_run_folder

    outputs = data.load_npz(cfg.npz)
    index = np.arange(len(outputs))
    if cfg.cal_npz:
        cal, test = data.load_npz(cfg.cal_npz), outputs
        if cal.K != test.K:
            raise CliError(f"{cfg.cal_npz} has K = {cal.K} classes, {cfg.npz} has K = {test.K}")
    else:
        order = np.random.default_rng(args.seed).permutation(len(outputs))
        n_cal = round(cfg.cal_fraction * len(outputs))
        if n_cal < 2 or n_cal >= len(outputs):
            raise CliError(f"cal_fraction {cfg.cal_fraction} leaves no calibration or no test items of {len(outputs)}")
        index = np.sort(order[n_cal:])
        cal, test = outputs.take(np.sort(order[:n_cal])), outputs.take(index)
    predictor = ConformalSets(
        cfg.score, cfg.mode, cfg.alpha, temperature=cfg.temperature, k_reg=cfg.k_reg, lam=cfg.lam,
        randomized=cfg.randomized, smoothing=cfg.smoothing, fill_empty=False, ess_variant=cfg.ess_variant,
        seed=args.seed,
    )  # fmt: skip
    predictor.fit(cal.probs(), cal.labels, cal.groups)
    S = predictor.scores(test.probs())
    raw = predictor.predict_set(test.probs(), test.groups)
    filled = calibrate.fill_empty_with_top1(raw, S)
    shown = filled if cfg.fill_empty else raw
    dm = SimulatedDecisionMaker(K=test.K, skill=cfg.skill, override=cfg.override, adopt_slope=cfg.adopt_slope)
    accuracy = {
        "control": metrics.group_means(dm.expected_accuracy(None, test.labels, test.groups), test.groups),
        cfg.mode: metrics.group_means(dm.expected_accuracy(filled, test.labels, test.groups), test.groups),
    }
    report = {
        "config": {**cfg.__dict__, "seed": args.seed},
        "n_cal": len(cal),
        "n_test": len(test),
        "before_filling": metrics.group_report(raw, test.labels, test.groups),
        "after_filling": metrics.group_report(filled, test.labels, test.groups),
        "simulated_decisions": metrics.disparate_impact(accuracy),
    }
    with open_run_folder(_out(args, "sets"), args.overwrite, paper=SLUG, command="sets") as folder:
        arrays = {"sets": shown, "index": index, "labels": test.labels, "groups": test.groups}
        save_arrays(folder / "sets.npz", arrays, compressed=True)
        atomic_write_json(folder / "report.json", report)
    before = report["before_filling"]
    print(f"{cfg.score} / {cfg.mode}, alpha = {cfg.alpha}: {len(cal)} calibration, {len(test)} test items")
    print("group  n  coverage  size  singleton  empty")
    for g, r in before["groups"].items():
        print(f"{g}  {r['n']}  {r['coverage']:.3f}  {r['size']:.3f}  {r['singleton']:.3f}  {r['empty']:.3f}")
    print(f"gaps: coverage {before['gaps']['coverage']:.3f}, size {before['gaps']['size']:.3f}")
    print(f"simulated Delta = {report['simulated_decisions']['Delta'][cfg.mode]:.3f}")
    print(f"results written to {folder}")
    return 0


def _analyze_study(args: argparse.Namespace) -> int:
    cfg = config_from_args(args, StudyConfig())
    if not cfg.dir:
        raise CliError("--dir is required (the study's results folder)")
    from iclr25.fair_conformal_sets import fcpd
    from iclr25.shared.results import atomic_write_json
    from iclr25.shared.run import open_run_folder

    result = fcpd.analyze(fcpd.load(cfg.dir, cfg.task), n_boot=cfg.n_boot, seed=args.seed)
    with open_run_folder(_out(args, "analyze-study"), args.overwrite, paper=SLUG, command="analyze-study") as folder:
        atomic_write_json(folder / "analysis.json", result)
    names = result["group_names"]
    print(f"{cfg.task}: {result['participants']} participants")
    print("treatment  accuracy  " + "  ".join(f"acc[{names.get(g) or g}]" for g in sorted(names)) + "  Delta [95% CI]")
    for t, entry in result["treatments"].items():
        accs = "  ".join(f"{entry['groups'][g]['accuracy']:.3f}" for g in sorted(entry["groups"]))
        imp = result["impact"].get(t)
        ci = f"{imp['Delta']:.3f} [{imp['Delta_low']:.3f}, {imp['Delta_high']:.3f}]" if imp else "-"
        print(f"{t}  {entry['accuracy']:.4f}  {accs}  {ci}")
    for t, odds in result["odds_ratios"].items():
        if isinstance(odds, dict):
            print(
                f"{t}: maxROR = {odds['maxROR']:.3f} [{odds['maxROR_low']:.3f}, {odds['maxROR_high']:.3f}] (GEE, by item)"
            )
    print(f"results written to {folder}")
    return 0


main = package_main(PROG, _parser, {"sets": _sets, "analyze-study": _analyze_study})


if __name__ == "__main__":
    raise SystemExit(main())
