"""TSC-Net (spec §3): trajectory-scene-cell features, a history encoder (temporal then pedestrian attention), a goal
branch that classifies one cell of a coarse grid with a per-cell CVAE plus an offset, and a step branch that does the
same on a 3 x 3 grid around the previous position, rolled out autoregressively with the scene re-cropped each step.

Batches are dicts: `pos` (N, 20, 2) pixels (future may be NaN at inference), `scene` (N,) index into `scenes`
(a `SceneCrop`), `group` (N,) clip id (pedestrian attention runs within a clip).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from iclr25.tsc_net.grid import GridSpec
from iclr25.tsc_net.scene import SceneCNN, SceneCrop

OBS, PRED = 8, 12
T_REF = OBS - 1


@dataclass(frozen=True)
class TSCConfig:
    """Architecture and loss settings; `sdd()` is the official SDD configuration, `quick()` TSC-lite (spec §6a)."""

    goal_window: float = 1200.0  # goal grid: n_goal cells of goal_window / n_goal px
    n_goal: int = 15
    step_window: float = 60.0  # step grid: 3 x 3 cells
    map_scale: float = 0.25  # label maps resized by this factor before cropping
    step_crop: int = 45  # step crop (resized px) -> 9 x 9 at stride 5, centre 3 x 3 kept
    n_classes: int = 6
    d_ref: int = 32
    d_shift: int = 64
    d_vel: int = 32
    d_scene: int = 128
    heads: int = 8
    inner: int = 128  # attention inner width
    ffn: int = 128
    layers: int = 2  # per attention block (temporal, pedestrian, goal self/cross, step self/cross)
    latent: int = 64
    d_gt: int = 64
    cnn: str = "official"
    use_scene: bool = True  # False: scene-blind TSC-Net (scene channels zeroed)
    goal_mode: str = "cell"  # "regression": PECNet-style CVAE on the endpoint (baseline)
    # loss weights (spec §3 "Losses": inside the SmoothL1), goal-conf peak and KL weight
    w_goal_conf: float = 400.0
    w_goal_off: float = 100.0
    w_step_conf: float = 20.0
    w_step_off: float = 2.0
    goal_peak: float = 15.0
    w_kl: float = 40.0
    # official quirks (spec §3 subtle details), off by default
    keys_are_inputs: bool = False
    softmax_then_divide: bool = False
    ln_gain_normal: bool = False
    step_crop_at_target: bool = False

    @property
    def d_model(self) -> int:
        """Width of a cell feature: ref + shift + vel + scene."""
        return self.d_ref + self.d_shift + self.d_vel + self.d_scene

    @property
    def goal_grid(self) -> GridSpec:
        """The goal grid."""
        return GridSpec(self.goal_window, self.n_goal)

    @property
    def step_grid(self) -> GridSpec:
        """The step grid."""
        return GridSpec(self.step_window, 3)

    @property
    def goal_crop(self) -> int:
        """Goal crop size in resized map pixels (the goal window)."""
        return round(self.goal_window * self.map_scale)

    @classmethod
    def sdd(cls, **kw) -> TSCConfig:
        """The official SDD configuration (`configs/tsc.yaml`, spec §3)."""
        return replace(cls(), **kw)

    @classmethod
    def quick(cls, d_model: int = 64, **kw) -> TSCConfig:
        """TSC-lite (spec §6a): goal 7 x 20 px, step 3 x 5 px, no resize, stride-first CNN, d 64, latent 16."""
        e = d_model // 8
        base = cls(
            goal_window=140.0, n_goal=7, step_window=15.0, map_scale=1.0, d_ref=e, d_shift=2 * e, d_vel=e,
            d_scene=4 * e, heads=4, inner=d_model, ffn=d_model, layers=1, latent=16, d_gt=2 * e, cnn="stride_first",
        )  # fmt: skip
        return replace(base, **kw)


def mlp(sizes: list[int], last_act: bool = False) -> nn.Sequential:
    """Linear layers with LeakyReLU(0.1) between them (the official 1x1 convs on a (B, D, P, F) layout)."""
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2 or last_act:
            layers.append(nn.LeakyReLU(0.1))
    return nn.Sequential(*layers)


def emb(d_in: int, d: int) -> nn.Sequential:
    """Embedding MLP in -> d -> d/2 -> d (e.g. ref 3->32->16->32, shift 3->64->32->64)."""
    return mlp([d_in, d, max(d // 2, 1), d])


class Attention(nn.Module):
    """Multi-head attention + residual + LayerNorm + FFN + residual + LayerNorm (spec §3 "History encoder")."""

    def __init__(self, d: int, inner: int, heads: int, ffn: int, softmax_then_divide: bool, ln_gain_normal: bool):
        super().__init__()
        self.heads, self.dh = heads, inner // heads
        self.q, self.k, self.v = nn.Linear(d, inner), nn.Linear(d, inner), nn.Linear(d, inner)
        self.o = nn.Linear(inner, d)
        self.ffn = mlp([d, ffn, d])
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.softmax_then_divide = softmax_then_divide
        if ln_gain_normal:  # official quirk (iii): LayerNorm gains ~ N(0, 1)
            nn.init.normal_(self.ln1.weight)
            nn.init.normal_(self.ln2.weight)

    def forward(self, x: torch.Tensor, kv: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, Lq, d) attends to kv (B, Lk, d); mask broadcastable to (B, Lq, Lk), True = may attend."""
        b, lq, _ = x.shape
        lk = kv.shape[1]
        q = self.q(x).view(b, lq, self.heads, self.dh).transpose(1, 2)
        k = self.k(kv).view(b, lk, self.heads, self.dh).transpose(1, 2)
        v = self.v(kv).view(b, lk, self.heads, self.dh).transpose(1, 2)
        logits = q @ k.transpose(-1, -2)
        if not self.softmax_then_divide:
            logits = logits / math.sqrt(self.dh)
        if mask is not None:
            logits = logits.masked_fill(~mask[:, None] if mask.dim() == 3 else ~mask, float("-inf"))
        att = torch.softmax(logits, -1)
        if self.softmax_then_divide:  # official quirk (ii): softmax(q.k) / sqrt(d_head)
            att = att / math.sqrt(self.dh)
        out = (att @ v).transpose(1, 2).reshape(b, lq, -1)
        h = self.ln1(x + self.o(out))
        return self.ln2(h + self.ffn(h))


class Block(nn.Module):
    """`layers` attention layers; self-attention uses the current features as keys unless `keys_are_inputs`
    (official quirk (i): every layer's keys/values are the block's input features)."""

    def __init__(self, cfg: TSCConfig, cross: bool = False):
        super().__init__()
        d = cfg.d_model
        self.layers = nn.ModuleList(
            Attention(d, cfg.inner, cfg.heads, cfg.ffn, cfg.softmax_then_divide, cfg.ln_gain_normal)
            for _ in range(cfg.layers)
        )
        self.cross, self.keys_are_inputs = cross, cfg.keys_are_inputs

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None, mask: torch.Tensor | None = None):
        """Self-attention (memory None) or cross-attention onto `memory`."""
        x0 = x
        for layer in self.layers:
            kv = memory if self.cross else (x0 if self.keys_are_inputs else x)
            x = layer(x, kv, mask)
        return x


def group_index(group: torch.Tensor) -> torch.Tensor:
    """(G, L) indices of the members of each group (clip), -1 padded."""
    _, inv = torch.unique(group, return_inverse=True)
    counts = torch.bincount(inv)
    order = torch.argsort(inv, stable=True)
    starts = torch.cumsum(counts, 0) - counts
    slot = torch.arange(len(group), device=group.device) - starts[inv[order]]
    idx = torch.full((len(counts), int(counts.max())), -1, dtype=torch.long, device=group.device)
    idx[inv[order], slot] = order
    return idx


class HistoryEncoder(nn.Module):
    """Temporal attention per pedestrian over frames, then pedestrian attention per frame within a clip."""

    def __init__(self, cfg: TSCConfig):
        super().__init__()
        self.temporal, self.pedestrian = Block(cfg), Block(cfg)

    def forward(self, x: torch.Tensor, group: torch.Tensor) -> torch.Tensor:
        """x (N, T, d) cell features -> (N, T, d). Observed frames see all observed frames, frame f >= 8 sees
        frames <= f (causal: a frame's encoding never depends on later frames)."""
        _, t, d = x.shape
        i = torch.arange(t, device=x.device)
        mask = i[None, :] <= torch.clamp(i[:, None], min=T_REF)
        h = self.temporal(x, mask=mask[None])
        idx = group_index(group)
        valid = idx >= 0
        g, length = idx.shape
        hg = h[idx.clamp(min=0)].permute(0, 2, 1, 3).reshape(g * t, length, d)
        key = valid[:, None, None, :].expand(g, t, 1, length).reshape(g * t, 1, length)
        out = self.pedestrian(hg, mask=key).view(g, t, length, d).permute(0, 2, 1, 3)
        res = torch.empty_like(h)
        res[idx[valid]] = out[valid]
        return res


class TSCNet(nn.Module):
    """TSC-Net: `forward(batch)` -> dict of the five losses (+ "total"); `predict(batch)` -> 20 trajectories."""

    def __init__(self, cfg: TSCConfig | None = None):
        super().__init__()
        cfg = cfg or TSCConfig.sdd()
        self.cfg = cfg
        d = cfg.d_model
        self.cnn = SceneCNN(cfg.n_classes + 1, cfg.d_scene, "official" if cfg.cnn == "official" else "stride_first")
        self.ref_emb, self.shift_emb, self.vel_emb = emb(3, cfg.d_ref), emb(3, cfg.d_shift), emb(2, cfg.d_vel)
        self.encoder = HistoryEncoder(cfg)
        self.goal_self, self.goal_cross = Block(cfg), Block(cfg, cross=True)
        self.step_self, self.step_cross = Block(cfg), Block(cfg, cross=True)
        self.step_head = mlp([2 * d, 128, 32, 3])
        lat = cfg.latent
        if cfg.goal_mode == "cell":
            self.gt_emb = emb(3, cfg.d_gt)
            self.cvae_enc = mlp([d + cfg.d_gt, 128, 256, 2 * lat])
            self.cvae_dec = mlp([lat + d, 128, 32, 3])
        elif cfg.goal_mode == "regression":
            self.gt_emb = emb(2, cfg.d_gt)
            self.cvae_enc = mlp([d + cfg.d_gt, 128, 256, 2 * lat])
            self.cvae_dec = mlp([lat + d, 128, 32, 2])
        else:
            raise ValueError(f"goal_mode must be cell or regression, got {cfg.goal_mode!r}")
        with torch.no_grad():  # confidences start at the uniform prior 1/cells (not 0.5): see README
            self.step_head[-1].bias[0] = -math.log(8.0)
            if cfg.goal_mode == "cell":
                self.cvae_dec[-1].bias[0] = -math.log(cfg.n_goal**2 - 1.0)
        self.register_buffer("goal_centres", cfg.goal_grid.centers(), persistent=False)
        self.register_buffer("step_centres", cfg.step_grid.centers(), persistent=False)
        self.pos_scale = cfg.goal_window / 2  # coordinates fed to the MLPs are divided by this

    # ---------------------------------------------------------------- features
    def cell_feature(self, ref: torch.Tensor, shift: torch.Tensor, vel: torch.Tensor, scene: torch.Tensor):
        """Cell feature (spec §3) = [ref-emb(x, y, t of r), shift-emb(xyt - xyt(r)), vel-emb(dx, dy), scene]."""
        s = self.pos_scale
        ref_in = torch.cat([ref[..., :2] / (8 * s), ref[..., 2:] / PRED], -1)
        shift_in = torch.cat([shift[..., :2] / s, shift[..., 2:] / PRED], -1)
        return torch.cat(
            [self.ref_emb(ref_in), self.shift_emb(shift_in), self.vel_emb(vel / self.cfg.step_grid.cell), scene], -1
        )

    def _crops(self, scenes: SceneCrop, scene_ids: torch.Tensor, centres: torch.Tensor, size: int) -> torch.Tensor:
        crops = scenes.crop(scene_ids.cpu(), centres.detach().cpu(), size).to(centres.device, centres.dtype)
        return crops if self.cfg.use_scene else torch.zeros_like(crops)

    def step_scene(self, scenes: SceneCrop, scene_ids: torch.Tensor, centres: torch.Tensor):
        """Scene of points (M, 2): (9 step-cell features (M, 9, C), point feature (M, C))."""
        return self.cnn.step_cells(self._crops(scenes, scene_ids, centres, self.cfg.step_crop))

    def _frame_features(self, pos: torch.Tensor, ref: torch.Tensor, point_scene: torch.Tensor) -> torch.Tensor:
        """Cell features of trajectory points pos (N, T, 2) whose frame index is 0..T-1."""
        n, t, _ = pos.shape
        frames = torch.arange(t, device=pos.device, dtype=pos.dtype)
        vel = torch.cat([pos[:, 1:2] - pos[:, 0:1], pos[:, 1:] - pos[:, :-1]], 1)  # frame 0 copies frame 1's
        shift = torch.cat([pos - ref[:, None, :2], (frames - T_REF).expand(n, t)[..., None]], -1)
        return self.cell_feature(ref[:, None].expand(n, t, 3), shift, vel, point_scene)

    def _goal_condition(self, pos_obs, ref, hist_obs, scenes, scene_ids):
        """Goal branch up to the CVAE: (N, n_goal^2, d) conditions h_k."""
        cfg = self.cfg
        n = pos_obs.shape[0]
        g = self.cnn(self._crops(scenes, scene_ids, pos_obs[:, -1], cfg.goal_crop), pool=True)
        g = g.flatten(2).transpose(1, 2)  # (N, cells, C), row-major = flat cell order
        c = self.goal_centres.to(pos_obs.dtype)
        k = c.shape[0]
        shift = torch.cat([c, torch.full((k, 1), float(PRED), device=c.device, dtype=c.dtype)], -1)
        feat = self.cell_feature(ref[:, None].expand(n, k, 3), shift.expand(n, k, 3), c.expand(n, k, 2), g)
        h = self.goal_self(feat)
        return self.goal_cross(h, memory=hist_obs)

    def _goal_feature(self, ref, goal, scenes, scene_ids):
        """Goal cell feature [ref, shift-emb(goal, t=12), vel-emb(goal), scene at the goal] (N, d)."""
        _, point = self.step_scene(scenes, scene_ids, goal)
        shift = torch.cat([goal - ref[:, :2], torch.full_like(goal[:, :1], float(PRED))], -1)
        return self.cell_feature(ref, shift, goal - ref[:, :2], point)

    def _step_queries(self, ref, prev, t_next, cell_scene):
        """Cell features of the 9 step cells around `prev` (M, 2) for frame `t_next` (M,): (M, 9, d)."""
        m = prev.shape[0]
        c = self.step_centres.to(prev.dtype)
        pts = prev[:, None] + c  # (M, 9, 2)
        shift = torch.cat([pts - ref[:, None, :2], (t_next - T_REF)[:, None, None].expand(m, 9, 1).to(prev.dtype)], -1)
        return self.cell_feature(ref[:, None].expand(m, 9, 3), shift, c.expand(m, 9, 2), cell_scene)

    def _step_head(self, q, memory, mem_mask, goal_feat):
        h = self.step_self(q)
        h = self.step_cross(h, memory=memory, mask=mem_mask)
        out = self.step_head(torch.cat([h, goal_feat[:, None].expand_as(h)], -1))
        return torch.sigmoid(out[..., 0]), out[..., 1:] * self.cfg.step_grid.cell

    def _decode_goal(self, z, h):
        out = self.cvae_dec(torch.cat([z, h], -1))
        cell = self.cfg.goal_grid.cell
        if self.cfg.goal_mode == "regression":
            return None, out * self.pos_scale
        return torch.sigmoid(out[..., 0]), (out[..., 1:] * cell).clamp(-cell / 2, cell / 2)  # offset clamp ±cell/2

    # ---------------------------------------------------------------- training
    def latent_noise(self, n: int) -> torch.Tensor:
        """The CVAE noise of `n` pedestrians as `forward` draws it (torch's global RNG): (n, cells, latent) for cell
        goals, (n, latent) for goal regression. A batch may carry it as `eps` (e.g. drawn for a whole batch that
        several processes share); without it `forward` draws its own."""
        cells = (self.cfg.n_goal**2,) if self.cfg.goal_mode == "cell" else ()
        return torch.randn(n, *cells, self.cfg.latent)

    @staticmethod
    def _noise(batch: dict, mu: torch.Tensor) -> torch.Tensor:
        eps = batch.get("eps")
        return torch.randn_like(mu) if eps is None else eps.to(mu.device, mu.dtype)

    def forward(self, batch: dict) -> dict[str, torch.Tensor]:
        """The five losses of spec §3 (teacher forcing over all 12 steps) and their sum "total"; each is a mean over
        pedestrians (of per-pedestrian terms of the same size). The CVAE noise is `batch["eps"]` when given."""
        cfg = self.cfg
        pos, scenes, sid, group = batch["pos"], batch["scenes"], batch["scene"], batch["group"]
        n, t, _ = pos.shape
        ref = torch.cat([pos[:, T_REF], torch.full_like(pos[:, 0, :1], float(T_REF))], -1)
        cells, point = self.step_scene(scenes, sid.repeat_interleave(t), pos.reshape(-1, 2))
        cells, point = cells.view(n, t, 9, -1), point.view(n, t, -1)
        hist = self.encoder(self._frame_features(pos, ref, point), group)
        # goal branch
        goal = pos[:, -1]
        h = self._goal_condition(pos[:, :OBS], ref, hist[:, :OBS], scenes, sid)
        losses = {}
        if cfg.goal_mode == "cell":
            idx, _ = cfg.goal_grid.encode(goal - pos[:, T_REF])
            idx = idx.to(pos.device)
            conf_t = F.one_hot(idx, cfg.n_goal**2).to(pos.dtype)
            off_t = goal[:, None] - pos[:, T_REF, None] - self.goal_centres.to(pos.dtype)
            gt_in = torch.cat([conf_t[..., None], off_t / cfg.goal_grid.cell], -1)
            mu, logvar = self.cvae_enc(torch.cat([self.gt_emb(gt_in), h], -1)).chunk(2, -1)
            z = mu + self._noise(batch, mu) * torch.exp(0.5 * logvar)
            conf, off = self._decode_goal(z, h)
            m_conf = 1 + (cfg.goal_peak - 1) * conf_t
            losses["goal_conf"] = weighted_smooth_l1(conf, conf_t, cfg.w_goal_conf * m_conf)
            losses["goal_offset"] = weighted_smooth_l1(off, off_t, cfg.w_goal_off * conf_t[..., None])
        else:
            hq = h.mean(1)
            gt = (goal - pos[:, T_REF]) / self.pos_scale
            mu, logvar = self.cvae_enc(torch.cat([self.gt_emb(gt), hq], -1)).chunk(2, -1)
            z = mu + self._noise(batch, mu) * torch.exp(0.5 * logvar)
            _, pred_goal = self._decode_goal(z, hq)
            losses["goal_conf"] = pred_goal.sum() * 0
            losses["goal_offset"] = weighted_smooth_l1(pred_goal, goal - pos[:, T_REF], torch.ones_like(pred_goal))
        losses["kl"] = cfg.w_kl * kl_normal(mu, logvar)
        # step branch, teacher forcing: step f (1..12) predicts frame 7+f from frame 6+f
        frames = torch.arange(OBS, t, device=pos.device)
        prev = pos[:, frames - 1]  # (N, 12, 2)
        src = frames if cfg.step_crop_at_target else frames - 1  # official quirk: crop at the target frame
        q = self._step_queries(
            ref.repeat_interleave(PRED, 0),
            prev.reshape(-1, 2),
            frames.repeat(n),
            cells[:, src].reshape(n * PRED, 9, -1),
        )
        memory = hist.repeat_interleave(PRED, 0)  # (N*12, 20, d)
        mem_mask = (torch.arange(t, device=pos.device)[None, :] <= (frames - 1)[:, None]).repeat(n, 1)[:, None, :]
        goal_feat = self._goal_feature(ref, goal, scenes, sid).repeat_interleave(PRED, 0)
        conf, off = self._step_head(q, memory, mem_mask, goal_feat)
        sidx, _ = cfg.step_grid.encode(pos[:, frames] - prev)
        sidx = sidx.to(pos.device).reshape(-1)
        conf_t = F.one_hot(sidx, 9).to(pos.dtype)
        off_t = (pos[:, frames] - prev).reshape(-1, 1, 2) - self.step_centres.to(pos.dtype)
        losses["step_conf"] = weighted_smooth_l1(conf, conf_t, torch.full_like(conf, cfg.w_step_conf))
        nb = cfg.step_grid.neighbourhood(sidx)
        losses["step_offset"] = weighted_smooth_l1(off, off_t, cfg.w_step_off * nb[..., None].expand_as(off))
        losses["total"] = sum(losses.values())
        return losses

    # ---------------------------------------------------------------- inference
    @torch.no_grad()
    def predict(self, batch: dict, n_cvae: int = 5, n_cell: int = 4) -> dict[str, torch.Tensor]:
        """Best-of-K inference (spec §3): n_cvae latent draws x top-n_cell cells = K goals, each rolled out for 12
        steps (argmax step cell + offset, scene re-cropped at every new position). Reads only the 8 observed
        frames. Returns {"traj": (K, N, 12, 2), "goals": (K, N, 2)}."""
        cfg = self.cfg
        pos = batch["pos"][:, :OBS].clone()  # the future is never read
        scenes, sid, group = batch["scenes"], batch["scene"], batch["group"]
        n = pos.shape[0]
        ref = torch.cat([pos[:, T_REF], torch.full_like(pos[:, 0, :1], float(T_REF))], -1)
        cells, point = self.step_scene(scenes, sid.repeat_interleave(OBS), pos.reshape(-1, 2))
        cells, point = cells.view(n, OBS, 9, -1), point.view(n, OBS, -1)
        feats = self._frame_features(pos, ref, point)
        hist = self.encoder(feats, group)
        h = self._goal_condition(pos, ref, hist, scenes, sid)
        goals = []
        for _ in range(n_cvae):
            if cfg.goal_mode == "cell":
                z = torch.randn(*h.shape[:2], cfg.latent, device=pos.device, dtype=pos.dtype)
                conf, off = self._decode_goal(z, h)
                top = conf.topk(n_cell, dim=1).indices  # (N, n_cell)
                g = self.goal_centres.to(pos.dtype)[top] + off.gather(1, top[..., None].expand(-1, -1, 2))
                goals.append(g.transpose(0, 1) + pos[None, :, T_REF])
            else:
                hq = h.mean(1)
                for _ in range(n_cell):
                    z = torch.randn(n, cfg.latent, device=pos.device, dtype=pos.dtype)
                    goals.append((self._decode_goal(z, hq)[1] + pos[:, T_REF])[None])
        goals_t = torch.cat(goals, 0)  # (K, N, 2)
        k = goals_t.shape[0]
        traj = self.rollout(feats, cells[:, -1], ref, goals_t, scenes, sid, group)
        return {"traj": traj, "goals": goals_t[:k]}

    @torch.no_grad()
    def rollout(self, feats, last_cells, ref, goals, scenes, sid, group) -> torch.Tensor:
        """Roll out 12 steps towards each of the K goals (K, N, 2): (K, N, 12, 2)."""
        k, n, _ = goals.shape
        rep = lambda x: x.unsqueeze(0).expand(k, *x.shape).reshape(k * n, *x.shape[1:])  # noqa: E731
        feats, cells, ref_k, sid_k = rep(feats), rep(last_cells), rep(ref), rep(sid)
        group_k = (rep(group) * k + torch.arange(k, device=group.device).repeat_interleave(n)).long()
        goal_feat = self._goal_feature(ref_k, goals.reshape(k * n, 2), scenes, sid_k)
        prev = ref_k[:, :2].clone()
        out = []
        for f in range(OBS, OBS + PRED):
            hist = self.encoder(feats, group_k)  # frames 0..f-1, causal
            q = self._step_queries(ref_k, prev, torch.full((k * n,), f, device=prev.device), cells)
            conf, off = self._step_head(q, hist, None, goal_feat)
            best = conf.argmax(-1)
            step = self.step_centres.to(prev.dtype)[best] + off.gather(1, best[:, None, None].expand(-1, 1, 2))[:, 0]
            new = prev + step
            cells, point = self.step_scene(scenes, sid_k, new)
            shift = torch.cat([new - ref_k[:, :2], torch.full_like(new[:, :1], float(f - T_REF))], -1)
            feats = torch.cat([feats, self.cell_feature(ref_k, shift, new - prev, point)[:, None]], 1)
            out.append(new)
            prev = new
        return torch.stack(out, 1).view(k, n, PRED, 2)


def weighted_smooth_l1(pred: torch.Tensor, target: torch.Tensor, wm: torch.Tensor) -> torch.Tensor:
    """SmoothL1 (beta 1, mean over all elements) of (w*m) * target vs (w*m) * pred: the weights act inside."""
    return F.smooth_l1_loss(wm * pred, wm * target, beta=1.0)


def kl_normal(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """KL(N(mu, sigma^2) || N(0, I)) summed over latent dims, averaged over the rest."""
    return (-0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(-1)).mean()
