"""SUBLEQ, the one-instruction computer of Giannou et al. (2023, "Looped transformers as programmable computers",
Sec. 5.1): a reference interpreter, the authors' random programs and the three programs their code runs.

A program lives on a punch card of n columns: s scratchpad columns, then m memory columns, then n − s − m command
columns (the authors' ``subleq_TF``, github.com/jysohn1108/Looped-Transformer ``programs.py``; their indices start
from 0, as ours).  Command k (column s + m + k) is a triple (a, b, c) of column indices: a, b memory columns, c a
command column.  One step at program counter pc executes

    mem[b] ← mem[b] − mem[a]  (N-bit two's complement, wrapping as the transformer's adder does);
    pc ← c if the new mem[b] ≤ 0, else pc + 1

(the paper's variant, which keeps commands and memory apart; ``utils.run_manual_subleq``).  Programs end in the
EOF command (s, s + 1, n − 1) at column n − 1 with mem[s] = 0 and mem[s + 1] = −1, which subtracts 0 from −1 and
jumps to itself: a halted program is a fixed point.  A pc outside the command columns (a program without EOF
running off its end) also halts here.

``SubleqProgram`` holds a batch: ``commands`` (B, C, 3), ``memory`` (B, m), ``pc`` (B,) int64 and the sizes
(``scratch`` = s, ``bits`` = N); ``run_subleq(program, steps)`` returns the (memory, pc) after each step,
vectorised over the batch, and ``steps_to_halt`` how many steps a batch needs to reach its fixed point.
``random_subleq_programs`` draws the authors' random programs (``load_cmd_triplets``,
``init_input``); ``factorial_program``, ``reverse_list_program`` and ``linear_search_program`` are the programs of
their notebooks (``test_factorial.ipynb``, ``test_reverse_list.ipynb``, ``test_linear_search.ipynb``), built for
any input, with the cells that hold their answers.
"""
from __future__ import annotations

import dataclasses
import math

import torch

from icl_sim.tensor_validation import check_generator
from icl_sim.validation import check_int


@dataclasses.dataclass(frozen=True)
class SubleqProgram:
    """A batch of SUBLEQ programs on one punch-card size: ``commands`` (B, C, 3) column indices, ``memory`` (B, m)
    signed integers, ``pc`` (B,) the column of the next command; s = ``scratch`` columns, N = ``bits`` per cell."""

    commands: torch.Tensor
    memory: torch.Tensor
    pc: torch.Tensor
    scratch: int
    bits: int

    def __post_init__(self):
        check_int("scratch", self.scratch, 1)
        check_int("bits", self.bits, 2, 62)
        commands, memory = torch.as_tensor(self.commands), torch.as_tensor(self.memory)
        if commands.ndim != 3 or commands.shape[-1] != 3 or memory.ndim != 2 or memory.shape[0] != commands.shape[0]:
            raise ValueError(f"commands must be (B, C, 3) and memory (B, m) over one batch, got "
                             f"{tuple(commands.shape)} and {tuple(memory.shape)}")
        pc = torch.as_tensor(self.pc).reshape(-1).expand(commands.shape[0])
        object.__setattr__(self, "commands", commands.to(torch.int64))
        object.__setattr__(self, "memory", memory.to(torch.int64))
        object.__setattr__(self, "pc", pc.to(torch.int64).clone())
        s, m, n = self.scratch, self.cells, self.columns
        addresses, targets = self.commands[..., :2], self.commands[..., 2]
        if bool(((addresses < s) | (addresses >= s + m)).any()) or bool(((targets < s + m) | (targets >= n)).any()):
            raise ValueError(f"commands must address memory columns [{s}, {s + m}) and jump to command columns "
                             f"[{s + m}, {n})")
        low, high = -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        if bool(((self.memory < low) | (self.memory > high)).any()):
            raise ValueError(f"memory must hold {self.bits}-bit signed integers in [{low}, {high}]")

    @property
    def cells(self) -> int:
        """m, the memory columns."""
        return self.memory.shape[1]

    @property
    def columns(self) -> int:
        """n = s + m + C, the punch card's columns."""
        return self.scratch + self.cells + self.commands.shape[1]

    @property
    def address_bits(self) -> int:
        """log n rounded up: the bits of a positional code (the authors' ``logn``)."""
        return max(1, math.ceil(math.log2(self.columns)))


def _wrap(values: torch.Tensor, bits: int) -> torch.Tensor:
    """Integers reduced to ``bits``-bit two's complement."""
    half = 1 << (bits - 1)
    return (values + half) % (1 << bits) - half


def _steps(program: SubleqProgram):
    """The states after step 1, 2, ... (an endless generator)."""
    s, m, n = program.scratch, program.cells, program.columns
    memory, pc = program.memory.clone(), program.pc.clone()
    rows = torch.arange(memory.shape[0])
    while True:
        running = (pc >= s + m) & (pc < n)
        command = program.commands[rows, (pc - s - m).clamp(0, program.commands.shape[1] - 1)]
        a, b, c = command[:, 0] - s, command[:, 1] - s, command[:, 2]
        result = _wrap(memory[rows, b] - memory[rows, a], program.bits)
        memory[rows, b] = torch.where(running, result, memory[rows, b])
        pc = torch.where(running, torch.where(result <= 0, c, pc + 1), pc)
        yield {"memory": memory.clone(), "pc": pc.clone()}


def run_subleq(program: SubleqProgram, steps: int) -> list[dict[str, torch.Tensor]]:
    """The state after each of ``steps`` steps: ``{"memory": (B, m), "pc": (B,)}`` int64."""
    check_int("steps", steps, 1)
    return [state for _, state in zip(range(steps), _steps(program))]


def steps_to_halt(program: SubleqProgram, limit: int) -> int:
    """The fewest steps after which every program of the batch sits at a fixed point (its next step changes
    nothing: EOF reached), plus that one step; ``ValueError`` if some program is still running after ``limit``."""
    check_int("limit", limit, 1)
    previous = {"memory": program.memory, "pc": program.pc}
    for step, state in zip(range(limit + 1), _steps(program)):
        if torch.equal(state["memory"], previous["memory"]) and torch.equal(state["pc"], previous["pc"]):
            return step + 1
        previous = state
    raise ValueError(f"limit: some program still runs after {limit} steps")


def random_subleq_programs(count: int, generator: torch.Generator, *, scratch: int = 8, cells: int = 8,
                           columns: int = 32, bits: int = 8) -> SubleqProgram:
    """``count`` random programs as the authors draw them (``load_cmd_triplets``, ``init_input``; sizes (s, m, n, N)
    of ``run.sh``: 8, 8, 32, 8): n − s − m − 1 random commands, a ≠ b uniform over the memory columns but the EOF
    cells s and s + 1, c uniform over the command columns, then EOF; memory uniform on [−2^(N−2), 2^(N−2) − 2]
    (numpy's ``arange`` end excluded) with mem[s] = 0 and mem[s + 1] = −1; pc at the first command."""
    check_int("count", count, 1)
    check_generator("generator", generator)
    check_int("scratch", scratch, 1)
    check_int("cells", cells, 4)
    check_int("bits", bits, 3, 62)
    check_int("columns", columns, scratch + cells + 2, maximum_name=None)
    device = generator.device
    randoms = columns - scratch - cells - 1
    first = torch.randint(scratch + 2, scratch + cells, (count, randoms), generator=generator, device=device)
    offset = torch.randint(1, cells - 2, (count, randoms), generator=generator, device=device)
    second = scratch + 2 + (first - scratch - 2 + offset) % (cells - 2)  # uniform over the other cells
    jumps = torch.randint(scratch + cells, columns, (count, randoms), generator=generator, device=device)
    eof = torch.tensor([scratch, scratch + 1, columns - 1], device=device).expand(count, 1, 3)
    commands = torch.cat([torch.stack([first, second, jumps], dim=-1), eof], dim=1)
    quarter = 1 << (bits - 2)
    memory = torch.randint(-quarter, quarter - 1, (count, cells), generator=generator, device=device)
    memory[:, 0], memory[:, 1] = 0, -1
    return SubleqProgram(commands.cpu(), memory.cpu(), torch.full((count,), scratch + cells), scratch, bits)


def _notebook_program(memory: list[int], commands: list[list[int]], bits: int, scratch: int = 2) -> SubleqProgram:
    """A notebook's program: its memory cells and 1-based (memory, memory, command) triples, placed as the notebooks
    place them (s = 2: memory cell i at column s + i − 1, command j at column s + m + j − 1)."""
    m = len(memory)
    placed = [[scratch + a - 1, scratch + b - 1, scratch + m + c - 1] for a, b, c in commands]
    return SubleqProgram(torch.tensor([placed]), torch.tensor([memory]), torch.tensor([scratch + m]), scratch, bits)


def factorial_program(value: int) -> SubleqProgram:
    """``value``! (``test_factorial.ipynb``): cells MINUS_ONE, ZERO, N, −N, counter, temp, −2, −1, 0, 1; the answer
    ends in cell 2 (column s + 2); N = ⌊log₂ value!⌋ + 3 bits, as the notebook sets them."""
    check_int("value", value, 2)
    memory = [-1, 0, value, -value, 0, 0, -2, -1, 0, 1]
    commands = [[3, 6, 2], [7, 6, 4], [8, 6, 4], [6, 5, 11], [4, 3, 11], [10, 5, 8], [9, 9, 5], [4, 4, 9],
                [3, 4, 10], [9, 9, 3], [2, 1, 11]]
    return _notebook_program(memory, commands, int(math.floor(math.log2(math.factorial(value)))) + 3)


def reverse_list_program(values: list[int]) -> SubleqProgram:
    """The list ``values`` reversed in place (``test_reverse_list.ipynb``): cells MINUS_ONE, ZERO, a_1..a_L,
    temp_1, temp_2; ⌊L/2⌋ swaps of 8 commands each, then EOF; N = ⌊log₂ max |a_i|⌋ + 3 bits."""
    length = len(values)
    check_int("length of values", length, 2)
    memory = [-1, 0, *values, 0, 0]
    commands = []
    for i in range(length // 2):
        low, high, first, second = 3 + i, length + 2 - i, length + 3, length + 4
        commands += [[low, first, 8 * i + 2], [high, second, 8 * i + 3], [low, low, 8 * i + 4],
                     [high, high, 8 * i + 5], [second, low, 8 * i + 6], [first, high, 8 * i + 7],
                     [first, first, 8 * i + 8], [second, second, 8 * i + 9]]
    commands.append([2, 1, 8 * (length // 2) + 1])
    return _notebook_program(memory, commands, int(math.floor(math.log2(max(map(abs, values)) or 1))) + 3)


def linear_search_program(values: list[int], target: int) -> SubleqProgram:
    """The first index of ``target`` in ``values`` (``test_linear_search.ipynb``): cells MINUS_ONE, ZERO,
    a_1..a_L, temp_1, temp_2, target, flag (1: not found, 0: found), index (0-based, L if absent); 11 commands per
    element, then EOF; N = ⌊log₂ max |a_i|⌋ + 3 bits, as the notebook sets them."""
    length = len(values)
    check_int("length of values", length, 1)
    memory = [-1, 0, *values, 0, 0, target, 1, 0]
    t1, t2, goal, flag, index, eof = length + 3, length + 4, length + 5, length + 6, length + 7, 11 * length + 1
    commands = []
    for i in range(length):
        commands += [[3 + i, t2, 11 * i + 2], [t2, t1, 11 * i + 3], [goal, t1, 11 * i + 6], [t1, t1, 11 * i + 5],
                     [t2, t2, 11 * i + 11], [t2, t2, 11 * i + 7], [t1, t2, 11 * i + 10], [t1, t1, 11 * i + 9],
                     [t2, t2, 11 * i + 11], [flag, flag, eof], [1, index, 11 * i + 12]]
    commands.append([2, 1, eof])
    return _notebook_program(memory, commands, int(math.floor(math.log2(max(map(abs, values)) or 1))) + 3)


__all__ = ["SubleqProgram", "factorial_program", "linear_search_program", "random_subleq_programs",
           "reverse_list_program", "run_subleq", "steps_to_halt"]
