"""The SIU-like generator of the quick study (spec §6a), in padded arrays and in the official record format.

Pockets: 60-120 atoms (C/N/O/S, PDB-style names) in a shell 4-10 A around the cavity centre; element probabilities
softmax((1, 0.6 u1, 0.6 u2, -1.5 + 0.5 u3)), u ~ N(0, I3). Pocket offset from the realised composition:
b_p = 6 + a . s_p + N(0, 0.3^2), s_p = standardised N/O/S fractions (population constants), |a| set so that the
between-pocket std is 1.2 pX. Ligands: 10-30 heavy atoms (C, N, O, F, Cl) uniform in a ball of radius 1.3 n^(1/3);
true pose = random rotation, centred at the cavity centre + N(0, 0.7^2). Labels: y_t = b_p + gamma phi +
offset_t + eps_t, phi = standardised contact score #(N/O-N/O < 3.5 A) + 0.3 #(C-C < 4.5 A) - #(any < 2.2 A),
gamma such that the within-pocket std of gamma phi is 0.6 pX; 1-2 of ic50/ki/kd/ec50 per complex. Three simulated
dockers + the 2-of-3 vote choose the poses a model sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from iclr25.siu_bioactivity.formats import LABEL_TYPES, MISSING
from iclr25.siu_bioactivity.vote import SimulatedDocking, random_rotations, vote_batch

POCKET_ELEMENTS: tuple[str, ...] = ("C", "N", "O", "S")
LIGAND_ELEMENTS: tuple[str, ...] = ("C", "N", "O", "F", "Cl")
LIGAND_PROBS = np.array([0.70, 0.12, 0.12, 0.03, 0.03])
PDB_NAMES = {
    "C": ("CA", "CB", "C", "CG", "CD", "CE", "CZ"),
    "N": ("N", "ND1", "NE", "NZ", "NE2", "NH1"),
    "O": ("O", "OG", "OD1", "OE1", "OH"),
    "S": ("SG", "SD"),
}
TYPE_OFFSETS = {"ic50": 0.0, "ki": 0.3, "kd": 0.2, "ec50": -0.2}  # spec §6a
MAX_POCKET, MAX_LIGAND = 120, 30
OFFSET_DIRECTION = np.array([1.0, 0.6, -0.7])  # a / |a| over (N, O, S)
PROGRAMS: tuple[str, ...] = ("dock_a", "dock_b", "dock_c")  # simulated; alphabetical = vote order


def _element_probs(u: np.ndarray) -> np.ndarray:
    logits = np.stack([np.ones(len(u)), 0.6 * u[:, 0], 0.6 * u[:, 1], -1.5 + 0.5 * u[:, 2]], 1)
    e = np.exp(logits - logits.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _sample_compositions(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    sizes = rng.integers(60, MAX_POCKET + 1, size=n)
    probs = _element_probs(rng.normal(size=(n, 3)))
    el = np.full((n, MAX_POCKET), -1)
    for i in range(n):  # one categorical draw per atom
        el[i, : sizes[i]] = rng.choice(4, size=sizes[i], p=probs[i])
    return el, sizes


@lru_cache(maxsize=1)
def population_constants() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, std, correlation) of the N/O/S fractions over the pocket population (fixed-seed Monte Carlo)."""
    rng = np.random.default_rng(20250101)
    el, sizes = _sample_compositions(20000, rng)
    frac = np.stack([(el == k).sum(1) / sizes for k in (1, 2, 3)], 1)
    mu, sd = frac.mean(0), frac.std(0)
    return mu, sd, np.corrcoef(((frac - mu) / sd).T)


@dataclass
class Pockets:
    """Padded pocket arrays: elements (P, 120) (-1 = padding), coordinates (P, 120, 3), sizes, centres, offsets."""

    elements: np.ndarray
    coords: np.ndarray
    sizes: np.ndarray
    centres: np.ndarray
    offsets: np.ndarray
    uniprot: list[str]
    pdb: list[str]

    def __len__(self) -> int:
        return len(self.sizes)


def make_pockets(n: int, rng: np.random.Generator, prefix: str, offset_std: float, offset_noise: float) -> Pockets:
    """n pockets: composition, shell geometry, and the offset b_p from the realised composition."""
    el, sizes = _sample_compositions(n, rng)
    direction = rng.normal(size=(n, MAX_POCKET, 3))
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    radius = rng.uniform(4.0, 10.0, size=(n, MAX_POCKET, 1))
    centres = rng.normal(scale=20.0, size=(n, 3))
    mask = el >= 0
    coords = (direction * radius + centres[:, None]) * mask[..., None]
    mu, sd, corr = population_constants()
    frac = np.stack([(el == k).sum(1) / sizes for k in (1, 2, 3)], 1)
    s = (frac - mu) / sd
    a = OFFSET_DIRECTION / np.sqrt(OFFSET_DIRECTION @ corr @ OFFSET_DIRECTION)  # unit variance of a . s
    a = a * np.sqrt(offset_std**2 - offset_noise**2)
    offsets = 6.0 + s @ a + rng.normal(scale=offset_noise, size=n)
    uniprot = [f"SYN{prefix.upper()}{i:05d}" for i in range(n)]
    pdb = [f"{prefix}{i:04d}" for i in range(n)]
    return Pockets(el, coords, sizes, centres, offsets, uniprot, pdb)


def make_ligands(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(elements (n, 30), local coordinates (n, 30, 3) centred at 0, sizes (n,)) of n random ligands."""
    sizes = rng.integers(10, MAX_LIGAND + 1, size=n)
    mask = np.arange(MAX_LIGAND)[None] < sizes[:, None]
    el = np.where(mask, rng.choice(5, size=(n, MAX_LIGAND), p=LIGAND_PROBS), -1)
    d = rng.normal(size=(n, MAX_LIGAND, 3))
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    r = 1.3 * np.cbrt(sizes)[:, None, None] * np.cbrt(rng.random((n, MAX_LIGAND, 1)))
    xyz = d * r * mask[..., None]
    centre = xyz.sum(1) / sizes[:, None]
    return el, (xyz - centre[:, None]) * mask[..., None], sizes


def contact_score(pocket_el: np.ndarray, pocket_xyz: np.ndarray, lig_el: np.ndarray, lig_xyz: np.ndarray) -> np.ndarray:
    """Raw contact score per complex (spec §6a): #(N/O-N/O < 3.5) + 0.3 #(C-C < 4.5) - #(any pair < 2.2).
    Inputs padded with element -1: (B, Np), (B, Np, 3), (B, Nl), (B, Nl, 3)."""
    out = np.empty(len(pocket_el))
    for s in range(0, len(pocket_el), 512):
        sl = slice(s, s + 512)
        d = np.linalg.norm(lig_xyz[sl, :, None] - pocket_xyz[sl, None], axis=-1)
        pe, le = pocket_el[sl][:, None, :], lig_el[sl][:, :, None]
        valid = (pe >= 0) & (le >= 0)
        polar = ((pe == 1) | (pe == 2)) & ((le == 1) | (le == 2))
        cc = (pe == 0) & (le == 0)
        out[sl] = (
            (valid & polar & (d < 3.5)).sum((1, 2))
            + 0.3 * (valid & cc & (d < 4.5)).sum((1, 2))
            - (valid & (d < 2.2)).sum((1, 2))
        )
    return out


@dataclass
class ComplexSet:
    """Accepted complexes (after the vote) of one regime, padded: pocket index into `pockets`, ligand elements,
    agreeing poses (B, P, 30, 3) with `agreeing` (B, P), true pose, labels (B, 5) in LABEL_TYPES order (-1 missing)."""

    pockets: Pockets
    pocket_index: np.ndarray
    lig_el: np.ndarray
    lig_sizes: np.ndarray
    true_pose: np.ndarray
    poses: np.ndarray
    agreeing: np.ndarray
    labels: np.ndarray
    phi: np.ndarray
    vote: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.pocket_index)

    @property
    def pocket_ids(self) -> np.ndarray:
        """The PDB id of each complex's pocket."""
        return np.asarray(self.pockets.pdb)[self.pocket_index]

    def pose(self, rng: np.random.Generator | None) -> np.ndarray:
        """One agreeing pose per complex: uniformly random (training, as the official loader) or the first (eval)."""
        if rng is None:
            choice = self.agreeing.argmax(1)
        else:
            w = self.agreeing / self.agreeing.sum(1, keepdims=True)
            choice = (rng.random(len(w))[:, None] > np.cumsum(w, 1)).sum(1)
        return self.poses[np.arange(len(self)), choice]

    def subset(self, idx: np.ndarray) -> ComplexSet:
        """The complexes at `idx`."""
        idx = np.asarray(idx, dtype=int)
        return ComplexSet(
            self.pockets,
            self.pocket_index[idx],
            self.lig_el[idx],
            self.lig_sizes[idx],
            self.true_pose[idx],
            self.poses[idx],
            self.agreeing[idx],
            self.labels[idx],
            self.phi[idx],
            self.vote,
        )

    def to_records(self) -> list[dict[str, Any]]:
        """The complexes in the official record layout (all agreeing poses as `coordinates`)."""
        out = []
        counters: dict[int, int] = {}
        for i in range(len(self)):
            p, n = int(self.pocket_index[i]), int(self.lig_sizes[i])
            k = counters[p] = counters.get(p, 0) + 1
            names = [LIGAND_ELEMENTS[e] + str(j + 1) for j, e in enumerate(self.lig_el[i, :n])]
            m = int(self.pockets.sizes[p])
            pnames = [
                PDB_NAMES[POCKET_ELEMENTS[e]][j % len(PDB_NAMES[POCKET_ELEMENTS[e]])]
                for j, e in enumerate(self.pockets.elements[p, :m])
            ]
            out.append(
                {
                    "atoms": names,
                    "coordinates": [self.poses[i, q, :n].astype(np.float32) for q in np.flatnonzero(self.agreeing[i])],
                    "pocket_atoms": pnames,
                    "pocket_coordinates": self.pockets.coords[p, :m].astype(np.float32),
                    "source_data": f"{self.pockets.uniprot[p]},{self.pockets.pdb[p]}",
                    "label": {t: float(v) for t, v in zip(LABEL_TYPES, self.labels[i], strict=True) if v >= 0},
                    "ik": f"SYNTHETIC-{self.pockets.pdb[p]}-{k}",
                    "smi": "",
                }
            )
        return out


@dataclass
class LabelModel:
    """The hidden truth shared by every regime of a seed: phi standardisation and gamma (from SIU-like train)."""

    phi_mean: float
    phi_std: float
    gamma: float


def _dock_and_vote(
    true: np.ndarray,
    mask: np.ndarray,
    rng: np.random.Generator,
    sigmas: tuple[float, ...],
    p_fail: tuple[float, ...],
    box: float,
    thr: float,
    min_agree: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """Dock every complex with the simulated programs, vote, and measure the vote against the truth."""
    progs = [
        SimulatedDocking(f"dock_{chr(97 + k)}", s, f, box) for k, (s, f) in enumerate(zip(sigmas, p_fail, strict=True))
    ]
    poses, failed = zip(*(p.dock_batch(true, mask, rng) for p in progs), strict=True)
    poses = np.stack(poses, 1)  # (B, P, n, 3)
    failed = np.stack(failed, 1)
    ok = np.ones_like(failed)  # a failed simulated program still returns a (wrong) pose
    accepted, agreeing = vote_batch(poses, mask, ok, thr, min_agree)
    m = mask.astype(np.float64)
    err = np.sqrt((((poses - true[:, None]) ** 2).sum(-1) * m[:, None]).sum(-1) / m.sum(1)[:, None])  # (B, P)
    good = (~failed).sum(1) >= min_agree
    stats = {
        "n": len(true),
        "accepted": int(accepted.sum()),
        "accept_rate": float(accepted.mean()),
        "n_two_successful": int(good.sum()),
        "accept_rate_two_successful": float(accepted[good].mean()) if good.any() else float("nan"),
        "agreeing_rmsd": float(err[accepted][agreeing[accepted]].mean()) if accepted.any() else float("nan"),
        "program_rmsd_on_accepted": {
            p.name: float(err[accepted, k].mean()) if accepted.any() else float("nan") for k, p in enumerate(progs)
        },
        "program_rmsd_all": {p.name: float(err[:, k].mean()) for k, p in enumerate(progs)},
        "program_sigma": {p.name: p.sigma for p in progs},
        "program_p_fail": {p.name: p.p_fail for p in progs},
    }
    return poses, agreeing, accepted, stats


def make_complexes(
    pockets: Pockets,
    ligands_per_pocket: int,
    rng: np.random.Generator,
    cfg: Any,
    label_model: LabelModel | None = None,
) -> tuple[ComplexSet, LabelModel]:
    """Ligands x pockets -> true poses -> labels -> simulated docking + vote -> accepted complexes. Without a
    `label_model` (the SIU-like training set), phi's pooled mean/std and gamma are set from these complexes."""
    P = len(pockets)
    pidx = np.repeat(np.arange(P), ligands_per_pocket)
    B = len(pidx)
    lig_el, local, lig_sizes = make_ligands(B, rng)
    mask = lig_el >= 0
    rot = random_rotations(B, rng)
    shift = pockets.centres[pidx] + rng.normal(scale=0.7, size=(B, 3))
    true = (np.einsum("bij,bnj->bni", rot, local) + shift[:, None]) * mask[..., None]
    raw = contact_score(pockets.elements[pidx], pockets.coords[pidx], lig_el, true)
    if label_model is None:
        mean, std = float(raw.mean()), float(raw.std()) or 1.0
        phi0 = (raw - mean) / std
        within = np.mean([phi0[pidx == p].var() for p in range(P)])
        label_model = LabelModel(mean, std, cfg.interaction_std / float(np.sqrt(within)))
    phi = (raw - label_model.phi_mean) / label_model.phi_std
    labels = np.full((B, len(LABEL_TYPES)), MISSING)
    n_types = rng.integers(1, 3, size=B)
    for b in range(B):
        for t in rng.choice(4, size=n_types[b], replace=False):
            name = LABEL_TYPES[t]
            labels[b, t] = (
                pockets.offsets[pidx[b]]
                + label_model.gamma * phi[b]
                + TYPE_OFFSETS[name]
                + rng.normal(scale=cfg.label_noise)
            )
    poses, agreeing, accepted, stats = _dock_and_vote(
        true, mask, rng, tuple(cfg.dock_sigma), tuple(cfg.dock_p_fail), cfg.fail_box, cfg.rmsd_threshold, cfg.min_agree
    )
    keep = np.flatnonzero(accepted)
    cs = ComplexSet(pockets, pidx, lig_el, lig_sizes, true, poses, agreeing, labels, phi, stats)
    return cs.subset(keep), label_model


def generate_siu_like(
    n_pockets: int = 150,
    ligands_per_pocket: int = 40,
    seed: int = 0,
    *,
    cfg: Any = None,
    prefix: str = "tr",
    label_model: LabelModel | None = None,
) -> tuple[ComplexSet, LabelModel]:
    """A generated SIU-like set (accepted complexes, hidden truth kept) of `n_pockets` x `ligands_per_pocket`."""
    if cfg is None:
        from iclr25.siu_bioactivity.config import Config

        cfg = Config()
    rng = np.random.default_rng(seed)
    pockets = make_pockets(n_pockets, rng, prefix, cfg.offset_std, cfg.offset_noise)
    return make_complexes(pockets, ligands_per_pocket, rng, cfg, label_model)


@dataclass
class World:
    """Everything one seed of the quick study uses: SIU-like train, PDBbind-like train, test, (matched)."""

    siu: ComplexSet
    pdbbind: ComplexSet
    test: ComplexSet
    matched: ComplexSet | None
    label_model: LabelModel


def make_world(cfg: Any, seed: int) -> World:
    """Generate one seed's sets (spec §6a): PDBbind-like = the first accepted complex(es) of each SIU-like pocket."""
    rng = np.random.default_rng([seed, 7])
    train_p = make_pockets(cfg.train_pockets, rng, "tr", cfg.offset_std, cfg.offset_noise)
    siu, lm = make_complexes(train_p, cfg.ligands_per_pocket, rng, cfg)
    test_p = make_pockets(cfg.test_pockets, rng, "te", cfg.offset_std, cfg.offset_noise)
    test, _ = make_complexes(test_p, cfg.test_ligands_per_pocket, rng, cfg, lm)
    first = []
    for p in np.unique(siu.pocket_index):
        first.extend(np.flatnonzero(siu.pocket_index == p)[: cfg.pdbbind_ligands_per_pocket])
    pdbbind = siu.subset(np.asarray(first))
    matched = None
    if cfg.matched_pockets:
        mp = make_pockets(cfg.matched_pockets, rng, "mt", cfg.offset_std, cfg.offset_noise)
        matched, _ = make_complexes(mp, 1, rng, cfg, lm)
    return World(siu, pdbbind, test, matched, lm)
