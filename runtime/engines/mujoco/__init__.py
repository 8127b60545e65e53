"""MuJoCo's proxy: the MJCF model (model.py), its forward kinematics and its upper body.

The layer map: docs/architecture.md."""
