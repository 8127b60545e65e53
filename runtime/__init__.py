"""Simulation side of Fatigued Takes: numpy + pybullet, never bpy or mathutils.

Runs inside Blender (in-process backend), in a worker process, in tests and in the CLI alike,
so everything here is importable without Blender.  Z-up, metres, seconds, quaternions (x,y,z,w).
"""
