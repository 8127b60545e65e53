"""The physics engines and the chooser above them: PyBullet (pybullet/) and MuJoCo (mujoco/) are
sibling packages answering the same calls (forward kinematics for runtime.motion.contacts, the
fatigue-bounded upper body of limbs.py); only chooser.py picks one.

The layer map: docs/architecture.md."""
