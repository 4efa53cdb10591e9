"""Giannou, Rajput, Sohn, Lee, Lee & Papailiopoulos (ICML 2023), "Looped transformers as programmable computers"
(arXiv 2301.13196): a transformer whose weights are written by hand, looped, executes SUBLEQ programs.

What was read.  The paper's abstract and opening (its full text is stored here only as excerpts from its start:
the sections on the construction and its λ condition could not be read; tried 2026-12-05: the arXiv v1 markdown
mirror huggingface.datasetlab.ai/papers/2301.13196.md, the ICML text on object.cloud.sdsc.edu, emergentmind.com,
and third-party notes, each stored from its beginning only).  Third-party notes quoting its body confirm what
this reproduction had taken from the authors' code: the positional codes are binary ±1 vectors
p_i ∈ {−1, 1}^(log n) with p_iᵀp_i = log n and p_iᵀp_j ≤ log n − 1 for i ≠ j, and reads and writes are one-layer
constructions that copy between the column at p_i and the scratchpad (nonlinearfunction.org, notes
"looped-transformers-as-programmable-computers" and "transformer-primatives"; jianyuh.github.io reading notes,
2026-07-01); and the SUBLEQ instruction takes 10 layers (Turkcan 2026, "Loom", arXiv 2604.08816, Sec. 1, citing
it), as ours does.  The exactness bound's dependence on λ and the paper's own program sizes remain unread: the λ
used here and the sizes are the authors' code's (below), and the temperature claim's contrast is this module's.
Read in full: the authors' code, github.com/jysohn1108/Looped-Transformer (``run.sh``, ``main.py``,
``programs.py``, ``subleq.py``, ``utils.py`` and the notebooks ``test_factorial.ipynb``,
``test_reverse_list.ipynb``, ``test_linear_search.ipynb``), whose settings and blocks this reproduction follows.
The construction is ``icl_sim.models.subleq`` (built with the library's constructed-transformer builder,
``icl_sim.models.constructed``), the interpreter, the authors' random programs and the notebooks' programs
``icl_sim.theory.subleq``.

Setting.  A punch card of n columns (s scratchpad, m memory, n − s − m commands) holds ±1 binary codes: positional
codes p_i (L = ⌈log₂ n⌉ bits), commands (p_a, p_b, p_c), N-bit two's-complement memory, the program counter in the
scratchpad.  One loop is ten layers (the authors' ``read_inst``, ``read_mem``, ``subtract_mem`` ×3, ``write_mem``,
``conditional_branching`` ×3, ``error_correction``): softmax attention at temperature λ reads the command and
the two cells through pointer/position matches, ReLU MLPs subtract in binary, write back, set the branch flag,
increment or jump the counter and snap every code back to {−1, 0, 1}.  Everything runs in float64.  Sizes:
``run.sh``'s (s, m, n, N) = (8, 8, 32, 8), 20 loops, λ = 10 for random programs; the notebooks' programs with
s = 2, their own m, n, N and λ = 100.

Claims (``CLAIMS``); seed k indexes the random programs and program inputs drawn from ``make_generator(k,
"eval", ·)``:

* ``executes-subleq`` (abstract, Sec. 5; ``main.py``: "TF SUBLEQ is working properly"): on random programs (the
  authors' ``load_cmd_triplets`` law), after EVERY loop the memory and program counter decoded from the card equal
  the reference interpreter's.  Per seed, the fraction of (program, loop) pairs that match, ``programs`` programs
  × 20 loops; held if it is 1 in every seed (the paper: exact).
* ``runs-programs`` (abstract, "instructed by its input"; the notebooks): the notebooks' factorial, list reversal
  and linear search, with inputs drawn per seed (factorial of 3..7; 7 values in [−7, 7]; a target in [−7, 7]),
  run through the same layers until they halt: their answer cells hold n!, the reversed list and (found flag,
  first index), computed directly in Python, not by the interpreter.  Per seed, the fraction of the three programs
  answered right; held if 1 in every seed.
* ``temperature`` (the hardmax approximation the construction rests on): exactness needs a large enough λ.
  Per seed, the fraction of exact loops at the paper's λ = 10 minus that at λ = 1, where a pointer read leaks a
  mass δ(1) = 30e^{−2}/(2 + 30e^{−2}) = 0.67 ≥ 1/2 of its attention to other columns (``leaked_mass``, n = 32):
  held if ≥ 0.5, the midpoint between exact (1) and not (0), fixed before any run.  The sweep over λ (figure)
  shows where exactness breaks.

The wrong mechanism each claim check rejects: a looped transformer that only approximates the machine, as this
one does at small λ, where soft attention mixes the pointed column with the others (at λ = 1 on development
programs, seeds 900: 0 of 640 loops exact) or whose errors grow past error correction (on development seeds, the
factorial of 7, N = 15 bits, at λ = 10: 4 of 69 loops exact; the adder amplifies a read's error by up to 2^(N−1),
so the λ a program needs grows with N, and the notebooks' λ = 100 is needed there).  The untrained control runs
the same architecture (stream, ten layers, heads, widths, λ) at a random initialisation seeded by the seed
(``LoopedConstruction.random``): 0 exact loops, no right answer, a contrast of 0, finite failures.

Deviations, by choice: (1) the error-correction margin ε is fixed (0.25); the authors' code sets it from the state
(the largest distance of any entry from {−1, 0, 1}), which a fixed-weight network cannot compute; (2) the biases
the authors add to column 0 only are weights on a column-0 indicator feature, and the branch flag has its own
feature instead of the first row of the mem[a] scratch block: one transformer layer per authors' layer, the same
arithmetic.

Sanity check: the interpreter's answers to the notebooks' programs equal the closed forms (n!, the reversal, the
first index).

Measured at quick (32 random programs × 20 loops per seed, the λ sweep, the three programs; no training: 0.29 CPU
minutes a block with the imports, the control 0.25), on fresh blocks never run before, seeds 1000-1002 and
1100-1102 (``/tmp/fresh/giannou-2023-quick-{1000,1100}``; developed on seeds 900-902):

* ``executes-subleq`` HELD on both blocks: fraction of exact loops at λ = 10 = 1, 1, 1 and 1, 1, 1 (640 of 640
  (program, loop) pairs per seed); control 0, 0, 0 and 0, 0, 0.
* ``runs-programs`` HELD on both: 1, 1, 1 and 1, 1, 1 (factorial of 6, 4, 4 and 5, 3, 4; N = 5 to 12 bits);
  control 0, 0, 0 and 0, 0, 0.
* ``temperature`` HELD on both: contrast 1, 1, 1 and 1, 1, 1 (at λ = 1 no loop is exact in any seed); control 0 in
  every seed.  The sweep (block 1000, then 1100): exact fraction 0 at λ ≤ 1.5; 0.04-0.05 at λ = 2; 0.18-0.31 at 3;
  0.44-0.63 at 4; 0.57-0.72 at 5; 0.97-1 at 6 and 7 (not monotone: 0.998 then 0.978 in seed 1000); 1 in every
  seed from λ = 8 on, and with hard attention.  Exactness breaks where the leaked mass δ(λ) is already small
  (δ(5) = 6.8e−4, δ(6) = 9.2e−5): the binary adders multiply a read's error by up to 2^(N−1), so error correction
  after the loop comes too late; λ = 10 clears it for N = 8 with δ(10) = 3.1e−8, and a program with N = 15 bits
  (the factorial of 7) needs more (the notebooks' λ = 100).

Rehearsal of the full scale (64 programs per seed, seed 0): all three claims held, 0 training runs to cost.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from icl_sim.checks import Check, claim_check
from icl_sim.models.subleq import exact_loops, leaked_mass, punch_card, decode_state, subleq_construction
from icl_sim.plots import Curve, Panel, Target, seed_curve
from icl_sim.seeding import make_generator
from icl_sim.theory.subleq import (factorial_program, linear_search_program, random_subleq_programs,
                                   reverse_list_program, run_subleq, steps_to_halt)

from .measures import seed_values
from .spec import Claim, Paper, Reproduction

PAPER = Paper("A. Giannou, S. Rajput, J.-Y. Sohn, K. Lee, J. D. Lee, D. Papailiopoulos",
              "Looped transformers as programmable computers", "ICML 2023", "2301.13196")
CODE = "jysohn1108/Looped-Transformer"
#: the paper's temperature for random programs (run.sh) and the contrast below the hardmax regime
PAPER_TEMPERATURE, SMALL_TEMPERATURE = 10.0, 1.0
#: the notebooks' temperature for their programs
PROGRAM_TEMPERATURE = 100.0
PROGRAMS = ("factorial", "reverse-list", "linear-search")
CONTRAST_THRESHOLD = 0.5

CLAIMS = (
    Claim("executes-subleq", "A looped transformer with hand-set weights executes SUBLEQ: after every loop its "
          "memory and program counter equal a reference interpreter's, exactly, on random programs (s, m, n, N) = "
          "(8, 8, 32, 8) over 20 loops at λ = 10", f"abstract, Sec. 5; {CODE} run.sh, main.py"),
    Claim("runs-programs", "Programs written in SUBLEQ run on the same layers: factorial, list reversal and linear "
          "search return the right answer for inputs drawn at random", f"abstract; {CODE} test_factorial.ipynb, "
          "test_reverse_list.ipynb, test_linear_search.ipynb"),
    Claim("temperature", "Exactness rests on softmax attention approximating hard attention: at λ = 10 every loop "
          "is exact, at λ = 1 (a pointer read leaking 2/3 of its mass) exactness is lost",
          f"Sec. 5 (softmax as hardmax); {CODE} option.py --lam"),
)


@dataclass(frozen=True)
class Settings:
    """Sizes of one scale: random programs per seed, their loops, the temperatures swept, and the notebooks'
    program sizes (factorial inputs, list length)."""

    programs: int
    loops: int
    temperatures: tuple[float, ...]
    factorial_inputs: tuple[int, ...]
    list_length: int


SWEEP = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 20.0, 100.0, math.inf)
SCALES = {
    "smoke": Settings(programs=2, loops=20, temperatures=(SMALL_TEMPERATURE, PAPER_TEMPERATURE),
                      factorial_inputs=(3,), list_length=3),
    "quick": Settings(programs=32, loops=20, temperatures=SWEEP, factorial_inputs=(3, 4, 5, 6, 7), list_length=7),
    "full": Settings(programs=64, loops=20, temperatures=SWEEP, factorial_inputs=(3, 4, 5, 6, 7), list_length=7),
}


def runs(settings: Settings) -> dict:
    """No training run: the construction's weights are written, not learnt."""
    return {}


def program_suite(seed: int, settings: Settings) -> dict[str, tuple]:
    """The notebooks' three programs on inputs drawn for ``seed``, each with its closed-form answer check."""
    generator = make_generator(seed, "eval", 1)
    draw = lambda low, high, size=(): torch.randint(low, high + 1, size, generator=generator)  # noqa: E731
    value = settings.factorial_inputs[int(draw(0, len(settings.factorial_inputs) - 1))]
    reverse = draw(-7, 7, (settings.list_length,)).tolist()
    searched, target = draw(-7, 7, (settings.list_length,)).tolist(), int(draw(-7, 7))
    length = settings.list_length
    found = target in searched
    index = searched.index(target) if found else length
    return {
        "factorial": (factorial_program(value), lambda memory: memory[2] == math.factorial(value)),
        "reverse-list": (reverse_list_program(reverse), lambda memory: memory[2:2 + length] == reverse[::-1]),
        "linear-search": (linear_search_program(searched, target),
                          lambda memory: memory[length + 5] == (0 if found else 1) and memory[length + 6] == index),
    }


def _model(program, temperature: float, control: str | None, seed: int):
    """The hand-written construction for ``program``'s sizes, or for the control the same architecture at random."""
    model = subleq_construction(program.address_bits, program.bits, temperature)
    return model if control is None else model.random(make_generator(seed, "eval", 2))


def measure(measurement) -> dict:
    """Per seed: exact loops on random programs at every temperature of the sweep (and per loop at λ = 5 and 10),
    and the notebooks' programs run to their halt at λ = 100."""
    settings, rows = measurement.settings, []
    for seed in measurement.seeds:
        programs = random_subleq_programs(settings.programs, make_generator(seed, "eval", 0))
        model = _model(programs, PAPER_TEMPERATURE, measurement.control, seed)
        for temperature in sorted(set(settings.temperatures) | {PAPER_TEMPERATURE, SMALL_TEMPERATURE}):
            exact = exact_loops(model.with_temperature(temperature), programs, settings.loops)
            rows.append({"seed": seed, "quantity": "exact loops", "temperature": temperature,
                         "value": float(exact.double().mean())})
            if temperature in (5.0, PAPER_TEMPERATURE):
                rows += [{"seed": seed, "quantity": "exact programs at loop", "temperature": temperature,
                          "loop": loop + 1, "value": float(column.double().mean())}
                         for loop, column in enumerate(exact.T)]
        for name, (program, answer) in program_suite(seed, settings).items():
            steps = steps_to_halt(program, 2000)
            model = _model(program, PROGRAM_TEMPERATURE, measurement.control, seed)
            final = decode_state(model.run(punch_card(program), steps)[-1], program)
            right = bool(final["valid"][0]) and answer(final["memory"][0].tolist())
            reference = answer(run_subleq(program, steps)[-1]["memory"][0].tolist())
            rows += [{"seed": seed, "quantity": "program right", "program": name, "value": float(right)},
                     {"seed": seed, "quantity": "interpreter right", "program": name, "value": float(reference)}]
    return {"rows": rows}


def checks(results: dict, settings: Settings) -> list[Check]:
    rows = results["rows"]
    exact = seed_values(rows, "exact loops", temperature=PAPER_TEMPERATURE)
    small = seed_values(rows, "exact loops", temperature=SMALL_TEMPERATURE)
    programs = [sum(values) / len(PROGRAMS) for values in zip(*(seed_values(rows, "program right", program=name)
                                                                 for name in PROGRAMS))]
    interpreter = [value for name in PROGRAMS for value in seed_values(rows, "interpreter right", program=name)]
    return [
        claim_check("executes-subleq", "fraction of loops whose memory and pc equal the interpreter's (λ = 10)", 1.0,
                    exact, relation="at_least", every_seed=True, source=f"Sec. 5; {CODE} main.py"),
        claim_check("runs-programs", "fraction of the notebooks' programs answered right (λ = 100)", 1.0, programs,
                    relation="at_least", every_seed=True, source=f"{CODE} notebooks"),
        claim_check("temperature", "exact loops at λ = 10 minus at λ = 1 (δ(1) = 0.67)", CONTRAST_THRESHOLD,
                    [high - low for high, low in zip(exact, small)], relation="at_least", every_seed=True,
                    source="Sec. 5 (hardmax); midpoint of exact and not"),
        Check("interpreter's answers to the notebooks' programs (fraction right)", 1.0,
              sum(interpreter) / len(interpreter), 0.0, source="closed forms: n!, the reversal, the first index"),
    ]


def figure(results: dict, settings: Settings) -> list[Panel]:
    """Exact loops against λ with the leaked mass δ(λ); exactness loop by loop at λ = 5 and 10; the programs."""
    rows = results["rows"]
    temperatures = sorted({row["temperature"] for row in rows if row["quantity"] == "exact loops"
                           and math.isfinite(row["temperature"])})
    per_seed = list(zip(*(seed_values(rows, "exact loops", temperature=value) for value in temperatures)))
    sweep = Panel("softmax temperature λ", "fraction of loops exact", [
        seed_curve("looped transformer", temperatures, per_seed, bounds=(0.0, 1.0), continuous=False),
        Curve("leaked mass δ(λ), n = 32", temperatures, [leaked_mass(32, value) for value in temperatures],
              baseline=True, continuous=False)],
        targets=[Target("exact (λ = 10)", 1.0, 1.0, 1.0, where=(PAPER_TEMPERATURE, PAPER_TEMPERATURE))],
        title="random programs (8, 8, 32, 8)", xscale="log", ylim=(-0.05, 1.05))
    loops = sorted({row["loop"] for row in rows if row["quantity"] == "exact programs at loop"})
    curves = []
    for temperature in sorted({row["temperature"] for row in rows if row["quantity"] == "exact programs at loop"}):
        values = [seed_values(rows, "exact programs at loop", temperature=temperature, loop=loop) for loop in loops]
        curves.append(seed_curve(f"λ = {temperature:g}", loops, list(zip(*values)), bounds=(0.0, 1.0)))
    by_loop = Panel("loop", "fraction of programs exact", curves, title="exactness loop by loop", ylim=(-0.05, 1.05))
    right = list(zip(*(seed_values(rows, "program right", program=name) for name in PROGRAMS)))
    programs = Panel("program", "fraction answered right", [
        seed_curve("λ = 100", [1, 2, 3], right, bounds=(0.0, 1.0), continuous=False, joined=False)],
        targets=[Target("right", 1.0, 1.0, 1.0)], title="the notebooks' programs", ylim=(-0.05, 1.05),
        xticks=[(index + 1, name) for index, name in enumerate(PROGRAMS)])
    return [sweep, by_loop, programs] if curves else [sweep, programs]


REPRODUCTION = Reproduction(
    name="giannou-2023",
    paper=PAPER,
    summary="A looped transformer with hand-set weights executes SUBLEQ exactly, loop by loop, and runs programs "
            "written in it, provided the softmax temperature makes attention nearly hard.",
    caption="Sec. 5 of the paper and its authors' code: the SUBLEQ construction on random programs (s, m, n, N) = "
            "(8, 8, 32, 8) over 20 loops against the softmax temperature λ, and the notebooks' factorial, list "
            "reversal and linear search at λ = 100",
    scales=SCALES,
    runs=runs,
    measure=measure,
    checks=checks,
    figure=figure,
    claims=CLAIMS,
    quick_minutes=0.4,
)
