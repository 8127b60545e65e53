"""The labels the add-on's panels draw, read without a UI (the bpy module draws none): every
UILayout call is accepted and each label's text kept.  Needs only bpy, so the install scripts'
Blender processes (other Blender versions, no pytest) use it as well as the tests here."""
from __future__ import annotations

from types import SimpleNamespace

PANELS = ("VIEW3D_PT_fatigue", "VIEW3D_PT_fatigue_body", "VIEW3D_PT_fatigue_mapping", "VIEW3D_PT_fatigue_output",
          "VIEW3D_PT_fatigue_report")


class Layout:
    """Takes every UILayout call a panel makes and keeps the labels."""

    def __init__(self, log: list):
        object.__setattr__(self, "log", log)

    def __getattr__(self, name):
        def call(*args, **kw):
            if name == "label":
                self.log.append(kw.get("text", ""))
            return self
        return call

    def __setattr__(self, name, value):          # row.enabled = ..., layout.use_property_split = ...
        pass


def draw_panels(bpy, obj, mapping_rows: bool = False) -> list[str]:
    """The labels of every Fatigue panel that shows for ``obj`` (and of its rig-mapping rows)."""
    log: list[str] = []
    ctx = SimpleNamespace(active_object=obj, window_manager=bpy.context.window_manager, scene=bpy.context.scene,
                          screen=None)
    for name in PANELS:
        cls = getattr(bpy.types, name)
        if hasattr(cls, "poll") and not cls.poll(ctx):
            continue
        cls.draw(SimpleNamespace(layout=Layout(log)), ctx)
    if mapping_rows:
        s = obj.fatigue_settings
        for item in s.mapping:
            bpy.types.FATIGUE_UL_mapping.draw_item(None, ctx, Layout(log), s, item, 0, s, "mapping_index", 0)
    return log
