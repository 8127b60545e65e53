"""Fixtures the runtime tests share: the proxy's kinematics (PyBullet) and its SRB body."""
import pytest

from runtime.engines import kinematics
from runtime.reference import rigid_body as srb_body


@pytest.fixture(scope="module")
def kin():
    with kinematics.Kinematics() as k:
        yield k


@pytest.fixture(scope="module")
def body(kin):
    return srb_body.body_from_proxy(kin)
