"""The physics engines and the chooser above them: PyBullet and MuJoCo answer the same calls
(forward kinematics, the fatigue-bounded upper body); only chooser.py picks one.

The layer map: docs/architecture.md."""
