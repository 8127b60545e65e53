"""What the simulation tracks: the rigid body, the centroidal reference, what holds the body up,
slow motion, flat feet, the legs' geometry and the output pose; prepare() chains them.

The layer map: docs/architecture.md."""
