"""Action <-> Clip on real armatures (bpy, no mocks): rig -> Clip -> rig reproduces every mapped
bone's world rotation and the root for every rig family, the source action is never touched, the
proxy sees the rig's rest pose the way the URDF expects (arms, knees and elbows bend the right
way), a DeepMimic clip survives Clip -> rig -> Clip, and a 60-bone rig converts fast."""
from __future__ import annotations

import importlib
import json
import math
import time
from dataclasses import replace

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

import rigs  # noqa: E402  (tests/support/rigs.py needs bpy)
from mathutils import Matrix  # noqa: E402

FRAMES = 20


@pytest.fixture(scope="module")
def mods(addon_package):
    name = addon_package.__name__

    class M:
        rigmap = importlib.import_module(f"{name}.fatigue_addon.rigmap")
        rt = importlib.import_module(f"{name}.fatigue_addon.retarget")
        failure = importlib.import_module(f"{name}.fatigue_addon.failure")
        clip = importlib.import_module(f"{name}.runtime.motion.clip")
        quat = importlib.import_module(f"{name}.runtime.maths.quat")
        proxy = importlib.import_module(f"{name}.runtime.body.proxy")
    return M


def rot_error_deg(mods, a, b):
    """Max geodesic angle (degrees) between the rotation parts of (T, 4, 4) world matrices."""
    rt, quat = mods.rt, mods.quat
    qa = rt.rotation.matrices_to_quats(rt.polar(a[:, :3, :3]))
    qb = rt.rotation.matrices_to_quats(rt.polar(b[:, :3, :3]))
    return float(np.degrees(quat.angle_between(qa, qb)).max())


def all_fcurves(action):
    return rigs.all_curves(action) if hasattr(action, "layers") else list(action.fcurves)


# --------------------------------------------------------------------------- round trip per family

ROUND_TRIP = {}


@pytest.mark.parametrize("family", list(rigs.FAMILIES))
def test_round_trip_rig_clip_rig(mods, family):
    rig = rigs.build(family)
    obj = rig.obj
    mapping = mods.rigmap.detect_mapping(obj)
    source = obj.animation_data.action
    before = rigs.snapshot(source)
    frames = list(range(1, FRAMES + 1))
    names = [b.name for b in obj.data.bones]
    ref_world = rigs.world_matrices(obj, names, frames)
    ref_basis = rigs.basis_matrices(obj, names, frames)

    clip, info = mods.rt.action_to_clip(obj, mapping, 1, FRAMES)
    assert clip.frames == FRAMES and clip.fps == 30.0
    assert clip.joints == tuple(j.name for j in mods.proxy.DEFAULT_JOINTS)
    assert info.method == "fcurves"
    new = mods.rt.clip_to_action(obj, mapping, clip, info, source.name + ".fatigued")

    # the source action is untouched and still assigned; the new one is a separate datablock
    assert obj.animation_data.action == source
    after = rigs.snapshot(source)
    assert after.keys() == before.keys()
    assert all(np.array_equal(after[k], before[k]) for k in before)
    assert new != source and new.name == source.name + ".fatigued"

    # keyed one key per frame with foreach_set, every curve over the same range
    curves = all_fcurves(new)
    assert curves
    for fc in curves:
        assert len(fc.keyframe_points) == FRAMES
        assert tuple(fc.range()) == (1.0, float(FRAMES))
    paths = {fc.data_path for fc in curves}
    for bone in rig.unmapped:
        if any(f'pose.bones["{bone}"]' in fc.data_path for fc in all_fcurves(source)):
            assert any(f'pose.bones["{bone}"]' in p for p in paths), bone
    if hasattr(new, "slots"):
        assert [s.identifier for s in new.slots] == ["OB" + obj.name]

    rigs.assign_action(obj, new)
    got_world = rigs.world_matrices(obj, names, frames)
    got_basis = rigs.basis_matrices(obj, names, frames)
    mapped = [mapping[k] for k in mods.rigmap.HUMANOID_KEYS]
    errors = {b: rot_error_deg(mods, ref_world[b], got_world[b]) for b in mapped}
    root = float(np.linalg.norm(ref_world[mapping["pelvis"]][:, :3, 3] - got_world[mapping["pelvis"]][:, :3, 3], axis=1).max())
    unmapped = max(float(np.abs(ref_basis[b] - got_basis[b]).max()) for b in names if b not in mapped)
    ROUND_TRIP[family] = (max(errors.values()), root)
    print(f"\n{family}: round trip max rotation error {max(errors.values()):.2e} deg, root {root * 1000:.3f} mm, "
          f"unmapped basis {unmapped:.1e}; knee/elbow off hinge {info.off_axis_deg}")
    assert max(errors.values()) < 1.0, errors
    assert root < 0.01
    assert unmapped < 1e-4        # fingers, twist bones, spine middles keep their local channels


@pytest.mark.parametrize("family", ["bvh", "biped"])
def test_fcurve_sampling_matches_scene_evaluation(mods, family):
    rig = rigs.build(family)
    mapping = mods.rigmap.detect_mapping(rig.obj)
    fast, info_fast = mods.rt.action_to_clip(rig.obj, mapping, 1, FRAMES, method="fcurves")
    slow, info_slow = mods.rt.action_to_clip(rig.obj, mapping, 1, FRAMES, method="scene")
    assert (info_fast.method, info_slow.method) == ("fcurves", "scene")
    assert np.degrees(mods.quat.angle_between(fast.joint_rots, slow.joint_rots)).max() < 1e-4
    assert np.abs(fast.root_pos - slow.root_pos).max() < 1e-6
    assert bpy.context.scene.frame_current == 1      # the scene path restores the frame


def test_constraints_switch_to_scene_evaluation_and_still_round_trip(mods):
    rig = rigs.build("generic")
    obj = rig.obj
    limit = obj.pose.bones["Neck"].constraints.new("LIMIT_ROTATION")
    limit.owner_space = "LOCAL"
    limit.use_limit_x = limit.use_limit_y = limit.use_limit_z = True
    limit.min_x = limit.min_y = limit.min_z = math.radians(-10)
    limit.max_x = limit.max_y = limit.max_z = math.radians(10)
    mapping = mods.rigmap.detect_mapping(obj)
    frames = list(range(1, FRAMES + 1))
    ref = rigs.world_matrices(obj, ["Neck"], frames)
    clip, info = mods.rt.action_to_clip(obj, mapping, 1, FRAMES)
    assert info.method == "scene"
    assert "constraints" in " ".join(mods.rt.scene_path_reasons(obj, ["Neck"]))
    new = mods.rt.clip_to_action(obj, mapping, clip, info, "limited.fatigued")
    rigs.assign_action(obj, new)
    got = rigs.world_matrices(obj, ["Neck"], frames)
    assert rot_error_deg(mods, ref["Neck"], got["Neck"]) < 1.0


# --------------------------------------------------------------------------- what the proxy sees

def _rest_action(obj, mapping, keys, rotations=None):
    """Key every mapped bone at identity (rest pose) for two frames, with optional world-space
    rotations D (3x3, applied in chain order) on some keys."""
    obj.animation_data.action = None          # else the depsgraph re-applies the old action
    for pb in obj.pose.bones:
        pb.matrix_basis = Matrix()
    bpy.context.view_layer.update()
    O = obj.matrix_world
    for key, D in (rotations or {}).items():
        bone = mapping[key]
        pb = obj.pose.bones[bone]
        loc, _, scale = (O @ pb.matrix).decompose()                    # the head where it is now,
        rest_rot = (O @ obj.data.bones[bone].matrix_local).to_quaternion()   # D from the rest pose
        target = Matrix.LocRotScale(loc, Matrix(D) @ rest_rot.to_matrix(), scale)
        pb.matrix = O.inverted() @ target
        bpy.context.view_layer.update()
    rigs.new_action(obj, "probe")
    for k in keys:
        pb = obj.pose.bones[mapping[k]]
        rigs.key_rotation(obj, mapping[k], [pb.matrix_basis.to_quaternion()] * 2)


def _local_rotvecs_deg(mods, clip):
    return {j: np.degrees(mods.quat.to_rotvec(clip.joint_rots[0, i])) for i, j in enumerate(clip.joints)}


def _rx(deg):
    return np.array(Matrix.Rotation(math.radians(deg), 3, "X"))


def _ry(deg):
    return np.array(Matrix.Rotation(math.radians(deg), 3, "Y"))


@pytest.mark.parametrize("family, shoulder_deg", [("mixamo", 90.0), ("bvh", 90.0), ("generic", 45.0), ("unreal", 45.0)])
def test_rest_pose_maps_to_upright_proxy_facing_x(mods, family, shoulder_deg):
    """T-pose rigs lift the proxy's arms 90 degrees sideways, A-pose rigs 45; everything else is
    close to the proxy's rest pose, and the root faces +X whatever the rig's object transform."""
    rig = rigs.build(family)
    mapping = mods.rigmap.detect_mapping(rig.obj)
    _rest_action(rig.obj, mapping, mods.rigmap.HUMANOID_KEYS)
    clip, info = mods.rt.action_to_clip(rig.obj, mapping, 1, 2)
    assert np.degrees(mods.quat.angle_between(clip.root_rot[0], mods.clip.Y_UP_TO_Z_UP)) < 1e-3
    rv = _local_rotvecs_deg(mods, clip)
    for side, sign in (("right", -1.0), ("left", 1.0)):
        # about the link's local x (forward): right arm negative, left arm positive
        assert rv[f"{side}_shoulder"][0] == pytest.approx(sign * shoulder_deg, abs=1.0)
        assert np.linalg.norm(rv[f"{side}_shoulder"][1:]) < 5.0
        for j in ("hip", "knee", "ankle"):
            assert np.linalg.norm(rv[f"{side}_{j}"]) < 8.0, (side, j, rv[f"{side}_{j}"])
        assert np.linalg.norm(rv[f"{side}_elbow"]) < 20.0
    for j in ("chest", "neck"):
        assert np.linalg.norm(rv[j]) < 6.0
    # standing on the floor: proxy pelvis near its own rest height (the pelvis height comes from the
    # leg chains, the sole's few centimetres are estimated; the simulation measures the floor under
    # the clip's soles itself).  A BVH's rest pose hangs at the origin, its motion lifts it onto the
    # floor: see the walk test.
    if family != "bvh":
        assert clip.root_pos[0, 2] == pytest.approx(mods.rt.PROXY_PELVIS_HEIGHT, abs=0.05)


def test_arms_down_knee_and_elbow_flexion_follow_the_urdf_axes(mods):
    """Mixamo (T-pose, Y-up data, 0.01 scale): arms rotated down make the proxy's shoulders
    identity; knee flexion is a negative hinge angle and elbow flexion a positive one (the URDF's
    joint limits), with almost nothing off the hinge axis."""
    rig = rigs.build("mixamo")
    mapping = mods.rigmap.detect_mapping(rig.obj)
    # the rig faces -Y with its left at +X: left arm +X -> down is +90 about Y, right arm -90;
    # knee flexion swings the shin backwards (+Y): +60 about X; elbow flexion brings the
    # hanging forearm forwards (-Y): -70 about X.
    rotations = {"left_shoulder": _ry(90), "right_shoulder": _ry(-90),
                 "left_knee": _rx(60), "right_knee": _rx(60),
                 "left_elbow": _rx(-70) @ _ry(90), "right_elbow": _rx(-70) @ _ry(-90)}
    _rest_action(rig.obj, mapping, mods.rigmap.HUMANOID_KEYS, rotations)
    clip, info = mods.rt.action_to_clip(rig.obj, mapping, 1, 2)
    rv = _local_rotvecs_deg(mods, clip)
    for side in ("right", "left"):
        assert np.linalg.norm(rv[f"{side}_shoulder"]) < 2.0
        knee, elbow = rv[f"{side}_knee"], rv[f"{side}_elbow"]
        assert knee[2] == pytest.approx(-60.0 - 5.4, abs=2.0)    # plus the template's slight rest bend
        assert elbow[2] == pytest.approx(70.0, abs=3.0)
        assert info.off_axis_deg[f"{side}_knee"] < 2.0 and info.off_axis_deg[f"{side}_elbow"] < 3.0
    lo, hi = -math.pi, math.pi
    hinge = {j: 2 * np.arctan2(clip.joint_rots[0, i, 2], clip.joint_rots[0, i, 3]) for i, j in enumerate(clip.joints)}
    assert lo < hinge["right_knee"] < 0 and 0 < hinge["right_elbow"] < hi


# --------------------------------------------------------------------------- Clip -> rig -> Clip

@pytest.mark.parametrize("family", ["mixamo", "daz"])
def test_deepmimic_walk_survives_clip_rig_clip(mods, family):
    rig = rigs.build(family)
    obj = rig.obj
    mapping = mods.rigmap.detect_mapping(obj)
    _, info = mods.rt.action_to_clip(obj, mapping, 1, FRAMES)
    walk = mods.clip.load_deepmimic(mods.clip.deepmimic_clip_path("walk"))   # 60 fps: resampled to 30
    walk = replace(walk, root_pos=walk.root_pos[:80], root_rot=walk.root_rot[:80], joint_rots=walk.joint_rots[:80])
    new = mods.rt.clip_to_action(obj, mapping, walk, info, "walk.fatigued")
    walk30 = walk.resampled(info.fps)
    rigs.assign_action(obj, new)
    back, _ = mods.rt.action_to_clip(obj, mapping, 1, walk30.frames)
    assert np.degrees(mods.quat.angle_between(back.joint_rots, walk30.joint_rots)).max() < 0.01
    assert np.degrees(mods.quat.angle_between(back.root_rot, walk30.root_rot)).max() < 0.01
    assert np.abs(back.root_pos - walk30.root_pos).max() < 1e-4
    # the character walks the way it faces (-Y) and its toes touch the floor
    frames = range(1, walk30.frames + 1)
    W = rigs.world_matrices(obj, [mapping["pelvis"], mapping["left_toe"], mapping["right_toe"]], frames)
    pelvis = W[mapping["pelvis"]][:, :3, 3]
    travel = pelvis[-1] - pelvis[0]
    assert travel[1] < -0.5 and abs(travel[0]) < 0.3 * abs(travel[1])
    toes = np.minimum(W[mapping["left_toe"]][:, 2, 3], W[mapping["right_toe"]][:, 2, 3])
    assert toes.min() > -0.05 and np.percentile(toes, 50) < 0.06


# --------------------------------------------------------------------------- details

def test_info_survives_json_and_rebake_replaces_the_action(mods):
    rig = rigs.build("biped")
    obj = rig.obj
    mapping = mods.rigmap.detect_mapping(obj)
    clip, info = mods.rt.action_to_clip(obj, mapping, 1, FRAMES)
    info2 = mods.rt.RetargetInfo.from_dict(json.loads(json.dumps(info.to_dict())))
    first = mods.rt.clip_to_action(obj, mapping, clip, info2, "take")
    n_curves = len(all_fcurves(first))
    # a re-bake (here: a shorter clip) reuses the datablock and replaces every curve
    short = replace(clip, root_pos=clip.root_pos[:10], root_rot=clip.root_rot[:10], joint_rots=clip.joint_rots[:10])
    second = mods.rt.clip_to_action(obj, mapping, short, info, "take")
    assert second == first
    curves = all_fcurves(second)
    assert len(curves) == n_curves
    assert all(len(fc.keyframe_points) == 10 for fc in curves)
    with pytest.raises(mods.failure.RetargetError, match="over its source action"):
        mods.rt.clip_to_action(obj, mapping, clip, info, obj.animation_data.action.name)


def test_source_frames_retime_the_unmapped_bones(mods):
    """A slowed-down take: 39 clip frames, the source's 20 frames spread over them."""
    rig = rigs.build("mixamo")
    obj = rig.obj
    mapping = mods.rigmap.detect_mapping(obj)
    clip, info = mods.rt.action_to_clip(obj, mapping, 1, FRAMES)
    slow = clip.resampled(15.0)
    slow = replace(slow, fps=30.0)            # same poses, twice as many frames at 30 fps
    src = np.linspace(1.0, FRAMES, slow.frames)
    new = mods.rt.clip_to_action(obj, mapping, slow, info, "slow", source_frames=src)
    hand = 'pose.bones["mixamorig:LeftHand"].rotation_quaternion'
    src_fc = next(fc for fc in all_fcurves(obj.animation_data.action) if fc.data_path == hand and fc.array_index == 1)
    new_fc = next(fc for fc in all_fcurves(new) if fc.data_path == hand and fc.array_index == 1)
    for k in (0, slow.frames // 2, slow.frames - 1):
        assert new_fc.evaluate(1 + k) == pytest.approx(src_fc.evaluate(src[k]), abs=1e-5)
    with pytest.raises(mods.failure.RetargetError, match="one finite frame per clip frame"):
        mods.rt.clip_to_action(obj, mapping, slow, info, "slow", source_frames=src[:-1])


def test_frame_rate_and_errors(mods):
    rig = rigs.build("generic")
    obj = rig.obj
    bpy.context.scene.render.fps = 24
    mapping = mods.rigmap.detect_mapping(obj)
    clip, info = mods.rt.action_to_clip(obj, mapping, 1, FRAMES, proxy_height=1.8)
    assert clip.fps == 24.0 and info.proxy_height == 1.8
    assert info.scale == pytest.approx(1.8 / info.rig_height)
    with pytest.raises(mods.failure.RetargetError, match="Frame range") as exc:
        mods.rt.action_to_clip(obj, mapping, 5, 5)
    assert "\n" not in str(exc.value)
    partial = dict(mapping.bones)
    del partial["left_elbow"]
    with pytest.raises(mods.failure.RigMappingError, match="Left forearm.*Rig Mapping list"):
        mods.rt.action_to_clip(obj, partial, 1, FRAMES)
    obj.animation_data.action = None
    with pytest.raises(mods.failure.RetargetError, match="has no action"):
        mods.rt.action_to_clip(obj, mapping, 1, FRAMES)


def test_proxy_constants_match_pybullet(mods):
    """The retarget's idea of the proxy (no pybullet in Blender) agrees with the URDF."""
    pytest.importorskip("pybullet")
    kin = importlib.import_module(f"{mods.rt.__package__.rpartition('.')[0]}.runtime.engines.pybullet.kinematics")
    quat = mods.quat
    with kin.Kinematics() as k:
        k.set_pose([0.0, 0.0, 0.0], mods.clip.Y_UP_TO_Z_UP, np.tile(quat.IDENTITY, (12, 1)))
        pos, rot = k.link_frames()
        sole = k.sole_corners(pos, rot)
        assert -sole[..., 2].min() == pytest.approx(mods.rt.PROXY_PELVIS_HEIGHT, abs=1e-6)
        for r in rot:
            assert np.degrees(quat.angle_between(r, mods.clip.Y_UP_TO_Z_UP)) < 1e-4
        import pybullet as p
        joint_pos = {p.getJointInfo(k.body, i, physicsClientId=k.client)[12].decode():
                     np.array(p.getLinkState(k.body, i, physicsClientId=k.client)[4]) for i in k.link_index}
    for key, direction in mods.rt.SEGMENT_DIRECTION.items():
        child = {"chest": "neck", "neck": None, "right_hip": "right_knee", "right_knee": "right_ankle",
                 "left_hip": "left_knee", "left_knee": "left_ankle", "right_shoulder": "right_elbow",
                 "right_elbow": "right_wrist", "left_shoulder": "left_elbow", "left_elbow": "left_wrist"}[key]
        if child is None:
            continue
        seg = joint_pos[child] - joint_pos[key]
        assert np.dot(seg / np.linalg.norm(seg), direction) > 0.99, key


# --------------------------------------------------------------------------- speed

def test_sixty_bone_rig_300_frames_round_trips_and_prints_its_timings(mods):
    rigs.fresh_scene()
    rig = rigs.mixamo_rig(frames=300, fingers=True, cycles=3.0)
    obj = rig.obj
    assert 60 <= len(obj.data.bones) <= 70
    mapping = mods.rigmap.detect_mapping(obj)
    t0 = time.perf_counter()
    clip, info = mods.rt.action_to_clip(obj, mapping, 1, 300)
    t1 = time.perf_counter()
    new = mods.rt.clip_to_action(obj, mapping, clip, info, "speed.fatigued")
    t2 = time.perf_counter()
    n_curves = len(all_fcurves(new))
    print(f"\n{len(obj.data.bones)}-bone rig, 300 frames: action_to_clip {t1 - t0:.3f} s + clip_to_action "
          f"{t2 - t1:.3f} s = {t2 - t0:.3f} s ({n_curves} curves written); stages {info.timings}")
    assert clip.frames == 300 and n_curves > 0   # timings are printed, not asserted


# --------------------------------------------------------------------------- the object's own motion

def _parent_to_moving_empty(obj, keys):
    """Parent ``obj`` (keeping its world placement) to an empty keyed with ``keys``: (frame, location,
    rotation about Z in degrees)."""
    empty = bpy.data.objects.new("Mover", None)
    bpy.context.scene.collection.objects.link(empty)
    world = obj.matrix_world.copy()
    obj.parent = empty
    obj.matrix_parent_inverse = empty.matrix_world.inverted()
    obj.matrix_world = world
    for frame, loc, yaw in keys:
        empty.location = loc
        empty.rotation_euler = (0.0, 0.0, math.radians(yaw))
        empty.keyframe_insert("location", frame=frame)
        empty.keyframe_insert("rotation_euler", frame=frame)
    return empty


@pytest.mark.parametrize("keys", [
    [(1, (0.0, 0.0, 0.0), 0.0), (FRAMES, (5.0, 0.0, 0.0), 0.0)],       # carried 5 m along x
    [(1, (0.0, 0.0, 0.0), 0.0), (FRAMES, (1.0, 2.0, 0.0), 90.0)],      # carried and turned a quarter
], ids=["moving", "rotating"])
def test_an_animated_parent_is_not_counted_twice(mods, keys):
    """The parent's motion is the object's, not the performance: the unmodified take written back
    under the same moving parent puts every mapped bone where the source puts it, every frame."""
    rig = rigs.build("mixamo")
    obj = rig.obj
    mapping = mods.rigmap.detect_mapping(obj)
    _parent_to_moving_empty(obj, keys)
    bones = [mapping[k] for k in mods.rigmap.HUMANOID_KEYS]
    before = rigs.world_matrices(obj, bones, range(1, FRAMES + 1))
    clip, info = mods.rt.action_to_clip(obj, mapping, 1, FRAMES)
    assert info.method == "scene" and any("itself moves" in w for w in info.warnings)
    take = mods.rt.clip_to_action(obj, mapping, clip, info, "take")
    rigs.assign_action(obj, take)
    after = rigs.world_matrices(obj, bones, range(1, FRAMES + 1))
    for b in bones:
        assert rot_error_deg(mods, before[b], after[b]) < 0.01, b
    pelvis = mapping["pelvis"]
    assert np.abs(before[pelvis][:, :3, 3] - after[pelvis][:, :3, 3]).max() < 1e-4


def test_a_rig_in_centimetres_retargets_like_the_same_rig_in_metres(mods):
    """Units: the same rig and motion 100x larger (a BVH in centimetres) gives the same proxy motion
    at the same height, and the take written back lands in the rig's own units."""
    rig = rigs.build("mixamo")
    obj = rig.obj
    mapping = mods.rigmap.detect_mapping(obj)
    metres, info_m = mods.rt.action_to_clip(obj, mapping, 1, FRAMES, proxy_height=1.75)
    size_m = mods.rt.rig_size(obj, mapping)
    obj.scale = tuple(100.0 * v for v in obj.scale)
    bpy.context.view_layer.update()
    size_cm = mods.rt.rig_size(obj, mapping)
    assert size_m.in_metres and not size_cm.in_metres
    assert size_cm.stature == pytest.approx(100.0 * size_m.stature, rel=1e-6)
    cm, info_cm = mods.rt.action_to_clip(obj, mapping, 1, FRAMES, proxy_height=1.75)
    assert np.abs(cm.root_pos - metres.root_pos).max() < 1e-6
    assert np.degrees(mods.quat.angle_between(cm.joint_rots, metres.joint_rots)).max() < 1e-4   # float32 matrices
    pelvis = mapping["pelvis"]
    before = rigs.world_matrices(obj, [pelvis], range(1, FRAMES + 1))[pelvis][:, :3, 3]
    take = mods.rt.clip_to_action(obj, mapping, cm, info_cm, "take")
    rigs.assign_action(obj, take)
    after = rigs.world_matrices(obj, [pelvis], range(1, FRAMES + 1))[pelvis][:, :3, 3]
    assert np.abs(after - before).max() < 1e-3 * size_cm.stature     # in the rig's units, where the source is


@pytest.mark.parametrize("family", ["daz", "mixamo"])
def test_every_joint_starts_with_w_at_least_zero_and_stays_continuous(mods, family):
    """Issue 51: a joint's rotation relative to its parent's (each w >= 0) had w < 0 on the DAZ
    rig's left arm for the whole clip; the simulator read its elbow 2 pi off.  The Clip now
    starts every joint in the w >= 0 hemisphere (hinges stay there) and keeps it continuous."""
    rig = rigs.build(family)
    clip, _ = mods.rt.action_to_clip(rig.obj, mods.rigmap.detect_mapping(rig.obj), 1, FRAMES)
    q = clip.joint_rots
    assert np.all(q[0, :, 3] >= 0.0)
    assert np.all(np.sum(q[1:] * q[:-1], axis=-1) >= 0.0)
    hinges = [i for i, j in enumerate(mods.proxy.DEFAULT_JOINTS) if j.dofs == 1]
    assert np.all(q[:, hinges, 3] >= 0.0)
