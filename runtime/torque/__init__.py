"""Torque mode (experimental): sampling-based whole-body tracking on MuJoCo.

The layer map: docs/architecture.md."""
