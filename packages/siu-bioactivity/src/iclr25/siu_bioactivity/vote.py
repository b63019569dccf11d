"""Complex construction (spec §3.4, a reconstruction: the vote is described in the paper, not in its code): dock
each ligand with three programs and keep a complex only if >= 2 top poses agree within 2 A RMSD. The docked poses
share the receptor frame, so RMSD is computed without superposition; a symmetry-corrected RMSD (RDKit's
`CalcRMS`, spyrmsd) can be passed in as a callable."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np


def rmsd(a: np.ndarray, b: np.ndarray) -> float:
    """Plain RMSD of two poses with the same atom order, no superposition: sqrt(mean_i |a_i - b_i|^2)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"poses must both be (n_atoms, 3) arrays of one molecule, got {a.shape} and {b.shape}")
    return float(np.sqrt(np.mean(np.sum((a - b) ** 2, axis=1))))


@dataclass
class VoteResult:
    """The outcome of `majority_vote`: accepted or not, the agreeing programs, their poses and consensus."""

    accepted: bool
    agreeing: tuple[str, ...]
    poses: list[np.ndarray]
    consensus: np.ndarray | None
    pairwise_rmsd: np.ndarray  # (P, P) over `programs`
    programs: tuple[str, ...] = field(default_factory=tuple)


def majority_vote(
    poses: Mapping[str, np.ndarray | None],
    rmsd_thr: float = 2.0,
    min_agree: int = 2,
    symmetric_rmsd: Callable[[np.ndarray, np.ndarray], float] | None = None,
) -> VoteResult:
    """Keep a complex iff at least `min_agree` programs' top poses agree pairwise within `rmsd_thr` A.

    The agreeing set is the largest clique of the graph "RMSD <= thr"; ties go to the smallest mean pairwise RMSD,
    then to the alphabetically first set. A program whose pose is None (it failed to dock) agrees with nobody.
    Deterministic and invariant to the order of `poses`."""
    progs = tuple(sorted(poses))
    dist = symmetric_rmsd or rmsd
    n = len(progs)
    R = np.full((n, n), np.inf)
    for i in range(n):
        if poses[progs[i]] is not None:
            R[i, i] = 0.0
    for i, j in itertools.combinations(range(n), 2):
        a, b = poses[progs[i]], poses[progs[j]]
        if a is not None and b is not None:
            R[i, j] = R[j, i] = float(dist(np.asarray(a), np.asarray(b)))
    best: tuple[int, ...] = ()
    for size in range(n, 0, -1):
        cands = [c for c in itertools.combinations(range(n), size) if all(R[i, j] <= rmsd_thr for i in c for j in c)]
        if cands:
            best = min(cands, key=lambda c: (_mean_pair(R, c), c))
            break
    if len(best) < min_agree:
        return VoteResult(False, tuple(progs[i] for i in best), [], None, R, progs)
    chosen = [np.asarray(poses[progs[i]], dtype=np.float64) for i in best]
    return VoteResult(True, tuple(progs[i] for i in best), chosen, np.mean(chosen, axis=0), R, progs)


def _mean_pair(R: np.ndarray, c: tuple[int, ...]) -> float:
    pairs = list(itertools.combinations(c, 2))
    return float(np.mean([R[i, j] for i, j in pairs])) if pairs else 0.0


def vote_batch(
    poses: np.ndarray, atom_mask: np.ndarray, ok: np.ndarray, rmsd_thr: float = 2.0, min_agree: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """`majority_vote` for a batch, vectorised: poses (B, P, n, 3) padded to n atoms (`atom_mask` (B, n)), `ok`
    (B, P) = the program returned a pose; programs in alphabetical order along P. Returns (accepted (B,),
    agreeing (B, P) bool)."""
    B, P = poses.shape[:2]
    m = atom_mask.astype(np.float64)
    n_atoms = m.sum(1)
    R = np.full((B, P, P), np.inf)
    for i, j in itertools.combinations(range(P), 2):
        d2 = ((poses[:, i] - poses[:, j]) ** 2).sum(-1)
        r = np.sqrt((d2 * m).sum(1) / n_atoms)
        r = np.where(ok[:, i] & ok[:, j], r, np.inf)
        R[:, i, j] = R[:, j, i] = r
    best_size = np.zeros(B, dtype=int)
    best_mean = np.full(B, np.inf)
    agreeing = np.zeros((B, P), dtype=bool)
    for size in range(P, 0, -1):
        for c in itertools.combinations(range(P), size):  # lexicographic = alphabetical tie-break
            clique = np.all([ok[:, i] for i in c], axis=0)
            pairs = list(itertools.combinations(c, 2))
            if pairs:
                clique &= np.all([R[:, i, j] <= rmsd_thr for i, j in pairs], axis=0)
                mean = np.mean([np.where(np.isfinite(R[:, i, j]), R[:, i, j], 0.0) for i, j in pairs], axis=0)
            else:
                mean = np.zeros(B)
            better = clique & ((best_size < size) | ((best_size == size) & (mean < best_mean)))
            best_size = np.where(better, size, best_size)
            best_mean = np.where(better, mean, best_mean)
            sel = np.zeros(P, dtype=bool)
            sel[list(c)] = True
            agreeing[better] = sel
    return best_size >= min_agree, agreeing


# ------------------------------------------------------------------------------------------ docking programs
class DockingProgram(Protocol):
    """A docking program: its name and `dock(receptor, ligand, box) -> top pose (n_atoms, 3)` or None on failure."""

    name: str

    def dock(self, receptor: Any, ligand: Any, box: Any = None) -> np.ndarray | None:
        """The top-ranked pose of `ligand` in `receptor`'s frame."""
        ...


def random_rotations(n: int, rng: np.random.Generator) -> np.ndarray:
    """n uniformly random 3x3 rotation matrices (unit quaternions from a 4-D Gaussian)."""
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
            np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
            np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
        ],
        1,
    )


@dataclass
class SimulatedDocking:
    """A simulated program for tests and the quick study: the true pose plus Gaussian noise whose expected RMSD to
    the truth is `sigma` (per-coordinate std sigma/sqrt(3); spec §6a convention), or, with probability `p_fail`,
    a failure = a random rotation about the ligand centroid plus a uniform shift in +-`box` A."""

    name: str
    sigma: float
    p_fail: float
    box: float = 6.0
    seed: int = 0

    def __post_init__(self) -> None:
        self._rng = np.random.default_rng(self.seed)

    def dock(self, receptor: Any, ligand: np.ndarray, box: Any = None) -> np.ndarray:
        """`ligand` is the true pose (n, 3); the receptor is not used by the simulation."""
        poses, _ = self.dock_batch(np.asarray(ligand, dtype=np.float64)[None], None, self._rng)
        return poses[0]

    def dock_batch(
        self, true: np.ndarray, atom_mask: np.ndarray | None, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """Poses (B, n, 3) for true poses (B, n, 3) padded with `atom_mask` (B, n); also the failure flags (B,)."""
        B, n, _ = true.shape
        m = np.ones((B, n)) if atom_mask is None else atom_mask.astype(np.float64)
        noisy = true + rng.normal(scale=self.sigma / np.sqrt(3.0), size=true.shape)
        failed = rng.random(B) < self.p_fail
        centre = (true * m[..., None]).sum(1) / m.sum(1)[:, None]
        rot = random_rotations(B, rng)
        shift = rng.uniform(-self.box, self.box, size=(B, 3))
        placed = np.einsum("bij,bnj->bni", rot, true - centre[:, None]) + (centre + shift)[:, None]
        out = np.where(failed[:, None, None], placed, noisy)
        return out * m[..., None], failed


class VinaDocking:
    """AutoDock Vina adapter (optional extra `[docking]`: `vina`, `meeko`): receptor and ligand as PDBQT text,
    `box` = (center xyz, size xyz). Untested here (the packages are not installed); Glide and GOLD are commercial."""

    name = "vina"

    def __init__(self, exhaustiveness: int = 8, seed: int = 0) -> None:
        try:
            import vina  # noqa: F401
        except ModuleNotFoundError as e:
            raise ModuleNotFoundError(
                "VinaDocking needs the optional packages vina and meeko: pip install vina meeko", name="vina"
            ) from e
        self.exhaustiveness, self.seed = exhaustiveness, seed

    def dock(self, receptor: str, ligand: str, box: Any = None) -> np.ndarray | None:
        """The top pose's heavy-atom coordinates, or None when Vina finds no pose."""
        from vina import Vina

        if box is None:
            raise ValueError("VinaDocking.dock needs box = (center xyz, size xyz)")
        v = Vina(sf_name="vina", seed=self.seed, verbosity=0)
        v.set_receptor(rigid_pdbqt_filename=receptor)
        v.set_ligand_from_string(ligand)
        v.compute_vina_maps(center=list(box[0]), box_size=list(box[1]))
        v.dock(exhaustiveness=self.exhaustiveness, n_poses=1)
        text = v.poses(n_poses=1)
        xyz = [
            [float(line[30:38]), float(line[38:46]), float(line[46:54])]
            for line in text.splitlines()
            if line.startswith(("ATOM", "HETATM")) and line[77:79].strip() not in ("H", "HD")
        ]
        return np.asarray(xyz) if xyz else None
