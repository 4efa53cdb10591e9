"""Goldwaser & Dherin et al. 2025 (paper_repro/goldwaser_dherin_2025.py): the runs as the docstring states them,
the measured numbers against the model's own forward passes (written apart from the analyser), and the checks'
criteria on hand-made tables (thresholds fixed before running; the identities as sanity checks).
"""
import torch

from icl_sim.implicit_updates import block_patches
from icl_sim.paper_repro import goldwaser_dherin_2025 as module
from icl_sim.paper_repro.runner import Measurement
from icl_sim.training import initial_model

SMOKE = module.SCALES["smoke"]


def test_runs_are_the_stated_settings():
    quick = module.runs(module.SCALES["quick"])["gpt"]
    assert (quick.task_params["dim"], quick.task_params["points"], quick.task_params["noise"]) == (3, 10, 0.0)
    assert quick.model == "gpt" and quick.model_params == {"n_embd": 32, "n_layer": 2, "n_head": 2, "init_std": 0.1}
    assert (quick.steps, quick.batch_size, quick.lr, quick.warmup_steps, quick.lr_schedule, quick.loss_on) == (
        3000, 64, 2e-3, 100, "cosine", "all")
    full = module.runs(module.SCALES["full"])["gpt"]
    assert (full.task_params["dim"], full.task_params["points"], full.model_params, full.steps, full.lr) == (
        20, 41, {"size": "standard"}, 500_000, 1e-4)


def _measurement(model, settings=SMOKE):
    return Measurement(settings, torch.device("cpu"), {"gpt": [model]}, {"gpt": [[]]}, {"gpt": [None]}, seeds=(0,))


def _value(rows, quantity):
    return next(row["value"] for row in rows if row["quantity"] == quantity and row["seed"] == 0)


def test_measure_against_the_models_own_forward():
    """On a random model: the implicit-GD error ratio against the model's own forward (in context) and its own
    blocks on the lone query token (context-free); the decay ratio from patches computed prompt by prompt."""
    torch.manual_seed(0)
    config = module.runs(SMOKE)["gpt"]
    model = initial_model(config, torch.device("cpu")).eval()
    measurement = _measurement(model)
    rows = module.measure(measurement)["rows"]
    double = model.double()
    prompt = measurement.prompts(SMOKE.task, "probe", SMOKE.probe_prompts)
    count = SMOKE.points - 1
    with torch.no_grad():
        in_context = double(prompt.xs, prompt.ys)[:, -1]
        h = double.embedding.queries(prompt.xs[:, -1:], count)
        for block in double.blocks:
            h = block(h)
        free = double.head.read(h)[:, 0]
        labels = prompt.ys[:, -1]
        expected = ((in_context - labels) ** 2).mean() / ((free - labels) ** 2).mean()
        assert abs(_value(rows, "error ratio") - expected.item()) <= 1e-10 * expected.item()
        steps = []
        for i in range(1, count):
            pair = [torch.cat([p.first.dense().flatten(1) for p in block_patches(double, prompt.xs[:, :k], prompt.ys[:, :k],
                                                                      prompt.xs[:, -1], count)[0]], 1)
                    for k in (i, i + 1)]
            steps.append((pair[1] - pair[0]).norm(dim=1).mean())
    third = max((count - 1) // 3, 1)
    decay = torch.stack(steps[-third:]).mean() / torch.stack(steps[:third]).mean()
    assert abs(_value(rows, "decay ratio") - decay.item()) <= 1e-10
    assert _value(rows, "identity bias form") <= 1e-12 and _value(rows, "identity output form") <= 1e-12
    for kind in module.MODERN_BLOCKS:  # the modern stacks: the identity holds, and what it absorbs is not nothing
        assert _value(rows, f"modern identity: {kind}") <= 1e-10
        assert _value(rows, f"modern context effect: {kind}") >= 1e-2
        assert _value(rows, f"modern second singular value ratio: {kind}") <= 1e-10


def _table(decay, error, identity=1e-15):
    rows = []
    for seed, (d, e) in enumerate(zip(decay, error)):
        rows += [module._row(seed, "decay ratio", d), module._row(seed, "error ratio", e),
                 module._row(seed, "trajectory error ratio", e),
                 module._row(seed, "identity bias form", identity), module._row(seed, "identity output form", identity),
                 module._row(seed, "second singular value ratio", identity)]
        rows += [module._row(seed, f"modern {quantity}: {kind}", identity) for kind in module.MODERN_BLOCKS
                 for quantity in ("identity", "second singular value ratio")]
    return {"rows": rows}


def test_checks_criteria():
    quick = module.SCALES["quick"]
    held = module.checks(_table([0.2, 0.25, 0.3], [0.1, 0.12, 0.08]), quick)
    claims = [check for check in held if check.kind == "claim"]
    assert [check.claim for check in claims] == ["updates-converge", "updates-converge", "implicit-gd-learns"]
    assert all(check.outcome == "held" and check.expected == 0.5 for check in claims)
    assert "last 2 steps" in claims[0].quantity  # 8 steps over N − 1 = 9 examples: thirds of 2
    assert claims[0].per_seed == (0.2, 0.25, 0.3) and claims[2].per_seed == (0.1, 0.12, 0.08)
    assert all(check.passed for check in held if check.kind == "sanity")
    failed = module.checks(_table([0.9, 1.0, 1.1], [0.95, 1.0, 1.05], identity=1e-6), quick)
    assert all(check.outcome == "failed" for check in failed if check.kind == "claim")
    assert not any(check.passed for check in failed if check.kind == "sanity")
