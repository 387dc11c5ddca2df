"""Drawing with NumPy only: the ``rgb_array`` frames of the bandits and the Binomial stream.

The environments import only gymnasium, mujoco, numpy and our leaf modules (no matplotlib),
so their pictures are drawn here on ``(height, width, 3)`` ``uint8`` arrays: filled
rectangles, bar charts, polylines and square markers, all clipped to the frame.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

__all__ = [
    "FRAME_HEIGHT",
    "FRAME_WIDTH",
    "PALETTE",
    "bars",
    "blank",
    "fill_rect",
    "markers",
    "polyline",
    "progress_frame",
]

#: Frame size (pixels) of every NumPy-drawn environment: 240 rows × 320 columns.
FRAME_HEIGHT, FRAME_WIDTH = 240, 320

#: The colours of the drawings (RGB).
PALETTE: dict[str, tuple[int, int, int]] = {
    "background": (255, 255, 255),
    "panel": (236, 236, 236),
    "grid": (200, 200, 200),
    "mean": (31, 119, 180),  # blue: arm means, the hidden θ
    "last": (214, 39, 40),  # red: the arm pulled last
    "best": (44, 160, 44),  # green: the optimal arm
    "pulls": (90, 90, 90),  # dark grey: pull counts
    "observation": (255, 127, 14),  # orange: observed counts k / n
}


def blank(
    height: int = FRAME_HEIGHT, width: int = FRAME_WIDTH, color: tuple[int, int, int] | None = None
) -> np.ndarray:
    """A new ``(height, width, 3)`` ``uint8`` frame filled with ``color`` (default white)."""
    frame = np.empty((height, width, 3), dtype=np.uint8)
    frame[:] = PALETTE["background"] if color is None else color
    return frame


def progress_frame(render_mode: str | None, t: int, max_steps: int) -> np.ndarray | None:
    """A new frame with the grey progress strip (``t`` steps played out of ``max_steps``)
    across its top; ``None``, with the warning Gymnasium's environments give, when the
    environment was made without a ``render_mode``."""
    if render_mode is None:
        gym.logger.warn(
            "You are calling render method without specifying any render mode. You can "
            'specify the render_mode at initialization, e.g. render_mode="rgb_array"',
            stacklevel=2,  # the warning names the environment's render, as before
        )
        return None
    frame = blank()
    fill_rect(frame, 0, 0, 4, FRAME_WIDTH, PALETTE["panel"])
    fill_rect(frame, 0, 0, 4, round(FRAME_WIDTH * t / max_steps), PALETTE["pulls"])
    return frame


def fill_rect(
    frame: np.ndarray, top: int, left: int, bottom: int, right: int, color: tuple[int, int, int]
) -> None:
    """Fill rows ``top:bottom`` and columns ``left:right`` (clipped to the frame) in place."""
    height, width = frame.shape[:2]
    top, bottom = max(0, int(top)), min(height, int(bottom))
    left, right = max(0, int(left)), min(width, int(right))
    if top < bottom and left < right:
        frame[top:bottom, left:right] = color


def bars(
    frame: np.ndarray,
    box: tuple[int, int, int, int],
    fractions: np.ndarray,
    colors: np.ndarray,
) -> None:
    """Draw one vertical bar per entry of ``fractions`` in ``box``, in place.

    Args:
        frame: The ``(H, W, 3)`` ``uint8`` frame.
        box: ``(top, left, bottom, right)`` of the plotting area in pixels.
        fractions: Bar heights as fractions of the box height (clipped to [0, 1]).
        colors: ``(n, 3)`` RGB colour of each bar.

    The box is split into ``n`` equal columns; a bar fills the middle ~70 % of its column when
    columns are at least 3 pixels wide, else the whole column. With more bars than pixel
    columns, each pixel column shows the bar whose column contains the pixel's left edge.
    """
    top, left, bottom, right = box
    n = len(fractions)
    width, height = right - left, bottom - top
    if n == 0 or width <= 0 or height <= 0:
        return
    x = np.arange(width)
    index = x * n // width  # the bar each pixel column belongs to
    if width >= 3 * n:  # leave a gap between neighbouring bars
        start = (index * width + n - 1) // n  # first pixel column of each bar's column
        column = (width + n - 1) // n
        offset = x - start
        gap = max(1, (3 * column) // 20)
        visible = (offset >= gap) & (offset < column - gap)
    else:
        visible = np.ones(width, dtype=bool)
    tops = np.rint(height * (1.0 - np.clip(fractions, 0.0, 1.0))).astype(np.int64)[index]
    rows = np.arange(height)[:, None]
    mask = (rows >= tops[None, :]) & visible[None, :]
    region = frame[top:bottom, left:right]
    colour_of_column = np.asarray(colors, dtype=np.uint8)[index]  # (width, 3)
    region[mask] = np.broadcast_to(colour_of_column[None, :, :], (height, width, 3))[mask]


def polyline(
    frame: np.ndarray,
    xs: np.ndarray,
    ys: np.ndarray,
    color: tuple[int, int, int],
    thickness: int = 2,
) -> None:
    """Draw straight segments through the points ``(xs[i], ys[i])`` (pixels), in place.

    Each segment is sampled at least once per pixel along its longer axis; every sample paints
    a ``thickness`` × ``thickness`` square. Pixels outside the frame are dropped.
    """
    xs = np.asarray(xs, dtype=np.float64)
    ys = np.asarray(ys, dtype=np.float64)
    if xs.size == 0:
        return
    if xs.size == 1:
        px, py = xs, ys
    else:
        dx, dy = np.diff(xs), np.diff(ys)
        steps = np.maximum(np.ceil(np.maximum(np.abs(dx), np.abs(dy))), 1).astype(np.int64)
        segment = np.repeat(np.arange(steps.size), steps)
        first = np.cumsum(steps) - steps
        frac = (np.arange(segment.size) - first[segment]) / steps[segment]
        px = np.append(xs[:-1][segment] + frac * dx[segment], xs[-1])
        py = np.append(ys[:-1][segment] + frac * dy[segment], ys[-1])
    _paint(frame, px, py, color, thickness)


def markers(
    frame: np.ndarray, xs: np.ndarray, ys: np.ndarray, color: tuple[int, int, int], size: int = 3
) -> None:
    """Paint a ``size`` × ``size`` square centred on each point ``(xs[i], ys[i])``, in place."""
    _paint(frame, np.asarray(xs, np.float64), np.asarray(ys, np.float64), color, size)


def _paint(
    frame: np.ndarray, px: np.ndarray, py: np.ndarray, color: tuple[int, int, int], size: int
) -> None:
    height, width = frame.shape[:2]
    offsets = np.arange(size) - (size - 1) // 2
    cols = (np.rint(px)[:, None] + offsets[None, :]).astype(np.int64)
    rows = (np.rint(py)[:, None] + offsets[None, :]).astype(np.int64)
    rr = np.repeat(rows, size, axis=1).ravel()
    cc = np.tile(cols, (1, size)).ravel()
    keep = (rr >= 0) & (rr < height) & (cc >= 0) & (cc < width)
    frame[rr[keep], cc[keep]] = color
