"""The paper-settings bench and the intrinsic-scale study: tiny runs, the selection rule, bad input."""

from __future__ import annotations

import json

import pytest

from iclr25.sa_gfn.bench import BENCH_METHODS, PAPER_GRIDS, bench, bench_jobs, method_kwargs
from iclr25.sa_gfn.config import _parse_grid
from iclr25.sa_gfn.study import ScaleSetting, choose_default, clopper_pearson, scale_study, write_study
from iclr25.sa_gfn.training import method_options


def test_paper_grids_and_methods():
    parsed = {_parse_grid(g) for g in PAPER_GRIDS}
    assert parsed == {(d, h, "standard", r0) for d, h in ((2, 32), (2, 64), (4, 8)) for r0 in (1e-3, 1e-4)}
    assert method_kwargs("sagfn-subtb", 64) == ("sagfn", {"hidden": 64, "objective": "subtb"})
    assert method_kwargs("sagfn", 64)[1]["objective"] == "tb"
    assert len(bench_jobs(iters=5)) == len(PAPER_GRIDS) * len(BENCH_METHODS)
    with pytest.raises(ValueError, match="bench method"):
        method_kwargs("ppo", 8)


def test_tiny_bench_writes_curves(tmp_path):
    r = bench(("2x5:standard:0.001",), ("tb", "sagfn-db"), iters=4, eval_every=2, hidden=16, workers=1, out=tmp_path)
    run = r["runs"]["2x5:standard:0.001/sagfn-db/0"]
    assert run["iters"] == [2, 4] and len(run["l1_mean"]) == 2 and run["seconds_per_iter"] > 0
    assert json.loads((tmp_path / "bench.json").read_text())["iters"] == 4
    assert (tmp_path / "curves.png").stat().st_size > 1000


@pytest.mark.slow
def test_runs_in_processes_give_the_numbers_of_one_process():
    """workers=2 trains the jobs in two spawned processes, longest (SA-GFN) first: the results of one process."""
    from iclr25.sa_gfn.training import run_all

    jobs = bench_jobs(("2x5:standard:0.001",), ("tb", "sagfn-db"), iters=4, seeds=2, eval_every=2, hidden=16)
    one, two = run_all(jobs, 1), run_all(jobs, 2)
    assert list(one) == [job.name for job in jobs]
    assert list(two) == [f"2x5:standard:0.001/{m}/{s}" for m in ("sagfn-db", "tb") for s in (0, 1)]
    assert one["2x5:standard:0.001/tb/0"]["final"] != one["2x5:standard:0.001/tb/1"]["final"]  # the seeds differ
    timeless = [{name: {k: v for k, v in r.items() if k != "seconds"} for name, r in rs.items()} for rs in (one, two)]
    assert timeless[1] == timeless[0]
    with pytest.raises(ValueError, match="workers must be an integer >= 1"):
        run_all(jobs, 0)


def test_clopper_pearson():
    lo, hi = clopper_pearson(5, 10)
    assert lo == pytest.approx(0.1871, abs=1e-4) and hi == pytest.approx(0.8129, abs=1e-4)
    assert clopper_pearson(0, 10)[0] == 0.0 and clopper_pearson(10, 10)[1] == 1.0
    with pytest.raises(ValueError, match="k <= n"):
        clopper_pearson(11, 10)


def _s(k, tv):
    return {"seeds_all_captured": k, "tv_mean": tv}


def test_choose_default_prefers_raw_unless_clearly_worse():
    assert choose_default({"raw c=1": _s(3, 0.4), "raw c=100": _s(5, 0.3), "std c=1": _s(6, 0.2)}) == "raw c=100"
    assert choose_default({"raw c=1": _s(3, 0.4), "raw c=100": _s(3, 0.3), "std c=1": _s(5, 0.5)}) == "std c=1"
    assert choose_default({"raw c=1": _s(3, 0.2), "raw c=100": _s(3, 0.3)}) == "raw c=1"
    assert choose_default({"raw c=1": _s(3, 0.2), "noveld std c=1": _s(9, 0.1)}) == "raw c=1"
    assert ScaleSetting("std", 1.0, "noveld").label == "noveld std c=1"
    assert choose_default({"std c=1": _s(4, 0.3), "mean c=1": _s(5, 0.4)}) == "mean c=1"
    with pytest.raises(ValueError, match="at least one"):
        choose_default({"noveld std c=1": _s(9, 0.1)})


def test_tiny_study(tmp_path):
    seen = []
    r = scale_study(
        (ScaleSetting("none", 10.0), ScaleSetting("mean", 1.0)),
        seeds=2,
        iters=3,
        height=5,
        eval_every=3,
        workers=1,
        on_setting=seen.append,
    )
    assert [len(s) for s in seen] == [1, 2]
    s = r["summary"]["mean c=1"]
    assert s["seeds"] == 2 and 0 <= s["capture_ci95"][0] <= s["capture_ci95"][1] <= 1
    assert r["summary"]["raw c=10"]["weight_mean"] == [10.0]
    assert r["chosen"] in r["summary"]
    write_study(r, tmp_path)
    assert "raw c=10" in (tmp_path / "study.md").read_text()


def test_method_options():
    assert method_options("sagfn", "db", 10.0, rnd_normalize="none") == {
        "objective": "db",
        "sibling_reward": "terminal_logsumexp",
        "intrinsic_scale": 10.0,
        "rnd_normalize": "none",
    }
    assert method_options("tb") == {}
    for bad in (
        dict(method="tb", objective="db"),
        dict(method="tb", intrinsic_scale=1.0),
        dict(method="sagfn", objective="fm"),
        dict(method="sagfn", intrinsic_scale=-1.0),
        dict(method="sagfn", objective="db", sibling_reward="gafn_edge"),
        dict(method="gafn", rnd_normalize="max"),
    ):
        with pytest.raises(ValueError, match=r"objective|intrinsic_scale|sibling_reward|rnd_normalize"):
            method_options(**bad)
