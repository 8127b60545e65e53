"""N-panel tab "Fatigue" in the 3D viewport: settings, rig mapping, bake, last bake report."""
import json

import bpy


def _armature(context):
    obj = context.active_object
    return obj if obj is not None and obj.type == "ARMATURE" else None


class FATIGUE_UL_mapping(bpy.types.UIList):
    """One row per proxy joint: its label and a bone picker over the armature's bones."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        from ..fatigue_addon import rigmap

        obj = data.id_data
        row = layout.row(align=True)
        label = rigmap.KEY_LABELS.get(item.key, item.key)
        required = item.key in rigmap.HUMANOID_KEYS
        ok = bool(item.bone) and obj.type == "ARMATURE" and item.bone in obj.data.bones
        split = row.split(factor=0.42)
        split.label(text=label, icon="CHECKMARK" if ok else ("ERROR" if required else "DOT"))
        if obj.type == "ARMATURE":
            split.prop_search(item, "bone", obj.data, "bones", text="")
        else:
            split.prop(item, "bone", text="")


class _FatigueSubPanel:
    """Shared placement of the collapsed sub-panels under the Fatigue tab (armatures only)."""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Fatigue"
    bl_parent_id = "VIEW3D_PT_fatigue"
    bl_options = {"DEFAULT_CLOSED"}

    @classmethod
    def poll(cls, context):
        return _armature(context) is not None


class VIEW3D_PT_fatigue(bpy.types.Panel):
    bl_label = "Fatigued Takes"
    bl_idname = "VIEW3D_PT_fatigue"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Fatigue"

    def draw(self, context):
        layout = self.layout
        obj = context.active_object
        if obj is None or obj.type != "ARMATURE":
            layout.label(text="Select the character's armature", icon="INFO")
            return
        settings = obj.fatigue_settings
        layout.prop(settings, "mode", expand=True)
        if settings.mode == "TORQUE":
            col = layout.column(align=True)
            col.label(text="Experimental: whole body, no root help (MuJoCo)", icon="INFO")
            col.label(text="Slow: seconds of compute per second of motion")
        else:
            layout.prop(settings, "foot_placement", expand=True)
        layout.prop(settings, "effort_economy")
        col = layout.column(align=True)
        col.prop(settings, "preset")
        col = col.column(align=True)
        col.active = settings.preset != "FRESH"
        col.prop(settings, "fitness")
        col.prop(settings, "direct_tiredness")
        if settings.direct_tiredness and settings.preset != "CUSTOM":
            col.prop(settings, "tiredness_start")
            col.prop(settings, "tiredness_end")
            col.prop(settings, "tiredness", text="Or key Tiredness")
        else:
            col.prop(settings, "time_scale")
            col.prop(settings, "initial_fatigue")
        if settings.preset == "CUSTOM":
            sub = layout.column(align=True)
            sub.prop(settings, "F")
            sub.prop(settings, "R")
            sub.prop(settings, "r")
        status = context.window_manager.fatigue_bake_status
        if status:
            layout.label(text=status, icon="TIME")
        from ..fatigue_addon import backend

        note = backend.no_engine_note()      # found without importing a wheel: cheap on every redraw
        row = layout.row(align=True)
        row.scale_y = 1.4
        row.enabled = note is None
        row.operator("fatigue.bake_take", icon="RENDER_ANIMATION")
        if note:
            layout.label(text=note, icon="ERROR")
            layout.label(text="Detect Rig, Check Rig and the settings work here")
        row = layout.row(align=True)
        row.operator("fatigue.check_rig", icon="ARMATURE_DATA")
        if settings.baked_action is not None:
            row.operator("fatigue.switch_action", icon="ACTION", text="Take / Source")


class VIEW3D_PT_fatigue_body(_FatigueSubPanel, bpy.types.Panel):
    bl_label = "Body"
    bl_idname = "VIEW3D_PT_fatigue_body"

    def draw(self, context):
        layout = self.layout
        s = context.active_object.fatigue_settings
        layout.use_property_split = True
        layout.prop(s, "use_rig_height")
        layout.prop(s, "height", text="Height" if not s.use_rig_height else "Height (rig not in metres)")
        layout.prop(s, "mass")
        layout.prop(s, "proportions")
        sub = layout.row()
        sub.enabled = s.proportions == "RIG"
        sub.prop(s, "mass_distribution")
        layout.label(text="Fitness per body part (x)")
        col = layout.column(align=True)
        for part in ("legs", "arms", "trunk", "neck"):
            col.prop(s, f"fitness_{part}")


class VIEW3D_PT_fatigue_mapping(_FatigueSubPanel, bpy.types.Panel):
    bl_label = "Rig Mapping"
    bl_idname = "VIEW3D_PT_fatigue_mapping"

    def draw(self, context):
        layout = self.layout
        obj = context.active_object
        s = obj.fatigue_settings
        row = layout.row(align=True)
        row.operator("fatigue.detect_rig", icon="VIEWZOOM")
        row.operator("fatigue.clear_mapping", icon="X", text="")
        if len(s.mapping) == 0:
            layout.label(text="Detected automatically at bake time", icon="INFO")
        else:
            layout.template_list("FATIGUE_UL_mapping", "", s, "mapping", s, "mapping_index", rows=6)
        row = layout.row(align=True)
        row.operator("fatigue.load_shipped_mapping", icon="PRESET", text="Preset")
        row.operator("fatigue.load_mapping", icon="IMPORT", text="Load")
        row.operator("fatigue.save_mapping", icon="EXPORT", text="Save")


class VIEW3D_PT_fatigue_output(_FatigueSubPanel, bpy.types.Panel):
    bl_label = "Range & Output"
    bl_idname = "VIEW3D_PT_fatigue_output"

    def draw(self, context):
        layout = self.layout
        s = context.active_object.fatigue_settings
        layout.prop(s, "use_custom_range")
        row = layout.row(align=True)
        if s.use_custom_range:
            row.prop(s, "frame_start")
            row.prop(s, "frame_end")
        else:
            row.label(text=f"Scene range {context.scene.frame_start}-{context.scene.frame_end}")
        col = layout.column()
        col.prop(s, "breathing")
        col.prop(s, "kneeling")
        col.prop(s, "write_curves")
        sub = col.column()
        sub.enabled = s.write_curves
        sub.prop(s, "heat_modifier")
        sub.prop(s, "heat_material")


class VIEW3D_PT_fatigue_report(bpy.types.Panel):
    bl_label = "Last Bake"
    bl_idname = "VIEW3D_PT_fatigue_report"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Fatigue"
    bl_parent_id = "VIEW3D_PT_fatigue"

    @classmethod
    def poll(cls, context):
        obj = _armature(context)
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


classes = (
    FATIGUE_UL_mapping,
    VIEW3D_PT_fatigue,
    VIEW3D_PT_fatigue_body,
    VIEW3D_PT_fatigue_mapping,
    VIEW3D_PT_fatigue_output,
    VIEW3D_PT_fatigue_report,
)


register, unregister = bpy.utils.register_classes_factory(classes)
