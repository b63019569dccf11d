"""`iclr25-siu-bioactivity`: reproduce the SIU study, generate SIU-like data, vote on docked poses, train the
baseline models and evaluate predictions with the redefined per-pocket metric.

Paper: "Redefining the Task of Bioactivity Prediction" (ICLR 2025, arXiv 2406.08961).
Standard library only at module level, so `--help` answers instantly.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from iclr25.shared.cli import (
    CliError,
    add_run_args,
    check_verb_flags,
    make_parser,
    package_main,
    positive_float,
)
from iclr25.shared.files import save_arrays, write_json, write_text
from iclr25.shared.run import open_run_folder
from iclr25.shared.validate import int_in
from iclr25.siu_bioactivity.config import MAX_AGREE, MAX_LIGANDS, MAX_POCKETS, PRESETS

PROG = "iclr25-siu-bioactivity"
SLUG = "siu-bioactivity"

EPILOG = """data files: a Uni-Mol single-file LMDB (train.lmdb / test.lmdb), an Atom3D LMDB folder (holding data.mdb)
or a final_dic.pkl; pickled records are read with a restricted unpickler (arrays and plain containers only).

examples:
  iclr25-siu-bioactivity reproduce --scale quick
  iclr25-siu-bioactivity generate --out runs/siu-data --train-pockets 20 --test-pockets 5
  iclr25-siu-bioactivity vote --poses poses.json
  iclr25-siu-bioactivity train --model complex --regime siu --out runs/siu-train
  iclr25-siu-bioactivity train --model pocket --data runs/siu-data/train.lmdb --test runs/siu-data/test.lmdb --out t
  iclr25-siu-bioactivity eval --pred runs/siu-train/pred.npz --data runs/siu-data/test.lmdb
"""


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    p.add_argument("--out", type=Path, help="output folder (default: runs/siu-bioactivity/<verb>-<time>)")
    p.add_argument("--overwrite", action="store_true", help="replace an output folder an earlier run made")
    p.add_argument("--quiet", action="store_true", help="no progress output")


def _parser() -> argparse.ArgumentParser:
    parser = make_parser(PROG, __doc__.splitlines()[0].split(": ", 1)[1])
    parser.epilog = EPILOG
    sub = parser.add_subparsers(dest="command", required=True, metavar="{reproduce,generate,vote,train,eval}")
    rep = sub.add_parser("reproduce", help="run the ci/quick/full reproduction and print its claims table")
    add_run_args(rep, scales=("ci", "quick", "full"), presets=PRESETS, scale_out=True)

    g = sub.add_parser("generate", help="write generated SIU-like train/test sets in the official formats")
    g.add_argument("--train-pockets", type=int_in(1, MAX_POCKETS), default=150, help="training pockets (default: 150)")
    g.add_argument("--test-pockets", type=int_in(1, MAX_POCKETS), default=30, help="test pockets (default: 30)")
    g.add_argument("--ligands", type=int_in(1, MAX_LIGANDS), default=40, help="ligands per pocket (default: 40)")
    g.add_argument(
        "--format", choices=("unimol", "atom3d", "final_dic"), default="unimol", help="file format (default: unimol)"
    )
    _common(g)

    v = sub.add_parser("vote", help="2-of-3 majority vote on docked poses given as JSON")
    v.add_argument(
        "--poses", type=Path, required=True, help='JSON: {"program": [[x,y,z], ...] or null, ...} or a list of them'
    )
    v.add_argument("--threshold", type=positive_float, default=2.0, help="agreement RMSD in A (default: 2.0)")
    v.add_argument("--min-agree", type=int_in(1, MAX_AGREE), default=2, help="programs that must agree (default: 2)")

    t = sub.add_parser("train", help="fit a pocket-only / pocket+ligand / ligand-only ridge model; writes pred.npz")
    t.add_argument(
        "--model", choices=("pocket", "complex", "ligand"), default="complex", help="model (default: complex)"
    )
    t.add_argument("--regime", choices=("siu", "pdbbind"), default="siu", help="generated training regime")
    t.add_argument("--data", type=Path, help="your training records (see data files); default: generated data")
    t.add_argument("--test", type=Path, help="your test records (needed with --data)")
    t.add_argument("--penalty", type=positive_float, default=0.01, help="ridge lambda / n_train (default: 0.01)")
    _common(t)

    e = sub.add_parser("eval", help="Pearson*/Spearman* per pocket and pooled metrics of predictions")
    e.add_argument("--pred", type=Path, required=True, help=".npz with pred (N, 5) [and target, pocket_ids]")
    e.add_argument("--data", type=Path, help="the test records the predictions are for (labels and pocket ids)")
    return parser


# ------------------------------------------------------------------------------------------------ helpers
def load_records(path: Path) -> list[dict[str, Any]]:
    """Records of a Uni-Mol LMDB file, an Atom3D LMDB folder or a final_dic.pkl (always read as data)."""
    from iclr25.siu_bioactivity.formats import atom3d_to_record, read_atom3d_lmdb, read_final_dic, read_unimol_lmdb

    if not path.exists():
        raise CliError(f"{path} does not exist (expected a Uni-Mol LMDB, an Atom3D LMDB folder or a final_dic.pkl)")
    if path.is_dir():
        items = [atom3d_to_record(x, f"{path} (entry {i})") for i, x in enumerate(read_atom3d_lmdb(path))]
    elif path.suffix == ".pkl":
        items = [r for recs in read_final_dic(path).values() for r in recs]
    else:
        items = read_unimol_lmdb(path)
    if not items:
        raise CliError(f"{path} holds no records")
    need = ("atoms", "coordinates", "pocket_atoms", "pocket_coordinates", "source_data", "label")
    for i, r in enumerate(items):
        if not isinstance(r, dict) or any(k not in r for k in need):
            raise CliError(f"{path}: record {i} is not an SIU record (needs keys {', '.join(need)})")
    return items


def _targets(records: list[dict[str, Any]]) -> tuple[Any, Any]:
    import numpy as np

    from iclr25.siu_bioactivity.formats import label_vector, parse_source

    try:
        target = np.stack([label_vector(r["label"]) for r in records])
        ids = np.asarray([parse_source(r["source_data"])[1] for r in records])
    except ValueError as e:
        raise CliError(f"bad record: {e}") from None
    return target, ids


def _table(ev: dict[str, dict[str, float]]) -> str:
    rows = ["type     n   pockets  Pearson*  Spearman*  Pearson(all)  RMSE   MAE"]
    for t, m in ev.items():
        if m["n"]:
            rows.append(
                f"{t:<7}{m['n']:>5} {m['n_pockets']:>8}  {m['pearson_star']:>8.3f}  {m['spearman_star']:>9.3f}"
                f"  {m['pearson_all']:>12.3f}  {m['rmse']:.3f}  {m['mae']:.3f}"
            )
    return "\n".join(rows)


# ------------------------------------------------------------------------------------------------ verbs
def _generate(args: argparse.Namespace) -> int:
    out = check_verb_flags(args, SLUG, "generate", "data")
    from dataclasses import replace

    from iclr25.siu_bioactivity.config import PRESETS
    from iclr25.siu_bioactivity.data import make_world
    from iclr25.siu_bioactivity.formats import to_atom3d_item, write_atom3d_lmdb, write_final_dic, write_unimol_lmdb

    cfg = replace(
        PRESETS["ci"],
        train_pockets=args.train_pockets,
        test_pockets=args.test_pockets,
        ligands_per_pocket=args.ligands,
        test_ligands_per_pocket=args.ligands,
    )
    world = make_world(cfg, args.seed)
    with open_run_folder(out, args.overwrite, paper=SLUG, command="generate") as folder:
        for name, cs in (("train", world.siu), ("test", world.test)):
            recs = cs.to_records()
            if args.format == "unimol":
                write_unimol_lmdb(recs, folder / f"{name}.lmdb")
            elif args.format == "atom3d":
                write_atom3d_lmdb([to_atom3d_item(r) for r in recs], folder / name)
            else:
                dic: dict[str, list[dict[str, Any]]] = {}
                for r in recs:
                    dic.setdefault(r["source_data"].split(",")[0], []).append(r)
                (folder / name).mkdir()
                write_final_dic(dic, folder / name / "final_dic.pkl")
        info = {"vote": world.siu.vote, "train": len(world.siu), "test": len(world.test), "seed": args.seed}
        write_json(folder / "generate.json", info)
    print(f"{len(world.siu)} train / {len(world.test)} test complexes ({args.format}) written to {out}")
    return 0


def _vote(args: argparse.Namespace) -> int:
    import numpy as np

    from iclr25.siu_bioactivity.vote import majority_vote

    path = args.poses
    if not path.is_file():
        raise CliError(f"{path} does not exist or is not a file (expected a JSON file of poses)")
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise CliError(f"{path} is not a JSON file of poses ({' '.join(str(e).split())[:120]})") from None
    items = data if isinstance(data, list) else [data]
    results = []
    for k, item in enumerate(items):
        if not isinstance(item, dict) or not item:
            raise CliError(f"{path}: entry {k} must be an object mapping program names to poses")
        try:
            poses = {str(p): None if v is None else np.asarray(v, dtype=np.float64) for p, v in item.items()}
            res = majority_vote(poses, args.threshold, args.min_agree)
        except (ValueError, TypeError) as e:
            raise CliError(f"{path}: entry {k}: {e}") from None
        results.append(
            {"accepted": res.accepted, "agreeing": list(res.agreeing), "pairwise_rmsd": res.pairwise_rmsd.tolist()}
        )
    print(json.dumps(results if isinstance(data, list) else results[0], indent=1).replace("Infinity", "null"))
    return 0


def _train(args: argparse.Namespace) -> int:
    if args.data is not None and args.test is None:
        raise CliError("--data needs --test (the records to predict)")
    out = check_verb_flags(args, SLUG, "train", args.model)
    import numpy as np

    from iclr25.siu_bioactivity.baselines import MODEL_CLASSES, ComplexFeaturizer
    from iclr25.siu_bioactivity.metrics import evaluate_bioactivity

    feat = ComplexFeaturizer()
    rng = np.random.default_rng(args.seed)
    if args.data is not None:
        train, test = load_records(args.data), load_records(args.test)
        ytr, _ = _targets(train)
        yte, ids = _targets(test)
        ftr, fte = feat.transform_records(train), feat.transform_records(test)
    else:
        from iclr25.siu_bioactivity.config import PRESETS
        from iclr25.siu_bioactivity.data import make_world

        world = make_world(PRESETS["ci"], args.seed)
        cs = world.siu if args.regime == "siu" else world.pdbbind
        ftr, ytr = feat.transform(cs, rng), cs.labels
        fte, yte, ids = feat.transform(world.test), world.test.labels, world.test.pocket_ids
    model = MODEL_CLASSES[args.model]("ridge", args.penalty).fit(ftr, ytr)
    pred = model.predict(fte, ids)
    ev = evaluate_bioactivity(pred, yte, ids)
    with open_run_folder(out, args.overwrite, paper=SLUG, command="train") as folder:
        save_arrays(folder / "pred.npz", {"pred": pred, "target": yte, "pocket_ids": ids.astype(str)})
        write_text(folder / "metrics.json", json.dumps(ev, indent=1, default=float).replace("NaN", "null") + "\n")
    print(_table(ev))
    print(f"predictions written to {out / 'pred.npz'}")
    return 0


def _eval(args: argparse.Namespace) -> int:
    import numpy as np

    from iclr25.shared.safeload import load_npz
    from iclr25.siu_bioactivity.metrics import evaluate_bioactivity

    target = ids = None
    if args.data is not None:
        target, ids = _targets(load_records(args.data))
    arrays = load_npz(args.pred, what="predictions .npz (array pred)")
    if "pred" not in arrays:
        raise CliError(f"{args.pred} lacks the array 'pred'; it has {sorted(arrays)}")
    pred = np.asarray(arrays["pred"], dtype=np.float64)
    if target is None:
        if "target" not in arrays or "pocket_ids" not in arrays:
            raise CliError(f"{args.pred} has no target/pocket_ids arrays: pass --data with the test records")
        target, ids = np.asarray(arrays["target"], dtype=np.float64), arrays["pocket_ids"]
    if pred.ndim == 1:
        pred = np.where(target >= 0, pred[:, None], np.nan) if target.ndim == 2 else pred
    if pred.shape != target.shape:
        raise CliError(f"{args.pred}: pred has shape {pred.shape} but the labels are {target.shape}")
    print(_table(evaluate_bioactivity(pred, target, ids)))
    return 0


main = package_main(PROG, _parser, {"generate": _generate, "vote": _vote, "train": _train, "eval": _eval})


if __name__ == "__main__":
    sys.exit(main())
