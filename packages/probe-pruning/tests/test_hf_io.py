"""Hugging Face in/out: safetensors (single, sharded) and .bin folders round-trip; unsafe folders are refused;
logits parity with `transformers` on tiny random configs (skipped when transformers is absent)."""

from __future__ import annotations

import json

import pytest
import torch

from iclr25.probe_pruning.hf_io import from_pretrained_dir, from_transformers, save_pretrained
from iclr25.shared.safeload import UnsafeFileError


@pytest.mark.parametrize(("arch", "kv"), [("llama", 4), ("llama", 2), ("opt", 4)])
def test_safetensors_round_trip(tmp_path, make, ids, arch, kv):
    model = make(arch, kv)
    save_pretrained(model, tmp_path / "m")
    again = from_pretrained_dir(tmp_path / "m")
    assert torch.equal(model(ids).logits, again(ids).logits)
    out = again(ids, labels=ids)
    assert out.loss is not None and out[1].shape == (6, 16, 61)


def test_sharded_and_bin_folders(tmp_path, make, ids):
    from safetensors.torch import save_file

    model = make("llama")
    save_pretrained(model, tmp_path / "m")
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    keys = sorted(state)
    shard = tmp_path / "sharded"
    shard.mkdir()
    (shard / "config.json").write_text((tmp_path / "m" / "config.json").read_text())
    halves = {"model-00001-of-00002.safetensors": keys[: len(keys) // 2], "model-00002-of-00002.safetensors": keys[len(keys) // 2 :]}  # fmt: skip
    for name, part in halves.items():
        save_file({k: state[k] for k in part}, str(shard / name))
    index = {"weight_map": {k: name for name, part in halves.items() for k in part}}
    (shard / "model.safetensors.index.json").write_text(json.dumps(index))
    assert torch.equal(from_pretrained_dir(shard)(ids).logits, model(ids).logits)
    binary = tmp_path / "bin"
    binary.mkdir()
    (binary / "config.json").write_text((tmp_path / "m" / "config.json").read_text())
    torch.save(state, binary / "pytorch_model.bin")
    assert torch.equal(from_pretrained_dir(binary)(ids).logits, model(ids).logits)


def test_unsafe_or_foreign_folders_are_refused(tmp_path, make):
    save_pretrained(make("llama"), tmp_path / "m")
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    (tmp_path / "m" / "config.json").write_text(json.dumps({**cfg, "auto_map": {"AutoModel": "evil.Model"}}))
    with pytest.raises(UnsafeFileError, match="remote code"):
        from_pretrained_dir(tmp_path / "m")
    with pytest.raises(UnsafeFileError, match="not a folder"):
        from_pretrained_dir(tmp_path / "m" / "model.safetensors")
    (tmp_path / "m" / "config.json").write_text(json.dumps({**cfg, "num_hidden_layers": 5}))
    with pytest.raises(UnsafeFileError, match="missing"):
        from_pretrained_dir(tmp_path / "m")


@pytest.mark.parametrize(("arch", "kv"), [("llama", 4), ("llama", 2), ("opt", 4)])
def test_logits_parity_with_transformers(arch, kv, ids):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    if arch == "llama":
        hf_cfg = transformers.LlamaConfig(
            vocab_size=61, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=kv, max_position_embeddings=64, rms_norm_eps=1e-5, tie_word_embeddings=False,
        )  # fmt: skip
        hf = transformers.LlamaForCausalLM(hf_cfg)
    else:
        hf_cfg = transformers.OPTConfig(
            vocab_size=61, hidden_size=32, ffn_dim=48, num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=64, word_embed_proj_dim=32, do_layer_norm_before=True,
        )  # fmt: skip
        hf = transformers.OPTForCausalLM(hf_cfg)
    hf.eval()
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(0.05 * torch.randn_like(p))
        ours = from_transformers(hf)
        ref = hf(input_ids=ids).logits
        assert torch.allclose(ours(ids).logits, ref, atol=1e-4), (ours(ids).logits - ref).abs().max()
