"""SUBLEQ (``icl_sim.theory.subleq``) against a plain scalar interpreter and closed forms, and Giannou et al.'s
construction (``icl_sim.models.subleq``) block by block against what each block must compute."""
import math

import pytest
import torch

from icl_sim.models.constructed import binary_code
from icl_sim.models.subleq import (decode_state, exact_loops, leaked_mass, punch_card, subleq_construction,
                                   subleq_stream)
from icl_sim.theory.subleq import (SubleqProgram, factorial_program, linear_search_program, random_subleq_programs,
                                   reverse_list_program, run_subleq, steps_to_halt)


def _scalar_subleq(commands, memory, pc, s, m, bits, steps):
    """One program, one step at a time, in plain Python integers (the authors' ``run_manual_subleq``)."""
    memory, states = list(memory), []
    for _ in range(steps):
        a, b, c = commands[pc - s - m]
        result = memory[b - s] - memory[a - s]
        if result >= 2 ** (bits - 1):
            result -= 2 ** bits
        elif result < -2 ** (bits - 1):
            result += 2 ** bits
        memory[b - s] = result
        pc = c if result <= 0 else pc + 1
        states.append((list(memory), pc))
    return states


def _programs(count=6, seed=3):
    return random_subleq_programs(count, torch.Generator().manual_seed(seed))


def test_interpreter_matches_a_scalar_one_on_random_programs():
    programs = _programs()
    states = run_subleq(programs, 25)
    for index in range(6):
        expected = _scalar_subleq(programs.commands[index].tolist(), programs.memory[index].tolist(),
                                  int(programs.pc[index]), 8, 8, 8, 25)
        assert [(state["memory"][index].tolist(), int(state["pc"][index])) for state in states] == expected


def test_random_programs_follow_the_authors_law():
    programs = _programs(400, seed=5)
    s, m, n = 8, 8, 32
    assert programs.commands.shape == (400, n - s - m, 3) and programs.columns == n and programs.address_bits == 5
    body = programs.commands[:, :-1]
    assert bool((body[..., 0] != body[..., 1]).all())
    for column, (low, high) in enumerate([(s + 2, s + m), (s + 2, s + m), (s + m, n)]):
        assert sorted(body[..., column].unique().tolist()) == list(range(low, high))  # every allowed value drawn
    assert bool((programs.commands[:, -1] == torch.tensor([s, s + 1, n - 1])).all())
    assert bool((programs.memory[:, 0] == 0).all()) and bool((programs.memory[:, 1] == -1).all())
    assert sorted(programs.memory[:, 2:].unique().tolist()) == list(range(-64, 63))  # arange(-2^6, 2^6 - 1)
    assert bool((programs.pc == s + m).all())


@pytest.mark.parametrize("value", [2, 3, 5, 7])
def test_factorial_program(value):
    program = factorial_program(value)
    assert run_subleq(program, steps_to_halt(program, 1000))[-1]["memory"][0, 2] == math.factorial(value)


def test_reverse_and_search_programs():
    values = [-7, 6, 0, 3, -2, 5, 1]
    program = reverse_list_program(values)
    memory = run_subleq(program, steps_to_halt(program, 200))[-1]["memory"][0].tolist()
    assert memory[2:9] == values[::-1]
    for target, flag, index in [(0, 0, 2), (1, 0, 6), (4, 1, 7), (-7, 0, 0)]:
        program = linear_search_program(values, target)
        memory = run_subleq(program, steps_to_halt(program, 200))[-1]["memory"][0].tolist()
        assert (memory[12], memory[13]) == (flag, index)


def test_bad_programs_name_themselves():
    with pytest.raises(ValueError, match="commands"):
        SubleqProgram(torch.tensor([[[0, 3, 5]]]), torch.zeros(1, 2), torch.tensor([3]), 1, 4)
    with pytest.raises(ValueError, match="memory"):
        SubleqProgram(torch.tensor([[[1, 2, 3]]]), torch.tensor([[0, 9]]), torch.tensor([3]), 1, 4)
    with pytest.raises(ValueError, match="limit"):
        steps_to_halt(SubleqProgram(torch.tensor([[[1, 2, 3], [1, 2, 3]]]), torch.tensor([[1, 0]]),
                                    torch.tensor([3]), 1, 4), 5)  # mem[2] falls by 1 each step, wrapping


# == the construction ============================================================================================

def test_punch_card_holds_the_papers_codes():
    programs = _programs(2)
    card = punch_card(programs)
    stream = subleq_stream(5, 8)
    code = lambda i: [1.0 if digit == "1" else -1.0 for digit in format(i, "05b")]  # noqa: E731
    assert card.shape == (2, 32, stream.width) and card[:, 0, stream["pos"]].abs().sum() == 0
    for i in range(1, 32):
        assert card[1, i, stream["pos"]].tolist() == code(i)
    assert card[1, 0, stream["pc"]].tolist() == code(16)
    for k, (a, b, c) in enumerate(programs.commands[1].tolist()):
        assert card[1, 16 + k, stream["cmd"]].tolist() == code(a) + code(b) + code(c)
    for cell, value in enumerate(programs.memory[1].tolist()):
        assert card[1, 8 + cell, stream["mem"]].tolist() == [1.0 if d == "1" else -1.0
                                                             for d in format(value % 256, "08b")]
    assert card[1, :, stream.column("scratch")].tolist() == [1.0] * 8 + [0.0] * 24
    assert decode_state(card, programs)["memory"].tolist() == programs.memory.tolist()


def test_each_block_does_its_step():
    programs = _programs(4, seed=11)
    model = subleq_construction(5, 8, math.inf)
    stream, rows = model.stream, torch.arange(4)
    states = dict(zip([layer.name for layer in model.layers], model.layer_states(punch_card(programs))))
    command = programs.commands[rows, programs.pc - 16]
    codes = binary_code(command, 5).flatten(-2)
    assert torch.equal(states["read_instruction"][:, 0, stream["now"]], codes)
    a, b = programs.memory[rows, command[:, 0] - 8], programs.memory[rows, command[:, 1] - 8]
    assert torch.equal(states["read_memory"][:, 0, stream["mem_a"]], binary_code(a, 8, signed=True))
    assert torch.equal(states["read_memory"][:, 0, stream["mem_b"]], binary_code(b, 8, signed=True))
    difference = (b - a + 128) % 256 - 128
    assert torch.equal(states["subtract_add"][:, 0, stream["mem_b"]], binary_code(difference, 8, signed=True))
    written = states["write_memory"][rows, command[:, 1], stream["mem"]]
    assert torch.equal(written, binary_code(difference, 8, signed=True))
    assert states["branch_flag"][:, 0, stream.column("flag")].tolist() == (difference <= 0).double().tolist()
    following = torch.where(difference <= 0, command[:, 2], programs.pc + 1)
    assert torch.equal(states["branch_select"][:, 0, stream["pc"]], binary_code(following, 5))
    for name in ("buf", "mem_a", "mem_b", "flag"):  # emptied for the next loop
        assert states["error_correction"][..., stream[name]].abs().max() == 0


def test_random_programs_run_exactly_at_the_papers_temperature_and_not_at_random():
    programs = _programs(8, seed=7)
    model = subleq_construction(5, 8, 10.0)
    assert bool(exact_loops(model, programs, 20).all())
    assert not bool(exact_loops(model.with_temperature(1.0), programs, 20).any())
    assert not bool(exact_loops(model.random(torch.Generator().manual_seed(0)), programs, 20).any())


def test_leaked_mass_bounds_the_softmax_read():
    programs = _programs(3)
    card = punch_card(programs)
    for temperature in (1.0, 2.0, 4.0):
        head = subleq_construction(5, 8, temperature).layers[0].heads[0]
        weights = head.weights(card, temperature)[:, 0]  # column 0 reads the command at pc
        pointed = weights[torch.arange(3), programs.pc] + weights[:, 0]
        assert float((1 - pointed).max()) <= leaked_mass(32, temperature) + 1e-12
    assert leaked_mass(32, 1.0) == pytest.approx(30 * math.exp(-2) / (2 + 30 * math.exp(-2)))
