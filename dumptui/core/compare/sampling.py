"""Where a big output is compared with its replay: REPLAY_SAMPLE positions drawn with a fixed seed. Here, below
the replays (core/search/replays.py), so that the worker that computes an output pair's statistics can keep
its values there for the replay that follows (processes.run_units): the replay then reads no file of it."""

from __future__ import annotations

import numpy as np

# From this many output elements, a replay's outputs are compared at REPLAY_SAMPLE positions drawn with a fixed
# seed instead of everywhere: the full statistics of large replays were most of a large compare's replay time,
# while the proof's rule compares errors a factor `gain` (10) apart and tail shares of 1 % and more, which a
# few thousand positions measure well (ReplayProof.sample_words states how well).
REPLAY_SAMPLED_FROM = 1 << 18
REPLAY_SAMPLE = 4096
REPLAY_SEED = 20


def sample_positions(size: int) -> np.ndarray | None:
    """The output positions a replay compares: None (every one) below REPLAY_SAMPLED_FROM elements, else
    REPLAY_SAMPLE positions drawn uniformly (with replacement: independent draws) with a fixed seed."""
    if size < REPLAY_SAMPLED_FROM:
        return None
    return np.random.default_rng(REPLAY_SEED).integers(0, size, REPLAY_SAMPLE)
