"""Concept space, the SHAPE-like renderer, symbolic data and the loaders (on tiny generated files)."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from iclr25.compose_decompose.concepts import ConceptSpace, latin_square_holdout, phrase_str, shape_space
from iclr25.compose_decompose.data import (
    COLORS,
    ShapeRenderer,
    load_cbm_jsonl,
    load_coco_instances,
    load_digits_pairs,
    load_mnist_idx,
    load_thing_csv,
    make_dataset,
    make_shape_dataset,
    make_thing_dataset,
    write_cbm_jsonl,
)


def test_concept_space_indices():
    space = shape_space()
    assert space.n_fvp == 12 and space.n_attributes == 3 and len(space.combos()) == 64
    assert space.fvp_index(2, 3) == 11 and space.fvp_name(11) == "position=bottom_right"
    assert list(space.fvp_attribute(np.arange(12))) == [0] * 4 + [1] * 4 + [2] * 4
    assert space.phrase([0, 5]) == frozenset({("shape", "circle"), ("color", "green")})
    assert phrase_str(space.phrase([5, 0])) == "color=green.shape=circle"
    with pytest.raises(ValueError, match="one value per attribute"):
        space.phrase([0, 1])
    with pytest.raises(ValueError, match="distinct values"):
        ConceptSpace({"a": ["x"]})
    sat = space.satisfies(space.combos(), [0, 4])
    assert sat.sum() == 4  # circle & red: 4 positions


def test_latin_square_holdout_keeps_every_fvp_in_training():
    space = shape_space()
    held = latin_square_holdout(space)
    combos = space.combos()
    assert held.sum() == 16
    fvps = space.fvps_of(combos)
    for f in range(12):
        assert (fvps[~held] == f).any(1).sum() == 12  # spec 9.1: every FVP in 12 training combos
    for a in range(3):  # every pair of values of two attributes is held out exactly once (Latin square)
        for b in range(a + 1, 3):
            pairs = {(int(c[a]), int(c[b])) for c in combos[held]}
            assert len(pairs) == 16


def test_renderer_deterministic_color_and_quadrant():
    space = shape_space()
    imgs1 = make_shape_dataset(2, seed=3).inputs
    imgs2 = make_shape_dataset(2, seed=3).inputs
    assert np.array_equal(imgs1, imgs2)
    assert not np.array_equal(imgs1, make_shape_dataset(2, seed=4).inputs)
    r = ShapeRenderer(seed=0)
    for combo in space.combos():
        names = {n: space.attributes[n][v] for n, v in zip(space.names, combo, strict=True)}
        img = r.render(names)
        mask = img.any(-1)
        assert mask.sum() > 15
        colors = {tuple(p) for p in img[mask]}
        assert colors == {COLORS[names["color"]]}, names  # spec 9.1: the shape's pixels have its color
        ys, xs = np.nonzero(mask)
        cy, cx = ys.mean(), xs.mean()
        assert (cx < 16) == ("left" in names["position"]) and (cy < 16) == ("top" in names["position"])


def test_renderer_rejects_unknown_values():
    r = ShapeRenderer()
    with pytest.raises(ValueError, match="unknown shape"):
        r.render(("hexagon", "red", "top_left"))
    with pytest.raises(ValueError, match="unknown color"):
        r.render(("circle", "pink", "top_left"))
    with pytest.raises(ValueError, match="size"):
        ShapeRenderer(size=15)


def test_thing_and_digit_datasets():
    d = make_thing_dataset(5, noise=0.0)
    assert d.inputs.shape == (64, 5, 12) and d.heldout.sum() == 16
    assert np.all(d.inputs.sum(-1) == 3)
    dg = load_digits_pairs(3)
    assert dg.inputs.shape == (100, 3, 1, 8, 16) and dg.space.n_fvp == 20 and dg.heldout.sum() == 10
    assert dg.inputs.min() >= 0 and dg.inputs.max() <= 1
    assert make_dataset("shapes", n_per_combo=1, image_size=16).inputs.shape == (64, 1, 3, 16, 16)
    with pytest.raises(ValueError, match="unknown dataset"):
        make_dataset("coco")


def _idx(path, magic, dims, payload, gz=False):
    raw = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in dims) + payload
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return path


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_mnist_idx_loader(tmp_path, gz):
    x = np.arange(5 * 4 * 3, dtype=np.uint8).reshape(5, 4, 3)
    y = np.array([0, 1, 2, 3, 4], dtype=np.uint8)
    imgs = _idx(tmp_path / "img", 2051, (5, 4, 3), x.tobytes(), gz)
    labs = _idx(tmp_path / "lab", 2049, (5,), y.tobytes(), gz)
    xi, yi = load_mnist_idx(imgs, labs)
    assert np.array_equal(xi, x) and np.array_equal(yi, y)
    with pytest.raises(ValueError, match="magic 2051"):
        load_mnist_idx(labs, labs)
    bad = _idx(tmp_path / "bad", 2051, (6, 4, 3), x.tobytes())
    with pytest.raises(ValueError, match="sizes"):
        load_mnist_idx(bad, labs)
    with pytest.raises(FileNotFoundError):
        load_mnist_idx(tmp_path / "none", labs)


def test_coco_instances_loader(tmp_path):
    from PIL import Image

    for i in range(3):
        Image.fromarray(np.full((8, 8, 3), 40 * i, np.uint8)).save(tmp_path / f"{i}.png")
    data = {
        "images": [{"id": i, "file_name": f"{i}.png", "width": 8, "height": 8} for i in range(3)],
        "annotations": [
            {"image_id": 0, "category_id": 1, "bbox": [0, 0, 2, 2], "area": 4, "iscrowd": 0},
            {"image_id": 0, "category_id": 2, "bbox": [0, 0, 2, 2], "area": 4, "iscrowd": 0},
            {"image_id": 1, "category_id": 2, "bbox": [0, 0, 2, 2], "area": 4, "iscrowd": 0},
        ],
        "categories": [
            {"id": 1, "name": "cat", "supercategory": "animal"},
            {"id": 2, "name": "dog", "supercategory": "animal"},
        ],
    }
    path = tmp_path / "instances_val.json"
    path.write_text(json.dumps(data))
    imgs, concepts, names = load_coco_instances(path, tmp_path, size=4)
    assert imgs.shape == (3, 3, 4, 4) and concepts == [["cat", "dog"], ["dog"], []] and names == ["cat", "dog"]
    _, sup, _ = load_coco_instances(path, tmp_path, size=4, supercategories=True)
    assert sup[0] == ["animal"]
    path.write_text(json.dumps({"images": []}))
    with pytest.raises(ValueError, match="not a COCO"):
        load_coco_instances(path, tmp_path)


def test_thing_csv_loader(tmp_path):
    path = tmp_path / "things.csv"
    path.write_text("shape,color\ncircle,red\nsquare,red\ncircle,blue\n")
    space, combos, x = load_thing_csv(path)
    assert space.attributes == {"shape": ["circle", "square"], "color": ["blue", "red"]}
    assert combos.tolist() == [[0, 1], [1, 1], [0, 0]] and x.shape == (3, 4) and np.all(x.sum(1) == 2)
    path.write_text("shape,color\ncircle\n")
    with pytest.raises(ValueError, match="fields"):
        load_thing_csv(path)


def test_cbm_jsonl_roundtrip(tmp_path):
    samples = [(["1", "2"], ["a", "b"]), (["3"], ["c"])]
    path = write_cbm_jsonl(tmp_path / "log.jsonl", samples, eos=None)
    assert path.read_text().splitlines()[0] == '["1.2", "a.b"]'
    assert load_cbm_jsonl(path) == samples
    # by default each message ends with an end-of-message word, as in the reference logs
    path = write_cbm_jsonl(tmp_path / "log_eos.jsonl", samples)  # a new file: the guarded writer never replaces one
    assert path.read_text().splitlines()[0] == '["1.2.eos", "a.b"]'
    assert load_cbm_jsonl(path) == [([*w, "eos"], c) for w, c in samples]
    path.write_text('{"message": "1.2", "phrase": "a"}\n')
    assert load_cbm_jsonl(path) == [(["1", "2"], ["a"])]
    path.write_text("not json\n")
    with pytest.raises(ValueError, match=":1: not valid JSON"):
        load_cbm_jsonl(path)
    path.write_text('["1.2"]\n')
    with pytest.raises(ValueError, match="expected"):
        load_cbm_jsonl(path)
    path.write_bytes(b"\x80\x04binary")
    with pytest.raises(ValueError, match="not UTF-8"):
        load_cbm_jsonl(path)


def test_extended_shapes_grid_size_and_holdout():
    from iclr25.compose_decompose.concepts import sum_mod_holdout

    space = shape_space(extended=True)
    assert space.n_fvp == 19 and len(space.combos()) == 288
    held = sum_mod_holdout(space)
    fvps = space.fvps_of(space.combos())
    assert held.sum() == 72 and all((fvps[~held] == f).any(1).any() for f in range(19))
    for a in range(4):  # every FVP pair occurs in a held-out combination (Compose needs one)
        for b in range(a + 1, 4):
            pairs = {(int(c[a]), int(c[b])) for c in space.combos()[held]}
            assert len(pairs) == space.sizes[a] * space.sizes[b]
    r = ShapeRenderer(size=64, seed=0)
    areas = {}
    for combo in space.combos()[::7]:
        names = {n: space.attributes[n][v] for n, v in zip(space.names, combo, strict=True)}
        img = r.render(names)
        mask = img.any(-1)
        assert {tuple(p) for p in img[mask]} == {COLORS[names["color"]]}
        ys, xs = np.nonzero(mask)
        row, col = int(names["position"][1]), int(names["position"][3])
        assert int(ys.mean() // (64 / 3)) == row and int(xs.mean() // (64 / 3)) == col
        areas.setdefault(names["size"], []).append(mask.sum())
    assert np.mean(areas["small"]) < np.mean(areas["large"])
    d = make_dataset("shapes", n_per_combo=1, extended=True)
    assert d.inputs.shape == (288, 1, 3, 32, 32) and d.heldout.sum() == 72
