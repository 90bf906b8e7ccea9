"""Recurrent layers (``aten.lstm.input``, ``aten.gru.input``) unrolled over the static
sequence length into graph operators.

Per layer and direction, the input projection of every time step is one matmul
(``x @ W_ih^T + b_ih`` over the whole sequence); each step then adds ``h @ W_hh^T + b_hh``,
slices the gates and updates the state with elementwise ops (PyTorch's gate order: LSTM
``i, f, g, o``; GRU ``r, z, n``). A reverse direction walks the steps backwards; outputs of
the two directions are concatenated along the features. The graph grows with the sequence
length (about 15 nodes a step for an LSTM), so this is meant for short sequences.
"""

from __future__ import annotations


def _steps(conv, x, w_ih, b_ih, time_axis: int):
    """The input projection of every step: ``[x_t @ W_ih^T + b_ih for t]``."""
    projected = conv._op_linear(x, w_ih, b_ih)
    return [conv._op_select(projected, time_axis, t)
            for t in range(conv._shape(x)[time_axis])]


def _gate(conv, gates, k: int, hidden: int):
    return conv._op_slice(gates, 1, k * hidden, (k + 1) * hidden)


def _lstm_cell(conv, xg, h, c, w_hh, b_hh, hidden):
    gates = conv._emit("add", [xg, conv._op_linear(h, w_hh, b_hh)])
    i, f, g, o = (_gate(conv, gates, k, hidden) for k in range(4))
    i, f, o = (conv._emit("sigmoid", [v]) for v in (i, f, o))
    c = conv._emit("add", [conv._emit("mul", [f, c]),
                           conv._emit("mul", [i, conv._emit("tanh", [g])])])
    h = conv._emit("mul", [o, conv._emit("tanh", [c])])
    return h, c


def _gru_cell(conv, xg, h, w_hh, b_hh, hidden):
    hg = conv._op_linear(h, w_hh, b_hh)
    xr, xz, xn = (_gate(conv, xg, k, hidden) for k in range(3))
    hr, hz, hn = (_gate(conv, hg, k, hidden) for k in range(3))
    r = conv._emit("sigmoid", [conv._emit("add", [xr, hr])])
    z = conv._emit("sigmoid", [conv._emit("add", [xz, hz])])
    n = conv._emit("tanh", [conv._emit("add", [xn, conv._emit("mul", [r, hn])])])
    # h' = (1 - z) * n + z * h = n + z * (h - n)
    return conv._emit("add", [n, conv._emit("mul", [z, conv._emit("sub", [h, n])])])


def recurrent(conv, kind: str, x, hx, params, has_biases, num_layers, bidirectional,
              batch_first):
    """The unrolled layer: ``(output, h_n)`` for a GRU, ``(output, h_n, c_n)`` for an LSTM."""
    time_axis = 1 if batch_first else 0
    directions = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    h0 = hx[0] if kind == "lstm" else hx
    c0 = hx[1] if kind == "lstm" else None
    hidden = conv._shape(h0)[-1]
    finals_h, finals_c = [], []
    layer_input = x
    for layer in range(num_layers):
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            weights = params[index * per:(index + 1) * per]
            w_ih, w_hh = weights[:2]
            b_ih, b_hh = (weights[2], weights[3]) if has_biases else (None, None)
            steps = _steps(conv, layer_input, w_ih, b_ih, time_axis)
            order = range(len(steps) - 1, -1, -1) if direction else range(len(steps))
            h = conv._op_select(h0, 0, index)
            c = conv._op_select(c0, 0, index) if c0 is not None else None
            hs = [None] * len(steps)
            for t in order:
                if kind == "lstm":
                    h, c = _lstm_cell(conv, steps[t], h, c, w_hh, b_hh, hidden)
                else:
                    h = _gru_cell(conv, steps[t], h, w_hh, b_hh, hidden)
                hs[t] = h
            outputs.append(conv._op_stack(hs, time_axis))
            finals_h.append(h)
            finals_c.append(c)
        layer_input = outputs[0] if directions == 1 else conv._op_cat(outputs, -1)
    h_n = conv._op_stack(finals_h, 0)
    if kind == "gru":
        return (layer_input, h_n)
    return (layer_input, h_n, conv._op_stack(finals_c, 0))
