"""Simulator (spec §6a) and loaders on tiny generated files (spec §9.6), incl. refusal of crafted pickles."""

from __future__ import annotations

import os
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

from iclr25.shared.safeload import UnsafeFileError
from iclr25.tsc_net import build_clips, load_sdd_annotations, load_semantic_mask, load_sgan_txt, load_ynet_pickle
from iclr25.tsc_net.data import (
    bilinear,
    cost_fields,
    load_dataset,
    pixel_of,
    plain_frame,
    walkable,
    write_ynet,
)
from iclr25.tsc_net.training import transform_map, transform_points


def test_simulator_keeps_ground_truth_on_walkable_pixels(tiny_sim):
    df, masks, _ = tiny_sim
    clips = build_clips(df)
    assert len(clips) > 0 and set(np.unique(clips.group)).__len__() >= 2
    for i in range(len(clips)):
        px = pixel_of(clips.pos[i])
        assert walkable(masks[clips.scene_ids[clips.scene[i]]])[px[:, 1], px[:, 0]].all()
    assert clips.irregular.any() or len(clips) < 5


def test_ynet_pickle_and_mask_round_trip(tmp_path, tiny_sim):
    df, masks, exits = tiny_sim
    write_ynet(tmp_path, "test", df, masks, exits)
    back = load_ynet_pickle(tmp_path / "test.pkl")
    pd.testing.assert_frame_equal(back, plain_frame(df))
    assert back["sceneId"].tolist() == df["sceneId"].tolist()
    clips, mask_list, ex = load_dataset(tmp_path, "test")
    assert all(np.array_equal(m, masks[s]) for m, s in zip(mask_list, clips.scene_ids, strict=True))
    assert set(ex) == set(exits)


def test_tiny_ynet_pickle_two_clips_three_pedestrians(tmp_path):
    rows = []
    for meta in range(6):
        f0 = 0 if meta < 3 else 100
        rows.append(pd.DataFrame({"frame": np.arange(f0, f0 + 20) * 12, "trackId": meta, "x": np.arange(20.0) + meta,
                                  "y": np.full(20, 5.0), "sceneId": "little_0", "metaId": meta}))  # fmt: skip
    pd.concat(rows).to_pickle(tmp_path / "t.pkl")
    from PIL import Image

    Image.fromarray(np.ones((32, 32), np.uint8)).save(tmp_path / "little_0_mask.png")
    clips = build_clips(load_ynet_pickle(tmp_path / "t.pkl"))
    assert clips.pos.shape == (6, 20, 2) and sorted(np.bincount(clips.group)) == [3, 3]
    assert load_semantic_mask(tmp_path / "little_0_mask.png").shape == (32, 32)


def _frame(n_meta: int = 2) -> pd.DataFrame:
    return pd.concat(
        [pd.DataFrame({"frame": np.arange(20) * 12, "trackId": m, "x": np.arange(20.0) + m, "y": np.full(20, 5.0),
                       "sceneId": f"scene_{m % 2}", "metaId": m}) for m in range(n_meta)],
        ignore_index=True,
    )  # fmt: skip


def test_written_pickle_needs_no_string_array_whatever_pandas_infers(tmp_path):
    """Our own data reads back under any string dtype pandas infers (object, pandas' str, pyarrow's str)."""
    with warnings.catch_warnings():  # the option is deprecated where it is already the default (pandas >= 3)
        warnings.simplefilter("ignore")
        with pd.option_context("future.infer_string", True):
            df = _frame()
    write_ynet(tmp_path, "train", df, {}, None)
    raw = (tmp_path / "train.pkl").read_bytes()
    assert b"StringArray" not in raw and b"pyarrow" not in raw and b"StringDtype" not in raw
    back = load_ynet_pickle(tmp_path / "train.pkl")
    assert back["sceneId"].dtype == object and back["sceneId"].tolist() == df["sceneId"].tolist()
    assert len(build_clips(back)) == 2


@pytest.mark.parametrize("storage", ["python", "pyarrow"])
@pytest.mark.parametrize("protocol", [4, 5])
def test_loader_accepts_string_dtype_pickles_of_other_writers(tmp_path, storage, protocol):
    """A frame pickled by another pandas with `string[python]` or `string[pyarrow]` text (pandas 3's default `str`
    with pyarrow installed) loads, with its text as object strings."""
    if storage == "pyarrow":
        pytest.importorskip("pyarrow")
    df = _frame().astype({"sceneId": f"string[{storage}]"})
    df.columns = df.columns.astype(f"string[{storage}]")
    (tmp_path / "t.pkl").write_bytes(pickle.dumps(df, protocol=protocol))
    back = load_ynet_pickle(tmp_path / "t.pkl")
    assert back["sceneId"].dtype == object and back["sceneId"].tolist() == _frame()["sceneId"].tolist()
    assert list(back.columns) == list(_frame().columns)


def test_malformed_pyarrow_strings_are_refused(tmp_path):
    """pyarrow rebuilds arrays from raw buffers without checks: offsets past the data buffer must be refused."""
    pa = pytest.importorskip("pyarrow")
    df = _frame().iloc[:2].copy()
    df["sceneId"] = pd.arrays.ArrowStringArray(pa.chunked_array([pa.array(["ab", "cd"], pa.large_string())]))
    raw = pickle.dumps(df, protocol=5)
    good = np.array([0, 2, 4], np.int64).tobytes()
    assert raw.count(good) == 1
    (tmp_path / "ok.pkl").write_bytes(raw)
    assert load_ynet_pickle(tmp_path / "ok.pkl")["sceneId"].tolist() == ["ab", "cd"]
    (tmp_path / "bad.pkl").write_bytes(raw.replace(good, np.array([0, 2, 10**6], np.int64).tobytes()))
    with pytest.raises(UnsafeFileError, match="malformed"):
        load_ynet_pickle(tmp_path / "bad.pkl")


def test_crafted_pickle_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "RAN"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    (tmp_path / "train.pkl").write_bytes(pickle.dumps(Evil(), protocol=2))
    with pytest.raises(UnsafeFileError, match=r"train\.pkl"):
        load_ynet_pickle(tmp_path / "train.pkl")
    assert not marker.exists()
    (tmp_path / "list.pkl").write_bytes(pickle.dumps([1, 2]))
    with pytest.raises(UnsafeFileError, match="list"):
        load_ynet_pickle(tmp_path / "list.pkl")


def test_mask_with_bad_labels_is_refused(tmp_path):
    from PIL import Image

    Image.fromarray(np.full((4, 4), 9, np.uint8)).save(tmp_path / "m.png")
    with pytest.raises(UnsafeFileError, match="labels outside"):
        load_semantic_mask(tmp_path / "m.png")


def test_sgan_txt_windows(tmp_path):
    lines = [f"{f * 10}\t{p}\t{f * 0.1 + p:.2f}\t{p * 1.0:.2f}" for f in range(30) for p in range(3)]
    (tmp_path / "eth.txt").write_text("\n".join(lines) + "\n")
    df = load_sgan_txt(tmp_path / "eth.txt")
    clips = build_clips(df)
    assert len(clips) == 11 * 3  # 11 windows of 20 frames in 30, 3 pedestrians each
    assert np.allclose(clips.pos[0, :, 0], np.arange(20) * 0.1)


def test_sdd_raw_annotations(tmp_path):
    lines = []
    for f in range(0, 12 * 25):
        lines.append(f'0 {f} 10 {f + 4} 14 {f} 0 0 0 "Pedestrian"')
        lines.append(f'1 0 0 4 4 {f} 0 0 0 "Biker"')
        lines.append(f'2 0 0 4 4 {f} 1 0 0 "Pedestrian"')
    (tmp_path / "annotations.txt").write_text("\n".join(lines) + "\n")
    clips = build_clips(load_sdd_annotations(tmp_path / "annotations.txt"))
    assert len(clips) == 6 and clips.pos.shape[1:] == (20, 2)  # 25 frames at 2.5 fps -> 6 windows of track 0
    assert np.allclose(np.diff(clips.pos[0, :, 0]), 12) and np.allclose(clips.pos[0, :, 1], 12)


def test_cost_field_is_geodesic_and_bilinear_sampling_is_exact_on_planes():
    mask = np.zeros((20, 20), np.uint8)
    mask[5:15, 10] = 3  # a wall
    f = cost_fields(mask, np.array([[2.5, 10.5]]))[0]
    assert f[10, 2] == 0 and f[10, 18] > 16  # around the wall: longer than the straight line
    plane = np.add.outer(np.arange(8.0), 2 * np.arange(8.0))  # value = row + 2 col at pixel centres
    pts = np.array([[3.2, 4.7], [1.5, 1.5]])
    assert np.allclose(bilinear(plane, pts), (pts[:, 1] - 0.5) + 2 * (pts[:, 0] - 0.5))


@pytest.mark.parametrize("t", range(8))
def test_augmentation_moves_points_with_the_map(t):
    mask = np.random.default_rng(t).integers(0, 6, (12, 17))
    xy = np.random.default_rng(1).uniform([0, 0], [17, 12], (50, 2))
    px = pixel_of(xy)
    new = transform_map(mask, t)
    pn = pixel_of(transform_points(xy, mask.shape, t))
    assert np.array_equal(mask[px[:, 1], px[:, 0]], new[pn[:, 1], pn[:, 0]])


def test_official_filter_drops_trajectories_with_long_future_steps():
    rows = [
        pd.DataFrame(
            {
                "frame": np.arange(20),
                "trackId": m,
                "x": np.r_[np.zeros(19), 200.0 * m],
                "y": 0.0,
                "sceneId": "a",
                "metaId": m,
            }
        )
        for m in range(2)
    ]
    assert len(build_clips(pd.concat(rows))) == 2
    assert len(build_clips(pd.concat(rows), max_step=90)) == 1
