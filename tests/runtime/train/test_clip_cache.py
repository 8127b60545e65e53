"""The training cache: a bake's request cached per condition is what training reads, and a clip
read from it trains exactly as the same clip by name; long takes train in pieces."""
from __future__ import annotations

import numpy as np

from runtime.fatigue import params, schedule
from runtime.motion import clip as clips
from runtime.request import SimulationRequest
from runtime.train import clip_cache, srb_env


def _cache_walk(cache):
    walk = clips.load_deepmimic(clips.deepmimic_clip_path("walk"))
    preset = params.preset("Exhausted")
    names = {}
    for condition in clip_cache.CONDITIONS:
        sched = None if condition == "fresh" else schedule.from_fitness(preset.fitness, 30.0, preset.time_scale,
                                                                        preset.initial_fatigue)
        names[condition] = f"{clip_cache.slug('bvh/walk.bvh', 'Armature', 'walk')}.{condition}.npz"
        SimulationRequest(clip=walk, schedule=sched).write(cache / names[condition])
    clip_cache.write_index(cache, {"format": clip_cache.FORMAT, "files": {"bvh/walk.bvh": {
        "sha256": "ab", "source": "s", "split": "train",
        "actions": [{"armature": "Armature", "action": "walk", "status": "cached", "requests": names},
                    {"armature": "Armature", "action": "x", "status": "refused", "requests": {}}]}}})
    return walk


def test_a_cached_clip_round_trips_and_trains_as_the_same_clip_by_name(tmp_path):
    walk = _cache_walk(tmp_path)
    index = clip_cache.read_index(tmp_path)
    assert clip_cache.is_current(tmp_path, index, "bvh/walk.bvh", "ab")
    assert not clip_cache.is_current(tmp_path, index, "bvh/walk.bvh", "cd")      # new content: redone
    [cached] = clip_cache.actions(tmp_path, "train")
    assert clip_cache.actions(tmp_path, "eval") == [] and cached.label == "bvh/walk.bvh [walk]"
    back = clip_cache.load(cached.requests["fresh"])
    assert back.schedule is None and clip_cache.load(cached.requests["exhausted"]).schedule is not None
    for name in ("root_pos", "root_rot", "joint_rots"):
        assert np.array_equal(getattr(back.clip, name), getattr(walk, name))
    by_path = srb_env.prepare(cached.requests["fresh"], seconds=2.0, mirror=True)
    by_name = srb_env.prepare("walk", seconds=2.0, mirror=True)
    assert np.array_equal(by_path.ref.com, by_name.ref.com)
    assert np.array_equal(by_path.body.tau_max, by_name.body.tau_max)
    (tmp_path / cached.requests["average"]).unlink()
    assert not clip_cache.is_current(tmp_path, index, "bvh/walk.bvh", "ab")     # a lost file: redone


def test_a_long_take_trains_in_pieces_that_cover_it():
    dance = clips.load_deepmimic(clips.deepmimic_clip_path("dance_a"))
    long = dance.repeated(34.0)
    long = clips.Clip(long.name, long.fps, long.root_pos, long.root_rot, long.joint_rots, loop=False)
    pieces = srb_env.segments(long)
    assert len(pieces) == 3 and all(p.duration <= 1.6 * srb_env.SEGMENT_SECONDS for p in pieces)
    assert sum(p.frames - 1 for p in pieces) == long.frames - 1                 # every frame, once
    assert np.array_equal(pieces[1].root_pos[0], long.root_pos[pieces[0].frames - 1])
    assert srb_env.segments(dance) == [dance]
