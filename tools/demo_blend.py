"""The bundled demo character, baked end to end with the bpy module (``./fatigue demo`` calls
``build_demo``).

``build_demo(out_dir)`` builds, in a fresh scene: an armature with Mixamo bone names (so rig
detection works without a preset), a simple skinned mesh (one 8-sided tube per bone, weighted to
it), a DeepMimic clip written onto the rig as its action, fitness keyed from 1.0 at the first frame
to 0.2 at the last (fatigue shown 60x faster than the published rates, so a 5 s take tires);
then presses Bake Fatigued Take (SRB mode, in this process), saves
``demo_fatigued.blend`` and renders ``heat.png`` with Workbench (Solid shading, colour = the
``fatigue_color`` attribute) at a late frame.  Returns the report and the timings.
"""
from __future__ import annotations

import importlib
import importlib.util
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "fatigued_takes"

# (name, head, tail, parent, tube radius): metres, Z-up, facing -Y, T-pose, 1.76 m tall.
_SPINE = (
    ("Hips", (0, 0, 0.98), (0, 0, 1.08), None, 0.14),
    ("Spine", (0, 0, 1.08), (0, 0.01, 1.20), "Hips", 0.13),
    ("Spine1", (0, 0.01, 1.20), (0, 0.01, 1.32), "Spine", 0.14),
    ("Spine2", (0, 0.01, 1.32), (0, 0, 1.44), "Spine1", 0.15),
    ("Neck", (0, 0, 1.48), (0, -0.01, 1.58), "Spine2", 0.05),
    ("Head", (0, -0.01, 1.58), (0, -0.01, 1.76), "Neck", 0.09),
)


def _limbs():
    rows = []
    for side, sx in (("Left", 1.0), ("Right", -1.0)):
        rows += [
            (f"{side}Shoulder", (0.02 * sx, -0.02, 1.44), (0.17 * sx, 0, 1.44), "Spine2", 0.05),
            (f"{side}Arm", (0.17 * sx, 0, 1.44), (0.45 * sx, 0, 1.44), f"{side}Shoulder", 0.05),
            (f"{side}ForeArm", (0.45 * sx, 0, 1.44), (0.70 * sx, -0.01, 1.44), f"{side}Arm", 0.04),
            (f"{side}Hand", (0.70 * sx, -0.01, 1.44), (0.80 * sx, -0.01, 1.44), f"{side}ForeArm", 0.035),
            (f"{side}UpLeg", (0.09 * sx, 0, 0.93), (0.09 * sx, -0.01, 0.51), "Hips", 0.07),
            (f"{side}Leg", (0.09 * sx, -0.01, 0.51), (0.09 * sx, 0.02, 0.09), f"{side}UpLeg", 0.055),
            (f"{side}Foot", (0.09 * sx, 0.02, 0.09), (0.09 * sx, -0.10, 0.02), f"{side}Leg", 0.045),
            (f"{side}ToeBase", (0.09 * sx, -0.10, 0.02), (0.09 * sx, -0.16, 0.02), f"{side}Foot", 0.035),
        ]
    return rows


BONES = _SPINE + tuple(_limbs())
PREFIX = "mixamorig:"


def load_addon():
    """Import the repository as the extension package and register it (idempotent)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    pkg = sys.modules.get(PACKAGE)
    if pkg is None:
        spec = importlib.util.spec_from_file_location(PACKAGE, ROOT / "__init__.py",
                                                      submodule_search_locations=[str(ROOT)])
        pkg = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = pkg
        spec.loader.exec_module(pkg)
    import bpy

    if not hasattr(bpy.types.Object, "fatigue_settings"):
        pkg.register()
    return pkg


def addon_module(name):
    return importlib.import_module(f"{PACKAGE}.{name}")


def build_character(name: str = "DemoCharacter", skin: bool = True):
    """Armature (Mixamo names) + a tube mesh skinned to it.  Returns (armature, mesh or None)."""
    import bpy

    arm = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode="EDIT")
    eb = {}
    for bone, head, tail, parent, _ in BONES:
        b = arm.edit_bones.new(PREFIX + bone)
        b.head, b.tail = head, tail
        if parent is not None:
            b.parent = eb[parent]
        eb[bone] = b
    bpy.ops.object.mode_set(mode="OBJECT")
    for pb in obj.pose.bones:
        pb.rotation_mode = "QUATERNION"
    mesh_obj = skin_tubes(obj, [(PREFIX + b, r) for b, _, _, _, r in BONES]) if skin else None
    bpy.context.view_layer.objects.active = obj
    return obj, mesh_obj


def skin_tubes(arm_obj, bones_radii, sides: int = 8, rings: int = 4, name: str | None = None):
    """A mesh of one closed tube per bone (world rest pose), each weighted 1.0 to its bone's vertex
    group, deformed by an Armature modifier."""
    import bpy
    import numpy as np

    M = np.array(arm_obj.matrix_world)
    verts, faces, groups = [], [], []
    for bone_name, radius in bones_radii:
        b = arm_obj.data.bones[bone_name]
        h = (M @ np.array([*b.head_local, 1.0]))[:3]
        t = (M @ np.array([*b.tail_local, 1.0]))[:3]
        axis = t - h
        axis = axis / max(np.linalg.norm(axis), 1e-9)
        ref = np.array([0.0, 0.0, 1.0]) if abs(axis[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
        u = np.cross(axis, ref)
        u /= np.linalg.norm(u)
        v = np.cross(axis, u)
        base = len(verts)
        for k in range(rings):
            c = h + (t - h) * (k / (rings - 1))
            for s in range(sides):
                a = 2 * math.pi * s / sides
                verts.append(tuple(c + radius * (math.cos(a) * u + math.sin(a) * v)))
        for k in range(rings - 1):
            for s in range(sides):
                a0, a1 = base + k * sides + s, base + k * sides + (s + 1) % sides
                faces.append((a0, a1, a1 + sides, a0 + sides))
        faces.append(tuple(base + s for s in reversed(range(sides))))
        faces.append(tuple(base + (rings - 1) * sides + s for s in range(sides)))
        groups.append((bone_name, list(range(base, len(verts)))))
    me = bpy.data.meshes.new(name or f"{arm_obj.name}_body")
    me.from_pydata(verts, [], faces)
    me.update()
    ob = bpy.data.objects.new(name or f"{arm_obj.name}_body", me)
    bpy.context.scene.collection.objects.link(ob)
    for bone_name, idx in groups:
        ob.vertex_groups.new(name=bone_name).add(idx, 1.0, "REPLACE")
    mod = ob.modifiers.new("Armature", "ARMATURE")
    mod.object = arm_obj
    ob.parent = arm_obj
    return ob


def write_clip(obj, clip, action_name: str):
    """Write a runtime Clip onto ``obj`` as the new, assigned action ``action_name`` (frame 1 on)."""
    import bpy

    rt, rigmap, anim = addon_module("fatigue_addon.retarget"), addon_module("fatigue_addon.rigmap"), addon_module("fatigue_addon.anim")
    mapping = rigmap.detect_mapping(obj)
    scene = bpy.context.scene
    # a two-frame placeholder action gives the retarget its rest geometry
    obj.animation_data_create()
    tmp = bpy.data.actions.new("__fatigue_rest")
    anim.assign_action(obj, tmp)
    pb = obj.pose.bones[mapping["pelvis"]]
    for f in (1, 2):
        pb.keyframe_insert("location", frame=f)
    anim.assign_action(obj, tmp)
    _, info = rt.action_to_clip(obj, mapping, 1, 2)
    info.fps = float(scene.render.fps / scene.render.fps_base)
    action = rt.clip_to_action(obj, mapping, clip, info, action_name)
    anim.assign_action(obj, action)
    bpy.data.actions.remove(tmp)
    return action


def key_fitness(obj, start: int, end: int, first: float = 1.0, last: float = 0.2):
    s = obj.fatigue_settings
    s.fitness = first
    obj.keyframe_insert("fatigue_settings.fitness", frame=start)
    s.fitness = last
    obj.keyframe_insert("fatigue_settings.fitness", frame=end)


def render_heat(mesh_obj, frame: int, path: Path, resolution=(480, 360)):
    """Workbench, Solid shading coloured by the ``fatigue_color`` attribute, camera framing the mesh."""
    import bpy
    import numpy as np

    scene = bpy.context.scene
    scene.frame_set(frame)
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.display.shading.light = "STUDIO"
    scene.display.shading.color_type = "VERTEX"     # 'Attribute' in the UI: the active colour attribute
    scene.render.resolution_x, scene.render.resolution_y = resolution
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    dg = bpy.context.evaluated_depsgraph_get()
    ev = mesh_obj.evaluated_get(dg)
    pts = np.array([ev.matrix_world @ v.co for v in ev.data.vertices])
    centre = (pts.min(0) + pts.max(0)) / 2
    size = float(np.max(pts.max(0) - pts.min(0)))
    cam_data = bpy.data.cameras.new("HeatCamera")
    cam = bpy.data.objects.new("HeatCamera", cam_data)
    scene.collection.objects.link(cam)
    direction = np.array([1.0, -1.6, 0.35])
    direction /= np.linalg.norm(direction)
    cam.location = tuple(centre + direction * (1.9 * size + 1.0))
    from mathutils import Vector

    cam.rotation_euler = (Vector(tuple(centre)) - cam.location).to_track_quat("-Z", "Y").to_euler()
    scene.camera = cam
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)
    return path


def build_demo(out_dir, clip_name: str = "walk", seconds: float = 5.0, fitness=(1.0, 0.2),
               time_scale: float = 60.0, render: bool = True) -> dict:
    """Build, bake, save and render the demo.  Returns {report, timings, files}."""
    import bpy

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    load_addon()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    load_addon()
    rclip, bake = addon_module("runtime.motion.clip"), addon_module("fatigue_addon.bake")
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 30, 1.0
    obj, body = build_character()
    clip = rclip.load_deepmimic(rclip.deepmimic_clip_path(clip_name))
    clip = clip.repeated(seconds) if clip.loop else clip
    write_clip(obj, clip, f"{clip_name}")
    n = int(round(clip.duration * scene.render.fps)) + 1
    scene.frame_start, scene.frame_end = 1, n
    obj.fatigue_settings.time_scale = time_scale
    key_fitness(obj, 1, n, *fitness)
    bpy.context.view_layer.objects.active = obj
    t1 = time.perf_counter()
    report = bake.bake(bpy.context, obj, progress=bake.background_progress("demo bake"))
    t2 = time.perf_counter()
    scene.frame_end = report["take_frames"][1]
    blend = out_dir / "demo_fatigued.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend), check_existing=False)
    t3 = time.perf_counter()
    files = {"blend": str(blend)}
    if render and body is not None:
        late = report["take_frames"][0] + int(0.9 * (report["frames"] - 1))
        files["heat"] = str(render_heat(body, late, out_dir / "heat.png"))
    t4 = time.perf_counter()
    timings = dict(report["timings"])
    timings.update({"build_scene": t1 - t0, "bake_total": t2 - t1, "save": t3 - t2, "render": t4 - t3})
    return {"report": report, "timings": timings, "files": files}


if __name__ == "__main__":
    import json

    res = build_demo(sys.argv[1] if len(sys.argv) > 1 else ROOT / "out" / "demo")
    print(json.dumps({"timings": res["timings"], "files": res["files"],
                      "peak_fatigue": res["report"]["peak_fatigue"]}, indent=2))
