"""Training and evaluation loops of CtD (arXiv 2601.10169; spec 3.4): Decompose, then Compose (zero-shot or
fine-tuned), and the measurements of spec 3.5. Custom loop, Adam, no Lightning.

    game = build_game(data, channel="cb", K=12, dim=16)
    train(game, data, steps=1500)                                   # Decompose: |p| = 1, training combinations
    dec = evaluate(game, data, phrase_size=1, split="train")        # accuracy, words per FVP
    comp = evaluate(game, data, phrase_size=2, split="heldout", distractors="hard")   # zero-shot Compose
"""

from __future__ import annotations

import json
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
from iclr25.shared.logging import training_row

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
    *,
    fabric: Any = None,
    checkpointer: Any = None,
    resume: str | None = None,
) -> dict[str, Any]:
    """Train all agents jointly with Adam on games of `phrase_size`-FVP phrases over training combinations.

    Decompose: phrase_size = 1. Compose fine-tuning: phrase_size >= 2. A k-means codebook is initialised from the
    Sender outputs of the first `init_games` games. Returns the loss curve and the training throughput. `log(row,
    step)` sees every `log_every`-th step and the last one, under the shared training names (`loss`: the game loss,
    `lr`, `throughput` in games/s) plus `train_game_acc` and the channel's own terms, averaged since the last row.

    With `fabric` (several processes, `iclr25.shared.fabric`), every process draws the same `batch` games (and, for
    GS, the Gumbel noise of every game: `MultiTargetGame.channel_noise`) and plays its slice of `batch / processes`
    games; every loss term is a mean over games, so DDP's averaged gradient is the whole batch's. The codebook's
    dead-code re-seeding sees every process's Sender outputs and words (gathered in batch order), so it is the same
    on every process and equal to one process's on the whole batch. With `checkpointer`, the agents, the optimizer,
    the step, the game sampler's and the re-seeding generator's states, the running averages and the curve are saved
    every `checkpointer.every` steps and at the end; `resume` ("auto" or a checkpoint file) continues exactly.
    """
    sampler = GameSampler(data, n_targets, n_distractors, phrase_size, "train", distractors, seed=seed)
    rank, world = (fabric.global_rank, fabric.world_size) if fabric is not None else (0, 1)
    if batch % world:
        raise ValueError(f"batch {batch} must be a multiple of the {world} processes")
    if fabric is not None:
        device = fabric.device
    game.to(device).train()
    gen = torch.Generator().manual_seed(seed)
    channel = game.channel
    if isinstance(channel, CodebookChannel) and channel.init == "kmeans" and int(channel.steps) == 0:
        with torch.no_grad():
            zs = [game.sender(_tensors(sampler.sample(batch), device)[0]) for _ in range(max(1, init_games // batch))]
            channel.initialize(torch.cat(zs).reshape(-1, channel.dim).cpu(), generator=gen)
    opt = torch.optim.Adam(game.parameters(), lr=lr)
    model = game
    if fabric is not None:
        model, opt = fabric.setup(game, opt)
    curve: list[dict[str, float]] = []
    acc_sum, loss_sum, n_sum = 0.0, 0.0, 0
    first = 1
    if checkpointer is not None:
        state = _loop_state(model, opt, 0, sampler, gen, (acc_sum, loss_sum, n_sum), curve)
        if checkpointer.resume(resume, state, fabric) is not None:
            first, (acc_sum, loss_sum, n_sum), curve = _restore_loop(state, sampler, gen)
    share = batch // world
    start = time.perf_counter()
    for step in range(first, steps + 1):
        games = sampler.sample(batch)
        targets, candidates, labels = _tensors(games, device)
        if fabric is None:
            out = model(targets, candidates, labels, n_words=phrase_size, zero_message=zero_message)
        else:
            noise = game.channel_noise(batch)  # the whole batch's draw, the same on every process
            part = slice(rank * share, (rank + 1) * share)
            targets, candidates, labels = targets[part], candidates[part], labels[part]
            noise = None if noise is None else noise[part].to(device)
            out = model(targets, candidates, labels, n_words=phrase_size, zero_message=zero_message, noise=noise)
        opt.zero_grad(set_to_none=True)
        if fabric is None:
            out.loss.backward()
        else:
            fabric.backward(out.loss)
        opt.step()
        if isinstance(channel, CodebookChannel):
            z, words = out.z.detach(), out.channel.words
            if fabric is not None:  # every process's games, in batch order
                z = fabric.all_gather(z).reshape(-1, *z.shape[1:])
                words = fabric.all_gather(words).reshape(-1, *words.shape[1:])
            channel.after_step(z, words, generator=gen)
        acc_sum += float((out.predictions == labels.bool()).all(1).float().mean())
        loss_sum += float(out.game_loss.detach())
        n_sum += 1
        if step % log_every == 0 or step == steps:
            row = {"game_loss": loss_sum / n_sum, "train_game_acc": acc_sum / n_sum, **out.channel.logs}
            if fabric is not None:  # the mean over processes of equal shares: the whole batches' averages
                names = list(row)
                values = torch.tensor([row[k] for k in names], dtype=torch.float64, device=device)
                row = dict(zip(names, fabric.all_reduce(values, reduce_op="mean").tolist(), strict=True))
            curve.append({"step": step, **row})
            if log is not None:
                speed = (step - first + 1) * batch / max(time.perf_counter() - start, 1e-9)
                extra = {k: v for k, v in row.items() if k != "game_loss"}
                log(training_row(row["game_loss"], lr=lr, throughput=speed, **extra), step)
            acc_sum, loss_sum, n_sum = 0.0, 0.0, 0
        if tick is not None:
            tick()
        if checkpointer is not None and checkpointer.every and step % checkpointer.every == 0:
            checkpointer.save(_loop_state(model, opt, step, sampler, gen, (acc_sum, loss_sum, n_sum), curve), fabric)
    if checkpointer is not None and first <= steps and not (checkpointer.every and steps % checkpointer.every == 0):
        checkpointer.save(_loop_state(model, opt, steps, sampler, gen, (acc_sum, loss_sum, n_sum), curve), fabric)
    seconds = time.perf_counter() - start
    reseeded = int(channel.reseeded) if isinstance(channel, CodebookChannel) else 0
    trained = max(0, steps - first + 1)
    return {
        "curve": curve,
        "seconds": seconds,
        "games_per_s": trained * batch / max(seconds, 1e-9),
        "reseeded": reseeded,
    }


def _loop_state(
    model: Any, opt: Any, step: int, sampler: GameSampler, gen: torch.Generator, sums: tuple, curve: list
) -> dict[str, Any]:
    """What `train` needs to continue exactly: tensors, numbers and strings only (a checkpoint is data)."""
    acc_sum, loss_sum, n_sum = sums
    return {
        "model": model,
        "optimizer": opt,
        "step": step,
        "sampler_rng": json.dumps(sampler.rng.bit_generator.state),
        "reseed_rng": gen.get_state(),
        "acc_sum": acc_sum,
        "loss_sum": loss_sum,
        "n_sum": n_sum,
        "curve": json.dumps(curve),
    }


def _restore_loop(state: dict[str, Any], sampler: GameSampler, gen: torch.Generator) -> tuple[int, tuple, list]:
    """The next step, the running sums and the curve of a loaded `_loop_state`; the generators get their states."""
    sampler.rng.bit_generator.state = json.loads(state["sampler_rng"])
    gen.set_state(state["reseed_rng"])
    sums = (float(state["acc_sum"]), float(state["loss_sum"]), int(state["n_sum"]))
    return int(state["step"]) + 1, sums, json.loads(state["curve"])


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
    scale_out: Callable[[str], dict[str, Any]] | None = None,
    **agent: Any,
) -> dict[str, Any]:
    """One experiment: Decompose training, Decompose evaluation (plus the zeroed-message control), zero-shot
    Compose on held-out combinations with hard distractors and, if `compose_steps`, fine-tuned Compose.

    Ablations: `decompose_targets=1` (single-target Decompose), `train_phrase_size=2, train_distractors="hard"` (no
    Decompose: train on Compose games directly), `zero_message` (train with the message zeroed: no communication).
    `log(row, step)` sees each training loop's rows, their names behind "decompose/" or "compose/";
    `scale_out(phase)` gives the `fabric`/`checkpointer`/`resume` keywords of the loop of that phase ("decompose",
    "compose"); the evaluations run whole on every process (the same games everywhere).
    """
    game = build_game(data, channel=channel, K=K, dim=dim, seed=seed, **agent)
    decompose, compose = (scale_out("decompose"), scale_out("compose")) if scale_out is not None else ({}, {})
    if decompose.get("fabric") is not None:
        device = decompose["fabric"].device

    def phase_log(phase: str) -> Callable[[dict[str, Any], int], None] | None:
        if log is None:
            return None
        return lambda row, step: log({f"{phase}/{k}": v for k, v in row.items()}, step)

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
        log=phase_log("decompose"),
        **decompose,
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
        h2 = train(
            game, data, compose_steps, batch, lr, compose_size, 3, 3, "hard", seed + 1, device=device, tick=tick,
            log=phase_log("compose"), **compose,
        )  # fmt: skip
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
