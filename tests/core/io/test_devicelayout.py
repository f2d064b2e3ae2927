"""Device layouts back to the original shape: small cases worked out by hand, and round trips through the
element-by-element encoder of tests/cann_encode.py, with channel counts that are not a multiple of C0."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.cann_encode import to_device

from dumptui.core.io.devicelayout import LayoutError, plan


def convert(device: np.ndarray, fmt: str, original: tuple[int, ...], original_format: str | None = None) -> np.ndarray:
    layout = plan(fmt, device.shape, original, original_format)
    assert layout is not None
    return layout.to_original(device)


def test_nc1hwc0_c04_by_hand():
    # x[0, c, 0, w] = 2c + w + 1, three channels in one block of C0 = 4: the fourth lane is padding
    x = np.array([[[[1, 2]], [[3, 4]], [[5, 6]]]], dtype=np.float32)  # (1, 3, 1, 2)
    device = np.array([[[[[1, 3, 5, 0], [2, 4, 6, 0]]]]], dtype=np.float32)  # (1, 1, 1, 2, 4)
    assert np.array_equal(convert(device, "NC1HWC0_C04", (1, 3, 1, 2)), x)


def test_nc1hwc0_seventeen_channels_by_hand():
    # 17 channels need two blocks of 16; the second holds channel 16 and 15 lanes of padding (here 99s,
    # which must not survive)
    device = np.concatenate([np.arange(1, 17), [17], np.full(15, 99)]).astype(np.float16).reshape(1, 2, 1, 1, 16)
    out = convert(device, "NC1HWC0", (1, 17, 1, 1))
    assert out.shape == (1, 17, 1, 1)
    assert out.reshape(-1).tolist() == list(range(1, 18))


def test_fractal_z_by_hand():
    # weight (N=2, C=3, H=1, W=2), C0 = 4, N0 = 16: (n, c, 0, w) lives at [w, 0, n, c]
    x = np.array([[[[0, 1]], [[10, 11]], [[20, 21]]], [[[100, 101]], [[110, 111]], [[120, 121]]]], np.float32)
    device = np.zeros((2, 1, 16, 4), np.float32)
    device[0, 0, 0] = [0, 10, 20, 0]
    device[0, 0, 1] = [100, 110, 120, 0]
    device[1, 0, 0] = [1, 11, 21, 0]
    device[1, 0, 1] = [101, 111, 121, 0]
    assert np.array_equal(convert(device, "FRACTAL_Z", (2, 3, 1, 2)), x)


def test_fractal_nz_by_hand():
    # matrix M=3, N=5 with N0 = 4, M0 = 16: (m, n) lives at [n // 4, 0, m, n % 4]
    x = np.array([[10 * m + n for n in range(5)] for m in range(3)], np.float32)
    device = np.full((2, 1, 16, 4), -1, np.float32)
    for m in range(3):
        device[0, 0, m] = [10 * m, 10 * m + 1, 10 * m + 2, 10 * m + 3]
        device[1, 0, m] = [10 * m + 4, -1, -1, -1]
    assert np.array_equal(convert(device, "FRACTAL_NZ", (3, 5)), x)


def test_ndc1hwc0_by_hand():
    # (N=1, C=3, D=2, H=1, W=1), C0 = 4: (0, c, d, 0, 0) lives at [0, d, 0, 0, 0, c]
    x = np.array([1, 2, 3, 4, 5, 6], np.float32).reshape(1, 3, 2, 1, 1)  # x[0, c, d] = 2c + d + 1
    device = np.zeros((1, 2, 1, 1, 1, 4), np.float32)
    device[0, 0, 0, 0, 0] = [1, 3, 5, 0]
    device[0, 1, 0, 0, 0] = [2, 4, 6, 0]
    assert np.array_equal(convert(device, "NDC1HWC0", (1, 3, 2, 1, 1)), x)


def test_plain_transposes_by_hand():
    x = np.arange(12, dtype=np.int32).reshape(1, 2, 2, 3)  # NCHW: C=2, H=2, W=3
    assert np.array_equal(convert(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), "NHWC", (1, 2, 2, 3)), x)
    assert np.array_equal(convert(np.ascontiguousarray(x.transpose(2, 3, 1, 0)), "HWCN", (1, 2, 2, 3)), x)
    assert np.array_equal(convert(np.ascontiguousarray(x.transpose(1, 2, 3, 0)), "CHWN", (1, 2, 2, 3)), x)
    # the framework itself was NHWC: the same shape, nothing to do
    assert plan("NHWC", (1, 2, 3, 2), (1, 2, 3, 2), "NHWC") is None


def test_nhwc_original_of_nc1hwc0():
    x = np.arange(1 * 2 * 3 * 5, dtype=np.float32).reshape(1, 2, 3, 5)  # NHWC with C = 5
    device = to_device(x, "NC1HWC0", c0=4, original_format="NHWC")  # (1, 2, 2, 3, 4)
    layout = plan("NC1HWC0", device.shape, x.shape)
    assert layout is not None and layout.original_format == "NHWC"
    assert np.array_equal(layout.to_original(device), x)


def test_shapes_that_do_not_fit_are_named_not_guessed():
    with pytest.raises(LayoutError, match=r"\[1, 2, 3, 3, 16\] is not NC1HWC0 of the original shape \[1, 20, 4, 3\]"):
        plan("NC1HWC0", (1, 2, 3, 3, 16), (1, 20, 4, 3))
    with pytest.raises(LayoutError, match="no original shape"):
        plan("FRACTAL_NZ", (1, 1, 16, 16), None)
    with pytest.raises(LayoutError, match="C1HWNCoC0 has no conversion"):
        plan("C1HWNCoC0", (1, 1, 1, 16, 16, 16), (16, 16, 1, 1))
    with pytest.raises(LayoutError, match="does not hold"):
        plan("NCHW", (1, 2, 4, 1), (1, 4, 2, 1))
    with pytest.raises(LayoutError, match="does not hold"):
        plan("ND", (2, 4), (3, 3))
    assert plan("ND", (1, 8), (8,)) is not None and plan("ND", (8,), (8,)) is None
    flat = plan("ND", (6,), (2, 3))  # ND is row-major whatever the grouping of its dims
    assert flat is not None and flat.to_original(np.arange(6)).tolist() == [[0, 1, 2], [3, 4, 5]]


def test_square_shapes_read_as_nchw():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2)
    device = to_device(np.ascontiguousarray(x.reshape(1, 4, 2, 2)), "NHWC")
    assert np.array_equal(convert(device, "NHWC", (1, 4, 2, 2)), x)


CASES = [
    ("NC1HWC0", (2, 17, 3, 5), {}),
    ("NC1HWC0", (1, 16, 2, 2), {}),
    ("NC1HWC0", (1, 33, 1, 1), {"c0": 32}),
    ("NC1HWC0", (3, 7), {}),
    ("NC1HWC0", (9,), {}),
    ("NC1HWC0_C04", (1, 3, 4, 5), {}),
    ("NDC1HWC0", (1, 19, 2, 3, 2), {}),
    ("FRACTAL_Z", (33, 20, 3, 3), {}),
    ("FRACTAL_Z", (5, 3, 1, 1), {}),
    ("FRACTAL_Z", (17, 18), {}),
    ("FRACTAL_NZ", (17, 40), {}),
    ("FRACTAL_NZ", (2, 3, 33, 7), {}),
    ("FRACTAL_NZ", (21,), {}),
    ("FRACTAL_NZ", (18, 30), {"c0": 8}),
    ("NHWC", (2, 3, 4, 5), {}),
    ("HWCN", (2, 3, 4, 5), {}),
    ("CHWN", (2, 3, 4, 5), {}),
]


@pytest.mark.parametrize("fmt, shape, kw", CASES)
def test_round_trip(fmt, shape, kw):
    x = np.random.default_rng(len(shape) * 31 + shape[0]).standard_normal(shape).astype(np.float32)
    src = x.reshape(1, -1) if fmt == "FRACTAL_NZ" and x.ndim == 1 else x
    if fmt in ("NC1HWC0", "FRACTAL_Z") and x.ndim < 4:  # the device pads the rank to 4 (C kept second)
        src = x.reshape({1: (1, -1, 1, 1), 2: x.shape + (1, 1)}[x.ndim])
    device = to_device(src, fmt, **kw)
    assert np.array_equal(convert(device, fmt, shape), x)


def test_picklable_for_worker_processes():
    import pickle

    layout = plan("NC1HWC0", (1, 2, 1, 1, 16), (1, 17, 1, 1))
    assert pickle.loads(pickle.dumps(layout)) == layout
