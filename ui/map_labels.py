"""Where the map's labels go so that none covers another, on a laptop and on a phone.

Plotly draws annotations where it is told and never moves them apart, and the page does not
know how wide the plot will be. So labels are placed in pixels at the narrowest plot the page
is laid out for (a phone, `MIN_WIDTH`): two labels apart there are apart at any wider plot,
since a label's size is fixed in pixels while the distance between points grows with the
width. Answer labels (`[n]`) are placed first, each at the first offset around its point that
is free; topic labels, largest topic first, only where they cover nothing placed before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MIN_WIDTH = 340.0  # px: the plot's width in a 390 px phone viewport
PLOT_HEIGHT = 560  # px: the figure's height: a laptop sees it whole, a phone's 66%
AREA_HEIGHT = 510.0  # px: the plot area, less the legend (a low guess is the safe one)
PAD = 0.04  # share of each axis's span left empty around the points
# Around a point, where its [n] label may go (Plotly's ax/ay: pixels, y down), nearest first.
OFFSETS = (
    (22, -22), (-22, -22), (22, 22), (-22, 22), (0, -32), (0, 32), (36, 0), (-36, 0),
    (40, -40), (-40, -40), (40, 40), (-40, 40), (0, -52), (0, 52), (60, 0), (-60, 0),
)  # fmt: skip
CITED_RADIUS = 10.0  # px: a cited marker (size 15) and its outline
TOUCH_SLOP = 12.0  # px: how far a finger lands from the point it means


@dataclass(frozen=True)
class Frame:
    """The axis ranges of the map and its pixels per data unit at `MIN_WIDTH`."""

    x_range: tuple[float, float]
    y_range: tuple[float, float]
    sx: float
    sy: float

    def pixels(self, x: float, y: float) -> tuple[float, float]:
        return (x - self.x_range[0]) * self.sx, (self.y_range[1] - y) * self.sy


def frame_of(xy: np.ndarray) -> Frame:
    if len(xy) == 0:
        return Frame((0.0, 1.0), (0.0, 1.0), MIN_WIDTH, AREA_HEIGHT)
    low, high = xy.min(axis=0), xy.max(axis=0)
    span = np.maximum(high - low, 1e-9)
    low, high = low - PAD * span, high + PAD * span
    span = high - low
    return Frame(
        (float(low[0]), float(high[0])),
        (float(low[1]), float(high[1])),
        MIN_WIDTH / float(span[0]),
        AREA_HEIGHT / float(span[1]),
    )


Box = tuple[float, float, float, float]  # left, top, right, bottom in pixels


def text_box(cx: float, cy: float, text: str, size: int) -> Box:
    """The pixels a one-line label of `size` px type takes, centred at (cx, cy), with room for
    its background and a margin."""
    width = 0.62 * size * len(text) + 10
    height = 1.35 * size + 8
    return cx - width / 2, cy - height / 2, cx + width / 2, cy + height / 2


def overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


class Placer:
    """Boxes taken so far; a new label goes only where it overlaps none of them."""

    def __init__(self, frame: Frame) -> None:
        self.frame = frame
        self.taken: list[Box] = []

    def block_point(self, x: float, y: float, radius: float) -> None:
        px, py = self.frame.pixels(x, y)
        self.taken.append((px - radius, py - radius, px + radius, py + radius))

    def free(self, box: Box) -> bool:
        return not any(overlaps(box, other) for other in self.taken)

    def place_marker_label(self, x: float, y: float, text: str, size: int) -> tuple[int, int]:
        """The offset (ax, ay) for the label of the point (x, y): the first free one, else the
        first (a cited paper's number is always shown)."""
        px, py = self.frame.pixels(x, y)
        for ax, ay in OFFSETS:
            box = text_box(px + ax, py + ay, text, size)
            if self.free(box):
                self.taken.append(box)
                return ax, ay
        ax, ay = OFFSETS[0]
        self.taken.append(text_box(px + ax, py + ay, text, size))
        return ax, ay

    def place_centred(self, x: float, y: float, text: str, size: int) -> bool:
        """Take the box of a label centred at (x, y) if it is free; whether it was."""
        box = text_box(*self.frame.pixels(x, y), text, size)
        if not self.free(box):
            return False
        self.taken.append(box)
        return True


def nearest_within(
    frame: Frame, point: tuple[float, float], candidates: Sequence[tuple[float, float]]
) -> int | None:
    """The index of the candidate whose marker a tap at `point` may have meant: the nearest
    within a cited marker's radius and a finger's slop (at the phone's scale), or None."""
    if not candidates:
        return None
    px, py = frame.pixels(*point)
    reach = CITED_RADIUS + TOUCH_SLOP
    best, best_d = None, reach
    for i, (x, y) in enumerate(candidates):
        cx, cy = frame.pixels(x, y)
        d = float(np.hypot(cx - px, cy - py))
        if d <= best_d:
            best, best_d = i, d
    return best
