"""Giannou et al.'s SUBLEQ computer as a constructed looped transformer (``icl_sim.models.constructed``): the
punch card, the ten hand-weighted layers of one loop, and the decoding of a state into the interpreter's.

Giannou, Rajput, Sohn, Lee, Lee & Papailiopoulos (ICML 2023), "Looped transformers as programmable computers",
Sec. 5; the layers follow the authors' code (github.com/jysohn1108/Looped-Transformer ``subleq.py``: ``read_inst``,
``read_mem``, ``subtract_mem`` (3 layers), ``write_mem``, ``conditional_branching`` (3 layers),
``error_correction``), rewritten over a residual stream of named columns, tokens as rows.

The punch card (``punch_card``): one token per column of the paper's X; with L = ⌈log₂ n⌉ address bits and N bits
per cell, its features are

    cmd (3L)    commands: the positional codes p_a, p_b, p_c of a command's (a, b, c)
    mem (N)     memory: a cell's N-bit two's-complement code (MSB first, bit 1 ↦ +1, 0 ↦ −1)
    mem_a (N), mem_b (N), now (3L)   the scratchpad: mem[a], mem[b] (then mem[b] − mem[a]) and the command read
    pc (L)      the program counter's code p_pc, in column 0
    pos (L)     the positional code p_i of column i ≥ 1 (column 0's is 0, as in the authors' ``init_input``)
    buf (max(3L, 2N))   a buffer the heads write into and the MLPs empty again
    flag (1)    the branch flag (the authors keep it in the first row of mem_a)
    scratch (1) 1 on the s scratchpad columns (the paper's indicator row)
    first (1)   1 on column 0: the authors' code adds some biases to column 0 only (per-column bias matrices);
                a transformer's bias is the same for every token, so those biases are weights on this indicator.

Reads and writes use the paper's trick: the query and key of column 0 are its pointer (p_pc, p_a, p_b) and those
of column i its code p_i, so the pointed column and column 0 tie at score L and every other column scores at most
L − 2; the head returns half of each, and an MLP gated by the scratchpad indicator turns 2·buffer − 2·old into
new − old.  With softmax weights the other columns leak a mass δ(λ) = (n − 2)e^{−2λ} / (2 + (n − 2)e^{−2λ}) at most
(``leaked_mass``); error correction snaps the memory, program counter and command to {−1, 0, 1} after every loop
when their errors stay below ε (``EPSILON``: fixed here; the authors' code sets ε from the state itself, the
largest distance of any entry from {−1, 0, 1}, which a fixed-weight network cannot do).
"""
from __future__ import annotations

import math

import torch

from icl_sim.models.constructed import (AttentionHead, Layer, LoopedConstruction, ReLUMLP, Stream, binary_code,
                                        matching_loops, read_binary_code)
from icl_sim.theory.subleq import SubleqProgram, run_subleq
from icl_sim.validation import check_float, check_int

#: error correction snaps an entry within ε of −1, 0 or 1 to it (the authors' code takes the state's own largest
#: distance from {−1, 0, 1}; a fixed network needs a fixed ε, any below 1/2 works for exact states)
EPSILON = 0.25
#: the MLPs' gating constant (the authors' ``large_const``)
LARGE = 100.0


def subleq_stream(address_bits: int, bits: int) -> Stream:
    """The punch card's features for L = ``address_bits`` and N = ``bits``."""
    check_int("address_bits", address_bits, 1)
    check_int("bits", bits, 2)
    return Stream([("cmd", 3 * address_bits), ("mem", bits), ("mem_a", bits), ("mem_b", bits),
                   ("now", 3 * address_bits), ("pc", address_bits), ("pos", address_bits),
                   ("buf", max(3 * address_bits, 2 * bits)), ("flag", 1), ("scratch", 1), ("first", 1)])


def punch_card(program: SubleqProgram) -> torch.Tensor:
    """The input X of ``program`` (B, n, d) float64: scratchpad, memory and commands, their codes and indicators."""
    s, m, n, L = program.scratch, program.cells, program.columns, program.address_bits
    stream = subleq_stream(L, program.bits)
    state = stream.zeros(program.memory.shape[0], n)
    codes = binary_code(torch.arange(n), L)
    codes[0] = 0.0
    state[:, :, stream["pos"]] = codes
    state[:, :s, stream.column("scratch")] = 1.0
    state[:, 0, stream.column("first")] = 1.0
    state[:, 0, stream["pc"]] = codes[program.pc]
    state[:, s:s + m, stream["mem"]] = binary_code(program.memory, program.bits, signed=True)
    state[:, s + m:, stream["cmd"]] = codes[program.commands].flatten(-2)
    return state


def _eye(size: int) -> torch.Tensor:
    return torch.eye(size, dtype=torch.float64)


def _pointer_head(stream: Stream, pointer: slice, reads: list[tuple[slice, slice]]) -> AttentionHead:
    """Query = key = pointer rows + positional code; value copies each (source → buffer part) of ``reads``."""
    L = stream.size("pos")
    head = AttentionHead.zeros(stream, L)
    head.query[:, pointer] = _eye(L)
    head.query[:, stream["pos"]] = _eye(L)
    head.key = head.query.clone()
    for source, target in reads:
        head.value[target, source] = _eye(source.stop - source.start)
    return head


def _part(field: slice, start: int, size: int) -> slice:
    return slice(field.start + start, field.start + start + size)


class _Units:
    """Hidden units of one ReLU MLP, added one group at a time: each unit's input weights, input bias and output
    weights."""

    def __init__(self, stream: Stream):
        self.stream, self.inputs, self.biases, self.outputs = stream, [], [], []

    def add(self, inputs: dict, outputs: dict, bias: float = 0.0) -> None:
        """One unit: pre-activation Σ w·x[column] + bias, output Σ w·ReLU(·) into each column."""
        row, out = torch.zeros(self.stream.width, dtype=torch.float64), torch.zeros(self.stream.width,
                                                                                    dtype=torch.float64)
        for column, weight in inputs.items():
            row[column] += weight
        for column, weight in outputs.items():
            out[column] += weight
        self.inputs.append(row)
        self.biases.append(bias)
        self.outputs.append(out)

    def clear(self, field: slice) -> None:
        """x ← x − ReLU(x) + ReLU(−x) = 0 on every column of ``field``."""
        for column in range(field.start, field.stop):
            self.add({column: 1.0}, {column: -1.0})
            self.add({column: -1.0}, {column: 1.0})

    def copy_difference(self, new: slice, old: slice, target: slice, gate: float) -> None:
        """target += ReLU(2new − 2old + gate) − ReLU(2old − 2new + gate), gate = ±LARGE·indicator − LARGE or so:
        new − old where the gate is open (its value 0), nothing where it is shut (−LARGE)."""
        scratch = self.stream.column("scratch")
        for offset in range(new.stop - new.start):
            pair = {new.start + offset: 2.0, old.start + offset: -2.0}
            flipped = {column: -weight for column, weight in pair.items()}
            if gate > 0:  # open on the scratchpad: + LARGE·scratch − LARGE
                pair[scratch], flipped[scratch], bias = LARGE, LARGE, -LARGE
            else:  # open off the scratchpad: − LARGE·scratch
                pair[scratch], flipped[scratch], bias = -LARGE, -LARGE, 0.0
            self.add(pair, {target.start + offset: 1.0}, bias)
            self.add(flipped, {target.start + offset: -1.0}, bias)

    def adder(self, operands: list[slice], target: slice, plus_one: bool) -> None:
        """target = the ±1 code of (Σ operands (+ 1)) mod 2^N, in column 0 only (its biases are weights on the
        ``first`` indicator).  Bit i from the least significant: with t the value of the operands' lowest i bits
        (summed, plus one), it is 1 iff t mod 2^i ≥ 2^(i−1); six ReLU units give the staircase
        [t ≥ 2^(i−1)] − [t ≥ 2^i] + [t ≥ 3·2^(i−1)] for integer t < 2^(i+1) (the paper's binary adder)."""
        first = self.stream.column("first")
        bits = target.stop - target.start
        for i in range(1, bits + 1):
            weights = {}
            for operand in operands:
                for j in range(1, i + 1):
                    weights[operand.stop - j] = weights.get(operand.stop - j, 0.0) + 2.0 ** (j - 1) / 2
            offset = len(operands) * (2 ** i - 1) / 2 + (1 if plus_one else 0)  # the ±1 → {0, 1} shift
            out = target.stop - i
            for sign, threshold, weight in ((1, 2 ** (i - 1) - 1, 2.0), (1, 2 ** (i - 1), -2.0), (-1, -2 ** i, 2.0),
                                            (-1, -2 ** i + 1, -2.0), (1, 3 * 2 ** (i - 1) - 1, 2.0),
                                            (1, 3 * 2 ** (i - 1), -2.0)):
                inputs = {column: sign * value for column, value in weights.items()}
                inputs[first] = sign * offset - threshold
                self.add(inputs, {out: weight})
        self.add({first: 1.0}, {column: -3.0 for column in range(target.start, target.stop)})

    def mlp(self) -> ReLUMLP:
        return ReLUMLP(torch.stack(self.inputs), torch.tensor(self.biases, dtype=torch.float64),
                       torch.stack(self.outputs, dim=1), torch.zeros(self.stream.width, dtype=torch.float64))


def subleq_construction(address_bits: int, bits: int, temperature: float = 10.0,
                        epsilon: float = EPSILON) -> LoopedConstruction:
    """The SUBLEQ computer for punch cards of L = ``address_bits`` and N = ``bits``: ten layers per loop, softmax
    temperature λ = ``temperature`` (the authors' ``run.sh``: 10), error-correction margin ε = ``epsilon``."""
    check_float("epsilon", epsilon, 0.0, strict=True, maximum=0.49)
    stream = subleq_stream(address_bits, bits)
    L, N = address_bits, bits
    buf, now = stream["buf"], stream["now"]
    first, flag = stream.column("first"), stream.column("flag")
    layers = []

    # 1. read the command the program counter points at into the scratchpad (read_inst)
    head = _pointer_head(stream, stream["pc"], [(stream["cmd"], _part(buf, 0, 3 * L)),
                                                 (now, _part(buf, 0, 3 * L))])
    units = _Units(stream)
    units.copy_difference(_part(buf, 0, 3 * L), now, now, gate=+1)
    units.clear(_part(buf, 0, 3 * L))
    layers.append(Layer("read_instruction", (head,), units.mlp()))

    # 2. read mem[a] and mem[b] into the scratchpad, one head each (read_mem)
    heads = (_pointer_head(stream, _part(now, 0, L), [(stream["mem"], _part(buf, 0, N)),
                                                        (stream["mem_a"], _part(buf, 0, N))]),
             _pointer_head(stream, _part(now, L, L), [(stream["mem"], _part(buf, N, N)),
                                                        (stream["mem_b"], _part(buf, N, N))]))
    units = _Units(stream)
    units.copy_difference(_part(buf, 0, N), stream["mem_a"], stream["mem_a"], gate=+1)
    units.copy_difference(_part(buf, N, N), stream["mem_b"], stream["mem_b"], gate=+1)
    units.clear(_part(buf, 0, 2 * N))
    layers.append(Layer("read_memory", heads, units.mlp()))

    # 3. mem[b] − mem[a]: flip mem[a]'s bits, add one, add mem[b] (subtract_mem's three layers)
    units = _Units(stream)
    for offset in range(N):
        units.add({stream["mem_a"].start + offset: -1.0}, {buf.start + offset: 2.0})
    units.add({first: 1.0}, {column: -1.0 for column in range(buf.start, buf.start + N)})
    layers.append(Layer("subtract_flip", (), units.mlp()))
    units = _Units(stream)
    units.adder([_part(buf, 0, N)], _part(buf, N, N), plus_one=True)
    layers.append(Layer("subtract_negate", (), units.mlp()))
    units = _Units(stream)
    units.adder([_part(buf, N, N), stream["mem_b"]], stream["mem_b"], plus_one=False)
    units.clear(_part(buf, 0, 2 * N))
    units.clear(stream["mem_a"])
    units.clear(stream["mem_b"])
    layers.append(Layer("subtract_add", (), units.mlp()))

    # 4. write the difference to memory column b (write_mem)
    head = _pointer_head(stream, _part(now, L, L), [(stream["mem"], _part(buf, 0, N)),
                                                      (stream["mem_b"], _part(buf, 0, N))])
    units = _Units(stream)
    units.copy_difference(_part(buf, 0, N), stream["mem"], stream["mem"], gate=-1)
    units.clear(_part(buf, 0, N))
    layers.append(Layer("write_memory", (head,), units.mlp()))

    # 5. flag = [mem[b] ≤ 0]; pc + 1; pc ← flag ? c : pc + 1 (conditional_branching's three layers)
    units = _Units(stream)
    units.add({stream["mem_b"].start: 1.0}, {flag: 1.0})  # the sign bit: negative
    units.add({**{column: -1.0 for column in range(stream["mem_b"].start, stream["mem_b"].stop)}, first: 1.0 - N},
              {flag: 1.0})  # every bit 0: zero
    units.clear(stream["mem_b"])
    layers.append(Layer("branch_flag", (), units.mlp()))
    units = _Units(stream)
    units.adder([stream["pc"]], stream["pc"], plus_one=True)
    units.clear(stream["pc"])
    layers.append(Layer("branch_increment", (), units.mlp()))
    units = _Units(stream)
    target = _part(now, 2 * L, L)
    for offset in range(L):
        pc, jump = stream["pc"].start + offset, target.start + offset
        units.add({jump: 1.0, flag: 1.0}, {pc: 1.0}, -1.0)
        units.add({jump: -1.0, flag: 1.0}, {pc: -1.0}, -1.0)
        units.add({pc: 1.0, flag: -1.0}, {pc: 1.0})
        units.add({pc: -1.0, flag: -1.0}, {pc: -1.0})
    units.clear(stream["pc"])
    units.clear(slice(flag, flag + 1))
    layers.append(Layer("branch_select", (), units.mlp()))

    # 6. snap memory, program counter and command to {−1, 0, 1} (error_correction)
    units = _Units(stream)
    scale = 1.0 / (1.0 - 2.0 * epsilon)
    for field in ("mem", "pc", "now"):
        for column in range(stream[field].start, stream[field].stop):
            for bias, weight in ((1 - epsilon, scale), (epsilon, -scale), (-epsilon, scale), (epsilon - 1, -scale)):
                units.add({column: 1.0}, {column: weight}, bias)
            units.add({column: -1.0}, {column: 1.0})
            units.add({column: 1.0}, {column: -1.0})
    mlp = units.mlp()
    for field in ("mem", "pc", "now"):
        mlp.b2[stream[field]] = -1.0
    layers.append(Layer("error_correction", (), mlp))
    return LoopedConstruction(stream, layers, temperature)


def decode_state(state: torch.Tensor, program: SubleqProgram) -> dict[str, torch.Tensor]:
    """The interpreter's state read off a punch card: ``memory`` (B, m) from the memory columns, ``pc`` (B,) from
    column 0, and ``valid`` (B,): every code read rounds to ±1."""
    s, m = program.scratch, program.cells
    stream = subleq_stream(program.address_bits, program.bits)
    memory, memory_valid = read_binary_code(state[:, s:s + m, stream["mem"]], signed=True)
    pc, pc_valid = read_binary_code(state[:, 0, stream["pc"]])
    return {"memory": memory, "pc": pc, "valid": memory_valid.all(dim=1) & pc_valid}


def exact_loops(model: LoopedConstruction, program: SubleqProgram, loops: int) -> torch.Tensor:
    """(B, loops) booleans: after loop t the punch card holds exactly the interpreter's memory and program counter
    after step t (``matching_loops``)."""
    states = model.run(punch_card(program), loops)
    return matching_loops(states, lambda state: decode_state(state, program), run_subleq(program, loops))


def leaked_mass(columns: int, temperature: float) -> float:
    """The largest softmax mass a pointer read gives the columns other than the two it ties (score gap ≥ 2 over
    n − 2 columns): δ(λ) = (n − 2)e^{−2λ} / (2 + (n − 2)e^{−2λ})."""
    leak = (columns - 2) * math.exp(-2.0 * temperature)
    return leak / (2.0 + leak)


__all__ = ["EPSILON", "decode_state", "exact_loops", "leaked_mass", "punch_card", "subleq_construction",
           "subleq_stream"]
