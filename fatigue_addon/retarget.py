"""Action <-> Clip: the one place where Blender's rig space meets the proxy's space.

Conventions converted here and nowhere else: Blender is Z-up, metres, quaternions (w, x, y, z)
and 4x4 matrices; ``runtime`` is Z-up, metres, quaternions (x, y, z, w).

Method (independent of the rig's rest pose, units and orientation; see rig/space.py):

* ``O``: the object's world matrix, read once (at the first baked frame): the bones are
  simulated in the armature's own space under it, so an animated parent or object keys are not
  part of the performance and are not counted twice (they play on top of the take).
* ``W_b(t)``: world rotation of mapped bone b at frame t (``O @ pose_bone.matrix``, scale
  removed), ``W_b(rest)`` the same in the rest pose.  ``D_b(t) = W_b(t) W_b(rest)^-1`` is the
  bone's world motion away from its rest pose.
* ``Fr``: the rest pose's body axes (forward, left, up; space.body_frame: up along the trunk
  snapped to a world axis, left from the hips and shoulders), so a rest pose lying down or on its
  head is read like a standing one.
* A rest pose that is not a human shape (rigmap.body_pose) is not used: "rest" below is then the
  animated frame standing straightest (``W_b(rest)`` its posed world rotations, the joints its
  posed heads), each foot's own planted frame (the lowest ankle), and the thigh and upper arm
  turned about their length so the proxy's knee and elbow hinges lie along the axis the rig's
  knee and elbow bend about over the action (a posed limb does not show its twist, its bend does).
* ``A``: stands the motion up (world Z, or the one axis a file imported with another up axis
  stands along all through its motion: space.motion_up) and turns the rig's facing (its rest
  pose's, or the first frame's when the rest pose lies down) onto the proxy's +X.
* ``C_j``: the proxy link's world orientation when the proxy stands LIKE THE RIG'S REST POSE:
  starting from the proxy rest pose (facing +X, up +Z, ``runtime.motion.clip.Y_UP_TO_Z_UP`` at the root,
  every joint identity, arms hanging down) each segment is swung, down the chain, by the minimal
  rotation that points it along the rig bone's rest direction in ``Fr`` (segment ends come from
  the next joint's head: importers make bone tails any length), then turned by ``A Fr``.  Feet
  only turn about the body's up (toe-out): a rig standing in its rest pose has flat feet.
* Proxy link world rotation ``P_j(t) = A D_b(t) A^-1 C_j``; Clip root rotation = ``P_pelvis``;
  joint rotation = ``P_parent^-1 P_j`` (proxy tree: pelvis->chest->neck, pelvis->hip->knee->ankle,
  chest->shoulder->elbow).  Knees and elbows are revolute about their local Z in the proxy: the
  Clip keeps the full quaternion and ``RetargetInfo.off_axis_deg`` reports the part the hinge
  cannot follow (the simulation hands it to the hip or shoulder: runtime.motion.hinges).
* Root position ``= s A p(t) + offset``: p is the pelvis bone's world head, ``s = proxy_height /
  stature`` (space.measure: the rig's size from its joint chains, in its own units), and the
  vertical offset puts the rig's standing pelvis (straight legs on world z = 0) at the proxy's
  own (``pelvis_height``), so legs of other proportions still reach the floor; a motion whose
  floor lies elsewhere keeps it (the simulation measures the floor under the clip's soles).

``clip_to_action`` is the exact inverse: every mapped bone gets back the world rotation
``A^-1 P_j C_j^-1 A W_b(rest)`` and the pelvis its world head position, solved through the rig's
own hierarchy; all other bones (fingers, twist bones, spine middles) keep their source local
channels, sampled per frame.  rig -> Clip -> rig reproduces the mapped bones' world rotations and
the root to float precision.

Sampling: without constraints, drivers, NLA or object animation the source channels are read by
``FCurve.evaluate`` and pushed through the hierarchy in numpy ("fcurves": no depsgraph, so a heavy
character mesh costs nothing); otherwise every frame is evaluated with ``scene.frame_set``
("scene").  ``method`` forces either.  Measured (bpy 5.0.1, 2 cores, tests/addon/test_retarget.py): a
63-bone Mixamo rig, 300 frames: action_to_clip 0.05 s + clip_to_action 0.14 s; the "scene" path
takes 0.43 s for the forward pass of the same rig without a mesh.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import bpy
import numpy as np

from ..runtime.body import proxy
from ..runtime.maths import quat, rotation
from ..runtime.motion import clip as rclip
from . import anim, rigmap  # noqa: F401  (rigmap: tools/corpus.py reads retarget.rigmap)
from .action_write import rotation_channel, write_action
from .failure import RetargetError
from .rest_geometry import mapping_bones, rest_geometry, rig_segment_lengths, rig_size  # noqa: F401  (callers read them here)
from .rig import space
from .rig.keys import HUMANOID_KEYS, KEY_LABELS, KEY_PARENT, OPTIONAL_KEYS
from .rig.proxy_rest import (CHAIN_ORDER, JOINT_KEYS, POSE_READINGS, PROXY_PELVIS_HEIGHT, REVOLUTE_KEYS,  # noqa: F401
                             SEGMENT_DIRECTION, RetargetInfo, hinge_axes, motion_axes, planted, proxy_world_rotations)
from .rig.rotations import polar, twist_off_axis
from .source_read import (BONE_PATH, ROTATION_PROPS, SourceMotion, basis_matrices, bone_channels, closure, read_motion,
                          rel_matrix, sample_curves, scene_path_reasons, unescape)


@dataclass
class SourceRead:
    """The source action read once for a bake (``read_action``): the mapped bones' motion over the
    frames read, the body measured (rest pose or animated reference frame) under the object
    matrix, and how it was read.  ``convert`` turns it into a Clip; ``trimmed`` narrows the frames."""
    action: object               # anim.SourceAction (a bake) or the action itself: its name and frame range
    bones: dict
    frame_start: int
    frame_end: int
    fps: float
    method: str
    reasons: list                # why F-curve sampling would differ from the viewport (scene_path_reasons)
    motion: SourceMotion
    geo: dict                    # rest_geometry
    reference_frame: int | None
    timings: dict


def action_to_clip(obj, mapping, frame_start: int, frame_end: int, proxy_height: float | None = None,
                   method: str = "auto", pelvis_height: float | None = None, reference_frame="auto", action=None):
    """Sample ``action`` (default: ``obj``'s assigned one) over [frame_start, frame_end] into a
    proxy-space Clip: ``read_action`` then ``convert``.

    ``mapping``: a ``Mapping`` or a dict key -> bone name.  ``proxy_height`` defaults to
    ``runtime.body.proxy.DEFAULT_HEIGHT``.  ``method``: "auto", "fcurves" or "scene".  ``pelvis_height``:
    the simulated body's pelvis above its soles standing straight (m; default: the default
    proportions' at ``proxy_height``), where the rig's standing pelvis is put.
    ``reference_frame``: the animated frame the body is measured on instead of its rest pose
    (None: the rest pose; "auto": rigmap.body_pose decides, the rest pose wherever it is a human
    shape).
    Returns ``(Clip, RetargetInfo)``; raises RetargetError / RigMappingError (one line) on bad input.
    """
    read = read_action(obj, mapping, frame_start, frame_end, method, reference_frame, action,
                       proxy_height=proxy_height)
    return convert(obj, read, proxy_height, pelvis_height)


def read_action(obj, mapping, frame_start: int, frame_end: int, method: str = "auto", reference_frame="auto",
                action=None, proxy_height: float | None = None, curves=None) -> SourceRead:
    """The source action read once: the mapped bones over the frames and the body's reference
    geometry (see ``action_to_clip`` for the arguments; ``proxy_height`` is only checked here;
    ``curves``: the action's curves of ``obj``, anim.action_fcurves, when read already)."""
    t0 = time.perf_counter()
    if obj is None or getattr(obj, "type", None) != "ARMATURE":
        raise RetargetError("No armature: select the character's armature")
    bones = mapping_bones(obj, mapping)
    action = action if action is not None else anim.active_action(obj)
    if action is None:
        raise RetargetError(f"Armature '{obj.name}' has no action: assign one in the Action Editor")
    frame_start, frame_end = int(frame_start), int(frame_end)
    if frame_end <= frame_start:
        raise RetargetError(f"Frame range {frame_start}-{frame_end} is empty: set End after Start in the timeline")
    if method not in ("auto", "fcurves", "scene"):
        raise ValueError(f"method must be 'auto', 'fcurves' or 'scene', not {method!r}")
    scene = bpy.context.scene
    fps = scene.render.fps / scene.render.fps_base
    _check_height(proxy_height)
    frames = np.arange(frame_start, frame_end + 1, dtype=np.float64)
    reasons = scene_path_reasons(obj, [bones[k] for k in HUMANOID_KEYS], action, curves)
    if method == "auto":
        method = "scene" if reasons else "fcurves"
    t1 = time.perf_counter()
    motion = read_motion(obj, action, bones, frames, method, curves)
    t2 = time.perf_counter()
    if reference_frame == "auto":
        reference_frame = rigmap.body_pose(obj, bones, action)[0]
    geo = _reference_geometry(obj, bones, action, motion.O, reference_frame)
    return SourceRead(action, bones, frame_start, frame_end, float(fps), method, reasons, motion, geo,
                      reference_frame, {"rest": t1 - t0, "sample": t2 - t1})


def _check_height(proxy_height: float | None) -> float:
    proxy_height = float(proxy_height or proxy.DEFAULT_HEIGHT)
    if not (0.3 <= proxy_height <= 3.0):
        raise RetargetError(f"proxy height {proxy_height:.2f} m is not a human's: use 0.3 to 3 m")
    return proxy_height


def _reference_geometry(obj, bones: dict, action, O: np.ndarray, reference_frame: int | None) -> dict:
    """rest_geometry on the rest pose, or on the animated ``reference_frame`` (with each foot's
    planted frame and the way knees and elbows bend over ``action``)."""
    if reference_frame is None:
        return rest_geometry(obj, bones, O)
    pose = rigmap.read_pose(obj, reference_frame)
    readings = [rigmap.read_pose(obj, f) for f in rigmap.action_frames(action, POSE_READINGS)]
    return rest_geometry(obj, bones, O, pose, planted(bones, O, readings), hinge_axes(bones, O, readings, pose))


def trimmed(obj, read: SourceRead, first: int, last: int) -> SourceRead:
    """``read`` over its frames ``first`` .. ``last`` (indices from its start): the motion sliced,
    not read again; the body measured again only where the object matrix of the new first frame
    differs (an object that moves under the scene path)."""
    motion = read.motion.trimmed(first, last)
    geo = read.geo
    if not np.array_equal(motion.O, read.motion.O):
        geo = _reference_geometry(obj, read.bones, read.action, motion.O, read.reference_frame)
    return SourceRead(read.action, read.bones, read.frame_start + first, read.frame_start + last, read.fps,
                      read.method, read.reasons, motion, geo, read.reference_frame, dict(read.timings))


def convert(obj, read: SourceRead, proxy_height: float | None = None, pelvis_height: float | None = None):
    """``read`` in proxy space: ``(Clip, RetargetInfo)`` (see the module's method)."""
    t2 = time.perf_counter()
    proxy_height = _check_height(proxy_height)
    bones, geo = read.bones, read.geo
    world, moved = read.motion.world()
    warnings = []
    if moved > 1e-6:
        warnings.append(f"'{obj.name}' itself moves (a parent, object keys or constraints): that motion is "
                        f"kept as it is, the body simulates the bones' motion under it")
    warnings[:0] = geo["warnings"]
    A, motion_notes = motion_axes(obj.name, world, geo)
    warnings.extend(motion_notes)
    size = geo["size"]
    s = proxy_height / size.stature
    C = {k: A @ geo["Fr"] @ c for k, c in geo["C_body"].items()}
    P = {}
    for key in HUMANOID_KEYS:
        W = polar(world[key][:, :3, :3])
        D = W @ geo["rest_world"][key].T
        P[key] = A @ D @ A.T @ C[key]
    qP = {k: quat.hemisphere(rotation.matrices_to_quats(v)) for k, v in P.items()}
    root_rot = quat.make_continuous(qP["pelvis"])
    joint_rots = np.stack([quat.multiply(quat.conjugate(qP[KEY_PARENT[k]]), qP[k]) for k in JOINT_KEYS], axis=1)
    # Each joint continuous from a first frame with w >= 0: a joint's rotation relative to its
    # parent's had w < 0 on some rigs (a DAZ left arm) for the whole clip; an elbow's then reads
    # 2 pi off wherever an angle is taken without quat.hinge_angle.
    joint_rots = quat.make_continuous(quat.hemisphere(quat.normalize(joint_rots)))
    pelvis_head = world["pelvis"][:, :3, 3]
    # The proxy's pelvis stands at its own height where the rig's stands at its own (straight legs
    # on world z = 0), so legs of other proportions still reach the floor.  A motion whose floor is
    # elsewhere keeps it: the simulation measures the floor under the clip's soles itself.
    if pelvis_height is None:
        pelvis_height = PROXY_PELVIS_HEIGHT * proxy_height / proxy.DEFAULT_HEIGHT
    offset = np.array([0.0, 0.0, pelvis_height - s * size.pelvis_standing])
    root_pos = s * pelvis_head @ A.T + offset
    off_axis = {k: float(np.degrees(twist_off_axis(joint_rots[:, JOINT_KEYS.index(k)]).max())) for k in REVOLUTE_KEYS}
    for k, deg in off_axis.items():
        if deg > 20.0:
            above, end = ("hip", "foot") if k.endswith("knee") else ("shoulder", "hand")
            warnings.append(f"{KEY_LABELS[k]} bends {deg:.0f} degrees off the proxy's hinge axis "
                            f"(the {above} turns to carry the rest: the {end} lands where the source puts it)")
    if read.reasons and read.method == "fcurves":
        warnings.append("sampled from F-curves although " + read.reasons[0] + ": the result may differ from the viewport")
    clip = rclip.Clip(name=read.action.name, fps=read.fps, root_pos=root_pos, root_rot=root_rot, joint_rots=joint_rots)
    slot = getattr(obj.animation_data, "action_slot", None)
    info = RetargetInfo(
        armature=obj.name, action=read.action.name, slot_handle=slot.handle if slot is not None else None,
        frame_start=read.frame_start, frame_end=read.frame_end, fps=read.fps,
        bones={k: bones[k] for k in HUMANOID_KEYS}, align=A, scale=float(s), root_offset=offset,
        rig_height=float(size.stature), proxy_height=proxy_height, rest_world=geo["rest_world"],
        proxy_rest=C, method=read.method, off_axis_deg=off_axis, warnings=warnings, object_matrix=read.motion.O,
        reference_frame=read.reference_frame,
    )
    extra = {k: bones[k] for k in OPTIONAL_KEYS if bones.get(k)}
    info.bones.update(extra)
    info.timings = {**read.timings, "convert": time.perf_counter() - t2}
    return clip, info


@dataclass
class TakeTargets:
    """What a take asks of the rig, frame by frame (``take_targets``)."""
    clip: object                 # the take's Clip at the rig's frame rate
    out_frames: np.ndarray       # (T,) the frames it is keyed on
    source_frames: np.ndarray    # (T,) the source frame each one plays
    rotations: dict              # key -> (T, 3, 3) world rotation of every mapped bone
    pelvis: np.ndarray           # (T, 3) world head of the pelvis bone
    samples: dict                # the source action's channels at ``source_frames`` (sample_curves)

    @property
    def frames(self) -> int:
        return len(self.out_frames)


def take_targets(clip, info: RetargetInfo, action_name: str, source_frames=None) -> TakeTargets:
    """The world rotations and pelvis position ``clip`` gives every mapped bone (the inverse of
    ``action_to_clip``), and the source's channels sampled at ``source_frames`` (one source frame
    per clip frame, default: the same frame, holding the last source frame past its end)."""
    if abs(clip.fps - info.fps) > 1e-6:
        clip = clip.resampled(info.fps)
    if tuple(clip.joints) != JOINT_KEYS:
        raise RetargetError(f"clip '{clip.name}' has joints {clip.joints}: expected the default proxy's {JOINT_KEYS}")
    source = bpy.data.actions.get(info.action)
    if source is None:
        raise RetargetError(f"the source action '{info.action}' is gone: re-assign it and bake again")
    if action_name == source.name:
        raise RetargetError(f"cannot write the fatigued take over its source action '{source.name}': choose another name")
    T = clip.frames
    out_frames = info.frame_start + np.arange(T, dtype=np.float64)
    if source_frames is None:
        src = np.minimum(out_frames, info.frame_end)
    else:
        src = np.asarray(source_frames, dtype=np.float64)
        if src.shape != (T,) or not np.isfinite(src).all():
            raise RetargetError(f"source_frames must hold one finite frame per clip frame ({T})")
    A, s = info.align, info.scale
    Pw = proxy_world_rotations(clip)
    target = {}
    for key in HUMANOID_KEYS:
        target[key] = A.T @ Pw[key] @ info.proxy_rest[key].T @ A @ info.rest_world[key]
    pelvis_world = ((clip.root_pos - info.root_offset) / s) @ A        # A^-1 v for row vectors
    samples = sample_curves(anim.action_curves(source, info.slot_handle), src)
    return TakeTargets(clip, out_frames, src, target, pelvis_world, samples)


def kept_channels(samples: dict, drop, skip_prefixes=()) -> list:
    """The source channels a take keeps as ``(data_path, index, group, values)`` rows: every bone
    channel but those ``drop(bone, prop)`` says the take writes itself, and every other channel
    but those whose path starts with one of ``skip_prefixes``."""
    out = []
    for (path, index), (vals, group) in samples.items():
        m = BONE_PATH.match(path)
        if m:
            bname, prop = unescape(m.group(1)), m.group(2)
            if not drop(bname, prop):
                out.append((path, index, group or bname, vals))
        elif not (skip_prefixes and path.startswith(tuple(skip_prefixes))):
            out.append((path, index, group, vals))
    return out


def clip_to_action(obj, mapping, clip, info: RetargetInfo, action_name: str, source_frames=None,
                   extra_channels=(), skip_prefixes=()):
    """Write ``clip`` onto ``obj``'s rig as the NEW action ``action_name`` (replaced if it exists).

    Mapped bones get the Clip's world rotations (the pelvis also its position); every other
    channel of the source action ``info.action`` is sampled at ``source_frames`` (one source frame
    per Clip frame, default: the same frame, holding the last source frame past its end), so
    fingers, twist and middle spine bones keep their animation.  Keys are written one per frame
    from ``info.frame_start`` with ``keyframe_points.add`` + ``foreach_set``.  The action is not
    assigned to ``obj``.  ``extra_channels``: more curves to key on the same frames, as
    ``(data_path, index, group, values (T,))`` rows; they win over source channels of the same
    path (the bake's per-bone ``fatigue`` / ``capacity`` curves).  Source channels whose data path
    starts with one of ``skip_prefixes`` are not copied.  Returns the action.
    """
    t0 = time.perf_counter()
    bones = mapping_bones(obj, mapping)
    take = take_targets(clip, info, action_name, source_frames)
    T, out_frames, target, pelvis_world, samples = take.frames, take.out_frames, take.rotations, take.pelvis, take.samples
    chans = bone_channels(samples)
    mapped = {bones[k]: k for k in HUMANOID_KEYS}
    order = closure(obj, list(mapped))
    bases = basis_matrices(obj, chans, order, T)
    O = info.object_matrix if info.object_matrix is not None else space.object_matrix(obj.matrix_world)
    O_inv = np.linalg.inv(O)
    O_rot = polar(O[:3, :3])
    mats, new_rot, new_loc = {}, {}, None
    warnings = []
    for name in order:
        bone = obj.data.bones[name]
        rel = rel_matrix(obj, name)
        K = rel if bone.parent is None else mats[bone.parent.name] @ rel
        B = bases[name]
        if name in mapped:
            key = mapped[name]
            K3 = np.broadcast_to(K[..., :3, :3], (T, 3, 3))
            Rb = polar(K3).transpose(0, 2, 1) @ (O_rot.T @ target[key])
            sc = np.linalg.norm(B[:, :3, :3], axis=1)          # column norms = the bone's own scale
            B = B.copy()
            B[:, :3, :3] = Rb * sc[:, None, :]
            new_rot[name] = Rb
            if key == "pelvis":
                head_arm = pelvis_world @ O_inv[:3, :3].T + O_inv[:3, 3]
                Kt = np.broadcast_to(K[..., :3, 3], (T, 3))
                new_loc = np.linalg.solve(K3, (head_arm - Kt)[..., None])[..., 0]
                if bone.use_connect:
                    warnings.append(f"pelvis bone '{name}' is connected to its parent: its position cannot be keyed")
                else:
                    B[:, :3, 3] = new_loc
        mats[name] = K @ B
    t1 = time.perf_counter()

    pelvis = bones["pelvis"]
    channels = list(extra_channels) + kept_channels(
        samples, lambda bname, prop: (bname in mapped and prop in ROTATION_PROPS)
        or (bname == pelvis and prop == "location" and new_loc is not None), skip_prefixes)
    for name, Rb in new_rot.items():
        pb = obj.pose.bones[name]
        esc = bpy.utils.escape_identifier(name)
        prop, values = rotation_channel(pb, Rb, chans.get(name, {}))
        for i in range(values.shape[1]):
            channels.append((f'pose.bones["{esc}"].{prop}', i, name, values[:, i]))
    if new_loc is not None and not obj.data.bones[pelvis].use_connect:
        esc = bpy.utils.escape_identifier(pelvis)
        for i in range(3):
            channels.append((f'pose.bones["{esc}"].location', i, pelvis, new_loc[:, i]))
    action = write_action(obj, action_name, out_frames, channels)
    t2 = time.perf_counter()
    info.timings.update({"inverse": t1 - t0, "write": t2 - t1})
    info.warnings.extend(w for w in warnings if w not in info.warnings)
    return action
