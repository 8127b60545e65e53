"""The proxy body: its joint table, the character's proportions (anthropometry) and the URDF read into plain numbers.

The layer map: docs/architecture.md."""
