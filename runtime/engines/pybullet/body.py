"""The proxy loaded into a PyBullet client: the shipped URDF, or the one shaped by the
character's plan, scaled to its height (PyBullet's kinematics and limbs both start here).
PyBullet itself is imported when a body is loaded: an engine missing here is found by the
chooser, not at import.

Why apart from runtime.body.proxy: the joint table is plain numbers every layer reads; loading
needs PyBullet.
"""
from __future__ import annotations

import os
import sys

from ...body import proxy
from ...body.anthropometry import urdf_path


def load_body(client: int, height: float = proxy.DEFAULT_HEIGHT, fixed_base: bool = False,
              plan=None) -> tuple[int, dict[str, int]]:
    """Load the proxy into a PyBullet client, scaled to ``height``: the default one, or the one
    shaped by ``plan`` (a ``runtime.body.anthropometry.BodyPlan``: the character's segment proportions).

    Returns the body id and a map link name -> link index.  PyBullet prints URDF importer
    warnings on stdout from C; they are swallowed so CLI output stays readable.
    """
    import pybullet      # an optional engine: imported when a take asks for it (runtime.engines.chooser)

    if plan is None:
        path = proxy.URDF_PATH
    else:
        path = urdf_path(plan)
    with quiet_stdout():
        body = pybullet.loadURDF(
            str(path),
            [0, 0, 0],
            globalScaling=proxy.URDF_SCALE * height / proxy.DEFAULT_HEIGHT,
            useFixedBase=fixed_base,
            flags=pybullet.URDF_MAINTAIN_LINK_ORDER,
            physicsClientId=client,
        )
    links = {}
    for j in range(pybullet.getNumJoints(body, physicsClientId=client)):
        links[pybullet.getJointInfo(body, j, physicsClientId=client)[12].decode()] = j
    return body, links


class quiet_stdout:
    """Redirect the C-level stdout to /dev/null for the duration (PyBullet's importer chatter)."""

    def __enter__(self):
        sys.stdout.flush()
        self._saved = os.dup(1)
        self._null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(self._null, 1)
        return self

    def __exit__(self, *exc):
        os.dup2(self._saved, 1)
        os.close(self._saved)
        os.close(self._null)
        return False
