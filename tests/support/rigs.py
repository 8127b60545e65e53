"""Test rigs built with bpy: one armature per rig family, each with a short real action.

Every builder returns a ``TestRig``: the armature object, the mapping the detector must find
(key -> bone), and the bones the action animates.  All rigs share one human template (1.76 m,
facing -Y, left at +X, Z-up) written into each family's conventions: names, hierarchy quirks,
bone tails, rotation modes, object rotation and scale (Mixamo's FBX import: Y-up data in
centimetres under a 90 degree X rotation and 0.01 scale).
"""
from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import bpy
import numpy as np
from mathutils import Quaternion, Vector

KEYS = ("pelvis", "chest", "neck", "right_hip", "right_knee", "right_ankle", "right_shoulder", "right_elbow",
        "left_hip", "left_knee", "left_ankle", "left_shoulder", "left_elbow")


@dataclass
class TestRig:
    family: str
    obj: object
    expected: dict                       # key -> bone name
    animated: list = field(default_factory=list)
    unmapped: list = field(default_factory=list)   # animated bones that no key maps


# ------------------------------------------------------------------ template (metres, facing -Y)

def template(pose: str = "T") -> dict:
    j = {
        "hips": (0.0, 0.0, 0.98), "spine_a": (0.0, 0.0, 1.08), "spine_b": (0.0, 0.01, 1.20),
        "spine_c": (0.0, 0.01, 1.32), "neck": (0.0, 0.0, 1.48), "neck2": (0.0, -0.005, 1.54),
        "head": (0.0, -0.01, 1.60), "head_top": (0.0, -0.01, 1.76),
    }
    for s, sx in (("L", 1.0), ("R", -1.0)):
        j[f"clav_{s}"] = (0.02 * sx, -0.02, 1.44)
        j[f"shoulder_{s}"] = (0.17 * sx, 0.0, 1.44)
        if pose == "T":
            j[f"elbow_{s}"] = (0.45 * sx, 0.0, 1.44)
            j[f"wrist_{s}"] = (0.70 * sx, -0.01, 1.44)
            j[f"hand_end_{s}"] = (0.80 * sx, -0.01, 1.44)
        else:   # A-pose: 45 degrees down, elbows a little bent forward
            c = math.sqrt(0.5)
            j[f"elbow_{s}"] = (sx * (0.17 + 0.28 * c), 0.01, 1.44 - 0.28 * c)
            j[f"wrist_{s}"] = (sx * (0.17 + 0.53 * c), -0.05, 1.44 - 0.53 * c)
            j[f"hand_end_{s}"] = (sx * (0.17 + 0.62 * c), -0.06, 1.44 - 0.62 * c)
        j[f"hip_{s}"] = (0.09 * sx, 0.0, 0.93)
        j[f"knee_{s}"] = (0.09 * sx, -0.01, 0.51)
        j[f"ankle_{s}"] = (0.09 * sx, 0.02, 0.09)
        j[f"toe_{s}"] = (0.09 * sx, -0.10, 0.02)
        j[f"toe_end_{s}"] = (0.09 * sx, -0.16, 0.02)
    return {k: Vector(v) for k, v in j.items()}


def _finger_bones(j, side, names, parent, segments=4):
    """Five fingers of ``segments`` bones fanned out from the wrist: (name, head, tail, parent) rows."""
    rows = []
    wrist, end = j[f"wrist_{side}"], j[f"hand_end_{side}"]
    along = (end - wrist).normalized()
    sx = 1.0 if side == "L" else -1.0
    for f, (fname, spread) in enumerate(names):
        base = end + Vector((0.0, (f - 2) * 0.018, 0.0))
        prev = parent
        for k in range(segments):
            h = base + along * (0.03 * k)
            t = base + along * (0.03 * (k + 1))
            n = fname.format(k=k + 1)
            rows.append((n, h, t, prev))
            prev = n
    return rows


# ------------------------------------------------------------------ building

def fresh_scene(fps: int = 30):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = fps
    scene.render.fps_base = 1.0
    return scene


def build_armature(name, rows, *, to_data=None, location=(0, 0, 0), rotation=(0, 0, 0), scale=1.0,
                   connect=False, rotation_mode="QUATERNION", modes=None):
    """rows: (bone, head, tail, parent) in template metres; ``to_data`` maps them to armature data."""
    to_data = to_data or (lambda v: Vector(v))
    arm = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, arm)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = location
    obj.rotation_euler = rotation
    obj.scale = (scale, scale, scale)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    eb = {}
    for bone, head, tail, parent in rows:
        b = arm.edit_bones.new(bone)
        b.head = to_data(head)
        b.tail = to_data(tail)
        if parent is not None:
            b.parent = eb[parent]
            if connect and (eb[parent].tail - b.head).length < 1e-6:
                b.use_connect = True
        eb[bone] = b
    bpy.ops.object.mode_set(mode="OBJECT")
    for pb in obj.pose.bones:
        pb.rotation_mode = (modes or {}).get(pb.name, rotation_mode)
    bpy.context.view_layer.update()
    return obj


# ------------------------------------------------------------------ animation (keyframe_points.add)

def new_action(obj, name):
    obj.animation_data_create()
    action = bpy.data.actions.new(name)
    obj.animation_data.action = action
    return action


def key_curve(obj, path, index, values, start=1, group=""):
    action = obj.animation_data.action
    if hasattr(action, "fcurve_ensure_for_datablock"):
        try:
            fc = action.fcurve_ensure_for_datablock(obj, path, index=index, group_name=group)
        except TypeError:           # Blender 4.4: no group_name yet
            fc = action.fcurve_ensure_for_datablock(obj, path, index=index)
    else:
        fc = action.fcurves.new(path, index=index, action_group=group)
    n = len(values)
    fc.keyframe_points.add(n)
    co = np.empty(2 * n, dtype=np.float32)
    co[0::2] = np.arange(start, start + n)
    co[1::2] = values
    fc.keyframe_points.foreach_set("co", co)
    fc.update()
    return fc


def key_rotation(obj, bone, quats, start=1):
    """Key a list of mathutils Quaternions on ``bone`` in its own rotation mode."""
    pb = obj.pose.bones[bone]
    esc = bpy.utils.escape_identifier(bone)
    mode = pb.rotation_mode
    if mode == "QUATERNION":
        vals, prop = [tuple(q) for q in quats], "rotation_quaternion"
    elif mode == "AXIS_ANGLE":
        vals = []
        for q in quats:
            axis, ang = q.to_axis_angle()
            vals.append((ang, *axis))
        prop = "rotation_axis_angle"
    else:
        vals, prev = [], None
        for q in quats:
            e = q.to_euler(mode, prev) if prev is not None else q.to_euler(mode)
            vals.append(tuple(e))
            prev = e
        prop = "rotation_euler"
    vals = np.array(vals)
    for i in range(vals.shape[1]):
        key_curve(obj, f'pose.bones["{esc}"].{prop}', i, vals[:, i], start, bone)


def wave(frames, axis, amp_deg, phase=0.0, offset_deg=0.0, offset_axis=(1, 0, 0), cycles=1.0):
    """Quaternions: a constant offset rotation followed by a sine swing about ``axis``."""
    base = Quaternion(Vector(offset_axis).normalized(), math.radians(offset_deg))
    axis = Vector(axis).normalized()
    return [Quaternion(axis, math.radians(amp_deg) * math.sin(2 * math.pi * cycles * t / max(frames - 1, 1) + phase)) @ base
            for t in range(frames)]


def animate(obj, rig_bones, root_bone, frames=20, root_scale=1.0, extra=(), seed=0, cycles=1.0):
    """A short action: root bone translation, and rotations on every bone in rig_bones + extra."""
    rng = np.random.default_rng(seed)
    new_action(obj, f"{obj.name}Action")
    esc = bpy.utils.escape_identifier(root_bone)
    t = np.arange(frames) / max(frames - 1, 1)
    key_curve(obj, f'pose.bones["{esc}"].location', 0, root_scale * 0.05 * np.sin(2 * np.pi * cycles * t), 1, root_bone)
    key_curve(obj, f'pose.bones["{esc}"].location', 1, root_scale * 0.4 * t, 1, root_bone)
    key_curve(obj, f'pose.bones["{esc}"].location', 2, root_scale * 0.03 * np.cos(4 * np.pi * cycles * t), 1, root_bone)
    names = list(dict.fromkeys(list(rig_bones) + list(extra)))
    for k, bone in enumerate(names):
        axis = rng.normal(size=3)
        off_axis = rng.normal(size=3)
        key_rotation(obj, bone, wave(frames, axis, amp_deg=float(rng.uniform(15, 40)), phase=float(rng.uniform(0, 6)),
                                     offset_deg=float(rng.uniform(5, 25)), offset_axis=off_axis, cycles=cycles))
    bpy.context.scene.frame_start = 1
    bpy.context.scene.frame_end = frames
    return names


# ------------------------------------------------------------------ families

def _std_rows(j, n, finger_names=None):
    """Rows for a standard humanoid given a role -> name table ``n`` (None = bone absent)."""
    rows = [
        (n["pelvis"], j["hips"], j["spine_a"], n.get("pelvis_parent")),
        (n["spine1"], j["spine_a"], j["spine_b"], n["pelvis"]),
        (n["spine2"], j["spine_b"], j["spine_c"], n["spine1"]),
        (n["chest"], j["spine_c"], j["neck"], n["spine2"]),
        (n["neck"], j["neck"], j["head"], n["chest"]),
        (n["head"], j["head"], j["head_top"], n["neck"]),
    ]
    if n.get("head_end"):
        rows.append((n["head_end"], j["head_top"], j["head_top"] + Vector((0, 0, 0.05)), n["head"]))
    for s in ("L", "R"):
        rows += [
            (n[f"clav_{s}"], j[f"clav_{s}"], j[f"shoulder_{s}"], n.get("clav_parent", n["chest"])),
            (n[f"uparm_{s}"], j[f"shoulder_{s}"], j[f"elbow_{s}"], n[f"clav_{s}"]),
            (n[f"forearm_{s}"], j[f"elbow_{s}"], j[f"wrist_{s}"], n[f"uparm_{s}"]),
            (n[f"hand_{s}"], j[f"wrist_{s}"], j[f"hand_end_{s}"], n[f"forearm_{s}"]),
            (n[f"thigh_{s}"], j[f"hip_{s}"], j[f"knee_{s}"], n.get("thigh_parent", n["pelvis"])),
            (n[f"shin_{s}"], j[f"knee_{s}"], j[f"ankle_{s}"], n[f"thigh_{s}"]),
            (n[f"foot_{s}"], j[f"ankle_{s}"], j[f"toe_{s}"], n[f"shin_{s}"]),
            (n[f"toe_{s}"], j[f"toe_{s}"], j[f"toe_end_{s}"], n[f"foot_{s}"]),
        ]
        if finger_names:
            rows += _finger_bones(j, s, finger_names[s], n[f"hand_{s}"])
    return rows


def _expected(n):
    return {
        "pelvis": n["pelvis"], "chest": n["chest"], "neck": n["neck"],
        "right_hip": n["thigh_R"], "right_knee": n["shin_R"], "right_ankle": n["foot_R"],
        "right_shoulder": n["uparm_R"], "right_elbow": n["forearm_R"],
        "left_hip": n["thigh_L"], "left_knee": n["shin_L"], "left_ankle": n["foot_L"],
        "left_shoulder": n["uparm_L"], "left_elbow": n["forearm_L"],
    }


def _anim_bones(expected, *extra):
    return [expected[k] for k in KEYS] + list(extra)


def mixamo_names(prefix="mixamorig:"):
    n = {"pelvis": "Hips", "spine1": "Spine", "spine2": "Spine1", "chest": "Spine2", "neck": "Neck",
         "head": "Head", "head_end": "HeadTop_End"}
    for s, side in (("L", "Left"), ("R", "Right")):
        n.update({f"clav_{s}": f"{side}Shoulder", f"uparm_{s}": f"{side}Arm", f"forearm_{s}": f"{side}ForeArm",
                  f"hand_{s}": f"{side}Hand", f"thigh_{s}": f"{side}UpLeg", f"shin_{s}": f"{side}Leg",
                  f"foot_{s}": f"{side}Foot", f"toe_{s}": f"{side}ToeBase"})
    return {k: prefix + v for k, v in n.items()}


def mixamo_rig(frames=20, fingers=False, cycles=1.0):
    """Mixamo FBX import: T-pose, 'mixamorig:' names, Y-up data in cm, X 90 degrees, scale 0.01."""
    n = mixamo_names()
    fn = None
    if fingers:
        fn = {s: [(f"mixamorig:{side}Hand{f}{{k}}", 0) for f in ("Thumb", "Index", "Middle", "Ring", "Pinky")]
              for s, side in (("L", "Left"), ("R", "Right"))}
    rows = _std_rows(template("T"), n, fn)
    obj = build_armature("Mixamo", rows, to_data=lambda v: Vector((v[0], v[2], -v[1])) * 100.0,
                         rotation=(math.pi / 2, 0, 0), scale=0.01)
    exp = _expected(n)
    extra = [n["spine1"], n["hand_L"], n["toe_R"]]
    if fingers:
        extra += [b for b in (r[0] for r in rows) if "Hand" in b and b not in extra]
    animated = animate(obj, _anim_bones(exp), n["pelvis"], frames, root_scale=100.0, extra=extra, cycles=cycles)
    return TestRig("mixamo", obj, exp, animated, [n["spine1"], n["hand_L"], n["toe_R"]])


def unreal_rig(frames=20):
    """UE4 mannequin names, A-pose, root bone on the floor, twist and IK bones, tails along +X."""
    n = {"pelvis": "pelvis", "pelvis_parent": "root", "spine1": "spine_01", "spine2": "spine_02",
         "chest": "spine_03", "neck": "neck_01", "head": "head"}
    for s in ("L", "R"):
        l = s.lower()
        n.update({f"clav_{s}": f"clavicle_{l}", f"uparm_{s}": f"upperarm_{l}", f"forearm_{s}": f"lowerarm_{l}",
                  f"hand_{s}": f"hand_{l}", f"thigh_{s}": f"thigh_{l}", f"shin_{s}": f"calf_{l}",
                  f"foot_{s}": f"foot_{l}", f"toe_{s}": f"ball_{l}"})
    j = template("A")
    rows = [("root", Vector((0, 0, 0)), Vector((0, 0.1, 0)), None)] + _std_rows(j, n)
    for s in ("L", "R"):
        l = s.lower()
        rows += [
            (f"upperarm_twist_01_{l}", (j[f"shoulder_{s}"] + j[f"elbow_{s}"]) / 2, j[f"elbow_{s}"], f"upperarm_{l}"),
            (f"lowerarm_twist_01_{l}", (j[f"elbow_{s}"] + j[f"wrist_{s}"]) / 2, j[f"wrist_{s}"], f"lowerarm_{l}"),
            (f"thigh_twist_01_{l}", (j[f"hip_{s}"] + j[f"knee_{s}"]) / 2, j[f"knee_{s}"], f"thigh_{l}"),
            (f"calf_twist_01_{l}", (j[f"knee_{s}"] + j[f"ankle_{s}"]) / 2, j[f"ankle_{s}"], f"calf_{l}"),
            (f"ik_foot_{l}", j[f"ankle_{s}"], j[f"ankle_{s}"] + Vector((0, 0.1, 0)), "ik_foot_root"),
        ]
    rows.insert(1, ("ik_foot_root", Vector((0, 0, 0)), Vector((0, 0.05, 0)), "root"))
    # UE bones point along their local X: give every tail that direction instead of the child's head
    rows = [(b, h, (Vector(h) + Vector((0.06, 0.0, 0.0))) if b != "root" else t, p) for b, h, t, p in rows]
    obj = build_armature("Unreal", rows)
    exp = _expected(n)
    animated = animate(obj, _anim_bones(exp), "pelvis", frames, extra=["spine_02", "lowerarm_twist_01_l", "thigh_twist_01_r"])
    key_curve(obj, 'pose.bones["root"].location', 1, np.linspace(0.0, 0.3, frames), 1, "root")
    return TestRig("unreal", obj, exp, animated + ["root"], ["spine_02", "lowerarm_twist_01_l", "thigh_twist_01_r", "root"])


def biped_rig(frames=20):
    """3ds Max Biped: 'Bip01 ...' names, clavicles under the neck, thighs under the spine, inches
    under a 0.0254 object scale, Euler XYZ rotations."""
    n = {"pelvis": "Bip01 Pelvis", "pelvis_parent": "Bip01", "spine1": "Bip01 Spine", "spine2": "Bip01 Spine1",
         "chest": "Bip01 Spine2", "neck": "Bip01 Neck", "head": "Bip01 Head", "head_end": "Bip01 HeadNub",
         "clav_parent": "Bip01 Neck", "thigh_parent": "Bip01 Spine"}
    for s in ("L", "R"):
        n.update({f"clav_{s}": f"Bip01 {s} Clavicle", f"uparm_{s}": f"Bip01 {s} UpperArm",
                  f"forearm_{s}": f"Bip01 {s} Forearm", f"hand_{s}": f"Bip01 {s} Hand",
                  f"thigh_{s}": f"Bip01 {s} Thigh", f"shin_{s}": f"Bip01 {s} Calf",
                  f"foot_{s}": f"Bip01 {s} Foot", f"toe_{s}": f"Bip01 {s} Toe0"})
    j = template("T")
    rows = [("Bip01", j["hips"], j["hips"] + Vector((0, -0.1, 0)), None)] + _std_rows(j, n)
    inch = 0.0254
    obj = build_armature("Biped", rows, to_data=lambda v: Vector(v) / inch, scale=inch, rotation_mode="XYZ")
    exp = _expected(n)
    animated = animate(obj, _anim_bones(exp), "Bip01", frames, root_scale=1 / inch, extra=["Bip01 Spine1", "Bip01 L Clavicle"])
    return TestRig("biped", obj, exp, animated, ["Bip01", "Bip01 Spine1", "Bip01 L Clavicle"])


def daz_rig(frames=20):
    """Daz Genesis: hip -> pelvis -> lThighBend -> lThighTwist -> lShin; abdomen/chest/neck pairs;
    bend + twist arm bones; Euler YZX limbs."""
    j = template("T")
    rows = [
        ("hip", j["hips"], j["hips"] + Vector((0, 0, -0.08)), None),
        ("pelvis", j["hips"], j["hips"] + Vector((0, 0.0, -0.12)), "hip"),
        ("abdomenLower", j["hips"] + Vector((0, 0, 0.02)), j["spine_a"], "hip"),
        ("abdomenUpper", j["spine_a"], j["spine_b"], "abdomenLower"),
        ("chestLower", j["spine_b"], j["spine_c"], "abdomenUpper"),
        ("chestUpper", j["spine_c"], j["neck"], "chestLower"),
        ("neckLower", j["neck"], j["neck2"], "chestUpper"),
        ("neckUpper", j["neck2"], j["head"], "neckLower"),
        ("head", j["head"], j["head_top"], "neckUpper"),
    ]
    for s in ("l", "r"):
        S = s.upper()
        mid_t = (j[f"hip_{S}"] + j[f"knee_{S}"]) / 2
        mid_a = (j[f"shoulder_{S}"] + j[f"elbow_{S}"]) / 2
        mid_f = (j[f"elbow_{S}"] + j[f"wrist_{S}"]) / 2
        rows += [
            (f"{s}ThighBend", j[f"hip_{S}"], mid_t, "pelvis"),
            (f"{s}ThighTwist", mid_t, j[f"knee_{S}"], f"{s}ThighBend"),
            (f"{s}Shin", j[f"knee_{S}"], j[f"ankle_{S}"], f"{s}ThighTwist"),
            (f"{s}Foot", j[f"ankle_{S}"], j[f"toe_{S}"], f"{s}Shin"),
            (f"{s}Toe", j[f"toe_{S}"], j[f"toe_end_{S}"], f"{s}Foot"),
            (f"{s}Collar", j[f"clav_{S}"], j[f"shoulder_{S}"], "chestUpper"),
            (f"{s}ShldrBend", j[f"shoulder_{S}"], mid_a, f"{s}Collar"),
            (f"{s}ShldrTwist", mid_a, j[f"elbow_{S}"], f"{s}ShldrBend"),
            (f"{s}ForearmBend", j[f"elbow_{S}"], mid_f, f"{s}ShldrTwist"),
            (f"{s}ForearmTwist", mid_f, j[f"wrist_{S}"], f"{s}ForearmBend"),
            (f"{s}Hand", j[f"wrist_{S}"], j[f"hand_end_{S}"], f"{s}ForearmTwist"),
        ]
    obj = build_armature("Daz", rows, rotation_mode="YZX", modes={"hip": "QUATERNION", "pelvis": "QUATERNION"})
    exp = {"pelvis": "hip", "chest": "chestUpper", "neck": "neckLower",
           "right_hip": "rThighBend", "right_knee": "rShin", "right_ankle": "rFoot",
           "right_shoulder": "rShldrBend", "right_elbow": "rForearmBend",
           "left_hip": "lThighBend", "left_knee": "lShin", "left_ankle": "lFoot",
           "left_shoulder": "lShldrBend", "left_elbow": "lForearmBend"}
    unm = ["pelvis", "abdomenUpper", "lShldrTwist", "rForearmTwist", "rThighTwist"]
    animated = animate(obj, _anim_bones(exp), "hip", frames, extra=unm)
    return TestRig("daz", obj, exp, animated, unm)


def generic_rig(frames=20):
    """Mixed generic names (upperarm.l, UpperArm_R, thigh_L, LowerLeg_R), A-pose, connected
    chains, axis-angle and Euler bones."""
    n = {"pelvis": "Hips", "spine1": "Spine", "spine2": "Spine.001", "chest": "Chest", "neck": "Neck", "head": "Head",
         "clav_L": "clavicle.l", "uparm_L": "upperarm.l", "forearm_L": "forearm.l", "hand_L": "hand.l",
         "thigh_L": "thigh_L", "shin_L": "calf_L", "foot_L": "foot_L", "toe_L": "toe_L",
         "clav_R": "Clavicle_R", "uparm_R": "UpperArm_R", "forearm_R": "LowerArm_R", "hand_R": "Hand_R",
         "thigh_R": "UpperLeg_R", "shin_R": "LowerLeg_R", "foot_R": "Foot_R", "toe_R": "Toes_R"}
    rows = _std_rows(template("A"), n)
    modes = {"upperarm.l": "AXIS_ANGLE", "LowerLeg_R": "ZXY", "Neck": "XZY"}
    obj = build_armature("Generic", rows, connect=True, modes=modes)
    exp = _expected(n)
    animated = animate(obj, _anim_bones(exp), "Hips", frames, extra=["Spine.001", "hand.l"])
    return TestRig("generic", obj, exp, animated, ["Spine.001", "hand.l"])


def rigify_names() -> dict:
    """Template role -> Rigify metarig bone name."""
    n = {"pelvis": "spine", "spine1": "spine.001", "spine2": "spine.002", "chest": "spine.003",
         "neck": "spine.004", "head": "spine.006"}
    for s in ("L", "R"):
        n.update({f"clav_{s}": f"shoulder.{s}", f"uparm_{s}": f"upper_arm.{s}", f"forearm_{s}": f"forearm.{s}",
                  f"hand_{s}": f"hand.{s}", f"thigh_{s}": f"thigh.{s}", f"shin_{s}": f"shin.{s}",
                  f"foot_{s}": f"foot.{s}", f"toe_{s}": f"toe.{s}"})
    return n


def rigify_metarig(frames=20):
    """Rigify's human metarig (the real one when the rigify add-on is in the wheel)."""
    try:
        bpy.ops.preferences.addon_enable(module="rigify")
        bpy.ops.object.armature_human_metarig_add()
        obj = bpy.context.object
        obj.name = "metarig"
        for pb in obj.pose.bones:
            pb.rotation_mode = "QUATERNION"
    except Exception:   # no rigify in this Blender: a metarig-named armature of our own
        obj = build_armature("metarig", _std_rows(template("A"), rigify_names()), connect=True)
    exp = {"pelvis": "spine", "chest": "spine.003", "neck": "spine.004",
           "right_hip": "thigh.R", "right_knee": "shin.R", "right_ankle": "foot.R",
           "right_shoulder": "upper_arm.R", "right_elbow": "forearm.R",
           "left_hip": "thigh.L", "left_knee": "shin.L", "left_ankle": "foot.L",
           "left_shoulder": "upper_arm.L", "left_elbow": "forearm.L"}
    unm = ["spine.001", "hand.L", "shoulder.R"]
    animated = animate(obj, _anim_bones(exp), "spine", frames, extra=unm)
    return TestRig("rigify", obj, exp, animated, unm)


def rigify_generated_like():
    """Bones named like a generated Rigify rig: DEF- (deforming), ORG- copies, MCH- helpers and
    control bones (torso, hips, thigh_fk.L ...).  The DEF- chain must win."""
    n = rigify_names()
    j = template("T")
    rows = []
    for prefix in ("ORG-", "DEF-", "MCH-"):
        pn = {k: prefix + v for k, v in n.items()}
        pn["pelvis_parent"] = "root"
        rows += _std_rows(j, pn)
    ctrl = [("torso", j["hips"], j["hips"] + Vector((0, 0.2, 0)), "root"),
            ("hips", j["spine_a"], j["hips"], "torso"),
            ("chest", j["spine_b"], j["spine_c"], "torso"),
            ("thigh_fk.L", j["hip_L"], j["knee_L"], "hips"),
            ("upper_arm_fk.L", j["shoulder_L"], j["elbow_L"], "chest")]
    rows = [("root", Vector((0, 0, 0)), Vector((0, 0.3, 0)), None)] + ctrl + rows
    obj = build_armature("RigifyGenerated", rows)
    return TestRig("rigify_generated", obj, {k: "DEF-" + v for k, v in _expected(n).items()})


def nameless_rig():
    """A humanoid with meaningless bone names: only hierarchy and geometry can map it."""
    roles = {}
    counter = iter(range(1000))

    def nm(role):
        roles[role] = "Bone" if not roles else f"Bone.{next(counter) + 1:03d}"
        return roles[role]

    n = {}
    for role in ("pelvis", "spine1", "spine2", "chest", "neck", "head"):
        n[role] = nm(role)
    for s in ("L", "R"):
        for part in ("clav", "uparm", "forearm", "hand", "thigh", "shin", "foot", "toe"):
            n[f"{part}_{s}"] = nm(f"{part}_{s}")
    obj = build_armature("Nameless", _std_rows(template("T"), n))
    return TestRig("nameless", obj, _expected(n))


def quadruped_rig(names="rigify"):
    """A four-legged animal standing on all fours: horizontal spine, legs to the floor, a tail.
    ``names``: 'rigify' (front_thigh.L ...) or 'arms' (front legs named upper_arm/forearm/hand)."""
    v = Vector
    rows = [
        ("spine", v((0, 0.40, 0.62)), v((0, 0.25, 0.63)), None),
        ("spine.001", v((0, 0.25, 0.63)), v((0, 0.05, 0.64)), "spine"),
        ("spine.002", v((0, 0.05, 0.64)), v((0, -0.15, 0.65)), "spine.001"),
        ("spine.003", v((0, -0.15, 0.65)), v((0, -0.30, 0.66)), "spine.002"),
        ("neck", v((0, -0.30, 0.66)), v((0, -0.42, 0.80)), "spine.003"),
        ("head", v((0, -0.42, 0.80)), v((0, -0.62, 0.78)), "neck"),
        ("tail", v((0, 0.40, 0.62)), v((0, 0.60, 0.55)), "spine"),
        ("tail.001", v((0, 0.60, 0.55)), v((0, 0.80, 0.45)), "tail"),
    ]
    front = ("upper_arm", "forearm", "hand") if names == "arms" else ("front_thigh", "front_shin", "front_foot")
    for s, sx in (("L", 1), ("R", -1)):
        rows += [
            (f"thigh.{s}", v((0.10 * sx, 0.38, 0.60)), v((0.10 * sx, 0.30, 0.35)), "spine"),
            (f"shin.{s}", v((0.10 * sx, 0.30, 0.35)), v((0.10 * sx, 0.38, 0.10)), f"thigh.{s}"),
            (f"foot.{s}", v((0.10 * sx, 0.38, 0.10)), v((0.10 * sx, 0.32, 0.0)), f"shin.{s}"),
            (f"{front[0]}.{s}", v((0.10 * sx, -0.25, 0.60)), v((0.10 * sx, -0.22, 0.35)), "spine.003"),
            (f"{front[1]}.{s}", v((0.10 * sx, -0.22, 0.35)), v((0.10 * sx, -0.24, 0.10)), f"{front[0]}.{s}"),
            (f"{front[2]}.{s}", v((0.10 * sx, -0.24, 0.10)), v((0.10 * sx, -0.30, 0.0)), f"{front[1]}.{s}"),
        ]
    obj = build_armature("Wolf", rows)
    return TestRig("quadruped", obj, {})


# ------------------------------------------------------------------ BVH (CMU / MotionBuilder naming)

_BVH_TREE = ("Hips", (0, 0, 0), [
    ("LHipJoint", (0, 0, 0), [("LeftUpLeg", (9, -5, 0), [("LeftLeg", (0, -42, 0), [("LeftFoot", (0, -42, -1), [
        ("LeftToeBase", (0, -7, 12), [(None, (0, 0, 6), [])])])])])]),
    ("RHipJoint", (0, 0, 0), [("RightUpLeg", (-9, -5, 0), [("RightLeg", (0, -42, 0), [("RightFoot", (0, -42, -1), [
        ("RightToeBase", (0, -7, 12), [(None, (0, 0, 6), [])])])])])]),
    ("LowerBack", (0, 5, 0), [("Spine", (0, 12, 0), [("Spine1", (0, 14, 0), [
        ("Neck", (0, 18, 0), [("Neck1", (0, 6, 0), [("Head", (0, 6, 1), [(None, (0, 16, 0), [])])])]),
        ("LeftShoulder", (2, 14, 0), [("LeftArm", (15, 0, 0), [("LeftForeArm", (28, 0, 0), [
            ("LeftHand", (25, 0, 0), [(None, (10, 0, 0), [])])])])]),
        ("RightShoulder", (-2, 14, 0), [("RightArm", (-15, 0, 0), [("RightForeArm", (-28, 0, 0), [
            ("RightHand", (-25, 0, 0), [(None, (-10, 0, 0), [])])])])]),
    ])])]),
])


def write_bvh(path: Path, frames: int = 20, seed: int = 3) -> list:
    """A CMU-style BVH (Y-up, cm, facing +Z, T-pose) with a short motion; returns joint names."""
    rng = np.random.default_rng(seed)
    joints, lines = [], ["HIERARCHY"]

    def emit(node, depth, root=False):
        name, off, kids = node
        pad = "  " * depth
        if name is None:
            lines.extend([f"{pad}End Site", f"{pad}{{", f"{pad}  OFFSET {off[0]} {off[1]} {off[2]}", f"{pad}}}"])
            return
        joints.append(name)
        lines.append(f"{pad}{'ROOT' if root else 'JOINT'} {name}")
        lines.append(f"{pad}{{")
        lines.append(f"{pad}  OFFSET {off[0]} {off[1]} {off[2]}")
        chans = "CHANNELS 6 Xposition Yposition Zposition Zrotation Yrotation Xrotation" if root \
            else "CHANNELS 3 Zrotation Yrotation Xrotation"
        lines.append(f"{pad}  {chans}")
        for k in kids:
            emit(k, depth + 1)
        lines.append(f"{pad}}}")

    emit(_BVH_TREE, 0, root=True)
    lines += ["MOTION", f"Frames: {frames}", "Frame Time: 0.0333333"]
    amp = {j: rng.uniform(5, 30, size=3) * (rng.random(3) > 0.3) for j in joints}
    phase = {j: rng.uniform(0, 6, size=3) for j in joints}
    for t in range(frames):
        x = t / (frames - 1)
        vals = [2.0 * math.sin(2 * math.pi * x), 101.0 + 3 * math.cos(4 * math.pi * x), 60.0 * x]
        for jn in joints:
            zyx = amp[jn] * np.sin(2 * np.pi * x + phase[jn])
            vals += list(zyx)
        lines.append(" ".join(f"{v:.5f}" for v in vals))
    path.write_text("\n".join(lines) + "\n")
    return joints


def bvh_rig(frames=20):
    bpy.ops.preferences.addon_enable(module="io_anim_bvh")
    path = Path(tempfile.mkdtemp()) / "cmu_walk.bvh"
    write_bvh(path, frames)
    bpy.ops.import_anim.bvh(filepath=str(path), global_scale=0.01, frame_start=1, use_fps_scale=False,
                            update_scene_fps=False, update_scene_duration=False, rotate_mode="NATIVE",
                            axis_forward="-Z", axis_up="Y")
    obj = bpy.context.object
    bpy.context.scene.frame_start = 1
    bpy.context.scene.frame_end = frames
    exp = {"pelvis": "Hips", "chest": "Spine1", "neck": "Neck",
           "right_hip": "RightUpLeg", "right_knee": "RightLeg", "right_ankle": "RightFoot",
           "right_shoulder": "RightArm", "right_elbow": "RightForeArm",
           "left_hip": "LeftUpLeg", "left_knee": "LeftLeg", "left_ankle": "LeftFoot",
           "left_shoulder": "LeftArm", "left_elbow": "LeftForeArm"}
    unm = ["LowerBack", "Spine", "LHipJoint", "LeftHand", "Neck1", "Head"]
    return TestRig("bvh", obj, exp, [b.name for b in obj.data.bones], unm)


FAMILIES = {
    "rigify": rigify_metarig,
    "mixamo": mixamo_rig,
    "unreal": unreal_rig,
    "biped": biped_rig,
    "daz": daz_rig,
    "generic": generic_rig,
    "bvh": bvh_rig,
}


def build(family: str, **kw) -> TestRig:
    fresh_scene()
    return FAMILIES[family](**kw)


# ------------------------------------------------------------------ measuring

def world_matrices(obj, bones, frames):
    """{bone: (T, 4, 4)} world matrices evaluated by Blender (scene.frame_set per frame)."""
    scene = bpy.context.scene
    out = {b: np.empty((len(frames), 4, 4)) for b in bones}
    for i, f in enumerate(frames):
        scene.frame_set(int(f))
        mw = np.array(obj.matrix_world)
        for b in bones:
            out[b][i] = mw @ np.array(obj.pose.bones[b].matrix)
    return out


def basis_matrices(obj, bones, frames):
    scene = bpy.context.scene
    out = {b: np.empty((len(frames), 4, 4)) for b in bones}
    for i, f in enumerate(frames):
        scene.frame_set(int(f))
        for b in bones:
            out[b][i] = np.array(obj.pose.bones[b].matrix_basis)
    return out


def assign_action(obj, action):
    obj.animation_data.action = action
    slot = getattr(obj.animation_data, "action_slot", None)
    if hasattr(action, "slots") and len(action.slots) and (slot is None or slot.identifier != "OB" + obj.name):
        obj.animation_data.action_slot = next(s for s in action.slots if s.identifier == "OB" + obj.name)


def snapshot(action):
    """(data_path, index) -> keyframe co array, for 'this action was not modified' checks."""
    curves = []
    if hasattr(action, "layers"):
        for layer in action.layers:
            for strip in layer.strips:
                for bag in strip.channelbags:
                    curves.extend(bag.fcurves)
    else:
        curves = list(action.fcurves)
    out = {}
    for fc in curves:
        co = np.empty(2 * len(fc.keyframe_points), dtype=np.float32)
        fc.keyframe_points.foreach_get("co", co)
        out[(fc.data_path, fc.array_index)] = co
    return out


def all_curves(action):
    curves = []
    for layer in action.layers:
        for strip in layer.strips:
            for bag in strip.channelbags:
                curves.extend(bag.fcurves)
    return curves
