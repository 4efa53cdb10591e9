"""Speed ratios: icl-sim's Boolean learners and graph algorithms against the straightforward computation.

Run: ``python benchmarks/bench_boolean_graph.py [--repeats 5] [--batch 1280] [--graph-batch 1024]``.

Sizes: Boolean prompts at Bhattamishra et al.'s scale (n = 28 inputs, N = 70 points, B = 1280); logistic
GD on the linear-classification task's defaults (d = 20, N = 41); graphs at ``graph-connectivity``'s
default (16 nodes, Erdős–Rényi), Sanford et al.'s quick setting (12 nodes, GraphQA) and Saparov et al.'s
largest quick one (9 vertices, balanced DAG), B = 1024.

References, written as one would first write them: the Boolean learners loop over prefix sizes i, each a
batched (over B) computation on the points j < i from scratch (literal elimination; Gauss–Jordan
elimination over GF(2) in numpy; Hamming distances and a stable sort; gradient steps on X_{<i}); the
graph algorithms loop over prompts, each read from its tokens into a networkx graph (``has_path``,
shortest-path lengths with a cutoff, degrees).  Every pair is checked equal before it is timed.

Fairness as in ``bench_prefix_solvers``: both sides in this process on the same prompts, interleaved
after one warm-up each, ratio = median(reference) / median(ours), at one thread and torch's default.
"""
from __future__ import annotations

import argparse
import os

import networkx as nx
import numpy as np
import torch
from bench_prefix_solvers import interleaved_medians, load_average

from icl_sim.tasks import make_task
from icl_sim.theory.boolean_learners import (ConjunctionElimination, DisjunctionElimination, HammingKNN,
                                             LogisticGD, MajorityLabel, ParityElimination, parity_rank)
from icl_sim.theory.graph_algorithms import BFSReachability, DegreeHeuristic, ReachabilityRounds


def pm1(condition: torch.Tensor) -> torch.Tensor:
    return condition.to(torch.float64) * 2 - 1


# -- Boolean learners: a loop over prefixes -------------------------------------------------------------------
def elimination_reference(xs: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """(B, N) bool: the query satisfies the conjunction of the literals that no ``keep`` point j < i falsifies.

    Literal (k, v) means x_k = v; it starts in the hypothesis and leaves it when a kept point has x_k ≠ v.
    """
    bits = xs > 0
    satisfied = torch.empty(xs.shape[:2], dtype=torch.bool)
    for i in range(xs.shape[1]):
        falsifies_one = (keep[:, :i, None] & ~bits[:, :i]).any(dim=1)  # a kept point with x_k = 0
        falsifies_zero = (keep[:, :i, None] & bits[:, :i]).any(dim=1)
        literals_one, literals_zero = ~falsifies_one, ~falsifies_zero  # (B, n) each
        query = bits[:, i]
        violated = (literals_one & ~query) | (literals_zero & query)
        satisfied[:, i] = ~violated.any(dim=-1)
    return satisfied


def gauss_jordan_gf2(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reduce ``rows`` (B, m, n + 1) uint8 [bits | label] over GF(2).

    Returns the solution with every free coordinate 0, (B, n), and the rank, (B,)."""
    rows = rows.copy()
    batch, m, width = rows.shape
    if m == 0:
        return np.zeros((batch, width - 1), dtype=rows.dtype), np.zeros(batch, dtype=np.int64)
    every = np.arange(batch)
    rank = np.zeros(batch, dtype=np.int64)
    pivot_row = np.full((batch, width - 1), -1)
    for column in range(width - 1):
        candidates = (rows[:, :, column] == 1) & (np.arange(m) >= rank[:, None])
        found = candidates.any(axis=1)
        chosen = candidates.argmax(axis=1)
        target = np.minimum(rank, m - 1)
        swapped = rows[every, chosen].copy()
        rows[every[found], chosen[found]] = rows[every[found], target[found]]
        rows[every[found], target[found]] = swapped[found]
        hits = (rows[:, :, column] == 1) & found[:, None]
        hits[every, target] = False
        rows ^= hits[..., None].astype(np.uint8) * swapped[:, None, :]
        pivot_row[found, column] = target[found]
        rank += found
    solution = np.where(pivot_row >= 0, rows[every[:, None], pivot_row.clip(min=0), width - 1], 0)
    return solution, rank


def gf2_reference(xs: torch.Tensor, ys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per prefix, Gauss–Jordan elimination of the points j < i: (±1 parity predictions, ranks), both (B, N)."""
    bits = (xs > 0).numpy().astype(np.uint8)
    augmented = np.concatenate([bits, (ys > 0).numpy().astype(np.uint8)[..., None]], axis=-1)
    preds, ranks = np.empty(ys.shape), np.empty(ys.shape, dtype=np.int64)
    for i in range(xs.shape[1]):
        solution, ranks[:, i] = gauss_jordan_gf2(augmented[:, :i])
        preds[:, i] = np.where((bits[:, i] & solution).sum(-1) % 2 == 1, 1.0, -1.0)
    return torch.from_numpy(preds), torch.from_numpy(ranks)


def hamming_knn_reference(xs: torch.Tensor, ys: torch.Tensor, k: int) -> torch.Tensor:
    """Per prefix: mean label of the k points j < i nearest in Hamming distance, earliest first on ties."""
    bits = xs > 0
    preds = torch.zeros(ys.shape, dtype=torch.float64)
    for i in range(1, xs.shape[1]):
        distances = (bits[:, :i] != bits[:, i, None]).sum(dim=-1)
        nearest = distances.sort(dim=-1, stable=True).indices[:, :k]
        preds[:, i] = ys[:, :i].gather(1, nearest).mean(dim=-1)
    return preds


def majority_reference(ys: torch.Tensor) -> torch.Tensor:
    """Per prefix: +1 iff more positive than negative labels among j < i."""
    return pm1(torch.stack([(ys[:, :i] > 0).sum(-1) > (ys[:, :i] <= 0).sum(-1) for i in range(ys.shape[1])], 1))


def logistic_gd_reference(xs: torch.Tensor, ys: torch.Tensor, steps: int, lr: float) -> torch.Tensor:
    """Per prefix: ``steps`` normalised gradient steps on the logistic loss of X_{<i}, then the score wᵀx_i."""
    scores = torch.zeros(ys.shape, dtype=torch.float64)
    for i in range(1, xs.shape[1]):
        x, y = xs[:, :i], ys[:, :i]
        w = torch.zeros(xs.shape[0], xs.shape[2], dtype=torch.float64)
        for _ in range(steps):
            margins = y * (x @ w[..., None]).squeeze(-1)
            gradient = ((y * torch.sigmoid(-margins))[..., None] * x).sum(dim=1)
            w = w + lr * gradient / gradient.norm(dim=-1, keepdim=True).clamp(min=1e-12)
        scores[:, i] = (xs[:, i] * w).sum(-1)
    return scores


# -- graph algorithms: a loop over prompts ------------------------------------------------------------------
def per_prompt_graphs(xs: torch.Tensor, ys: torch.Tensor, answer) -> torch.Tensor:
    """−1 at the node tokens and ±``answer(graph, s, t)`` at the query, each prompt read into a networkx graph."""
    n = xs.shape[-1] // 2
    tokens = xs.numpy()
    preds = -torch.ones(ys.shape, dtype=torch.float64)
    for b in range(xs.shape[0]):
        graph = nx.from_numpy_array(tokens[b, :n, :n] > 0.5, create_using=nx.DiGraph)
        source, target = int(tokens[b, n, :n].argmax()), int(tokens[b, n, n:].argmax())
        preds[b, -1] = 1.0 if answer(graph, source, target) else -1.0
    return preds


def within_hops(hops: int):
    return lambda graph, s, t: t in nx.single_source_shortest_path_length(graph, s, cutoff=hops)


def has_edges(graph: nx.DiGraph, s: int, t: int) -> bool:
    return graph.out_degree(s) > 0 and graph.in_degree(t) > 0


# -- the cases ----------------------------------------------------------------------------------------------
def sample(task_name: str, batch: int, **params) -> tuple[torch.Tensor, torch.Tensor]:
    prompt = make_task(task_name, **params).sample(batch, torch.Generator().manual_seed(0), dtype=torch.float64)
    return prompt.xs, prompt.ys


def boolean_cases(batch: int):
    """(name, ours, reference) for each Boolean learner, on the prompts of the class it is optimal for."""
    xs, ys = sample("boolean", batch, function="conjunction")
    shape = f"n=28, N=70, B={batch}"
    yield (f"Conjunction elimination vs per-prefix literals ({shape})",
           lambda: ConjunctionElimination().predict(xs, ys), lambda: pm1(elimination_reference(xs, ys > 0)))
    dxs, dys = sample("boolean", batch, function="disjunction")
    yield ("Disjunction elimination vs per-prefix literals", lambda: DisjunctionElimination().predict(dxs, dys),
           lambda: pm1(~elimination_reference(dxs, dys <= 0)))
    pxs, pys = sample("boolean", batch, function="parity")
    yield ("GF(2) parity elimination vs Gauss-Jordan per prefix", lambda: ParityElimination().predict(pxs, pys),
           lambda: gf2_reference(pxs, pys)[0])
    yield ("parity_rank vs Gauss-Jordan rank per prefix", lambda: parity_rank(pxs).to(torch.float64),
           lambda: gf2_reference(pxs, pys)[1].to(torch.float64))
    nxs, nys = sample("boolean", batch, function="nearest-neighbour")
    for k in (1, 3):
        yield (f"HammingKNN({k}) vs sort per prefix", lambda k=k: HammingKNN(k).predict(nxs, nys),
               lambda k=k: hamming_knn_reference(nxs, nys, k))
    yield ("MajorityLabel vs count per prefix", lambda: MajorityLabel().predict(xs, ys), lambda: majority_reference(ys))
    lxs, lys = sample("linear-classification", batch)
    yield ("LogisticGD(100, 0.1) vs GD per prefix (d=20, N=41)", lambda: LogisticGD(100, 0.1).predict(lxs, lys),
           lambda: logistic_gd_reference(lxs, lys, 100, 0.1))


GRAPH_SETTINGS = {"default, 16 nodes ER": {"nodes": 16},
                  "Sanford quick, 12 nodes GraphQA": {"nodes": 12, "min_nodes": 4, "generator": "graphqa"},
                  "Saparov quick, 9 nodes DAG": {"nodes": 9, "generator": "balanced-dag", "directed": True}}


def graph_cases(batch: int):
    """(name, ours, reference) for each graph algorithm at each graph setting, per-prompt networkx references."""
    for setting, params in GRAPH_SETTINGS.items():
        xs, ys = sample("graph-connectivity", batch, **params)
        yield (f"BFS vs networkx has_path ({setting}, B={batch})",
               lambda xs=xs, ys=ys: BFSReachability().predict(xs, ys),
               lambda xs=xs, ys=ys: per_prompt_graphs(xs, ys, nx.has_path))
        for rounds, power in ((2, 2), (1, 3)):
            yield (f"ReachabilityRounds({rounds}, {power}) vs networkx cutoff {power ** rounds}",
                   lambda xs=xs, ys=ys, r=rounds, p=power: ReachabilityRounds(r, p).predict(xs, ys),
                   lambda xs=xs, ys=ys, hops=power ** rounds: per_prompt_graphs(xs, ys, within_hops(hops)))
        yield ("DegreeHeuristic vs networkx degrees", lambda xs=xs, ys=ys: DegreeHeuristic().predict(xs, ys),
               lambda xs=xs, ys=ys: per_prompt_graphs(xs, ys, has_edges))


def cases(batch: int, graph_batch: int):
    yield from boolean_cases(batch)
    yield from graph_cases(graph_batch)


def max_relative_difference(ours: torch.Tensor, reference: torch.Tensor) -> float:
    """max |ours − reference| / max |reference|: 0 for the exact learners, rounding for logistic GD."""
    return float((ours - reference).abs().max() / reference.abs().max())


def measure(batch: int, graph_batch: int, repeats: int):
    """Yield (name, threads, ours s, reference s, difference) per case, at one thread and torch's default;
    raises AssertionError if a case's two sides disagree beyond rounding."""
    default_threads = torch.get_num_threads()
    with torch.no_grad():
        for name, ours, reference in cases(batch, graph_batch):
            difference = max_relative_difference(ours(), reference())
            assert difference < 1e-9, f"{name}: ours and the reference differ by {difference:.1e}"
            for threads in (1, default_threads):
                torch.set_num_threads(threads)
                ours_time, reference_time = interleaved_medians(ours, reference, repeats)
                yield name, threads, ours_time, reference_time, difference
            torch.set_num_threads(default_threads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=1280)
    parser.add_argument("--graph-batch", type=int, default=1024)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, networkx {nx.__version__}, {os.cpu_count()} CPUs, default threads "
          f"{torch.get_num_threads()}, load average {load_average()}, repeats "
          f"{args.repeats} (interleaved, median)", flush=True)
    print(f"{'computation':<72} {'threads':>7} {'ours s':>8} {'ref s':>8} {'ratio':>7} {'max diff':>8}")
    for name, threads, ours, reference, difference in measure(args.batch, args.graph_batch, args.repeats):
        print(f"{name:<72} {threads:>7} {ours:>8.4f} {reference:>8.4f} {reference / ours:>6.1f}x {difference:>8.1e}",
              flush=True)
    print("ratio = median reference time / median ours; max diff = max |ours - reference| / max |reference|")


if __name__ == "__main__":
    main()
