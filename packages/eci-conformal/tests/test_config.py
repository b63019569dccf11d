"""Config values are checked when a Config is made, before numpy loads or any work starts."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from iclr25.eci_conformal.cli import main
from iclr25.eci_conformal.config import PRESETS, Config


def test_presets_are_valid():
    assert set(PRESETS) == {"quick", "full"}
    assert all(isinstance(c, Config) for c in PRESETS.values())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"settings": ()}, "settings must not be empty"),
        ({"settings": ("mars",)}, r"settings\[0\] must be one of"),
        ({"seeds": 0}, "seeds must be an integer >= 1"),
        ({"n": 50}, "n must be an integer >= 102"),
        ({"alpha": 1.0}, r"alpha must lie in \(0, 1\)"),
        ({"alpha": float("nan")}, "alpha must be a finite number"),
        ({"burn_in": 0}, "burn_in must be an integer >= 1"),
        ({"ols_window": 5}, "ols_window must be an integer >= 10"),
        ({"eci_lrs": ()}, "eci_lrs must not be empty"),
        ({"eci_lrs": (0.1, -1.0)}, r"eci_lrs\[1\] must be > 0"),
        ({"aci_lrs": (float("nan"),)}, r"aci_lrs\[0\] must be a finite number"),
        ({"validity_lrs": (0.0,)}, r"validity_lrs\[0\] must be > 0"),
        ({"min_coverage": 1.5}, r"min_coverage must lie in \[0, 1\]"),
        ({"coverage_margin": -0.1}, "coverage_margin must be >= 0"),
        ({"width_margin": float("inf")}, "width_margin must be a finite number"),
        ({"validity_n": 1}, "validity_n must be an integer >= 2"),
        ({"mix1_seeds": -1}, "mix1_seeds must be an integer >= 0"),
        ({"extras": "maybe"}, "extras must be true or false"),
        ({"sf_ogd_normaliser": "quirk"}, "sf_ogd_normaliser must be one of"),
        ({"c_values": (1.0, 0.0)}, r"c_values\[1\] must be > 0"),
        ({"forecasters": ("arima",)}, r"forecasters\[0\] must be one of"),
    ],
)
def test_bad_values_are_rejected(change, message):
    with pytest.raises(ValueError, match=message):
        replace(PRESETS["quick"], **change)


@pytest.mark.parametrize("override", ["seeds=0", "alpha=nan", "eci_lrs=0.1,-1", "settings=mars", "n=10"])
def test_reproduce_refuses_bad_values_in_one_line_without_numpy(tmp_path, override):
    code = (
        "import sys; from iclr25.eci_conformal.cli import main; "
        f"rc = main(['reproduce', '--out', {str(tmp_path / 'r')!r}, {override!r}]); "
        "print(rc, 'numpy' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.split() == ["2", "False"]
    assert len(proc.stderr.strip().splitlines()) == 1 and "error:" in proc.stderr
    assert not (tmp_path / "r").exists()


def test_config_module_is_light():
    code = "import sys; import iclr25.eci_conformal.config; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False"]


def test_cli_run_refuses_bad_out_before_reading(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    args = ["run", "--data", str(tmp_path / "absent.csv"), "--column", "y", "--lr", "0.1", "--out", str(mine)]
    assert main([*args, "--overwrite"]) == 2
    assert "no iclr25 run made" in capsys.readouterr().err
    assert (mine / "notes.txt").read_text() == "keep"
