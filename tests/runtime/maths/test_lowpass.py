"""runtime.maths.lowpass: rates of change of sampled motion that do not amplify capture noise."""
import numpy as np

from runtime.maths import lowpass


def test_constants_and_ramps_pass_unchanged_to_the_ends():
    t = np.arange(90) / 120.0
    x = np.stack([1.5 + 0.0 * t, 3.0 * t - 2.0], axis=1)
    assert np.allclose(lowpass.smooth(x, 120.0), x, atol=1e-12)
    assert np.allclose(lowpass.derivative(x, 120.0), [[0.0, 3.0]] * len(t), atol=1e-9)


def test_the_same_motion_has_the_same_rates_at_any_frame_rate():
    """The filter's width is in seconds: a 2 Hz sway differentiates alike at 30 and 240 fps."""
    rates = {}
    for fps in (30.0, 240.0):
        t = np.arange(int(2 * fps)) / fps
        v = lowpass.derivative(np.sin(2 * np.pi * 2.0 * t), fps)
        rates[fps] = np.interp(np.linspace(0.25, 1.75, 50), t, v)
    assert np.abs(rates[30.0] - rates[240.0]).max() < 0.05 * 2 * np.pi * 2.0
    exact = 2 * np.pi * 2.0 * np.cos(2 * np.pi * 2.0 * np.linspace(0.25, 1.75, 50))
    assert np.abs(rates[240.0] - exact).max() < 0.05 * 2 * np.pi * 2.0


def test_frame_to_frame_jitter_is_not_amplified_into_accelerations():
    """3 mm of independent jitter per frame at 120 fps: differenced twice it is about 26 m/s^2 of
    noise (2.7 g); low-passed, under 1 m/s^2."""
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 0.003, 1200)
    raw = np.gradient(np.gradient(x, 1 / 120.0), 1 / 120.0)
    filtered = lowpass.derivative(lowpass.derivative(x, 120.0), 120.0)
    assert raw.std() > 20.0
    assert filtered.std() < 0.05 * raw.std()


def test_axes_other_than_time_are_left_alone_and_short_signals_pass():
    x = np.arange(24.0).reshape(2, 3, 4)
    assert np.array_equal(lowpass.smooth(x, 30.0, axis=0), x)     # 2 samples: nothing to filter
    y = np.random.default_rng(0).normal(size=(50, 3))
    moved = lowpass.smooth(np.moveaxis(y, 0, 1), 120.0, axis=1)
    assert np.allclose(np.moveaxis(moved, 1, 0), lowpass.smooth(y, 120.0))
