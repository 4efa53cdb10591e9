"""Tian et al. 2023 (paper_repro/tian_2023.py, tasks/sequence_class.py, icl_sim/models/yz_transformer.py): the task's
table against the authors' logged facts, its sampler against that table (Monte Carlo), the model against the authors'
``Model2`` forward pass written out with one-hot matrices, the runs against their Fig. 6 sweep, and the measures
(c_n, its entropy, the distinct tokens' mass, the scan's rank correlation, the snap's shift) against closed forms.

References: luckmatters ``ssl/real-dataset/scan_snap/figure_6.log`` prints the two facts of ``num_last = 1``: tokens
0..19 and 0..9, 20..29, probabilities 0.0645 (common) and 0.0065, 0.0129, … 0.0645 (distinct), last token 30, next
tokens 31 and 32.  Monte Carlo frequencies allow 5 standard errors sqrt(p(1 − p)/n).
"""
import dataclasses
import math

import torch
import torch.nn.functional as F

from icl_sim.models import build_model
from icl_sim.paper_repro import tian_2023
from icl_sim.seeding import make_generator
from icl_sim.tasks import make_task

TASK = make_task("sequence-class")


def test_table_and_tokens_are_the_authors_logged_facts():
    assert TASK.dim == 33 and TASK.points == 128
    queries, nexts = TASK.class_tokens()
    assert queries.tolist() == [30, 30] and nexts.tolist() == [31, 32]
    table = TASK.conditional_probabilities()
    distinct = [round(0.1 * (1 + k) / 15.5, 4) for k in range(10)]  # linspace(0.1, 1, 10) / (10 + 5.5)
    assert table[0, :10].tolist() == [1 / 15.5] * 10 and table[0, 20:].abs().sum() == 0
    assert [round(value, 4) for value in table[0, 10:20].tolist()] == distinct == [
        0.0065, 0.0129, 0.0194, 0.0258, 0.0323, 0.0387, 0.0452, 0.0516, 0.0581, 0.0645]
    assert table[1, 20:30].tolist() == table[0, 10:20].tolist() and table[1, 10:20].abs().sum() == 0
    assert TASK.distinct_tokens().tolist() == [list(range(10, 20)), list(range(20, 30))]
    three = make_task("sequence-class", queries=3, common_per_query=2)  # the per-query common block, query by query
    assert three.dim == 10 + 6 + 60 + 3 + 6
    assert three.conditional_probabilities()[2, 12:14].tolist() == [1 / (10 + 2 + 5.5)] * 2
    assert three.class_tokens()[0].tolist() == [76, 76, 77, 77, 78, 78]


def test_sampler_draws_the_table_and_ends_with_the_query():
    prompt = TASK.sample(2000, make_generator(0, "eval"), dtype=torch.float64)
    tokens, classes = prompt.xs.argmax(-1), prompt.latent["class"]
    assert (tokens[:, -1] == 30).all() and torch.equal(prompt.ys[:, -1].argmax(-1), 31 + classes)
    assert prompt.ys[:, :-1].abs().sum() == 0
    table = TASK.conditional_probabilities()
    for k in range(2):
        context = tokens[classes == k, :-1].flatten()
        frequency = torch.bincount(context, minlength=TASK.dim).double() / len(context)
        error = 5 * (table[k] * (1 - table[k]) / len(context)).sqrt() + 1e-12
        assert ((frequency - table[k]).abs() <= error).all()
    assert abs(float((classes == 0).double().mean()) - 0.5) < 5 * math.sqrt(0.25 / 2000)


def test_model_is_the_authors_model2_forward_pass():
    """Their Model2.forward: K2(X_key) · x_query -> softmax -> mix of X_key -> ℓ2 normalised -> K1; 1/√M start."""
    torch.manual_seed(3)
    model = build_model("yz-transformer", TASK.dim, TASK.points, TASK.target_dim).double()
    bound = 1 / math.sqrt(TASK.dim)
    assert model.attention.abs().max() <= bound and model.decoder.abs().max() <= bound
    prompt = TASK.sample(16, make_generator(1, "eval"), dtype=torch.float64)
    X = F.one_hot(prompt.xs.argmax(-1), TASK.dim).double()
    keys, query = X[:, :-1], X[:, -1]
    inner = torch.bmm(keys @ model.attention.detach().T, query.unsqueeze(2)).squeeze(2)
    combined = torch.bmm(torch.softmax(inner, dim=1).unsqueeze(1), keys).squeeze(1)
    logits = (combined / combined.norm(dim=1, keepdim=True)) @ model.decoder.detach().T
    torch.testing.assert_close(model.predict(prompt.xs, prompt.ys)[:, -1], logits, rtol=1e-12, atol=1e-12)
    zero = build_model("yz-transformer", TASK.dim, TASK.points, TASK.target_dim, init="zero")
    assert zero.attention.abs().sum() == 0 and zero.decoder.abs().sum() == 0


def test_runs_are_the_fig6_sweep():
    """figure_6.log: L 128, batch 128, 100 iterations, sgd, momentum 0.9, wd 0, lr_z in {0.5, 1, 2, 3}, lr_y = lr_z ×
    {1, 2, 5, 10}, num_last 1, 3, 5, 10 (full), zero_init false, 10 seeds."""
    full = tian_2023.runs(tian_2023.SCALES["full"])
    assert len(full) == 65 and tian_2023.REPRODUCTION.seeds == {"quick": 10, "full": 10}
    config = full["q3-lrz2-ratio5"]
    assert (config.optimizer, config.lr, config.momentum, config.weight_decay, config.lr_group,
            config.lr_group_scale) == ("sgd", 2.0, 0.9, 0.0, "decoder", 5.0)
    assert (config.steps, config.batch_size, config.lr_schedule, config.model, config.model_params) == (
        100, 128, "constant", "yz-transformer", {})
    assert config.task_params == dataclasses.asdict(make_task("sequence-class", queries=3))
    quick = tian_2023.runs(tian_2023.SCALES["quick"])
    assert quick == {name: value for name, value in full.items() if not name.startswith(("q3-", "q5-", "q10-"))}
    fig4 = full["fig4"]  # figure_4.log: num_last 2, num_next_per_last 1, lr_z 1, ratio 1, the yaml's zero_init
    assert (fig4.task_params["queries"], fig4.task_params["next_per_query"], fig4.model_params, fig4.lr,
            fig4.lr_group_scale) == (2, 1, {"init": "zero"}, 1.0, 1.0)
    assert dataclasses.replace(fig4, task_params=config.task_params, model_params={}, lr=2.0,
                               lr_group_scale=5.0) == config


def test_measures_against_closed_forms():
    model = build_model("yz-transformer", TASK.dim, TASK.points, TASK.target_dim, init="zero").double()
    uniform = tian_2023.class_attention(model, TASK)
    torch.testing.assert_close(uniform, TASK.conditional_probabilities())  # Z = 0: c_n = P(· | m, n)
    assert math.isclose(tian_2023.distinct_mass(uniform, TASK), 5.5 / 15.5, rel_tol=1e-12)
    weights = [k / 55 for k in range(1, 11)]
    assert math.isclose(tian_2023.attention_entropy(uniform, TASK), -sum(w * math.log(w) for w in weights),
                        rel_tol=1e-12)
    with torch.no_grad():  # z rising with P on class 0's distinct tokens, falling on class 1's: ρ = +1 and −1
        model.attention[30, 10:20] = torch.arange(10.0)
        model.attention[30, 20:30] = -torch.arange(10.0)
    assert math.isclose(tian_2023.scan_rank(model, TASK), 0.0, abs_tol=1e-12)
    with torch.no_grad():
        model.attention[30, 20:30] = torch.arange(10.0) ** 2
        model.attention[30, :10] = -5.0
    assert math.isclose(tian_2023.scan_rank(model, TASK), 1.0, rel_tol=1e-12)
    zero = build_model("yz-transformer", TASK.dim, TASK.points, TASK.target_dim, init="zero")
    assert tian_2023.scan_rank(zero, TASK) == 0.0  # all z equal: no order
    with torch.no_grad():  # ties share their average rank: z = (0, 0, 1, …, 8) against ranks (0.5, 0.5, 2, …, 9)
        zero.attention[30, 10:20] = torch.tensor([0.0, 0.0] + list(range(1, 9)), dtype=torch.float32)
    x = torch.tensor([0.5, 0.5] + list(range(2, 10)), dtype=torch.float64)
    y = torch.arange(10, dtype=torch.float64)
    rho = float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()).norm() * (y - y.mean()).norm()))
    assert math.isclose(tian_2023.scan_rank(zero, TASK), rho / 2, rel_tol=1e-12)  # class 1's z all equal: 0
    attention = tian_2023.class_attention(model, TASK)
    raw = TASK.conditional_probabilities()[0] * torch.exp(model.attention.detach()[30])
    torch.testing.assert_close(attention[0], raw / raw.sum())
    assert math.isclose(tian_2023.attention_shift(uniform, attention),
                        float(0.5 * (uniform - attention).abs().sum(dim=1).mean()), rel_tol=1e-12)
    assert tian_2023.attention_shift(attention, attention) == 0.0
