"""Which part of a standing foot carries the load (runtime.srb.feet.bearing_corners)."""
import numpy as np
import pytest

from runtime.srb import feet
from runtime.reference import support
from runtime.engines.pybullet import kinematics
from runtime.maths import quat
from runtime.reference import rigid_body as srb_body
from runtime.maths.rotation import quat_matrix

FLOOR = 0.0
NEAR = 0.02          # m: contact height
MARGIN = 0.02        # m: how far inside its bearing corners the centre of pressure sits


@pytest.fixture(scope="module")
def sole():
    with kinematics.Kinematics() as k:
        return srb_body.body_from_proxy(k).sole


def _foot(sole, pitch_deg: float = 0.0, roll_deg: float = 0.0, lift: float = 0.0, heading_deg: float = 30.0):
    """(ankle, foot rotation) of a foot heading ``heading_deg`` about z, pitched (toes up > 0) and
    rolled, its lowest sole corner ``lift`` above the floor."""
    flat = quat_matrix(quat.from_axis_angle(np.array([1.0, 0.0, 0.0]), np.pi / 2))   # link y up
    turn = quat_matrix(quat.from_axis_angle(np.array([0.0, 0.0, 1.0]), np.radians(heading_deg)))
    R = turn @ flat
    R = quat_matrix(quat.from_axis_angle(R[:, 2], np.radians(pitch_deg))) @ R       # about the lateral axis
    R = quat_matrix(quat.from_axis_angle(R[:, 0], np.radians(roll_deg))) @ R        # about the heading
    ankle = np.array([0.3, -0.2, 0.0])
    ankle[2] = FLOOR + lift - float((sole @ R.T)[:, 2].min())
    return ankle, R


def _polygon_margin(corners, point):
    return support.inside_support(point, corners[:, :2]) if len(corners) >= 3 else -np.inf


def test_a_flat_foot_on_the_floor_bears_on_its_whole_sole(sole):
    ankle, R = _foot(sole)
    bearing = feet.bearing_corners(ankle, R, sole, FLOOR, NEAR, None, MARGIN)
    assert len(bearing) == 4
    np.testing.assert_allclose(bearing[:, 2], FLOOR)
    np.testing.assert_allclose(bearing[:, :2], (ankle + sole @ R.T)[:, :2], atol=1e-12)


def test_a_heel_strike_in_double_support_stays_on_its_heel(sole):
    """Two feet down: no centre of pressure per foot, the pose's contact decides."""
    ankle, R = _foot(sole, pitch_deg=15.0)
    bearing = feet.bearing_corners(ankle, R, sole, FLOOR, NEAR, None, MARGIN)
    assert len(bearing) == 2
    heel = (ankle + sole @ R.T)[np.argsort((ankle + sole @ R.T)[:, 2])[:2]]
    np.testing.assert_allclose(np.sort(bearing[:, 0]), np.sort(heel[:, 0]))


def test_one_foot_the_pose_holds_above_the_floor_bears_flat_on_its_whole_sole(sole):
    """Capture floors drift and toe-less feet tilt: a foot standing alone, hovering a few cm and
    pitched a few degrees, stands on its whole sole instead of on its two lowest corners (with
    another foot down, the pose's lowest corners, as before)."""
    ankle, R = _foot(sole, pitch_deg=7.0, lift=0.05)
    mid = (ankle + sole.mean(axis=0) @ R.T)[:2]
    for pressure in (mid, mid + np.array([0.3, 0.0])):       # on the sole or off it
        bearing = feet.bearing_corners(ankle, R, sole, FLOOR, NEAR, pressure, MARGIN)
        assert len(bearing) == 4
        np.testing.assert_allclose(bearing[:, 2], FLOOR)
        footprint = np.ptp(bearing[:, :2] @ R[:2, 0] / np.linalg.norm(R[:2, 0]))
        assert footprint == pytest.approx(np.ptp(sole[:, 0]), rel=1e-9)      # flattened, not foreshortened
    assert len(feet.bearing_corners(ankle, R, sole, FLOOR, NEAR, None, MARGIN)) == 2


@pytest.mark.parametrize("pitch, roll", [(8.0, 0.0), (-8.0, 0.0), (4.0, 6.0), (-5.0, -7.0)])
def test_one_foot_down_rolls_under_its_load(sole, pitch, roll):
    """One foot down, tilted by capture noise onto its heel, its toes or one corner, with the
    source's centre of pressure mid-sole: the corners that bear surround it with room to move."""
    ankle, R = _foot(sole, pitch_deg=pitch, roll_deg=roll)
    mid = (ankle + sole.mean(axis=0) @ R.T)[:2]
    tilted = feet.bearing_corners(ankle, R, sole, FLOOR, NEAR, None, MARGIN)
    assert len(tilted) < 4 and _polygon_margin(tilted, mid) < MARGIN     # the pose alone: an edge or corner
    rolled = feet.bearing_corners(ankle, R, sole, FLOOR, NEAR, mid, MARGIN)
    assert len(rolled) >= 3 and _polygon_margin(rolled, mid) >= MARGIN
    np.testing.assert_allclose(rolled[:, 2], FLOOR)


def test_a_push_off_the_toes_stays_on_the_toes_when_its_load_is_there(sole):
    """The foot rolls toward its load, no further: a centre of pressure ahead of the sole (a
    push the sole cannot hold) leaves the pose's contact as it is."""
    ankle, R = _foot(sole, pitch_deg=-15.0)
    toes = ankle + sole @ R.T
    ahead = (toes[:, :2].mean(axis=0) + 0.2 * R[:2, 0] / np.linalg.norm(R[:2, 0]))
    bearing = feet.bearing_corners(ankle, R, sole, FLOOR, NEAR, ahead, MARGIN)
    assert len(bearing) == 2
    assert (bearing[:, :2] @ R[:2, 0]).min() > (ankle[:2] @ R[:2, 0])      # the toe corners


def test_how_long_the_source_stands_on_one_foot_alone():
    from runtime.reference.reference import alone_spans

    contact = np.array([[1, 1], [1, 0], [1, 0], [1, 0], [1, 1], [0, 1], [0, 0], [1, 0]], dtype=bool)
    span = alone_spans(contact, fps=10.0)
    np.testing.assert_allclose(span[:, 0], [0, 0.3, 0.3, 0.3, 0, 0, 0, 0.1])
    np.testing.assert_allclose(span[:, 1], [0, 0, 0, 0, 0, 0.1, 0, 0])
