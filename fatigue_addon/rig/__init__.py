"""The rig as plain numbers: bone names and hierarchy, humanoid detection and validation, the
rig's size and axes, root motion.  Imports no bpy or mathutils (the Blender side reads the rig
into these and writes the results back), so it is tested without Blender."""
