"""Command line of the Seq2Exp package: `iclr25-seq2exp {reproduce,generate,train,eval,call-peaks,mask}`.

Standard-library imports only at module level, so that `--help` answers instantly.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from iclr25.seq2exp.config import MAX_BATCH, MAX_EPOCHS, MAX_GENES, MAX_LAYERS, MAX_LEN, MAX_WIDTH, PRESETS
from iclr25.shared.cli import (
    CliError,
    add_run_args,
    add_verb_args,
    check_verb_flags,
    make_parser,
    package_main,
    positive_float,
)
from iclr25.shared.files import check_writable, save_torch, write_text
from iclr25.shared.run import DEVICES, open_run_folder
from iclr25.shared.validate import int_in

PROG = "iclr25-seq2exp"
SLUG = "seq2exp"
SCALES = ("ci", "quick", "full")
TRAIN_MODELS = ("seq2exp-soft", "seq2exp-hard", "seq", "seq-signal", "macs-mask")


def build_parser() -> argparse.ArgumentParser:
    """The `iclr25-seq2exp` argument parser."""
    parser = make_parser(PROG, "Seq2Exp (ICLR 2025): learned Beta masks over bases for gene expression prediction.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("reproduce", help="run the ci/quick/full reproduction and print the claims table")
    add_run_args(rep, scales=SCALES, presets=PRESETS, scale_out=True)
    gen = sub.add_parser("generate", help="write a planted-element dataset (spec §6a) as .npz")
    gen.add_argument("--n", type=int_in(20, MAX_GENES), default=2000, help="windows (default: 2000)")
    gen.add_argument("--length", type=int_in(256, MAX_LEN), default=2048, help="bases per window (default: 2048)")
    gen.add_argument("--center-len", type=int_in(1, MAX_LEN), default=128, help="promoter window (default: 128)")
    gen.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    gen.add_argument("--out", type=Path, required=True, help="the .npz file to write")
    gen.add_argument(
        "--overwrite", action="store_true", help="replace a file an earlier iclr25 run wrote (never another file)"
    )
    tr = sub.add_parser("train", help="train one model on a dataset .npz (default: planted data) and test it")
    tr.add_argument("--model", choices=TRAIN_MODELS, default="seq2exp-soft", help="model (default: %(default)s)")
    tr.add_argument("--data", type=Path, help="dataset .npz from `generate` (default: planted data, --n genes)")
    tr.add_argument(
        "--n", type=int_in(20, MAX_GENES), default=600, help="planted windows when no --data (default: 600)"
    )
    tr.add_argument("--peaks", type=Path, help="macs-mask: a BED/narrowPeak file (chrom = window index) instead")
    tr.add_argument("--backbone", choices=("cnn", "gru", "mamba"), default="cnn", help="backbone (default: cnn)")
    tr.add_argument("--d", type=int_in(2, MAX_WIDTH), default=32, help="embedding width (default: 32)")
    tr.add_argument("--layers", type=int_in(1, MAX_LAYERS), default=4, help="backbone layers (default: 4)")
    tr.add_argument("--epochs", type=int_in(1, MAX_EPOCHS), default=15, help="epochs (default: 15)")
    tr.add_argument("--batch-size", type=int_in(1, MAX_BATCH), default=32, help="batch size (default: 32)")
    tr.add_argument("--lr", type=positive_float, default=1e-3, help="Adam learning rate (default: 1e-3)")
    tr.add_argument("--prior-scale", type=float, default=1.0, help="c of the signal Beta (default: 1, spec §6a)")
    tr.add_argument("--center-len", type=int_in(1, MAX_LEN), default=128, help="promoter window (default: 128)")
    add_verb_args(tr)
    ev = sub.add_parser("eval", help="test a checkpoint written by `train` on a dataset .npz")
    ev.add_argument("--model", type=Path, required=True, help="model.pt written by `train`")
    ev.add_argument("--data", type=Path, help="dataset .npz (default: the planted data the model was trained on)")
    ev.add_argument("--device", choices=DEVICES, default="auto")
    cp = sub.add_parser("call-peaks", help="MACS-style peaks of a coverage track, written as BED")
    cp.add_argument("--bigwig", type=Path, required=True, help="track: .bigWig (needs pyBigWig), .bedGraph or .npy")
    cp.add_argument("--out", type=Path, required=True, help="BED file to write")
    cp.add_argument("--chrom", help="chromosome to call (default: every one in the file; .npy: 'track')")
    cp.add_argument("--d", type=int_in(1, MAX_WIDTH), default=200, help="pileup window (default: 200)")
    cp.add_argument("--qvalue", type=positive_float, default=0.05, help="q-value cut-off (default: 0.05)")
    cp.add_argument(
        "--overwrite", action="store_true", help="replace a file an earlier iclr25 run wrote (never another file)"
    )
    mk = sub.add_parser("mask", help="export a trained Seq2Exp model's masks (E[m] >= threshold) as BED")
    mk.add_argument("--model", type=Path, required=True, help="model.pt written by `train --model seq2exp-*`")
    mk.add_argument("--data", type=Path, help="dataset .npz (default: the model's planted data)")
    mk.add_argument("--export", choices=("bed",), default="bed", help="output format (default: bed)")
    mk.add_argument("--out", type=Path, required=True, help="BED file (chrom = window index)")
    mk.add_argument(
        "--overwrite", action="store_true", help="replace a file an earlier iclr25 run wrote (never another file)"
    )
    mk.add_argument("--device", choices=DEVICES, default="auto")
    return parser


def _check_out_file(path: Path, overwrite: bool) -> None:
    """Refuse, before any work, an output file that exists (with --overwrite: one iclr25 did not write)."""
    check_writable(path, overwrite)
    if not path.parent.is_dir():
        raise CliError(f"{path.parent} is not a folder; choose another --out")


def _generate(args: argparse.Namespace) -> int:
    _check_out_file(
        args.out if args.out.suffix == ".npz" else args.out.with_name(args.out.name + ".npz"), args.overwrite
    )
    if args.center_len >= args.length // 2:
        raise CliError(f"--center-len must be < length/2 = {args.length // 2}")
    from iclr25.seq2exp.data import generate_planted_dataset, save_dataset

    data = generate_planted_dataset(args.n, args.length, 3, args.seed, center_len=args.center_len)
    path = save_dataset(args.out, data, overwrite=args.overwrite)
    print(
        f"wrote {path}: {args.n} windows of {args.length} bp, motif-level truth fraction {data['true_mask'].mean():.4f}"
    )
    return 0


def _data(args: argparse.Namespace, fallback: dict | None = None) -> dict:
    from iclr25.seq2exp.data import generate_planted_dataset, load_dataset

    if args.data is not None:
        return load_dataset(args.data)
    spec = fallback or {"n": args.n, "length": 2048, "seed": args.seed, "center_len": args.center_len}
    return generate_planted_dataset(spec["n"], spec["length"], 3, spec["seed"], center_len=spec["center_len"])


def _train(args: argparse.Namespace) -> int:
    out = check_verb_flags(args, SLUG, "train", args.model)
    if not math.isfinite(args.prior_scale) or args.prior_scale < 0:
        raise CliError(f"--prior-scale must be a finite number >= 0, got {args.prior_scale}")
    if args.peaks is not None and args.model != "macs-mask":
        raise CliError("--peaks is for --model macs-mask")
    from iclr25.seq2exp.config import Config

    cfg = Config(
        backbone=args.backbone, d=args.d, n_layers=args.layers, epochs=args.epochs, batch_size=args.batch_size,
        lr=args.lr, prior_scale=args.prior_scale, center_len=args.center_len, length=2048,
    )  # fmt: skip
    data = _data(args)
    if args.peaks is not None:
        from iclr25.seq2exp.peaks import peaks_to_mask, read_bed
        from iclr25.shared.safeload import reading_file

        with reading_file(args.peaks, "BED / narrowPeak file"):
            rows = read_bed(str(args.peaks))
    import dataclasses

    import numpy as np

    from iclr25.seq2exp.experiments import macs_masks
    from iclr25.seq2exp.training import model_config, train_and_test
    from iclr25.shared.device import pick_device

    n, length = data["seq"].shape
    center = int(data["center"][1] - data["center"][0]) if "center" in data else cfg.center_len
    cfg = dataclasses.replace(cfg, length=length, center_len=center)
    fixed = None
    if args.model == "macs-mask":
        if args.peaks is not None:
            fixed = np.stack([peaks_to_mask([(a, b) for c, a, b in rows if c == str(i)], length) for i in range(n)])
        else:
            fixed = macs_masks(data["signals"][..., 1], cfg)
    data.setdefault("true_mask", np.zeros_like(data["blacklist"]))
    data.setdefault("bump_mask", data["true_mask"])
    device = pick_device(args.device)
    with open_run_folder(out, args.overwrite, paper=SLUG, command="train") as folder:
        from iclr25.shared.logging import MetricsLogger

        logger = MetricsLogger(folder, wandb=args.wandb, name=f"{SLUG}-train-{args.model}", config=cfg.__dict__)
        try:
            result = train_and_test(args.model, cfg, data, fixed, args.seed, device, log=logger.log)
        finally:
            logger.close()
        model = result.pop("_model")
        state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        mcfg = dataclasses.asdict(model_config(cfg, args.model))
        data_spec = {"n": args.n, "length": length, "seed": args.seed, "center_len": cfg.center_len}
        save_torch(
            folder / "model.pt",
            {"model": args.model, "config": {k: list(v) if isinstance(v, tuple) else v for k, v in mcfg.items()},
             "state_dict": state, "data": data_spec if args.data is None else None},
        )  # fmt: skip
        write_text(folder / "metrics.json", json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: round(v, 5) if isinstance(v, float) else v for k, v in result.items()}, indent=1))
    print(f"model and metrics written to {out}")
    return 0


def _load_model(path: Path, device: str):
    from iclr25.seq2exp.config import Seq2ExpConfig
    from iclr25.seq2exp.training import build_model
    from iclr25.shared.safeload import UnsafeFileError, load_checkpoint

    ckpt = load_checkpoint(
        path, required_keys=("model", "config", "state_dict"), what="checkpoint of `iclr25-seq2exp train`"
    )
    try:
        raw = dict(ckpt["config"])
        cfg = Seq2ExpConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()})
        model = build_model(str(ckpt["model"]), cfg)
        model.load_state_dict(ckpt["state_dict"])
    except (TypeError, ValueError, RuntimeError, KeyError) as e:
        raise UnsafeFileError(
            f"{path} is not a checkpoint of `iclr25-seq2exp train` ({str(e).splitlines()[0][:120]})"
        ) from None
    return ckpt, model.to("cpu" if device == "auto" else device)


def _eval_data(args: argparse.Namespace, ckpt: dict) -> dict:
    if args.data is None and not ckpt.get("data"):
        raise CliError(f"{args.model} was trained on a --data file: give it again with --data")
    return _data(args, ckpt.get("data"))


def _eval(args: argparse.Namespace) -> int:
    ckpt, model = _load_model(args.model, args.device)
    data = _eval_data(args, ckpt)
    import numpy as np

    from iclr25.seq2exp.experiments import macs_masks
    from iclr25.seq2exp.metrics import regression_metrics
    from iclr25.seq2exp.training import Arrays, predict

    fixed = None
    if ckpt["model"] == "macs-mask":
        from iclr25.seq2exp.config import Config

        fixed = macs_masks(data["signals"][..., 1], Config())
    test = np.flatnonzero(data["split"] == 2)
    out = predict(model, Arrays.from_numpy(data, test, fixed), device="cpu")
    print(json.dumps(regression_metrics(out["y_hat"], data["y"][test]), indent=1))
    return 0


def _call_peaks(args: argparse.Namespace) -> int:
    _check_out_file(args.out, args.overwrite)
    import numpy as np

    from iclr25.seq2exp.data import read_track
    from iclr25.seq2exp.peaks import call_peaks_macs_style
    from iclr25.shared.safeload import load_npy, reading_file

    path = args.bigwig
    name = path.name.lower()
    tracks: dict[str, np.ndarray] = {}
    if name.endswith(".npy"):
        arr = load_npy(path, what="1-D coverage track .npy")
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.number):
            raise CliError(f"{path} must hold a 1-D numeric track, got shape {arr.shape} dtype {arr.dtype}")
        tracks[args.chrom or "track"] = arr
    elif name.endswith((".bw", ".bigwig")):
        from iclr25.seq2exp.data import open_bigwig, read_bigwig

        with reading_file(path, "bigWig file"), open_bigwig(path) as bw:
            for chrom, size in bw.chroms().items():
                if args.chrom in (None, chrom):
                    tracks[chrom] = read_bigwig(bw, path, chrom, 0, size)
    else:
        with reading_file(path, "bedGraph file (chrom start end value)") as p:
            ends: dict[str, int] = {}
            with open(p, encoding="utf-8") as f:
                for line in f:
                    fields = line.split()
                    if len(fields) >= 4 and not line.startswith(("#", "track", "browser")):
                        ends[fields[0]] = max(ends.get(fields[0], 0), int(fields[2]))
            if not ends:
                raise ValueError("no intervals")
            for chrom, end in ends.items():
                if args.chrom in (None, chrom):
                    tracks[chrom] = read_track(p, chrom, 0, end)
    if not tracks:
        raise CliError(f"{path} holds no chromosome {args.chrom!r}")
    lines = []
    for chrom, track in tracks.items():
        _, peaks = call_peaks_macs_style(track, d=args.d, qvalue=min(args.qvalue, 1.0))
        lines += [
            f"{chrom}\t{a}\t{b}\tpeak{len(lines) + i}\t{min(int(score * 10), 1000)}\n"
            for i, (a, b, score) in enumerate(peaks)
        ]
    write_text(args.out, "".join(lines), overwrite=args.overwrite)
    print(f"{len(lines)} peaks written to {args.out}")
    return 0


def _mask(args: argparse.Namespace) -> int:
    _check_out_file(args.out, args.overwrite)
    ckpt, model = _load_model(args.model, args.device)
    if not str(ckpt["model"]).startswith("seq2exp"):
        raise CliError(f"{args.model} holds a {ckpt['model']} model, which has no learned mask")
    data = _eval_data(args, ckpt)
    import numpy as np

    from iclr25.seq2exp.peaks import runs
    from iclr25.seq2exp.training import Arrays, predict

    out = predict(model, Arrays.from_numpy(data, np.arange(len(data["y"]))), device="cpu", keep_mask=True)
    lines = [f"{i}\t{a}\t{b}\n" for i, row in enumerate(out["mask"] >= model.config.threshold) for a, b in runs(row)]
    write_text(args.out, "".join(lines), overwrite=args.overwrite)
    print(f"{len(lines)} masked-in intervals over {len(out['mask'])} windows written to {args.out}")
    return 0


main = package_main(
    PROG,
    build_parser,
    {"generate": _generate, "train": _train, "eval": _eval, "call-peaks": _call_peaks, "mask": _mask},
)


if __name__ == "__main__":
    sys.exit(main())
