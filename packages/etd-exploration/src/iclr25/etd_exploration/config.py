"""Configs and presets of ETD (arXiv 2501.15418). Standard library only: bad values are refused before torch loads.

- `Config` / `PRESETS`: the reproduction (`reproduce --scale ci|quick|full`);
- `PPOConfig`: one PPO run (`train`, and each run of the reproduction);
- `MazeConfig`: distance learning on the spiral maze (`distance-map`, and the maze part of the reproduction).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from iclr25.shared.validate import (
    AtLeast,
    AtMost,
    Each,
    Flag,
    InRange,
    IsInt,
    IsText,
    NonEmpty,
    NonNegativeFloat,
    NonNegativeInt,
    OneOf,
    PositiveFloat,
    Satisfies,
    Validated,
    check_int_at_least,
)

INTRINSICS = ("etd", "none", "count", "rnd", "noveld", "e3b", "deir", "etd-mean", "etd-random")  # last two: broken ETD
ENERGIES = ("mrn_pot", "mrn", "l2", "cos", "dot")
LOSSES = ("infonce_symmetric", "infonce", "infonce_backward")
MAZE_EPISODE_LEN = 50  # random-walk episode length of the official maze demo


MINIGRID_ID = "a MiniGrid id such as MiniGrid-DoorKey-8x8-v0"
MiniGridId = Annotated[str, IsText(MINIGRID_ID, nonempty=True)]
MiniGridIds = Annotated[tuple[str, ...], Each(IsText(MINIGRID_ID, nonempty=True))]
UnitInterval = Annotated[float, InRange(0.0, 1.0)]


def _check_cell(name: str, value: Any) -> Any:
    """`value` is a (row, column) pair."""
    if len(value) != 2:
        raise ValueError(f"{name} must be a (row, column) cell, got {value!r}")
    return value


Cell = Annotated[tuple[int, int], Satisfies(_check_cell, "a (row, column) cell", (1, 1, 1)), Each(AtLeast(0))]


# Size limits, refused before any work (past them a run would exhaust memory or run for months). The largest
# preset (full): 10 000 000 PPO frames from 16 environments x 512 steps, batch 512, 5 seeds, 256-wide latents.
MAX_STEPS = 10_000_000  # training steps and transitions of the maze study
MAX_FRAMES = 1_000_000_000  # PPO frames
MAX_ENVS = 1024  # parallel environments
MAX_ROLLOUT = 65_536  # steps per rollout
MAX_EPISODE = 1_000_000  # steps per episode
MAX_BATCH = 65_536
MAX_EPOCHS = 1000  # PPO epochs per rollout
MAX_SEEDS = 1000
MAX_EVAL_EPISODES = 100_000  # evaluation episodes of `train` and `eval`
MAX_WIDTH = 8192  # feature, latent, hidden and embedding sizes
MAX_DISTANCE = 10_000  # maze distances, in cells
MAX_THREADS = 1024  # threads and worker processes


@dataclass(frozen=True)
class Config(Validated):
    """Quick: `iclr25-etd-exploration reproduce --scale quick` (~5 min on 2 idle CPU cores) reaches rho_pairs ~0.96.

    ci: `--scale ci`, the maze part of quick with the same settings (the claim gate, ~1-1.5 min of CPU). bench:
    `--scale bench`, the reward-free exploration gate (5 seeds x 4 methods x 8k frames, ~4 min of CPU). noisy:
    `--scale noisy`, the same with observation noise 0.1, ETD vs episodic counts and DEIR (3 seeds, ~3 min of CPU).
    full: `--scale full --device cuda`, the MiniGrid suite, 7 methods x 5 tasks x 3 seeds at 10M frames each plus
    DoorKey-8x8 at 1M (`profile` estimates its time on one GPU; the PPO loop is bound by the MiniGrid envs and by
    many small model calls, see README).
    """

    maze_steps: Annotated[int, AtLeast(1), AtMost(MAX_STEPS)] = 800  # spec §6a
    maze_batch: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 256  # spec §6a
    maze_data_steps: Annotated[int, AtLeast(MAZE_EPISODE_LEN), AtMost(MAX_STEPS)] = 20_000  # spec §6a
    maze_lr: PositiveFloat = 1e-3  # spec §6a
    # Clean walls are trained at seeds seed..seed+maze_clean_seeds-1 and gated on the mean: Spearman over the ~20 cells
    # near the corner moves by a few rank swaps between runs (0.89-1.00 over seeds 0-4 here), so one seed is noise.
    maze_clean_seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 3
    ppo_env: MiniGridId = "MiniGrid-FourRooms-v0"
    ppo_methods: Annotated[tuple[str, ...], NonEmpty(), Each(OneOf(INTRINSICS))] = ("etd", "none", "count")
    ppo_seeds: Annotated[int, AtLeast(1), AtMost(MAX_SEEDS)] = 1
    # spec §6a suggests ~40k; cut to fit the CPU budget; 0 skips the PPO part
    ppo_frames: Annotated[int, AtLeast(0), AtMost(MAX_FRAMES)] = 8_192
    ppo_envs: Annotated[int, AtLeast(1), AtMost(MAX_ENVS)] = 8
    ppo_steps: Annotated[int, AtLeast(1), AtMost(MAX_ROLLOUT)] = 128
    ppo_batch: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 256
    ppo_epochs: Annotated[int, AtLeast(1), AtMost(MAX_EPOCHS)] = 4
    ext_coef: NonNegativeFloat = 0.0  # reward-free in quick; 1.0 in the official recipe
    # Gaussian observation noise of the reward-free runs (raw grid-code units, official scale)
    ppo_noise: NonNegativeFloat = 0.0
    int_coef: NonNegativeFloat = 1e-2  # official int_rew_coef
    full_envs: MiniGridIds = ()  # MiniGrid tasks with extrinsic reward (full preset)
    full_frames: Annotated[int, AtLeast(0), AtMost(MAX_FRAMES)] = 0
    maze_part: Flag = True  # False skips the spiral-maze distance study (bench)
    gate_exploration: Flag = False  # gate the reward-free coverage claims (bench: 5 seeds); reported otherwise
    # processes for the PPO runs (each one torch thread); results do not depend on it
    workers: Annotated[int, AtLeast(1), AtMost(MAX_THREADS)] = 1
    # more threads only pay off on idle cores; the loop is dominated by small ops
    threads: Annotated[int, AtLeast(1), AtMost(MAX_THREADS)] = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.full_envs and self.full_frames < 1:
            raise ValueError("full_frames must be an integer >= 1 when full_envs are given")


PRESETS: dict[str, Config] = {
    "ci": Config(ppo_frames=0),  # the maze part of quick, unchanged: the claim gate
    "quick": Config(),
    # the exploration gate: reward-free FourRooms as in quick, 5 seeds, ETD vs no bonus vs two broken ETDs
    "bench": Config(
        maze_part=False,
        ppo_methods=("etd", "none", "etd-mean", "etd-random"),
        ppo_seeds=5,
        gate_exploration=True,
    ),
    # noisy TV: every observation is new, so episodic counts pay a constant bonus; ETD's distance ignores the noise;
    # DEIR (the code base ETD forks, built for noisy observations) is reported beside them
    "noisy": Config(maze_part=False, ppo_methods=("etd", "count", "none", "deir"), ppo_seeds=3, ppo_noise=0.1),
    "full": Config(
        ppo_env="MiniGrid-DoorKey-8x8-v0",
        ppo_methods=("etd", "none", "count", "rnd", "noveld", "e3b", "deir"),
        ppo_seeds=3,
        ppo_frames=1_000_000,
        ppo_envs=16,
        ppo_steps=512,
        ppo_batch=512,
        full_envs=(
            "MiniGrid-DoorKey-16x16-v0",
            "MiniGrid-KeyCorridorS6R3-v0",
            "MiniGrid-MultiRoom-N6-v0",
            "MiniGrid-ObstructedMaze-2Q-v0",
            "MiniGrid-ObstructedMaze-Full-v0",
        ),
        full_frames=10_000_000,
        threads=4,
    ),
}


@dataclass(frozen=True)
class PPOConfig(Validated):
    """One PPO run; defaults follow the official `src/train.py` (bracketed values in the spec are script values)."""

    env_id: MiniGridId = "MiniGrid-DoorKey-8x8-v0"
    intrinsic: Annotated[str, OneOf(INTRINSICS)] = "etd"
    total_frames: Annotated[int, AtLeast(1), AtMost(MAX_FRAMES)] = 200_000
    n_envs: Annotated[int, AtLeast(1), AtMost(MAX_ENVS)] = 16
    n_steps: Annotated[int, AtLeast(1), AtMost(MAX_ROLLOUT)] = 512
    batch_size: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 512
    n_epochs: Annotated[int, AtLeast(1), AtMost(MAX_EPOCHS)] = 4
    lr: PositiveFloat = 3e-4
    gamma: UnitInterval = 0.99
    gae_lambda: UnitInterval = 0.95
    clip: PositiveFloat = 0.2
    ent_coef: NonNegativeFloat = 1e-2
    vf_coef: NonNegativeFloat = 0.5
    max_grad_norm: PositiveFloat = 0.5
    ext_coef: NonNegativeFloat = 1.0
    int_coef: NonNegativeFloat = 1e-2  # int_rew_coef (README command)
    # "gru": official CNN -> GRU(64) policy; "ff": feed-forward CNN policy (no recurrent state)
    policy: Annotated[str, OneOf(("gru", "ff"))] = "gru"
    # official: shuffled steps from stored GRU states; "sequences": whole env rollouts
    minibatch: Annotated[str, OneOf(("transitions", "sequences"))] = "transitions"
    features_dim: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 64  # policy features = GRU hidden size (src/train.py)
    latents_dim: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 256  # policy/value latent width (src/train.py)
    # ETD / DEIR CNN features (src/train.py of both)
    model_features_dim: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 128
    model_lr: PositiveFloat = 3e-4
    gamma_future: UnitInterval = 0.99  # positives' discount = PPO's gamma in the official code
    noise_scale: NonNegativeFloat = 0.0  # image_noise_scale
    # "ema" (official: per-env EMA mean, scalar EMA variance) or "batch"
    adv_norm: Annotated[str, OneOf(("ema", "batch"))] = "ema"
    # "official" keeps the official off-by-one episode boundary
    boundary: Annotated[str, OneOf(("correct", "official"))] = "correct"
    stale_features: Flag = False  # True keeps the official never-refreshed memory features
    max_episode_steps: Annotated[int, AtLeast(0), AtMost(MAX_EPISODE)] = 0  # 0 keeps the environment's own time limit
    seed: NonNegativeInt = 0


@dataclass(frozen=True)
class MazeConfig(Validated):
    """Distance learning on the spiral maze (spec §6a: 20k random-walk steps, 800 Adam steps)."""

    noise: Flag = False
    data_steps: Annotated[int, IsInt(), AtMost(MAX_STEPS)] = 20_000  # >= episode_len: checked in __post_init__
    episode_len: Annotated[int, AtLeast(2), AtMost(MAX_EPISODE)] = MAZE_EPISODE_LEN  # official demo
    steps: Annotated[int, AtLeast(1), AtMost(MAX_STEPS)] = 800
    batch_size: Annotated[int, AtLeast(1), AtMost(MAX_BATCH)] = 256
    lr: PositiveFloat = 1e-3
    gamma: UnitInterval = 0.99  # official demo
    energy: Annotated[str, OneOf(ENERGIES)] = "mrn_pot"
    loss: Annotated[str, OneOf(LOSSES)] = "infonce_symmetric"
    hidden_dim: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 256
    emb_dim: Annotated[int, AtLeast(1), AtMost(MAX_WIDTH)] = 64
    goal: Cell = (1, 1)
    max_pair_bfs: Annotated[int, AtLeast(1), AtMost(MAX_DISTANCE)] = 15
    goal_radius: Annotated[int, AtLeast(1), AtMost(MAX_DISTANCE)] = 20

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int_at_least("data_steps", self.data_steps, self.episode_len)


from iclr25.shared.smoke import SmokeSpec  # noqa: E402

SMOKE = SmokeSpec(
    build="iclr25.etd_exploration.smoke:build",
    full_steps=8_370_432,
    what="PPO update on DoorKey-16x16: ETD critic step + CNN-GRU policy step, minibatch 512 (rollout not timed)",
    steps_note=(
        "PPO updates (each ETD critic + policy, as timed; other methods' bonuses differ): 16 per epoch x 4 epochs x"
        " rollouts of 16 x 512 frames; 5 tasks x 7 methods x 3 seeds x 1,221 rollouts (10M frames)"
        " + 7 x 3 x 123 rollouts (1M, DoorKey-8x8)"
    ),
)
