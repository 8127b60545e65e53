"""Last bake: what the last bake did, read from its JSON report on the armature."""
import json

import bpy

from .common import FatigueTab, armature


class VIEW3D_PT_fatigue_report(FatigueTab, bpy.types.Panel):
    bl_label = "Last Bake"
    bl_idname = "VIEW3D_PT_fatigue_report"
    bl_parent_id = "VIEW3D_PT_fatigue"

    @classmethod
    def poll(cls, context):
        obj = armature(context)
        return obj is not None and bool(obj.fatigue_settings.last_report)

    def draw(self, context):
        layout = self.layout
        try:
            r = json.loads(context.active_object.fatigue_settings.last_report)
        except ValueError:
            layout.label(text="(unreadable report)")
            return
        col = layout.column(align=True)
        col.label(text=f"{r['action']}: frames {r['take_frames'][0]}-{r['take_frames'][1]}", icon="ACTION")
        col.label(text=f"Tempo: x{r['duration_stretch']:.2f} of the source")
        lines = r.get("support", r["mode"]).split(") and ", 1)      # feet, then floor work, per stretch
        if len(lines) == 2:
            lines = [lines[0] + ")", "and " + lines[1]]
        col.label(text="Held up by " + lines[0])
        for line in lines[1:]:
            col.label(text=line)
        col.label(text=f"Body: {r.get('height', 0.0):.2f} m, {r.get('mass', 0.0):.0f} kg")
        fell = ""
        if r.get("fell"):
            fell = f"   FELL at frame {r['fall_frame']}" if r.get("fall_frame") is not None else "   FELL"
        kneels = f", {r['kneels']} on its knees" if r.get("kneels") else ""
        col.label(text=f"Rests: {r['rests']}{kneels}{fell}", icon="ERROR" if fell else "NONE")
        if r.get("breathing"):
            peak, end = r["breathing"]
            col.label(text=f"Breathing: up to {peak:.0f} a minute, {end:.0f} at the end")
        from ..fatigue_addon.report import BEHIND_NOTICE_M
        if r.get("behind_source_m", 0.0) >= BEHIND_NOTICE_M:
            col.label(text=f"Shorter strides: ends {r['behind_source_m']:.1f} m short of the source's path")
        col.label(text=f"Residual help: {r['residual_force_max_n']:.0f} N, "
                       f"{r['residual_moment_nm_mean']:.0f} N m mean moment")
        if r["mode"] == "torque":
            col.label(text="Torque mode: the whole body sampled, no root help")
            cost = r.get("notes", {}).get("cost", "")
            if cost:
                col.label(text="Cost: " + cost.split(",")[0])
        directed = r.get("tiredness")
        if directed:
            box = layout.box().column(align=True)
            (a0, a1), (g0, g1) = directed["asked"], directed["reached"]
            box.label(text=f"Tiredness: asked {a0:.2f} -> {a1:.2f}, reached {g0:.2f} -> {g1:.2f}",
                      icon="ERROR" if abs(a1 - g1) > 0.1 else "NONE")
            box.label(text="At the end: " + ", ".join(f"{p} {v:.2f}" for p, v in directed["parts"].items()))
            solved = f"Solved: fatigue runs {directed['speed_up']:.3g}x real time"
            if directed.get("endurance_change", 1.0) != 1.0:
                solved += f", {directed['endurance_change']:.3g}x as fatiguing"
            box.label(text=solved)
        keyed = r.get("keyed_on")
        if keyed:
            box = layout.box().column(align=True)
            box.label(text=f"Keyed on {len(keyed['controls'])} Rigify controls, IK/FK switches to FK", icon="BONE_DATA")
            box.label(text=", ".join(keyed["controls"][:5]) + (", ..." if len(keyed["controls"]) > 5 else ""))
            box.label(text=f"Plays the simulation within {keyed['played_error_m'] * 100:.1f} cm")
            box.label(text="Back to IK: Item tab > Rig Main Properties,")
            box.label(text="Action beside IK->FK (snaps every keyed frame),")
            box.label(text="then key IK-FK to 0 (rig_ui.py must have run)")
        box = layout.box().column(align=True)
        box.label(text="Peak fatigue per body part")
        for part, v in r["peak_fatigue"].items():
            box.label(text=f"{part.capitalize()}: {v:.0%}")
        t = r.get("timings", {})
        layout.label(text=f"Simulated on {r.get('engine', 'PyBullet')} ({r.get('backend', '').replace('_', ' ').lower()}): "
                          f"{t.get('simulate', 0):.1f} s, Blender {t.get('blender', 0):.2f} s")
        for w in r.get("warnings", [])[:3]:
            layout.label(text=w, icon="ERROR")
