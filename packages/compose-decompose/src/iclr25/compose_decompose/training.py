"""Training and evaluation loops of CtD (arXiv 2601.10169; spec 3.4): Decompose, then Compose (zero-shot or
fine-tuned), and the measurements of spec 3.5. Custom loop, Adam, no Lightning.

    game = build_game(data, channel="cb", K=12, dim=16)
    train(game, data, steps=1500)                                   # Decompose: |p| = 1, training combinations
    dec = evaluate(game, data, phrase_size=1, split="train")        # accuracy, words per FVP
    comp = evaluate(game, data, phrase_size=2, split="heldout", distractors="hard")   # zero-shot Compose
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from iclr25.compose_decompose.agents import MultiTargetGame, Receiver, Sender, make_encoder
from iclr25.compose_decompose.baselines import GumbelChannel, QuantizedChannel
from iclr25.compose_decompose.codebook import CodebookChannel
from iclr25.compose_decompose.data import ConceptData
from iclr25.compose_decompose.games import Games, GameSampler
from iclr25.compose_decompose.metrics import (
    ami,
    bosdis,
    concept_best_match,
    exact_word_set_rate,
    game_accuracy,
    posdis,
    topsim,
)
from iclr25.shared.files import save_torch

CHANNELS = ("cb", "gs", "qt")


def build_game(
    data: ConceptData,
    channel: str = "cb",
    K: int = 12,
    dim: int = 16,
    hidden: int = 64,
    sender: str = "single",
    combine: str = "and",
    beta1: float = 1.0,
    beta2: float = 0.25,
    init: str = "kmeans",
    dead_after: int = 200,
    qt_levels: int = 2,
    tau: float = 1.0,
    gs_word_init: str = "normal",
    seed: int = 0,
) -> MultiTargetGame:
    """Sender + channel + Receiver for `data`; every channel gets the same encoders and Sender (spec 4).

    GS words reach the Receiver as one-hots through its word layer W (vocab -> h). `gs_word_init="normal"` draws
    W's vocab rows from N(0, 1), as the reference GS game embeds its symbols (EGG `SymbolReceiverWrapper`:
    `RelaxedEmbedding`, an `nn.Embedding`); `"linear"` keeps `nn.Linear`'s U(+-1/sqrt(vocab)) (about 0.17 std
    for vocab 12, the weaker start of earlier versions).
    """
    if gs_word_init not in ("normal", "linear"):
        raise ValueError(f"gs_word_init must be 'normal' or 'linear', got {gs_word_init!r}")
    torch.manual_seed(seed)
    m = data.space.n_attributes
    snd = Sender(make_encoder(data.input_shape, hidden), dim, kind=sender, slots=m)
    if channel == "cb":
        ch: torch.nn.Module = CodebookChannel(K, dim, beta1=beta1, beta2=beta2, init=init, dead_after=dead_after)
    elif channel == "gs":
        ch = GumbelChannel(K, dim, tau=tau)
    elif channel == "qt":
        ch = QuantizedChannel(dim, levels=qt_levels, bits=QuantizedChannel.bits_for(K, qt_levels), max_words=m)
    else:
        raise ValueError(f"channel must be one of {', '.join(CHANNELS)}, got {channel!r}")
    rcv = Receiver(make_encoder(data.input_shape, hidden), ch.msg_dim, combine=combine)
    if channel == "gs" and gs_word_init == "normal" and rcv.gru is None:
        # the reference GS game's symbol embedding: nn.Embedding's N(0, 1) (the `gru` Receiver reads the one-hots
        # through its GRU input weights, which keep the GRU's own init)
        torch.nn.init.normal_(rcv.W.weight, 0.0, 1.0)
    return MultiTargetGame(snd, ch, rcv)


def _tensors(games: Games, device: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return (
        torch.from_numpy(games.targets).to(device),
        torch.from_numpy(games.candidates).to(device),
        torch.from_numpy(games.labels).to(device),
    )


def train(
    game: MultiTargetGame,
    data: ConceptData,
    steps: int = 1500,
    batch: int = 64,
    lr: float = 1e-3,
    phrase_size: int = 1,
    n_targets: int = 3,
    n_distractors: int = 3,
    distractors: str = "uniform",
    seed: int = 0,
    zero_message: bool = False,
    init_games: int = 512,
    device: str = "cpu",
    log: Callable[[dict[str, Any], int], None] | None = None,
    log_every: int = 100,
    tick: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Train all agents jointly with Adam on games of `phrase_size`-FVP phrases over training combinations.

    Decompose: phrase_size = 1. Compose fine-tuning: phrase_size >= 2. A k-means codebook is initialised from the
    Sender outputs of the first `init_games` games. Returns the loss curve and the training throughput.
    """
    sampler = GameSampler(data, n_targets, n_distractors, phrase_size, "train", distractors, seed=seed)
    game.to(device).train()
    gen = torch.Generator().manual_seed(seed)
    channel = game.channel
    if isinstance(channel, CodebookChannel) and channel.init == "kmeans" and int(channel.steps) == 0:
        with torch.no_grad():
            zs = [game.sender(_tensors(sampler.sample(batch), device)[0]) for _ in range(max(1, init_games // batch))]
            channel.initialize(torch.cat(zs).reshape(-1, channel.dim).cpu(), generator=gen)
    opt = torch.optim.Adam(game.parameters(), lr=lr)
    curve: list[dict[str, float]] = []
    acc_sum, loss_sum, n_sum = 0.0, 0.0, 0
    start = time.perf_counter()
    for step in range(1, steps + 1):
        games = sampler.sample(batch)
        targets, candidates, labels = _tensors(games, device)
        out = game(targets, candidates, labels, n_words=phrase_size, zero_message=zero_message)
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        opt.step()
        if isinstance(channel, CodebookChannel):
            channel.after_step(out.z.detach(), out.channel.words, generator=gen)
        acc_sum += float((out.predictions == labels.bool()).all(1).float().mean())
        loss_sum += float(out.game_loss.detach())
        n_sum += 1
        if step % log_every == 0 or step == steps:
            row = {"game_loss": loss_sum / n_sum, "train_game_acc": acc_sum / n_sum, **out.channel.logs}
            curve.append({"step": step, **row})
            if log is not None:
                log(row, step)
            acc_sum, loss_sum, n_sum = 0.0, 0.0, 0
        if tick is not None:
            tick()
    seconds = time.perf_counter() - start
    reseeded = int(channel.reseeded) if isinstance(channel, CodebookChannel) else 0
    return {"curve": curve, "seconds": seconds, "games_per_s": steps * batch / max(seconds, 1e-9), "reseeded": reseeded}


@torch.no_grad()
def evaluate(
    game: MultiTargetGame,
    data: ConceptData,
    n_games: int = 1000,
    phrase_size: int = 1,
    split: str = "train",
    distractors: str = "uniform",
    n_targets: int = 3,
    n_distractors: int = 3,
    seed: int = 12345,
    zero_message: bool = False,
    batch: int = 500,
    device: str = "cpu",
) -> dict[str, Any]:
    """Play `n_games` evaluation games: game / per-candidate accuracy, and each game's words and phrase."""
    sampler = GameSampler(data, n_targets, n_distractors, phrase_size, split, distractors, seed=seed)
    game.to(device).eval()
    preds, labels, words, phrases = [], [], [], []
    for start in range(0, n_games, batch):
        games = sampler.sample(min(batch, n_games - start))
        t, c, y = _tensors(games, device)
        out = game(t, c, y, n_words=phrase_size, zero_message=zero_message)
        preds.append(out.predictions.cpu().numpy())
        labels.append(games.labels)
        words.append(out.channel.words.cpu().numpy())
        phrases.append(games.phrases)
    game.train()
    p, y = np.concatenate(preds), np.concatenate(labels)
    g_acc, c_acc = game_accuracy(p, y)
    return {
        "game_acc": g_acc,
        "cand_acc": c_acc,
        "words": np.concatenate(words),
        "phrases": np.concatenate(phrases),
    }


def message_samples(words: np.ndarray, phrases: np.ndarray) -> list[tuple[list[int], list[int]]]:
    """(message words, phrase FVPs) pairs in the CBM form."""
    return [(list(map(int, w)), list(map(int, p))) for w, p in zip(words, phrases, strict=True)]


def language_metrics(ev: dict[str, Any]) -> dict[str, Any]:
    """CBM (match, precision, recall) and AMI of evaluated games' (words, phrase) pairs."""
    samples = message_samples(ev["words"], ev["phrases"])
    cbm = concept_best_match(samples)
    msgs = [".".join(map(str, sorted(w))) for w, _ in samples]
    phr = [".".join(map(str, p)) for _, p in samples]
    return {
        "cbm": cbm["match"],
        "cbm_precision": cbm["precision"],
        "cbm_recall": cbm["recall"],
        "ami": ami(msgs, phr),
        "mapping": {int(c): int(w) for w, c in cbm["mapping"].items()},  # concept -> word
        "unique_words": cbm["unique_words"],
    }


@torch.no_grad()
def describe_all(game: MultiTargetGame, data: ConceptData, device: str = "cpu") -> dict[str, float]:
    """Full descriptions (one target, |p| = m words) of every input: PosDis, BosDis, TopSim (spec 3.5)."""
    game.to(device).eval()
    x = torch.from_numpy(data.inputs.reshape(-1, 1, *data.input_shape)).to(device)
    _, out = game.message(x, data.space.n_attributes)
    game.train()
    words = out.words.cpu().numpy()
    attrs = np.repeat(data.combos, data.inputs.shape[1], axis=0)
    vocab = int(getattr(game.channel, "vocab", words.max() + 1))
    return {
        "posdis": posdis(words, attrs),
        "bosdis": bosdis(words, attrs, vocab=vocab),
        "topsim": topsim(np.sort(words, axis=1), attrs),
    }


def decompose_then_compose(
    data: ConceptData,
    channel: str = "cb",
    steps: int = 1500,
    compose_steps: int = 0,
    batch: int = 64,
    lr: float = 1e-3,
    K: int = 12,
    dim: int = 16,
    eval_games: int = 1000,
    compose_size: int = 2,
    decompose_targets: int = 3,
    train_phrase_size: int = 1,
    train_distractors: str = "uniform",
    zero_message: bool = False,
    seed: int = 0,
    device: str = "cpu",
    tick: Callable[[], None] | None = None,
    log: Callable[[dict[str, Any], int], None] | None = None,
    **agent: Any,
) -> dict[str, Any]:
    """One experiment: Decompose training, Decompose evaluation (plus the zeroed-message control), zero-shot
    Compose on held-out combinations with hard distractors and, if `compose_steps`, fine-tuned Compose.

    Ablations: `decompose_targets=1` (single-target Decompose), `train_phrase_size=2, train_distractors="hard"` (no
    Decompose: train on Compose games directly), `zero_message` (train with the message zeroed: no communication).
    """
    game = build_game(data, channel=channel, K=K, dim=dim, seed=seed, **agent)
    hist = train(
        game,
        data,
        steps,
        batch,
        lr,
        train_phrase_size,
        decompose_targets,
        3,
        train_distractors,
        seed,
        zero_message=zero_message,
        device=device,
        tick=tick,
        log=log,
    )
    res: dict[str, Any] = {"train_seconds": hist["seconds"], "games_per_s": hist["games_per_s"]}
    res["reseeded_codes"] = hist["reseeded"]
    dec = evaluate(game, data, eval_games, 1, "train", device=device, n_targets=decompose_targets)
    res["decompose_game_acc"], res["decompose_cand_acc"] = dec["game_acc"], dec["cand_acc"]
    zero = evaluate(game, data, eval_games, 1, "train", zero_message=True, device=device, n_targets=decompose_targets)
    res["decompose_cand_acc_zero_message"] = zero["cand_acc"]
    lang = language_metrics(dec)
    res.update({f"decompose_{k}": v for k, v in lang.items() if k != "mapping"})
    mapping = lang["mapping"]
    heldout = "heldout" if data.heldout.any() else "all"
    comp = evaluate(game, data, eval_games, compose_size, heldout, distractors="hard", device=device)
    res["compose_zero_shot_game_acc"], res["compose_zero_shot_cand_acc"] = comp["game_acc"], comp["cand_acc"]
    res["compose_zero_shot_exact_word_set"] = exact_word_set_rate(comp["words"], comp["phrases"], mapping)
    clang = language_metrics(comp)
    res.update({f"compose_zero_shot_{k}": v for k, v in clang.items() if k in ("cbm", "ami")})
    res.update(describe_all(game, data, device=device))
    if compose_steps:
        h2 = train(game, data, compose_steps, batch, lr, compose_size, 3, 3, "hard", seed + 1, device=device, tick=tick)
        res["compose_train_seconds"] = h2["seconds"]
        ft = evaluate(game, data, eval_games, compose_size, heldout, distractors="hard", device=device)
        res["compose_finetuned_game_acc"], res["compose_finetuned_cand_acc"] = ft["game_acc"], ft["cand_acc"]
        res["compose_finetuned_exact_word_set"] = exact_word_set_rate(ft["words"], ft["phrases"], mapping)
    res["game"] = game
    return res


AGENT_KEYS = ("channel", "K", "dim", "hidden", "sender", "combine", "beta1", "beta2", "init", "dead_after")
DATA_KEYS = ("dataset", "seed", "noise", "thing_per_combo", "n_per_combo", "image_size")


def save_checkpoint(path: str | Path, game: MultiTargetGame, settings: dict[str, Any]) -> Path:
    """Write the agents' weights and the settings that rebuild them and their data (tensors + plain values only)."""
    return save_torch(path, {"state_dict": game.state_dict(), "settings": dict(settings)})


def load_checkpoint_game(path: str | Path) -> tuple[MultiTargetGame, ConceptData, dict[str, Any]]:
    """Rebuild (game, data, settings) from a checkpoint written by `save_checkpoint` (weights-only loading)."""
    from iclr25.compose_decompose.data import make_dataset
    from iclr25.shared.safeload import load_checkpoint

    ckpt = load_checkpoint(
        path, required_keys=("state_dict", "settings"), what="checkpoint of iclr25-compose-decompose"
    )
    s = ckpt["settings"]
    missing = [k for k in AGENT_KEYS + DATA_KEYS if k not in s]
    if missing:
        raise ValueError(f"{path}: checkpoint settings lack {', '.join(missing)}")
    extended = bool(s.get("shape_extended", False))
    data = make_dataset(**{k: s[k] for k in DATA_KEYS if k != "dataset"}, name=s["dataset"], extended=extended)
    game = build_game(data, **{k: s[k] for k in AGENT_KEYS}, seed=s["seed"])
    game.load_state_dict(ckpt["state_dict"])
    return game, data, s
