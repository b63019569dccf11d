"""Baselines (spec §4, §6a): constant velocity (CV), CV with K noisy samples (CV-K20), and the non-learned
scene-aware reference "geodesic-exits". The learned baselines (scene-blind TSC-Net, goal-regression CVAE) are
`TSCNet` variants (`TSCConfig(use_scene=False)`, `TSCConfig(goal_mode="regression")`), see `GoalRegressionCVAE`.
"""

from __future__ import annotations

import numpy as np

from iclr25.tsc_net.data import _descent, _on_walkable, cost_fields, walkable
from iclr25.tsc_net.model import TSCConfig, TSCNet

OBS, PRED = 8, 12


class ConstantVelocity:
    """Extrapolate the last observed displacement; with `k` > 1, K samples with heading noise N(0, 25 deg) and
    speed x U(0.8, 1.2) (CV-K20)."""

    def __init__(self, k: int = 1, heading_deg: float = 25.0, speed_range: tuple[float, float] = (0.8, 1.2)):
        self.k, self.heading, self.speed = k, np.deg2rad(heading_deg), speed_range

    def predict(self, obs: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """obs (N, 8, 2) -> (K, N, 12, 2)."""
        v = obs[:, -1] - obs[:, -2]
        steps = np.arange(1, PRED + 1)[None, :, None]
        if self.k == 1:
            return (obs[:, -1, None] + steps * v[:, None])[None]
        rng = rng or np.random.default_rng(0)
        n = len(obs)
        a = rng.normal(0, self.heading, (self.k, n))
        s = rng.uniform(*self.speed, (self.k, n))
        c, si = np.cos(a), np.sin(a)
        vr = np.stack([c * v[:, 0] - si * v[:, 1], si * v[:, 0] + c * v[:, 1]], -1) * s[..., None]
        return obs[None, :, -1, None] + steps[None] * vr[:, :, None]


def geodesic_exits(
    obs: np.ndarray, scene: np.ndarray, masks: list[np.ndarray], exits: list[np.ndarray], k: int = 20,
    speed_factors: tuple[float, ...] = (0.7, 1.0, 1.3),
) -> np.ndarray:  # fmt: skip
    """Non-learned scene-aware reference: from the last observed position follow each exit's cost field at the mean
    observed speed x {0.7, 1, 1.3} (moves onto obstacles rejected), <= 18 samples padded to `k` by repetition.
    obs (N, 8, 2), scene (N,) index into masks/exits -> (k, N, 12, 2)."""
    n = len(obs)
    out = np.zeros((k, n, PRED, 2))
    speed = np.linalg.norm(np.diff(obs, axis=1), axis=-1).mean(1)
    for s in np.unique(scene):
        sel = np.flatnonzero(scene == s)
        ex = np.asarray(exits[s])
        fields = cost_fields(masks[s], ex)
        ok = walkable(masks[s])
        cands = [(e, f) for e in range(len(ex)) for f in speed_factors]
        samples = []
        for e, f in cands:
            p = obs[sel, -1].copy()
            goal = np.full(len(sel), e)
            traj = []
            for _ in range(PRED):
                d = _descent(fields, goal, p)
                new = p + (speed[sel] * f)[:, None] * d
                bad = ~_on_walkable(ok, new)
                new[bad] = p[bad]
                p = new
                traj.append(p)
            samples.append(np.stack(traj, 1))
        samples = [samples[i % len(samples)] for i in range(k)]
        out[:, sel] = np.stack(samples[:k])
    return out


class GoalRegressionCVAE(TSCNet):
    """Goal-regression ablation (spec §4, PECNet-style): the same encoder, a CVAE that regresses the endpoint
    (dx, dy) directly instead of classifying a goal cell + offset; same step branch."""

    def __init__(self, cfg: TSCConfig | None = None):
        from dataclasses import replace

        super().__init__(replace(cfg or TSCConfig.quick(), goal_mode="regression"))
