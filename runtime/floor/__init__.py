"""Floor work (pose as keyed, static loads booked) and the stretches that switch between it and the SRB.

The layer map: docs/architecture.md."""
