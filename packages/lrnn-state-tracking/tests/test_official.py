"""The official experiment-YAML loader: every field it reads, each layer type and range flag, bad files refused."""

from __future__ import annotations

import pytest

from iclr25.lrnn_state_tracking.official import load_official_yaml

YAML = """\
training:
  batch_size: 256
  lr: 0.001
  seed: 42
  val_every_step: 200
  lr_warmup_steps: {warmup}
  lr_decay_until_steps: ${{.num_steps}}
  lr_decay_factor: 1e-3
  weight_decay: {wd}
  grad_clip_norm: None
  num_steps: {steps}
  device: cuda
  amp_precision: bfloat16
model:
{model}
  tie_weights: false
  context_length: ${{dataset.kwargs.context_length}}
  vocab_size: ${{dataset.kwargs.vocab_size}}
dataset:
  name: form_language
  kwargs:
    synth_lang_type: {lang}
    vocab_size: {vocab}
    seed: 42
    enable_mask: true
    context_length: 256
    min_sequence_length: 3
    max_sequence_length: 40
    count:
      train: 5120000
      validation: 8192
      test: 8192
    subpar:
      validation:
        min_sequence_length: 40
        max_sequence_length: 256
      test:
        min_sequence_length: {test_min}
        max_sequence_length: {test_max}
"""

DELTANET = "  n_layers: 2\n  name: delta_net\n  d_model: 128\n  layer_type: delta_net\n  use_short_conv: true\n"
MAMBA = "  n_layers: 2\n  name: mamba\n  d_model: 128\n  layer_type: mamba\n"
SIMPLE = "  num_blocks: 1\n  name: simple_recurrent\n  embedding_dim: 10\n"


def _write(tmp_path, model, lang="parity", vocab=3, steps=20000, warmup=2000, wd=0.0, test=(40, 256)):
    path = tmp_path / "exp.yaml"
    text = YAML.format(
        model=model.rstrip("\n"),
        lang=lang,
        vocab=vocab,
        steps=steps,
        warmup=warmup,
        wd=wd,
        test_min=test[0],
        test_max=test[1],
    )
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("model", "eig_range", "name"),
    [
        (DELTANET + "  n_heads: 4\n  sigmoid_scale: 1.0\n", "[0,1]", "deltanet"),
        (DELTANET + "  n_heads: 4\n  sigmoid_scale: 2.0\n", "[-1,1]", "deltanet"),
        (MAMBA + "  positive_and_negative: false\n", "[0,1]", "mamba"),
        (MAMBA + "  positive_and_negative: true\n", "[-1,1]", "mamba"),
        (SIMPLE + "  layer_type: diagonal\n  activation_func: tanh\n", "[-1,1]", "figure1"),
        (SIMPLE + "  layer_type: diagonal\n  activation_func: sigmoid\n", "[0,1]", "figure1"),
        (SIMPLE + "  layer_type: full_matrix\n", "[-1,1]", "fullmatrix"),
    ],
)
def test_layer_types_and_ranges(tmp_path, model, eig_range, name):
    cfg = load_official_yaml(_write(tmp_path, model))
    assert (cfg.train.model, cfg.train.eig_range) == (name, eig_range)
    if name in ("figure1", "fullmatrix"):
        assert (cfg.train.d_model, cfg.train.n_layers) == (10, 1)
    else:
        assert (cfg.train.d_model, cfg.train.n_layers) == (128, 2)


def test_training_and_dataset_fields(tmp_path):
    path = _write(
        tmp_path,
        DELTANET + "  n_heads: 4\n  sigmoid_scale: 2.0\n",
        lang="modular_arithmetic",
        vocab=10,
        steps=100000,
        warmup=10000,
        wd=0.1,
        test=(20, 20),
    )
    cfg = load_official_yaml(path)
    t = cfg.train
    assert (t.task, t.steps, t.batch_size, t.lr, t.warmup, t.weight_decay) == ("mod", 100000, 256, 1e-3, 10000, 0.1)
    assert (t.min_lr_ratio, t.grad_clip, t.schedule, t.seed, t.eval_n) == (1e-3, 0.0, "cosine", 42, 8192)
    assert (t.n_heads, t.use_short_conv) == (4, True)
    assert cfg.train_lengths == (3, 40) and cfg.validation_lengths == (40, 256) and cfg.test_lengths == (20, 20)
    assert cfg.context_length == 256 and cfg.count == {"train": 5120000, "validation": 8192, "test": 8192}
    brackets = load_official_yaml(_write(tmp_path, MAMBA, lang="modular_arithmetic_with_brackets", vocab=12))
    assert brackets.train.task == "modbra" and brackets.train.eig_range == "[0,1]"


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda t: t.replace("layer_type: mamba", "layer_type: mlstm"), "mLSTM/sLSTM are not reimplemented"),
        (lambda t: t.replace("layer_type: mamba", "layer_type: diagonal\n  num_blocks: 2"), "num_blocks must be 1"),
        (lambda t: t.replace("synth_lang_type: parity", "synth_lang_type: dyck"), "synth_lang_type must be"),
        (lambda t: t.replace("vocab_size: 3", "vocab_size: 5"), "vocab_size must be 3"),
        (lambda t: t.replace("max_sequence_length: 40", "max_sequence_length: 400"), "max_sequence_length"),
        (lambda t: t.replace("lr: 0.001", "lr: fast"), "training.lr must be a number"),
        (lambda t: t.replace("num_steps: 20000", "num_steps: 2.5"), "must be an integer"),
        (lambda t: t.replace("positive_and_negative: true", "positive_and_negative: maybe"), "true or false"),
        (lambda t: t.replace("batch_size: 256", "batch_size: 0"), "batch_size"),
        (lambda t: t.split("model:")[0], "needs a 'model' mapping"),
        (lambda t: "- a list\n- of things\n", "is a mapping"),
        (lambda t: "training: [unclosed\n", "not a readable YAML"),
        (lambda t: "!!python/object/apply:os.system ['echo hi']\n", "not a readable YAML"),
    ],
)
def test_bad_files_are_one_line_errors(tmp_path, mutate, match):
    path = _write(tmp_path, MAMBA + "  positive_and_negative: true\n")
    path.write_text(mutate(path.read_text()), encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        load_official_yaml(path)


def test_missing_file(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_official_yaml(tmp_path / "none.yaml")
