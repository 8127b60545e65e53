"""Fatigue heat colour on the character's meshes, with no Python at playback or render time.

The keyed per-bone ``fatigue`` custom properties are the source of truth.  A generated Geometry
Nodes group (one per armature) turns them into point attributes:

    fatigue       = clamp(sum over mapped bones of  weight(vertex group named like the bone) * fatigue(bone))
    fatigue_color = heat ramp(fatigue)      (blue 0 -> green 0.15 -> yellow 0.3 -> red from 0.5)

Each bone's fatigue enters the tree through a Value node whose value is a plain (non-Python)
driver reading ``pose.bones["<bone>"]["fatigue"]`` of the armature, so playback, farm renders and
files opened with Python auto-run disabled all show it.  An optional material renders
``fatigue_color`` through an Attribute node; Workbench shows it with Solid shading, Color:
Attribute (a ``fatigue_color`` colour attribute is created on the mesh as the active one, which the
modifier overwrites).
"""
from __future__ import annotations

import bpy

MODIFIER = "Fatigue Heat"
MATERIAL = "Fatigue Heat"
ATTRIBUTE = "fatigue"
COLOR_ATTRIBUTE = "fatigue_color"
# Fatigue (MF) rarely passes 0.5 outside exhaustion, so the ramp is red from half the muscle fatigued.
HEAT_RAMP = ((0.0, (0.05, 0.10, 0.60, 1.0)), (0.15, (0.05, 0.65, 0.30, 1.0)),
             (0.30, (0.95, 0.80, 0.05, 1.0)), (0.50, (0.85, 0.03, 0.02, 1.0)))


def skinned_meshes(arm) -> list:
    """Mesh objects deformed by ``arm`` (Armature modifier, or armature parenting)."""
    out = []
    for ob in bpy.data.objects:
        if ob.type != "MESH":
            continue
        if any(m.type == "ARMATURE" and m.object == arm for m in ob.modifiers) or \
                (ob.parent == arm and ob.parent_type == "ARMATURE"):
            out.append(ob)
    return out


def group_name(arm) -> str:
    return f"Fatigue Heat ({arm.name})"


def _input(node, name):
    """The enabled input socket called ``name`` (Store Named Attribute has one per data type before 4.1)."""
    for s in node.inputs:
        if s.name == name and s.enabled:
            return s
    return node.inputs[name]


def build_node_group(arm, bones: list):
    """(Re)build the heat node group for ``arm`` reading the ``fatigue`` property of ``bones``:
    bone names (the vertex group named like the bone), or ``(vertex group, bone)`` pairs where the
    curves are on another bone than the one the mesh is skinned to (a Rigify control and its DEF-
    bone)."""
    name = group_name(arm)
    ng = bpy.data.node_groups.get(name)
    if ng is None:
        ng = bpy.data.node_groups.new(name, "GeometryNodeTree")
        ng.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
        ng.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    else:
        if ng.animation_data is not None:
            for fc in list(ng.animation_data.drivers):
                ng.animation_data.drivers.remove(fc)
        ng.nodes.clear()
    nodes, links = ng.nodes, ng.links
    gin = nodes.new("NodeGroupInput")
    gin.location = (-900, 0)
    gout = nodes.new("NodeGroupOutput")
    gout.location = (900, 0)

    total = None
    for i, pair in enumerate(bones):
        group, bone = (pair, pair) if isinstance(pair, str) else pair
        y = -200 * i
        attr = nodes.new("GeometryNodeInputNamedAttribute")
        attr.data_type = "FLOAT"
        attr.inputs["Name"].default_value = group
        attr.location = (-700, y)
        attr.label = group
        val = nodes.new("ShaderNodeValue")
        val.name = f"fatigue:{bone}"
        val.label = f"{bone} fatigue"
        val.location = (-700, y - 100)
        val.outputs[0].default_value = 0.0
        mul = nodes.new("ShaderNodeMath")
        mul.operation = "MULTIPLY"
        mul.location = (-450, y)
        links.new(attr.outputs["Attribute"], mul.inputs[0])
        links.new(val.outputs[0], mul.inputs[1])
        if total is None:
            total = mul
        else:
            add = nodes.new("ShaderNodeMath")
            add.operation = "ADD"
            add.location = (-250, y)
            links.new(total.outputs[0], add.inputs[0])
            links.new(mul.outputs[0], add.inputs[1])
            total = add
        fc = ng.driver_add(f'nodes["{bpy.utils.escape_identifier(val.name)}"].outputs[0].default_value')
        drv = fc.driver
        drv.type = "AVERAGE"
        var = drv.variables.new()
        var.name = "fatigue"
        var.type = "SINGLE_PROP"
        var.targets[0].id_type = "OBJECT"
        var.targets[0].id = arm
        var.targets[0].data_path = f'pose.bones["{bpy.utils.escape_identifier(bone)}"]["fatigue"]'
    clamp = nodes.new("ShaderNodeMath")
    clamp.operation = "ADD"
    clamp.use_clamp = True
    clamp.location = (0, 0)
    clamp.inputs[1].default_value = 0.0
    if total is not None:
        links.new(total.outputs[0], clamp.inputs[0])
    else:
        clamp.inputs[0].default_value = 0.0

    ramp = nodes.new("ShaderNodeValToRGB")
    ramp.location = (200, -250)
    elements = ramp.color_ramp.elements
    while len(elements) > 1:
        elements.remove(elements[-1])
    elements[0].position, elements[0].color = HEAT_RAMP[0]
    for pos, col in HEAT_RAMP[1:]:
        e = elements.new(pos)
        e.color = col
    links.new(clamp.outputs[0], ramp.inputs["Fac"])

    store_f = nodes.new("GeometryNodeStoreNamedAttribute")
    store_f.data_type = "FLOAT"
    store_f.domain = "POINT"
    store_f.location = (300, 100)
    _input(store_f, "Name").default_value = ATTRIBUTE
    store_c = nodes.new("GeometryNodeStoreNamedAttribute")
    store_c.data_type = "FLOAT_COLOR"
    store_c.domain = "POINT"
    store_c.location = (600, 100)
    _input(store_c, "Name").default_value = COLOR_ATTRIBUTE
    links.new(gin.outputs[0], _input(store_f, "Geometry"))
    links.new(clamp.outputs[0], _input(store_f, "Value"))
    links.new(store_f.outputs[0], _input(store_c, "Geometry"))
    links.new(ramp.outputs["Color"], _input(store_c, "Value"))
    links.new(store_c.outputs[0], gout.inputs[0])
    return ng


def heat_material():
    mat = bpy.data.materials.get(MATERIAL)
    if mat is not None:
        return mat
    mat = bpy.data.materials.new(MATERIAL)
    if bpy.app.version < (5, 0, 0):       # 5.0: materials always use nodes
        mat.use_nodes = True
    nt = mat.node_tree
    bsdf = next((n for n in nt.nodes if n.type == "BSDF_PRINCIPLED"), None)
    if bsdf is None:
        bsdf = nt.nodes.new("ShaderNodeBsdfPrincipled")
        out = next(n for n in nt.nodes if n.type == "OUTPUT_MATERIAL")
        nt.links.new(bsdf.outputs[0], out.inputs["Surface"])
    attr = nt.nodes.new("ShaderNodeAttribute")
    attr.attribute_type = "GEOMETRY"
    attr.attribute_name = COLOR_ATTRIBUTE
    attr.location = (bsdf.location[0] - 300, bsdf.location[1])
    nt.links.new(attr.outputs["Color"], bsdf.inputs["Base Color"])
    mat.diffuse_color = (0.8, 0.8, 0.8, 1.0)
    return mat


def apply(arm, bones: list, meshes, material: bool, undo: list) -> list[str]:
    """Add / update the heat modifier (and material) on ``meshes``.  Appends rollback callables to
    ``undo`` for everything it creates.  Returns the names of the meshes it set up."""
    ng_existed = bpy.data.node_groups.get(group_name(arm)) is not None
    ng = build_node_group(arm, bones)
    if not ng_existed:
        undo.append(lambda ng=ng: bpy.data.node_groups.remove(ng))
    mat = None
    if material:
        mat_existed = bpy.data.materials.get(MATERIAL) is not None
        mat = heat_material()
        if not mat_existed:
            undo.append(lambda mat=mat: bpy.data.materials.remove(mat))
    done = []
    for ob in meshes:
        mod = ob.modifiers.get(MODIFIER)
        if mod is None or mod.type != "NODES":
            mod = ob.modifiers.new(MODIFIER, "NODES")
            undo.append(lambda ob=ob, mod=mod: ob.modifiers.remove(mod))
        mod.node_group = ng
        me = ob.data
        ca = me.color_attributes.get(COLOR_ATTRIBUTE)
        if ca is None:
            ca = me.color_attributes.new(COLOR_ATTRIBUTE, "FLOAT_COLOR", "POINT")
            undo.append(lambda me=me: me.color_attributes.remove(me.color_attributes[COLOR_ATTRIBUTE]))
        me.color_attributes.active_color = ca
        try:
            me.color_attributes.render_color_index = list(me.color_attributes).index(ca)
        except (AttributeError, ValueError, TypeError):
            pass
        if mat is not None:
            if len(ob.material_slots) == 0:
                me.materials.append(None)
            for slot in ob.material_slots:
                if slot.link != "OBJECT" or slot.material != mat:
                    slot.link = "OBJECT"
                    slot.material = mat
        done.append(ob.name)
    return done
