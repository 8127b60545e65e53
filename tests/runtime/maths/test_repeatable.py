"""Same inputs, same take, bit for bit — whatever the heap looks like.

numpy picks between two loops for its transcendental functions by an overlap test that a strided
input can fail by accident of where malloc put the output (see runtime/maths/repeatable.py).  These
tests pin the hazard, the remedy, and that the simulation keeps using the remedy."""
from __future__ import annotations

import random
import re
import threading
from pathlib import Path

import numpy as np
import pytest

from runtime.motion import clip as clips
from runtime.maths import repeatable
from runtime.fatigue import schedule
from runtime import simulate

ROOT = Path(__file__).resolve().parents[3]
UNARY = ("sin", "cos", "arccos", "arcsin", "exp", "log1p")
# numpy functions whose loop choice can depend on addresses (SIMD vs libm), per numpy 1.26/2.x.
HAZARDOUS = ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "exp", "exp2", "expm1",
             "log", "log2", "log10", "log1p", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
             "arctanh", "cbrt", "power", "float_power")


def test_numpy_hazard_is_real_or_absent_and_the_remedy_is_immune():
    """The raw ufunc may change its last bit when its output sits right behind a strided input;
    the repeatable form of the same call never does (it reads a contiguous copy)."""
    rng = np.random.default_rng(3)
    n = 31
    buffer = np.empty(n * 4 + n)
    q = buffer[:n * 4].reshape(n, 4)
    q[:] = rng.uniform(0.05, 0.95, (n, 4))
    behind = buffer[n * 4:].reshape(n, 1)
    far = np.arctan2(q[:, 2:3], q[:, 3:4], out=np.empty((n, 1)))
    near = np.arctan2(q[:, 2:3], q[:, 3:4], out=behind)
    remedy = repeatable.arctan2(q[:, 2:3], q[:, 3:4])
    # On CPUs where numpy has SIMD arctan2 the raw results differ; the remedy gives the same bits
    # whatever sits behind its input.
    behind[:] = 0.0
    assert np.array_equal(remedy, repeatable.arctan2(q[:, 2:3], q[:, 3:4]))
    if not np.array_equal(far, near):
        assert np.array_equal(remedy, far)


@pytest.mark.parametrize("name", UNARY)
def test_repeatable_functions_give_the_same_bits_for_any_layout_and_keep_shapes(name):
    """The same values strided, reversed, or in another buffer with an array right behind them:
    the same bits out, in the input's shape (0-d stays 0-d)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0.05, 0.95, (20, 4))
    f = getattr(repeatable, name)
    buffer = np.empty(2 * 20)
    buffer[:20] = x[:, 3]
    assert np.array_equal(f(x[:, 3]), f(buffer[:20])) and f(x[:, 3]).shape == (20,)
    assert np.array_equal(f(x[::-1, 1:3])[::-1], f(x[:, 1:3])) and f(x[:, 1:3]).shape == (20, 2)
    assert np.ndim(f(0.5)) == 0


def test_power_and_arctan2_broadcast_like_numpy():
    base = np.array([[2.0, 3.0]])
    assert np.array_equal(repeatable.power(4.0, base.T[:, 0]), np.power(4.0, [2.0, 3.0]))
    assert repeatable.arctan2(1.0, 1.0) == np.arctan2(1.0, 1.0)


def test_take_code_calls_no_address_sensitive_numpy_function_directly():
    """A raw np.arccos(q[..., 3]) anywhere in the take's code would bring the flakiness back."""
    pattern = re.compile(r"\bnp\.(%s)\(" % "|".join(HAZARDOUS))
    offenders = []
    for folder in ("runtime", "fatigue_addon"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "repeatable.py":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if pattern.search(line.split("#")[0]):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "use runtime.maths.repeatable instead:\n" + "\n".join(offenders)


@pytest.mark.slow
def test_hybrid_take_is_bit_identical_in_threads_and_after_heap_churn():
    """The defect this module fixes: a hybrid (PyBullet limbs) take baked in a background thread,
    or after other allocations, differed in the last bits in up to 30 of 30 runs."""
    clip = clips.load_deepmimic(clips.deepmimic_clip_path("walk")).repeated(1.0)
    sched = schedule.from_fitness(0.25, fps=30, time_scale=40)
    run = lambda: simulate.simulate_clip(clip, sched, seconds=0.6, out_fps=30, simulate_limbs=True)  # noqa: E731
    first = run()
    keep = []
    shuffle = random.Random(7)
    for i in range(12):
        keep.append([np.empty(shuffle.randint(1, 4000)) for _ in range(50)])
        if i % 2 == 0:
            out = {}
            worker = threading.Thread(target=lambda: out.setdefault("take", run()))
            worker.start()
            worker.join()
            take = out["take"]
        else:
            take = run()
        assert np.array_equal(take.torque, first.torque), f"run {i}"
        assert np.array_equal(take.clip.joint_rots, first.clip.joint_rots), f"run {i}"
