"""Chapter 4: the sinusoids of the positional encoding and their rotation."""

from __future__ import annotations

import math

from matplotlib.patches import Circle, Rectangle

from .draw import (
    ALLOWED,
    BLOCKED,
    D_MODEL,
    HEAD_COLOURS,
    NOTE,
    arrow,
    canvas,
    line,
    note,
    pe_value,
    small,
    text,
)


def ch04_sinusoids():
    pairs = [0, 16, 32, 64]
    fig, ax = canvas(5.4, 5.6, f"One sinusoid per column ($d_{{model}}$ = {D_MODEL})")
    positions = list(range(41))
    x0, width, band = 0.45, 4.75, 1.15
    for r, i in enumerate(pairs):
        yc = 4.45 - r * band
        line(ax, [x0, x0 + width], [yc, yc], color="#bbbbbb", lw=0.8)
        for col, style in ((2 * i, "-"), (2 * i + 1, "--")):
            fine = [p / 8 for p in range(40 * 8 + 1)]
            ys = [yc + 0.38 * pe_value(p, col) for p in fine]
            xs = [x0 + width * p / 40 for p in fine]
            line(
                ax,
                xs,
                ys,
                color=ALLOWED if style == "-" else "#d95f02",
                lw=1.5,
                ls=style,
            )
        xs = [x0 + width * p / 40 for p in positions]
        ax.scatter(
            xs,
            [yc + 0.38 * pe_value(p, 2 * i) for p in positions],
            s=7,
            color=ALLOWED,
            zorder=3,
        )
        wavelength = 2 * math.pi * 10000 ** (2 * i / D_MODEL)
        small(
            ax,
            x0,
            yc + 0.5,
            f"pair i = {i}: columns {2 * i}, {2 * i + 1}, wavelength {wavelength:.1f}",
            ha="left",
        )
    small(ax, x0 + width / 2, 0.35, "positions 0 to 40: sine solid, cosine dashed")
    return fig


def ch04_rotation():
    title = "Each pair turns by $\\omega_i k$ from position to position"
    fig, ax = canvas(5.4, 3.7, title)
    for i, cx in ((0, 1.35), (16, 4.05)):
        omega = 10000.0 ** (-2 * i / D_MODEL)
        cy, r = 1.85, 1.0
        ax.add_patch(Circle((cx, cy), r, fc="none", ec="#bbbbbb", lw=1.2))
        line(ax, [cx - r - 0.1, cx + r + 0.1], [cy, cy], color="#cccccc", lw=0.8)
        line(ax, [cx, cx], [cy - r - 0.1, cy + r + 0.1], color="#cccccc", lw=0.8)
        for pos in range(4):
            dx, dy = (
                pe_value(pos, 2 * i),
                pe_value(pos, 2 * i + 1),
            )  # (sin, cos) of pair i
            ax.add_patch(
                Circle(
                    (cx + r * dx, cy + r * dy),
                    0.07,
                    fc=HEAD_COLOURS[pos],
                    ec="none",
                    zorder=3,
                )
            )
            small(
                ax,
                cx + (r - 0.25) * dx,
                cy + (r - 0.25) * dy,
                f"{pos}",
                color=HEAD_COLOURS[pos],
            )
        start = (
            cx + 1.2 * r * pe_value(0, 2 * i),
            cy + 1.2 * r * pe_value(0, 2 * i + 1),
        )
        end = (cx + 1.2 * r * pe_value(1, 2 * i), cy + 1.2 * r * pe_value(1, 2 * i + 1))
        arrow(ax, start, end, color=NOTE, lw=1.2, rad=-0.3)
        small(ax, cx, 0.3, f"pair i = {i}: $\\omega_i$ = {omega:.2f} rad")
    small(ax, 2.7, 1.85, "sin →\ncos ↑")
    return fig


# what PyTorch does with each kind of tensor a module holds (tests/test_diagrams.py
# asks PyTorch): (kind, example, (trained, follows .to() and .double(), in state_dict))
OWNERSHIP = [
    ("nn.Parameter", "self.proj.weight", (True, True, True)),
    ("buffer", 'register_buffer("pe", table)', (False, True, True)),
    ("buffer, persistent=False", "ah.PositionalEncoding's pe", (False, True, False)),
    ("plain attribute", "self.pe = table", (False, False, False)),
]
OWNERSHIP_COLUMNS = ["trained", "follows .to()\nand .double()", "saved in\nstate_dict()"]


def ch04_ownership():
    fig, ax = canvas(6.0, 3.75, "What a module knows it owns")
    xs, w, h = (3.3, 4.38, 5.47), 0.8, 0.42
    for x, head in zip(xs, OWNERSHIP_COLUMNS, strict=True):
        small(ax, x, 3.05, head)
    for r, (kind, example, flags) in enumerate(OWNERSHIP):
        y = 2.4 - r * 0.62
        small(ax, 2.75, y + 0.1, kind, ha="right")
        note(ax, 2.75, y - 0.15, example, ha="right")
        for x, flag in zip(xs, flags, strict=True):
            corner = (x - w / 2, y - h / 2)
            colour = ALLOWED if flag else BLOCKED
            ax.add_patch(Rectangle(corner, w, h, fc=colour, ec="white", lw=2))
            text(ax, x, y, "yes" if flag else "no", color="white", weight="bold")
    return fig


FIGURES = [ch04_sinusoids, ch04_rotation, ch04_ownership]
