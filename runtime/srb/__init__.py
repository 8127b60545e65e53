"""The single-rigid-body simulator (default mode): settings and steps, contact forces, feet,
rests, and the learned foot-placement policy.

The layer map: docs/architecture.md."""
