"""PyBullet's proxy: the URDF loaded (body.py), its forward kinematics and its upper body.

The layer map: docs/architecture.md."""
