"""Rest stances and the steps into them: where a resting body stands, a halt's catching foot and a
rest's closing step.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np



REST_ANKLE_EFFORT = 0.5  # a resting body stands no further ahead of its ankles than costs them this share of what they have left


REST_LEG_EXTENSION = 0.995   # hip-ankle distance over leg length while resting (~10 deg knee)


CATCH_TIME = 0.25        # s: a foot put down to stop takes this long to reach the floor


CATCH_REACH = 0.5        # m (1.62 m body): ... and lands at most this far from under its hip


CLOSE_SPREAD = 0.15      # m (1.62 m body): a resting foot further than this from beside the other steps in


CLOSE_SETTLE = 0.5       # s: ... once the body has rested this long ...


CLOSE_STILL = 0.1        # m/s (1.62 m body): ... and its centre of mass moves slower than this ...


CLOSE_EFFORT = 0.8       # ... onto a leg that stands alone on at most this share of what each of its joints has left


CLOSE_SHIFT_TIME = 0.4   # s: the weight goes onto the staying foot (and back between both feet after)


CLOSE_STEP_TIME = 0.5    # s: the closing step itself


CLOSE_STEP_LIFT = 0.05   # m (1.62 m body): how high the stepping foot clears the floor


@dataclass
class ClosingStep:
    """A rest's closing step (see SrbSimulator._plan_closing_step): the foot that steps in, where
    it lands (world ankle), and how far it has got."""
    foot: int
    anchor: np.ndarray
    began: float                  # s: the weight started onto the staying foot
    start_xy: np.ndarray          # where the centre of mass stood then
    lifted: tuple | None = None   # (world ankle at the lift, time)
    landed: float | None = None   # s: the foot came down beside the other

    def settled(self, time: float) -> bool:
        """The body has moved back between both feet (CLOSE_SHIFT_TIME after the landing)."""
        return self.landed is not None and time - self.landed >= CLOSE_SHIFT_TIME
