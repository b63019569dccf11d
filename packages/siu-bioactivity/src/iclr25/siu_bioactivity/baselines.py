"""Featuriser and the three reference models of the redefined task (spec §4, §6a).

- `PocketOnlyModel`: input = the pocket descriptor only. It computes ONE prediction per pocket and broadcasts it,
  so its predictions are exactly constant within a pocket and its Pearson* is undefined (NaN), never rounding noise.
- `PocketLigandModel`: pocket + ligand descriptors + the 60-number interaction fingerprint of one docked pose.
- `LigandOnlyModel`: the ligand descriptor only (reviewer question).
Each holds one regressor per label type (ridge on standardised features, lambda = 0.01 n_train; or an optional
torch MLP with masked MSE and one head per type).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from iclr25.siu_bioactivity.data import LIGAND_ELEMENTS, POCKET_ELEMENTS, ComplexSet
from iclr25.siu_bioactivity.formats import ligand_element, parse_source, pocket_element

RADIAL_EDGES = np.arange(0.0, 12.01, 2.0)  # 0, 2, ..., 12 A
CONTACT_EDGES = (0.0, 3.5, 5.0, 8.0)  # interaction fingerprint distance bins
N_POCKET, N_LIGAND, N_INTER = 4 + 6 + 1, 5 + 1, 4 * 5 * 3


class ComplexFeaturizer:
    """Deterministic, vectorised features (spec §6a): pocket descriptor (element fractions C/N/O/S, radial histogram
    of distances to the pocket centroid with edges 0,2,...,12 A as fractions, n_atoms/100; 11 numbers), ligand
    descriptor (element counts C/N/O/F/Cl, n_atoms; 6), interaction fingerprint (pocket element x ligand element
    pair counts in [0,3.5), [3.5,5), [5,8) A; 60) of one pose. `contact_edges` replaces the fingerprint's distance
    bins (a diagnostic of the study; the default is the spec's)."""

    def __init__(self, contact_edges: tuple[float, ...] = CONTACT_EDGES) -> None:
        edges = tuple(float(e) for e in contact_edges)
        if len(edges) < 2 or any(b <= a for a, b in itertools.pairwise(edges)) or edges[0] < 0:
            raise ValueError(f"contact_edges must be >= 2 increasing distances from >= 0, got {contact_edges}")
        self.contact_edges = edges
        self.n_bins = len(edges) - 1
        self.n_inter = 4 * 5 * self.n_bins

    def pocket(self, el: np.ndarray, xyz: np.ndarray) -> np.ndarray:
        """(P, 11) from padded pocket elements (P, n) (-1 pad) and coordinates (P, n, 3)."""
        mask = el >= 0
        n = mask.sum(1)
        frac = np.stack([(el == k).sum(1) for k in range(4)], 1) / n[:, None]
        centroid = (xyz * mask[..., None]).sum(1) / n[:, None]
        d = np.linalg.norm(xyz - centroid[:, None], axis=-1)
        hist = (
            np.stack(
                [(mask & (d >= lo) & (d < hi)).sum(1) for lo, hi in itertools.pairwise(RADIAL_EDGES)],
                1,
            )
            / n[:, None]
        )
        return np.concatenate([frac, hist, n[:, None] / 100.0], 1)

    def ligand(self, el: np.ndarray) -> np.ndarray:
        """(B, 6) from padded ligand elements (B, n)."""
        counts = np.stack([(el == k).sum(1) for k in range(5)], 1)
        return np.concatenate([counts, (el >= 0).sum(1)[:, None]], 1).astype(np.float64)

    def interaction(self, pel: np.ndarray, pxyz: np.ndarray, lel: np.ndarray, lxyz: np.ndarray) -> np.ndarray:
        """(B, 60) pair counts from padded pockets (B, Np), (B, Np, 3) and poses (B, Nl), (B, Nl, 3)."""
        nb, ni = self.n_bins, self.n_inter
        out = np.zeros((len(pel), ni))
        for s in range(0, len(pel), 512):
            sl = slice(s, s + 512)
            d = np.linalg.norm(lxyz[sl, :, None] - pxyz[sl, None], axis=-1)  # (b, Nl, Np)
            b = np.digitize(d, self.contact_edges) - 1  # 0 .. nb-1 inside; nb beyond the last edge
            pe = np.broadcast_to(pel[sl][:, None, :], d.shape)
            le = np.broadcast_to(lel[sl][:, :, None], d.shape)
            ok = (pe >= 0) & (le >= 0) & (b >= 0) & (b < nb)
            code = (pe * 5 + le) * nb + b
            rows = np.broadcast_to(np.arange(d.shape[0])[:, None, None], d.shape)
            flat = rows[ok] * ni + code[ok]
            out[sl] = np.bincount(flat, minlength=d.shape[0] * ni).reshape(d.shape[0], ni)
        return out

    def transform(self, cs: ComplexSet, rng: np.random.Generator | None = None) -> dict[str, np.ndarray]:
        """Features of a ComplexSet: one agreeing pose per complex (random with `rng`, else the first)."""
        pk = cs.pockets
        pocket_table = self.pocket(pk.elements, pk.coords)
        pose = cs.pose(rng)
        pidx = cs.pocket_index
        return {
            "pocket": pocket_table[pidx],
            "ligand": self.ligand(cs.lig_el),
            "interaction": self.interaction(pk.elements[pidx], pk.coords[pidx], cs.lig_el, pose),
        }

    def transform_records(self, records: list[dict[str, Any]], conformation: int = 0) -> dict[str, np.ndarray]:
        """Features of official-format records (elements parsed as the official code; others ignored)."""
        P, L = max(len(r["pocket_atoms"]) for r in records), max(len(r["atoms"]) for r in records)
        pel, pxyz = np.full((len(records), P), -1), np.zeros((len(records), P, 3))
        lel, lxyz = np.full((len(records), L), -1), np.zeros((len(records), L, 3))
        for i, r in enumerate(records):
            pe = [pocket_element(a) for a in r["pocket_atoms"]]
            pel[i, : len(pe)] = [POCKET_ELEMENTS.index(e) if e in POCKET_ELEMENTS else -1 for e in pe]
            pxyz[i, : len(pe)] = np.asarray(r["pocket_coordinates"], dtype=np.float64)
            le = [ligand_element(a) for a in r["atoms"]]
            lel[i, : len(le)] = [LIGAND_ELEMENTS.index(e) if e in LIGAND_ELEMENTS else -1 for e in le]
            coords = r["coordinates"]
            c = coords[min(conformation, len(coords) - 1)] if isinstance(coords, list) else coords
            lxyz[i, : len(le)] = np.asarray(c, dtype=np.float64)
        return {
            "pocket": self.pocket(pel, pxyz),
            "ligand": self.ligand(lel),
            "interaction": self.interaction(pel, pxyz, lel, lxyz),
        }


def pocket_ids_of(records: list[dict[str, Any]]) -> np.ndarray:
    """The pocket (PDB) id of each record."""
    return np.asarray([parse_source(r["source_data"])[1] for r in records])


# ------------------------------------------------------------------------------------------ regressors
class RidgeHeads:
    """One ridge regressor per label type on standardised features: w = (X'X + lambda I)^-1 X'y, lambda = c n."""

    def __init__(self, penalty: float = 0.01) -> None:
        self.penalty = penalty
        self.params: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, float]] = {}

    def fit(self, X: np.ndarray, Y: np.ndarray) -> RidgeHeads:
        """Fit each column of Y (N, T) on its labelled rows (> 0)."""
        for t in range(Y.shape[1]):
            m = Y[:, t] > 0
            if m.sum() < 2:
                continue
            x, y = X[m], Y[m, t]
            mu, sd = x.mean(0), x.std(0)
            sd = np.where(sd > 0, sd, 1.0)
            z = (x - mu) / sd
            lam = self.penalty * len(y)
            w = np.linalg.solve(z.T @ z + lam * np.eye(z.shape[1]), z.T @ (y - y.mean()))
            self.params[t] = (mu, sd, w, float(y.mean()))
        return self

    def predict(self, X: np.ndarray, n_types: int) -> np.ndarray:
        """(N, T) predictions; NaN for types never seen in training."""
        out = np.full((len(X), n_types), np.nan)
        for t, (mu, sd, w, b) in self.params.items():
            out[:, t] = ((X - mu) / sd) @ w + b
        return out


class MLPHeads:
    """Optional torch MLP: 2 hidden layers (ReLU), one head per label type, masked MSE (targets standardised per
    type), full-batch Adam."""

    def __init__(
        self, hidden: int = 64, epochs: int = 200, lr: float = 1e-3, weight_decay: float = 1e-4, seed: int = 0
    ) -> None:
        self.hidden, self.epochs, self.lr, self.weight_decay, self.seed = hidden, epochs, lr, weight_decay, seed

    def fit(self, X: np.ndarray, Y: np.ndarray) -> MLPHeads:
        """Train on (N, F) features and (N, T) labels (-1 missing)."""
        import torch

        from iclr25.siu_bioactivity.metrics import masked_mse

        torch.manual_seed(self.seed)
        self.mu, self.sd = X.mean(0), np.where(X.std(0) > 0, X.std(0), 1.0)
        m = Y > 0
        self.ymu = np.array([Y[m[:, t], t].mean() if m[:, t].any() else 0.0 for t in range(Y.shape[1])])
        self.ysd = np.array([Y[m[:, t], t].std() + 1e-6 if m[:, t].sum() > 1 else 1.0 for t in range(Y.shape[1])])
        self.seen = m.any(0)
        x = torch.tensor((X - self.mu) / self.sd, dtype=torch.float32)
        y = torch.tensor(np.where(m, (Y - self.ymu) / self.ysd, -1e9), dtype=torch.float32)
        # masked_mse masks target >= 0; standardised targets can be negative, so mask explicitly via a shift
        mask = torch.tensor(m, dtype=torch.float32)
        self.net = torch.nn.Sequential(
            torch.nn.Linear(X.shape[1], self.hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(self.hidden, self.hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(self.hidden, Y.shape[1]),
        )
        opt = torch.optim.Adam(self.net.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        shift = 100.0  # masked_mse(pred + s, y + s) with missing -> -1: the official mask rule on shifted targets
        y_shift = torch.where(mask > 0, y + shift, torch.full_like(y, -1.0))
        for _ in range(self.epochs):
            opt.zero_grad()
            loss = masked_mse(self.net(x) + shift, y_shift)
            loss.backward()
            opt.step()
        return self

    def predict(self, X: np.ndarray, n_types: int) -> np.ndarray:
        """(N, T) predictions in label units; NaN for types never seen."""
        import torch

        with torch.no_grad():
            z = self.net(torch.tensor((X - self.mu) / self.sd, dtype=torch.float32)).double().numpy()
        out = z * self.ysd + self.ymu
        out[:, ~self.seen] = np.nan
        return out


def _heads(model: str, penalty: float, mlp: dict[str, Any] | None) -> Any:
    if model == "ridge":
        return RidgeHeads(penalty)
    if model == "mlp":
        return MLPHeads(**(mlp or {}))
    raise ValueError(f"model must be one of ridge, mlp; got {model!r}")


class _Model:
    parts: tuple[str, ...] = ()

    def __init__(self, model: str = "ridge", penalty: float = 0.01, mlp: dict[str, Any] | None = None) -> None:
        self.heads = _heads(model, penalty, mlp)

    def _x(self, feats: dict[str, np.ndarray]) -> np.ndarray:
        return np.concatenate([feats[p] for p in self.parts], 1)

    def fit(self, feats: dict[str, np.ndarray], labels: np.ndarray) -> _Model:
        """Fit on a features dict (see `ComplexFeaturizer`) and labels (N, 5) in LABEL_TYPES order."""
        self.n_types = labels.shape[1]
        self.heads.fit(self._x(feats), labels)
        return self

    def predict(self, feats: dict[str, np.ndarray], pocket_ids: Any = None) -> np.ndarray:
        """(N, 5) predictions."""
        return self.heads.predict(self._x(feats), self.n_types)


class PocketLigandModel(_Model):
    """Pocket + ligand descriptors + interaction fingerprint."""

    parts = ("pocket", "ligand", "interaction")


class LigandOnlyModel(_Model):
    """Ligand descriptor only."""

    parts = ("ligand",)


class PocketOnlyModel(_Model):
    """Pocket descriptor only; one prediction per pocket, broadcast to its complexes (exactly constant)."""

    parts = ("pocket",)

    def predict(self, feats: dict[str, np.ndarray], pocket_ids: Any = None) -> np.ndarray:
        """(N, 5): computed once per pocket (first row of each id) and broadcast; `pocket_ids` is required."""
        if pocket_ids is None:
            raise ValueError("PocketOnlyModel.predict needs pocket_ids (one prediction per pocket)")
        _, first, inverse = np.unique(np.asarray(pocket_ids), return_index=True, return_inverse=True)
        per_pocket = self.heads.predict(self._x(feats)[first], self.n_types)
        return per_pocket[inverse]


MODEL_CLASSES = {"pocket": PocketOnlyModel, "complex": PocketLigandModel, "ligand": LigandOnlyModel}
