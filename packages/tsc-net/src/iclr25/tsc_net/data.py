"""Data of the TSC-Net reproduction: the spec §6a scene simulator (label maps, Dijkstra cost fields, stop-and-go
agents), and loaders for the real formats (Y-Net/TSC pickles + semantic masks, Social-GAN/ETH-UCY text files, raw SDD
annotations), all producing the Y-Net DataFrame (frame, trackId, x, y, sceneId, metaId; 20 rows per metaId).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from pandas.api.types import is_bool_dtype, is_numeric_dtype
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra

from iclr25.shared.files import write_text, write_with
from iclr25.shared.safeload import NUMPY_ARRAY_GLOBALS, UnsafeFileError, reading_file, restricted_pickle_load

CLIP_LEN = 20
N_CLASSES = 6
PAVEMENT, ROAD, GRASS, BUILDING, TREE, OTHER = range(6)
NON_WALKABLE = (BUILDING, TREE, OTHER)
TERRAIN_COST = {PAVEMENT: 1.0, ROAD: 1.5, GRASS: 4.0}
COLUMNS = ("frame", "trackId", "x", "y", "sceneId", "metaId")

# What a pickled pandas DataFrame of numbers and strings refers to (pandas 1.x-3.x spellings): the frame, its block
# manager and blocks, its indexes, string arrays, slices; plus NumPy's array reconstruction. Nothing else is imported.
DATAFRAME_GLOBALS: frozenset[tuple[str, str]] = NUMPY_ARRAY_GLOBALS | frozenset(
    {
        ("pandas", "DataFrame"),
        ("pandas.core.frame", "DataFrame"),
        ("pandas.core.internals.managers", "BlockManager"),
        ("pandas.core.internals.blocks", "new_block"),
        ("pandas.core.internals.blocks", "Block"),
        ("pandas.core.internals.blocks", "NumpyBlock"),
        ("pandas.core.internals.blocks", "ObjectBlock"),
        ("pandas.core.internals.blocks", "FloatBlock"),
        ("pandas.core.internals.blocks", "IntBlock"),
        ("pandas._libs.internals", "_unpickle_block"),
        ("pandas._libs.internals", "BlockPlacement"),
        ("pandas", "Index"),
        ("pandas", "RangeIndex"),
        ("pandas.core.indexes.base", "_new_Index"),
        ("pandas.core.indexes.base", "Index"),
        ("pandas.core.indexes.range", "RangeIndex"),
        ("pandas.core.indexes.numeric", "Int64Index"),
        ("pandas", "StringDtype"),
        ("pandas.core.arrays.string_", "StringDtype"),
        ("pandas.arrays", "StringArray"),
        ("pandas.core.arrays.string_", "StringArray"),
        ("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"),
        ("builtins", "slice"),
        ("__builtin__", "slice"),
        ("builtins", "object"),
        ("__builtin__", "object"),
        ("copyreg", "_reconstructor"),
        ("copy_reg", "_reconstructor"),
    }
)
# Text columns stored as pyarrow-backed strings (pandas >= 2 with pyarrow installed; pandas 3's default `str` dtype):
# the array classes, pandas' NA and the three pyarrow functions that rebuild an array from a type alias and raw byte buffers. These
# arrays are rebuilt without checks, so `load_ynet_pickle` validates every one (`validate(full=True)`: offsets inside
# the buffers, valid UTF-8) before the frame is used.
ARROW_STRING_GLOBALS: frozenset[tuple[str, str]] = frozenset(
    {
        ("pandas.arrays", "ArrowStringArray"),
        ("pandas.core.arrays.string_arrow", "ArrowStringArray"),
        ("pandas.core.arrays.string_arrow", "ArrowStringArrayNumpySemantics"),
        ("pyarrow.lib", "_restore_array"),
        ("pyarrow.lib", "py_buffer"),
        ("pyarrow.lib", "type_for_alias"),
        ("pandas", "NA"),  # the missing-value singleton of `string[pyarrow]` / `string[python]` dtypes
        ("builtins", "bytearray"),  # a pyarrow buffer's bytes in pickle protocols < 5
    }
)


# ------------------------------------------------------------------------------------------------ simulator
@dataclass
class SimScene:
    """One simulated scene: label map, exits (x, y) and one geodesic cost-to-exit field per exit."""

    scene_id: str
    mask: np.ndarray  # (H, W) uint8 labels
    exits: np.ndarray  # (E, 2) x, y pixel coordinates
    fields: np.ndarray  # (E, H, W) cost to each exit (finite everywhere; obstacles get a high cost)


def walkable(mask: np.ndarray) -> np.ndarray:
    """Boolean map of walkable pixels."""
    return ~np.isin(mask, NON_WALKABLE)


def pixel_of(xy: np.ndarray) -> np.ndarray:
    """The pixel (col, row) holding points (..., 2): floor, the same rounding in the simulator and the metrics."""
    return np.floor(xy).astype(np.int64)


def bilinear(field: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """Sample one field (H, W) at points (M, 2) bilinearly (pixel centres at +0.5), clamped at the borders."""
    return _sample(np.broadcast_to(field, (len(xy), *field.shape)), xy)


def cost_fields(mask: np.ndarray, exits: np.ndarray) -> np.ndarray:
    """Geodesic cost to each exit by Dijkstra on the 8-connected grid of walkable pixels (edge = length x mean
    terrain cost); obstacles and unreachable pixels get max + 50 so that the field pushes away from them."""
    h, w = mask.shape
    ok = walkable(mask)
    cost = np.ones(mask.shape)
    for label, c in TERRAIN_COST.items():
        cost[mask == label] = c
    idx = np.arange(h * w).reshape(h, w)
    rows, cols, vals = [], [], []
    for dy, dx in ((0, 1), (1, 0), (1, 1), (1, -1)):
        ys = slice(0, h - dy)
        xs = slice(max(0, -dx), w - max(0, dx))
        xs2 = slice(max(0, dx), w + min(0, dx))
        a, b = idx[ys, xs], idx[dy:, xs2]
        both = ok[ys, xs] & ok[dy:, xs2]
        length = np.hypot(dx, dy)
        wgt = length * (cost[ys, xs] + cost[dy:, xs2]) / 2
        rows.append(a[both])
        cols.append(b[both])
        vals.append(wgt[both])
    r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    graph = coo_matrix((v, (r, c)), shape=(h * w, h * w)).tocsr()
    src = pixel_of(exits)
    dist = dijkstra(graph, directed=False, indices=src[:, 1] * w + src[:, 0]).reshape(len(exits), h, w)
    finite = np.isfinite(dist)
    top = dist[finite].max() if finite.any() else 0.0
    return np.where(finite, dist, top + 50.0)


def random_scene(rng: np.random.Generator, size: int = 128, scene_id: str = "sim000") -> SimScene:
    """A label map with a road, grass patches, 2-5 buildings/trees and 4-6 exits on walkable border points."""
    for _ in range(100):
        mask = np.zeros((size, size), dtype=np.uint8)
        r = rng.integers(size // 5, 4 * size // 5)
        width = rng.integers(size // 12, size // 8)
        if rng.random() < 0.5:
            mask[r : r + width, :] = ROAD
        else:
            mask[:, r : r + width] = ROAD
        for _ in range(rng.integers(1, 4)):
            y, x = rng.integers(0, size - 20, 2)
            hh, ww = rng.integers(12, size // 3, 2)
            mask[y : y + hh, x : x + ww] = GRASS
        for _ in range(rng.integers(2, 6)):
            hh, ww = rng.integers(size // 10, size // 4, 2)
            y, x = rng.integers(8, size - 8 - hh), rng.integers(8, size - 8 - ww)
            mask[y : y + hh, x : x + ww] = BUILDING if rng.random() < 0.7 else TREE
        ok = walkable(mask)
        exits: list[np.ndarray] = []
        n_exits = int(rng.integers(4, 7))
        for _ in range(200):
            side, t = rng.integers(0, 4), rng.uniform(4, size - 4)
            p = {0: (t, 2.5), 1: (t, size - 2.5), 2: (2.5, t), 3: (size - 2.5, t)}[int(side)]
            p = np.array(p)
            col, row = pixel_of(p)
            if ok[row, col] and all(np.hypot(*(p - e)) > size / 5 for e in exits):
                exits.append(p)
            if len(exits) == n_exits:
                break
        if len(exits) < 4:
            continue
        ex = np.stack(exits)
        fields = cost_fields(mask, ex)
        # every exit must be reachable from every other exit
        src = pixel_of(ex)
        if (fields[:, src[:, 1], src[:, 0]] < fields.max() - 1).all():
            return SimScene(scene_id, mask, ex, fields)
    raise RuntimeError("could not generate a connected scene")


def _descent(fields: np.ndarray, goal: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Unit direction of steepest descent of each agent's goal field (central differences, bilinear)."""
    e = 0.75
    f = fields[goal]
    ex, ey = np.array([e, 0.0]), np.array([0.0, e])
    gx = _sample(f, pos + ex) - _sample(f, pos - ex)
    gy = _sample(f, pos + ey) - _sample(f, pos - ey)
    g = -np.stack([gx, gy], -1)
    return g / np.maximum(np.linalg.norm(g, axis=-1, keepdims=True), 1e-9)


def _sample(per_agent: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """Bilinear sample of per-agent fields (A, H, W) at (A, 2)."""
    h, w = per_agent.shape[-2:]
    u = np.clip(xy[:, 0] - 0.5, 0, w - 1)
    v = np.clip(xy[:, 1] - 0.5, 0, h - 1)
    x0, y0 = np.minimum(np.floor(u).astype(int), w - 2), np.minimum(np.floor(v).astype(int), h - 2)
    fx, fy = u - x0, v - y0
    a = np.arange(len(xy))
    return (
        per_agent[a, y0, x0] * (1 - fx) * (1 - fy) + per_agent[a, y0, x0 + 1] * fx * (1 - fy)
        + per_agent[a, y0 + 1, x0] * (1 - fx) * fy + per_agent[a, y0 + 1, x0 + 1] * fx * fy
    )  # fmt: skip


def _on_walkable(ok: np.ndarray, xy: np.ndarray) -> np.ndarray:
    h, w = ok.shape
    c = pixel_of(xy)
    inside = (c[:, 0] >= 0) & (c[:, 0] < w) & (c[:, 1] >= 0) & (c[:, 1] < h)
    res = np.zeros(len(xy), dtype=bool)
    res[inside] = ok[c[inside, 1], c[inside, 0]]
    return res


def simulate_agents(
    scene: SimScene, rng: np.random.Generator, steps: int = 160, irregular_frac: float = 0.3, spawn_rate: float = 0.3
) -> tuple[np.ndarray, np.ndarray]:
    """Goal-seeking agents (spec §6a): (positions (steps, A, 2) NaN when absent, irregular flags (A,)).

    Each step (0.4 s): move along -grad(cost to the agent's exit) at speed U(2, 5) px x multiplier, + repulsion
    from agents closer than 8 px + N(0, 0.3^2) jitter; a move onto a non-walkable pixel is retried without jitter,
    else the agent stays. Irregular agents resample their multiplier from {0.3, 1, 1.6} with probability 0.15.
    """
    ok = walkable(scene.mask)
    e = len(scene.exits)
    cap = int(steps * spawn_rate * 3 + 20)
    track = np.full((steps, cap, 2), np.nan)
    pos = np.zeros((cap, 2))
    goal = np.zeros(cap, dtype=int)
    speed = rng.uniform(2, 5, cap)
    mult = np.ones(cap)
    irregular = rng.random(cap) < irregular_frac
    alive = np.zeros(cap, dtype=bool)
    n = 0
    walk_px = np.argwhere(ok)

    def spawn(k: int, start: np.ndarray | None) -> None:
        nonlocal n
        for _ in range(k):
            if n >= cap:
                return
            if start is None:  # mid-scene start (initial population)
                row, col = walk_px[rng.integers(len(walk_px))]
                p = np.array([col + 0.5, row + 0.5])
                g = rng.integers(e)
            else:
                s = rng.integers(e)
                p = scene.exits[s] + rng.normal(0, 1.0, 2)
                if not _on_walkable(ok, p[None])[0]:
                    p = scene.exits[s].copy()
                g = (s + rng.integers(1, e)) % e
            pos[n], goal[n], alive[n] = p, g, True
            n += 1

    spawn(int(rng.integers(6, 12)), None)
    for t in range(steps):
        spawn(int(rng.poisson(spawn_rate)), np.zeros(2))
        a = np.flatnonzero(alive)
        if len(a) == 0:
            continue
        track[t, a] = pos[a]
        flip = irregular[a] & (rng.random(len(a)) < 0.15)
        mult[a[flip]] = rng.choice([0.3, 1.0, 1.6], flip.sum())
        d = _descent(scene.fields, goal[a], pos[a])
        diff = pos[a][:, None] - pos[a][None]
        dist = np.linalg.norm(diff, axis=-1) + np.eye(len(a)) * 1e9
        push = np.where(dist < 8, (8 - dist) / 8, 0.0)[..., None] * diff / np.maximum(dist, 1e-6)[..., None]
        rep = 0.5 * push.sum(1)
        base = pos[a] + (speed[a] * mult[a])[:, None] * d + rep
        new = base + rng.normal(0, 0.3, (len(a), 2))
        bad = ~_on_walkable(ok, new)
        new[bad] = base[bad]
        bad = ~_on_walkable(ok, new)
        new[bad] = pos[a][bad]
        pos[a] = new
        arrived = np.linalg.norm(pos[a] - scene.exits[goal[a]], axis=-1) < 4
        alive[a[arrived]] = False
    return track[:, :n], irregular[:n]


def simulate_scenes(
    n_scenes: int,
    seed: int = 0,
    size: int = 128,
    irregular_frac: float = 0.3,
    steps: int = 160,
    clip_stride: int = 4,
    max_clips: int = 50,
    prefix: str = "sim",
) -> tuple[pd.DataFrame, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Simulate `n_scenes` scenes: (Y-Net DataFrame with an extra `irregular` column, {sceneId: mask},
    {sceneId: exits (E, 2)}). Clips are 20-step windows (stride `clip_stride`) of the agents present throughout."""
    rng = np.random.default_rng(seed)
    rows = []
    masks, exits = {}, {}
    meta = 0
    for i in range(n_scenes):
        sid = f"{prefix}{i:03d}"
        scene = random_scene(rng, size, sid)
        track, irregular = simulate_agents(scene, rng, steps, irregular_frac)
        masks[sid], exits[sid] = scene.mask, scene.exits
        present = ~np.isnan(track[..., 0])
        starts = []
        for s in range(0, steps - CLIP_LEN + 1, clip_stride):
            who = np.flatnonzero(present[s : s + CLIP_LEN].all(0))
            if len(who):
                starts.append((s, who))
        if len(starts) > max_clips:
            keep = np.sort(rng.choice(len(starts), max_clips, replace=False))
            starts = [starts[k] for k in keep]
        for s, who in starts:
            for agent in who:
                xy = track[s : s + CLIP_LEN, agent]
                rows.append(
                    pd.DataFrame(
                        {
                            "frame": np.arange(s, s + CLIP_LEN), "trackId": agent, "x": xy[:, 0], "y": xy[:, 1],
                            "sceneId": sid, "metaId": meta, "irregular": bool(irregular[agent]),
                        }
                    )
                )  # fmt: skip
                meta += 1
    df = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=[*COLUMNS, "irregular"])
    return df, masks, exits


def write_ynet(folder: str | Path, name: str, df: pd.DataFrame, masks: dict[str, np.ndarray], exits=None) -> Path:
    """Write `<name>.pkl` (DataFrame.to_pickle), `<sceneId>_mask.png` per scene and, for simulated scenes,
    `exits.json`; returns the pickle's path."""
    from PIL import Image

    folder = Path(folder)
    frame = plain_frame(df)
    write_with(folder / f"{name}.pkl", frame.to_pickle)
    for sid, m in masks.items():
        image = Image.fromarray(m.astype(np.uint8))
        write_with(folder / f"{sid}_mask.png", lambda f, image=image: image.save(f, format="PNG"), overwrite=True)
    if exits:
        path = folder / "exits.json"
        old = json.loads(path.read_text()) if path.is_file() else {}
        old.update({k: np.asarray(v).tolist() for k, v in exits.items()})
        write_text(path, json.dumps(old), overwrite=True)  # the splits of one folder share it (ours, never a user's)
    return folder / f"{name}.pkl"


def plain_frame(df: pd.DataFrame) -> pd.DataFrame:
    """`df` with its text columns and its labels as NumPy object arrays of `str`. Its pickle then holds no string
    extension array (pandas' or pyarrow's, which depend on the pandas version, its `future.infer_string` option and
    whether pyarrow is installed), so any supported pandas reads it back through `load_ynet_pickle`."""
    text = [c for c in df.columns if not (is_numeric_dtype(df[c]) or is_bool_dtype(df[c]))]
    out = df.astype(dict.fromkeys(text, object)) if text else df.copy()
    out.columns = pd.Index(np.asarray(list(out.columns), dtype=object), dtype=object)
    if not isinstance(out.index, pd.RangeIndex) and not is_numeric_dtype(out.index.dtype):
        out.index = pd.Index(np.asarray(list(out.index), dtype=object), dtype=object)
    return out


def _check_arrow_arrays(df: pd.DataFrame, path: Path) -> None:
    """Fully validate every pyarrow-backed array of `df` (columns and labels) before anything reads its buffers."""
    # labels first (finding a column by name hashes them), then the columns by position
    arrays = [df.columns.array, df.index.array] + [df.iloc[:, i].array for i in range(df.shape[1])]
    for arr in arrays:
        if getattr(arr.dtype, "storage", None) == "pyarrow" or isinstance(arr.dtype, pd.ArrowDtype):
            try:
                arr.__arrow_array__().validate(full=True)
            except Exception as e:  # pyarrow.ArrowInvalid: offsets outside the buffers, invalid UTF-8, ...
                raise UnsafeFileError(
                    f"{path} is refused: a pyarrow string array in it is malformed ({type(e).__name__})"
                ) from e


# ------------------------------------------------------------------------------------------------ loaders
def load_ynet_pickle(path: str | Path) -> pd.DataFrame:
    """A Y-Net/TSC pickle (pandas DataFrame with frame, trackId, x, y, sceneId, metaId) read through a restricted
    unpickler: only a DataFrame's own building blocks may be imported, nothing in the file is run. Text written by
    any supported pandas is accepted (NumPy object, pandas or pyarrow strings; pyarrow arrays are validated first)
    and returned as object strings (`plain_frame`)."""
    path = Path(path)
    what = "Y-Net trajectory pickle (pandas DataFrame)"
    df = restricted_pickle_load(path, DATAFRAME_GLOBALS | ARROW_STRING_GLOBALS, what=what)
    if not isinstance(df, pd.DataFrame):
        raise UnsafeFileError(f"{path} is not a Y-Net trajectory pickle: it holds a {type(df).__name__}")
    _check_arrow_arrays(df, path)
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise UnsafeFileError(f"{path} is not a Y-Net trajectory pickle: it lacks columns {missing}")
    return plain_frame(df)


def load_semantic_mask(path: str | Path, n_classes: int = N_CLASSES) -> np.ndarray:
    """A `<sceneId>_mask.png` label map (uint8 labels 0..n_classes-1) as an (H, W) array."""
    from PIL import Image

    with reading_file(path, "semantic mask PNG") as p, Image.open(p) as im:
        arr = np.asarray(im.convert("L") if im.mode not in ("L", "P", "I") else im).astype(np.int64)
    if arr.ndim != 2:
        raise UnsafeFileError(f"{path} is not a label map (shape {arr.shape})")
    if arr.min() < 0 or arr.max() >= n_classes:
        raise UnsafeFileError(f"{path} holds labels outside 0..{n_classes - 1} (max {arr.max()})")
    return arr.astype(np.uint8)


def load_exits(folder: str | Path) -> dict[str, np.ndarray]:
    """The `exits.json` a simulation wrote ({sceneId: (E, 2)}); empty when there is none."""
    path = Path(folder) / "exits.json"
    if not path.is_file():
        return {}
    with reading_file(path, "exits.json of a simulation"):
        data = json.loads(path.read_text())
        return {str(k): np.asarray(v, dtype=float).reshape(-1, 2) for k, v in data.items()}


@dataclass
class Clips:
    """Trajectories as tensors-to-be: pos (P, 20, 2), scene index (P,) into `scene_ids`, clip id (P,), irregular."""

    pos: np.ndarray
    scene: np.ndarray
    group: np.ndarray
    irregular: np.ndarray
    scene_ids: list[str]

    def __len__(self) -> int:
        return len(self.pos)

    def subset(self, keep: np.ndarray) -> Clips:
        """The pedestrians `keep` (indices or a boolean mask)."""
        return Clips(self.pos[keep], self.scene[keep], self.group[keep], self.irregular[keep], self.scene_ids)


def build_clips(df: pd.DataFrame, max_step: float | None = None) -> Clips:
    """Group a Y-Net DataFrame into clips: 20 consecutive rows per metaId; a clip = the metaIds sharing (sceneId,
    first frame). `max_step`: drop trajectories with a future step above it in x or y (official: 90 px)."""
    df = df.sort_values(["metaId", "frame"], kind="stable")
    counts = df.groupby("metaId").size()
    bad = counts[counts != CLIP_LEN]
    if len(bad):
        raise ValueError(f"metaId {bad.index[0]} has {bad.iloc[0]} rows; every trajectory needs {CLIP_LEN}")
    xy = df[["x", "y"]].to_numpy(dtype=np.float64).reshape(-1, CLIP_LEN, 2)
    first = df.groupby("metaId", sort=True).first()
    scene_ids = sorted(map(str, first["sceneId"].unique()))
    lookup = {s: i for i, s in enumerate(scene_ids)}
    scene = first["sceneId"].astype(str).map(lookup).to_numpy()
    key = pd.Series(list(zip(first["sceneId"].astype(str), first["frame"], strict=True)))
    group = pd.factorize(key)[0]
    irregular = first["irregular"].to_numpy(dtype=bool) if "irregular" in first else np.zeros(len(first), bool)
    if not np.isfinite(xy).all():
        raise ValueError("trajectories hold NaN or infinite coordinates")
    clips = Clips(xy, scene, group, irregular, scene_ids)
    if max_step is not None:
        steps = np.abs(np.diff(xy[:, 7:], axis=1)).max(axis=(1, 2))
        clips = clips.subset(steps <= max_step)
    return clips


def _windows(tracks: pd.DataFrame, frame_step: int, scene_id: str) -> pd.DataFrame:
    """Sliding windows of 20 frames (stride one frame step) of the tracks present in all 20 frames."""
    rows = []
    meta = 0
    frames = np.sort(tracks["frame"].unique())
    by_frame = {f: g for f, g in tracks.groupby("frame")}
    for f0 in frames:
        want = f0 + frame_step * np.arange(CLIP_LEN)
        if not all(f in by_frame for f in want):
            continue
        ids = set(by_frame[want[0]]["trackId"])
        for f in want[1:]:
            ids &= set(by_frame[f]["trackId"])
        for tid in sorted(ids):
            t = tracks[(tracks["trackId"] == tid) & tracks["frame"].isin(want)].sort_values("frame")
            rows.append(t.assign(sceneId=scene_id, metaId=meta)[list(COLUMNS)])
            meta += 1
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=list(COLUMNS))


def load_sgan_txt(path: str | Path, frame_step: int = 10, scene_id: str | None = None) -> pd.DataFrame:
    """A Social-GAN / ETH-UCY text file (`frame ped_id x y`, tab/space separated, metres) as 20-frame windows in
    the Y-Net DataFrame format (pedestrians present in all 20 frames, stride one frame step)."""
    path = Path(path)
    with reading_file(path, "ETH/UCY text file (frame ped_id x y)"):
        arr = np.loadtxt(path, ndmin=2, dtype=np.float64)
        if arr.shape[1] < 4:
            raise ValueError(f"expected 4 columns (frame ped_id x y), got {arr.shape[1]}")
    tracks = pd.DataFrame(
        {"frame": arr[:, 0].astype(int), "trackId": arr[:, 1].astype(int), "x": arr[:, 2], "y": arr[:, 3]}
    )
    return _windows(tracks, frame_step, scene_id or path.stem)


def load_sdd_annotations(path: str | Path, scene_id: str | None = None, subsample: int = 12) -> pd.DataFrame:
    """Raw SDD `annotations.txt` (track xmin ymin xmax ymax frame lost occluded generated "label"): pedestrians,
    lost == 0, bbox centres, every 12th frame (30 -> 2.5 fps), as 20-frame windows in the Y-Net format."""
    path = Path(path)
    with reading_file(path, "SDD annotations.txt"):
        raw = pd.read_csv(path, sep=r"\s+", header=None, names=["trackId", "xmin", "ymin", "xmax", "ymax", "frame", "lost", "occluded", "generated", "label"])  # fmt: skip
        raw = raw[(raw["label"].astype(str).str.strip('"') == "Pedestrian") & (raw["lost"] == 0)]
        raw = raw[raw["frame"] % subsample == 0]
        tracks = pd.DataFrame(
            {
                "frame": raw["frame"].astype(int), "trackId": raw["trackId"].astype(int),
                "x": (raw["xmin"] + raw["xmax"]) / 2.0, "y": (raw["ymin"] + raw["ymax"]) / 2.0,
            }
        )  # fmt: skip
    return _windows(tracks, subsample, scene_id or path.parent.name)


def load_dataset(
    folder: str | Path, name: str, max_step: float | None = None
) -> tuple[Clips, list[np.ndarray], dict[str, np.ndarray]]:
    """`<folder>/<name>.pkl` + its scenes' `<sceneId>_mask.png` (+ exits.json): (clips, masks in clip order, exits).
    `max_step`: drop trajectories with a future step above it (official SDD preprocessing: 90 px, train and test)."""
    folder = Path(folder)
    df = load_ynet_pickle(folder / f"{name}.pkl")
    clips = build_clips(df, max_step)
    masks = [load_semantic_mask(folder / f"{sid}_mask.png") for sid in clips.scene_ids]
    return clips, masks, load_exits(folder)
