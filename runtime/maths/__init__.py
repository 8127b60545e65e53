"""Numbers every layer shares: repeatable arithmetic, quaternions, rotations, low-pass filters.

The layer map: docs/architecture.md."""
