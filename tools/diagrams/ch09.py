"""Chapter 9: the maximum path length of Table 1, drawn for n = 9 positions.

The number of layers each drawing needs is found on the drawing's own graph (which
outputs depend on which inputs), and tests/test_diagrams.py checks it against the
chapter's formulas: ceil((n - 1) / (k - 1)) contiguous layers, ceil(log_k n) dilated.
"""

from __future__ import annotations

from matplotlib.patches import Circle

from .draw import ALLOWED, INK, NOTE, arrow, canvas, line, small

N_POS, KERNEL = 9, 3
X0, DX = 0.55, 0.61
PALE = "#c8c8c8"


def x_of(t: int) -> float:
    return X0 + t * DX


def dot(ax, t, y, on=False):
    fc = ALLOWED if on else "white"
    ax.add_patch(Circle((x_of(t), y), 0.07, fc=fc, ec=INK, lw=1.0, zorder=3))


def layers_needed(dilation) -> int:
    """Causal convolutions of width KERNEL, layer l dilated by dilation(l): the
    fewest layers after which the last output depends on the first input."""
    for n_layers in range(1, N_POS):
        reach = {N_POS - 1}  # positions the last output depends on, layer by layer
        for layer in reversed(range(n_layers)):
            d = dilation(layer)
            reach = {t - d * i for t in reach for i in range(KERNEL) if t - d * i >= 0}
        if 0 in reach:
            return n_layers
    raise AssertionError("never reaches")


def conv_panel(ax, y0, dilation, gap):
    """A stack of causal convolutions; the path from the first input to the last
    output in blue, the inputs of each layer's last-reaching unit in grey."""
    n_layers = layers_needed(dilation)
    path = [N_POS - 1]  # from the top down, the furthest reach at each layer
    for layer in reversed(range(n_layers)):
        path.append(max(0, path[-1] - dilation(layer) * (KERNEL - 1)))
    path.reverse()  # path[l]: the position on row l (row 0: the inputs)
    for row in range(n_layers + 1):
        y = y0 + row * gap
        for t in range(N_POS):
            dot(ax, t, y, on=t == path[row])
        if row:
            d = dilation(row - 1)
            top = path[row]
            for i in range(KERNEL):
                below = top - d * i
                if below >= 0:
                    on = below == path[row - 1]
                    colour, lw = (ALLOWED, 2.2) if on else (PALE, 1.0)
                    line(ax, [x_of(below), x_of(top)], [y - gap, y], color=colour, lw=lw)
    return n_layers


def ch09_path_lengths():
    fig, ax = canvas(6.0, 6.75, f"Maximum path length, n = {N_POS} positions")
    last = N_POS - 1
    # self-attention: every output reads every input in one layer
    y = 5.45
    small(ax, 0.1, y + 0.62, "self-attention: 1 layer (Table 1: O(1))", ha="left")
    for t in range(N_POS):
        on = t == 0
        colour, lw = (ALLOWED, 2.2) if on else (PALE, 1.0)
        line(ax, [x_of(t), x_of(last)], [y, y + 0.45], color=colour, lw=lw)
    for t in range(N_POS):
        dot(ax, t, y, on=t == 0)
        dot(ax, t, y + 0.45, on=t == last)
    # recurrent: h_t needs h_{t-1}
    y = 4.45
    steps = N_POS - 1
    label = f"recurrent: {steps} steps, one after another (O(n))"
    small(ax, 0.1, y + 0.42, label, ha="left")
    for t in range(N_POS):
        dot(ax, t, y, on=True)
        if t:
            arrow(ax, (x_of(t - 1) + 0.08, y), (x_of(t) - 0.08, y), color=ALLOWED)
    # contiguous and dilated convolutions
    y = 2.3
    contiguous = conv_panel(ax, y, lambda layer: 1, 0.3)
    label = f"convolution, k = {KERNEL}: {contiguous} layers (O(n/k))"
    small(ax, 0.1, y + contiguous * 0.3 + 0.32, label, ha="left")
    y = 0.7
    dilated = conv_panel(ax, y, lambda layer: KERNEL**layer, 0.4)
    dilations = ", ".join(str(KERNEL**layer) for layer in range(dilated))
    label = f"dilated ({dilations}), k = {KERNEL}: {dilated} layers (Table 1: $O(\\log_k n)$)"
    small(ax, 0.1, y + dilated * 0.4 + 0.32, label, ha="left")
    note(ax, 3.0, 0.28, "blue: the path from the first position to the last")
    return fig


def note(ax, x, y, s):
    small(ax, x, y, s, color=NOTE)


FIGURES = [ch09_path_lengths]
