"""Every exception the runtime raises on purpose, in one module at the bottom of the layers.

Why here: a lower layer (an engine, the clip reader) raises what a higher one (the entry point,
the worker, the add-on) catches; kept beside either, the import would run the wrong way.  Each
message names the fix.
"""
from __future__ import annotations


class ClipError(ValueError):
    """Motion data that cannot be simulated (empty, NaN, wrong joint count, bad rate)."""


class FatigueParameterError(ValueError):
    """A fatigue parameter that no muscle can have (negative, zero, NaN, absurdly large)."""


class EngineMissing(ValueError):
    """The engine asked for does not import in this Python: the message names the fix."""


class PolicyError(ValueError):
    """A model file that cannot serve (missing, mismatched card, wrong sizes)."""


class SimulationCancelled(Exception):
    """The user cancelled (ESC in Blender, Ctrl-C in a batch)."""


class SimulationError(ValueError):
    """Input the simulator cannot use; the message names the fix."""


class TrainingClipError(ValueError):
    """A clip the SRB cannot be trained on (floor work follows the reference, no policy acts)."""


class CheckpointError(ValueError):
    """A training checkpoint that cannot be resumed (unreadable, another run's, another version)."""
