"""Fatigue: the 3CC model, its parameters and schedule, validation against published data, the
tempo rule and the effort economy.

The layer map: docs/architecture.md."""
