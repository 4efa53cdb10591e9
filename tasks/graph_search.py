"""Graph search in context: given a DAG's edges, a start and a goal, predict the next vertex on a path to the goal.

Saparov et al. 2024 ("Transformers struggle to learn to search", arXiv 2412.04703), their task and their balanced
("crafted") training distribution, ported from their generator.cpp (asaparov/learning_to_search, commit 2c3f32b:
``generate_training_set``, ``generate_example``, ``generate_graph_with_lookahead``, ``lookahead_depth``).

Tokens (``vertices = n``, their (max_input_size − 5) / 3): 0 is reserved, 1..n are vertex ids, then n + 1 = PATH,
n + 2 = EDGE, n + 3 = PAD, n + 4 = QUERY: a vocabulary of n + 5 (``dim``).  A prompt is their input sequence,
``points`` = 3n + 5 tokens, left-padded with PAD::

    PAD … PAD  EDGE u₁ v₁  EDGE u₂ v₂ …  QUERY s g  PATH s [p₁ … p_{j−1}]

each token one-hot in ``xs`` (B, 3n + 5, n + 5).  The label is at the last position: ``ys[:, -1]`` is the multi-hot
set of the current vertex's children from which the goal is reachable (their ``outputs``; every other position's
``ys`` is 0), so a model answers with n + 5 logits (``target_dim``), trained by cross-entropy against that set
normalised (the mean of their loss over their uniform choice of one label from it) and scored by whether its
arg-max is in the set (``metric = "next_vertex_accuracy"``).

Each prompt (their loop, one prompt per accepted graph): a lookahead ℓ uniform on 0..``max_lookahead`` (0: the
largest, ⌊(n − 1)/2⌋, their ``((max_input_size − 5) // 3 − 1) // 2``); a number of paths uniform on 2..⌊(n − 1)/ℓ⌋
(1..2 for ℓ = 0); min(ℓ·paths + 1 + U{0..5}, n) vertices; a start with ``paths`` branches, the first a path of ℓ
edges to the goal, the others of ℓ or ℓ + 1 edges; a chain of up to all remaining vertices leading into the start;
then every other vertex joins by preferential attachment (up to 3 children, sampled with weight ½ + in-degree, and up
to 3 parents among the non-descendants, weight ½ + out-degree); ids are a random injection into 1..n.  A graph is
rejected if it has more than n edges; otherwise its edges are shuffled and the first (shortest path, prefix length j)
whose current vertex's lookahead (``lookahead_depth``: breadth-first steps until the goal is found or only the right
branch is left) is ℓ becomes the prompt; a graph with none is rejected and ℓ kept for the next one.

Departures from their code, for a prompt stream that is a function of the generator: one prompt per graph (theirs
emits every matching prefix of a graph before resampling ℓ), no reserved test set (held-out prompts come from
disjoint seeds), and the sampling loop runs in Python per prompt, like their C++ loop (a rejection sampler with
a preferential-attachment step does not vectorise over the batch); ``latent`` holds ``lookahead``, ``paths``,
``start``, ``goal``, ``current`` (the vertex whose next step is asked), ``edges`` (count), ``out_degree`` of the
current vertex and ``adjacency`` (B, n + 1, n + 1) bool by vertex id.
"""
from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import ClassVar

import torch

from icl_sim.prompt import Prompt
from icl_sim.tasks.base import TaskFamily, check_draw, parameter
from icl_sim.validation import check_int

#: their generator's bound on sampled children and parents of an attached vertex (``max_num_parents = 4``)
MAX_NUM_PARENTS = 4
#: their preferential-attachment smoothing ``ALPHA``
ALPHA = 0.5
#: their bound on the number of shortest paths of an accepted graph
MAX_PATHS = 64


@dataclass(frozen=True)
class GraphSearch(TaskFamily):
    """One DAG per prompt as a token sequence; the next vertex from the start towards the goal at the end."""
    name: ClassVar[str] = "graph-search"
    metric: ClassVar[str] = "next_vertex_accuracy"
    loss: ClassVar[str] = "cross_entropy"
    evaluated_positions: ClassVar[str] = "last"
    dim_parameter: ClassVar[str] = "vertices"

    vertices: int = parameter("largest number of vertices n (their (max_input_size − 5) / 3): tokens 3n + 5, "
                              "vocabulary n + 5", 9)
    max_lookahead: int = parameter("largest lookahead ℓ, uniform on 0..max (0 = ⌊(n − 1)/2⌋)", 0)

    def __post_init__(self):
        check_int("vertices", self.vertices, 3)
        check_int("max_lookahead", self.max_lookahead, 0, (self.vertices - 1) // 2)

    @property
    def lookahead(self) -> int:
        """The largest lookahead sampled."""
        return self.max_lookahead or (self.vertices - 1) // 2

    @property
    def dim(self) -> int:
        return self.vertices + 5

    @property
    def target_dim(self) -> int:
        return self.vertices + 5

    @property
    def points(self) -> int:
        return 3 * self.vertices + 5

    @property
    def tokens(self) -> dict[str, int]:
        """The special tokens' ids."""
        n = self.vertices
        return {"PATH": n + 1, "EDGE": n + 2, "PAD": n + 3, "QUERY": n + 4}

    def sample(self, batch_size: int, generator: torch.Generator, *, points: int | None = None,
               active_dims: int | None = None, dtype: torch.dtype = torch.float32) -> Prompt:
        check_draw(batch_size, generator, dtype)
        if points not in (None, self.points):
            raise ValueError(f"points must be {self.points} (a search prompt cannot be shortened), got {points}")
        if active_dims not in (None, self.dim):
            raise ValueError(f"active_dims must be {self.dim} (the vocabulary), got {active_dims}")
        seed = int(torch.randint(0, 2**62, (1,), generator=generator, device=generator.device))
        rng = random.Random(seed)
        examples = [self._example(rng) for _ in range(batch_size)]
        sequences = torch.tensor([example["sequence"] for example in examples])
        xs = torch.nn.functional.one_hot(sequences, self.dim).to(dtype)
        ys = torch.zeros_like(xs)
        useful = [(b, v) for b, example in enumerate(examples) for v in example["useful"]]
        ys[[b for b, _ in useful], -1, [v for _, v in useful]] = 1
        edges = torch.tensor([(b, u, v) for b, example in enumerate(examples) for u, v in example["edges"]])
        adjacency = torch.zeros(batch_size, self.vertices + 1, self.vertices + 1, dtype=torch.bool)
        adjacency[edges[:, 0], edges[:, 1], edges[:, 2]] = True
        latent = {key: torch.tensor([example[key] for example in examples])
                  for key in ("lookahead", "paths", "start", "goal", "current", "out_degree")}
        latent["edges"] = torch.tensor([len(example["edges"]) for example in examples])
        latent["adjacency"] = adjacency
        device = generator.device
        return Prompt(xs.to(device), ys.to(device), {key: value.to(device) for key, value in latent.items()})

    def baselines(self) -> dict:
        return {}

    def slices(self, prompt: Prompt) -> dict[str, torch.Tensor]:
        """The prompts of each lookahead ℓ."""
        lookahead = prompt.latent["lookahead"]
        return {f"lookahead {value}": lookahead == value for value in range(self.lookahead + 1)}

    def _example(self, rng: random.Random) -> dict:
        """One accepted prompt of their rejection sampler (their ``generate_training_set`` loop)."""
        lookahead = rng.randrange(self.lookahead + 1)
        while True:
            example = self._try_example(rng, lookahead)
            if example is not None:
                return example

    def _try_example(self, rng: random.Random, lookahead: int) -> dict | None:
        n = self.vertices
        paths = rng.randrange(1, 3) if lookahead == 0 else rng.randrange(2, (n - 1) // lookahead + 1)
        count = min(lookahead * paths + 1 + rng.randrange(6), n)
        graph = lookahead_graph(rng, count, lookahead, paths, self.points)
        if graph is None:
            return None
        children, start, goal = graph
        edges = [(u, v) for u in range(len(children)) for v in children[u]]
        if len(edges) > n or 3 * len(edges) + 4 > self.points:
            return None
        shortest = shortest_paths(children, start, goal)
        if not shortest or len(shortest) > MAX_PATHS:
            return None
        for path in shortest:
            for j in range(1, len(path)):
                if 3 * len(edges) + 4 + j > self.points:
                    continue
                if lookahead_depth(children, path[j - 1], path[j], goal) == lookahead:
                    return self._encode(rng, children, edges, path[:j], start, goal, lookahead, paths)
        return None

    def _encode(self, rng: random.Random, children, edges, prefix, start, goal, lookahead, paths) -> dict:
        """The prompt's tokens under a random injection of the vertices into the ids 1..n."""
        ids = rng.sample(range(1, self.vertices + 1), len(children))
        rng.shuffle(edges)
        special = self.tokens
        tokens = [token for u, v in edges for token in (special["EDGE"], ids[u], ids[v])]
        tokens += [special["QUERY"], ids[start], ids[goal], special["PATH"]] + [ids[v] for v in prefix]
        current = prefix[-1]
        useful = [ids[v] for v in children[current] if reaches(children, v, goal)]
        return {"sequence": [special["PAD"]] * (self.points - len(tokens)) + tokens, "useful": useful,
                "edges": [(ids[u], ids[v]) for u, v in edges], "lookahead": lookahead, "paths": paths,
                "start": ids[start], "goal": ids[goal], "current": ids[current],
                "out_degree": len(children[current])}


def lookahead_graph(rng: random.Random, count: int, lookahead: int, paths: int,
                    max_prefix: int) -> tuple[list[list[int]], int, int] | None:
    """Their ``generate_graph_with_lookahead`` on vertices 0..V−1: (children lists, start, goal), or None where
    their fixed-size array would overflow (branches longer than the vertices left)."""
    count = max(2, count, 1 + paths * lookahead)
    children = [[] for _ in range(count)]
    in_degree, out_degree = [0] * count, [0] * count

    def add(u: int, v: int) -> None:
        children[u].append(v)

    add(0, 1)
    for i in range(1, lookahead):
        add(i, i + 1)
    index = 2 if lookahead == 0 else 1 + lookahead
    if lookahead > 0:
        for j in range(paths - 1):
            if index >= count:
                return None
            add(0, index)
            index += 1
            room = count - index - (paths - j - 1) * lookahead + 2
            length = lookahead + rng.randrange(2 if room < 0 else max(1, min(2, room)))
            for _ in range(1, length):
                if index >= count:
                    return None
                add(index - 1, index)
                index += 1
    previous = 0
    for _ in range(rng.randrange(min(max_prefix + 1, count - index + 1))):
        add(index, previous)
        previous = index
        index += 1
    for u in range(count):
        for v in children[u]:
            out_degree[u] += 1
            in_degree[v] += 1
    for new in range(index, count):
        wanted_children = min(rng.randrange(MAX_NUM_PARENTS), new)
        wanted_parents = min(rng.randrange(1 if wanted_children == 0 else 0, MAX_NUM_PARENTS), new)
        for child in weighted_sample(rng, [ALPHA + in_degree[j] for j in range(new)], wanted_children):
            add(new, child)
            in_degree[child] += 1
        weights = [ALPHA + out_degree[j] for j in range(new)]
        below = descendants(children, new)
        for vertex in below:
            if vertex < new:
                weights[vertex] = 0.0
        if sum(weights) > 0:
            for parent in weighted_sample(rng, weights, min(wanted_parents, new - len(below))):
                add(parent, new)
                out_degree[parent] += 1
    return children, 0, max(1, lookahead)


def weighted_sample(rng: random.Random, weights: list[float], count: int) -> list[int]:
    """``count`` distinct indices drawn one after another with probability proportional to ``weights``."""
    weights, chosen = list(weights), []
    for _ in range(count):
        if sum(weights) <= 0:
            break
        index = rng.choices(range(len(weights)), weights)[0]
        chosen.append(index)
        weights[index] = 0.0
    return chosen


def descendants(children: list[list[int]], vertex: int) -> set[int]:
    """The vertices reachable from ``vertex`` by one or more edges."""
    found, stack = set(), [vertex]
    while stack:
        for child in children[stack.pop()]:
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def reaches(children: list[list[int]], source: int, target: int) -> bool:
    """Whether a directed path leads from ``source`` to ``target`` (zero edges if they are equal)."""
    return source == target or target in descendants(children, source)


def shortest_paths(children: list[list[int]], start: int, goal: int) -> list[list[int]]:
    """Every shortest path from ``start`` to ``goal`` (vertex lists), none if the goal is unreachable."""
    distance, parents, queue = {start: 0}, {start: []}, deque([start])
    while queue:
        u = queue.popleft()
        for v in children[u]:
            if v not in distance:
                distance[v], parents[v] = distance[u] + 1, [u]
                queue.append(v)
            elif distance[v] == distance[u] + 1:
                parents[v].append(u)
    if goal not in distance:
        return []
    found, partial = [], [[goal]]
    while partial and len(found) <= MAX_PATHS:
        path = partial.pop()
        if path[0] == start:
            found.append(path)
        else:
            partial += [[u] + path for u in parents[path[0]]]
    return found


def lookahead_depth(children: list[list[int]], vertex: int, next_vertex: int, goal: int) -> int:
    """Their ``lookahead_depth``: breadth-first steps from ``vertex``'s children, each tagged with the branch it
    came from, until every frontier vertex is on ``next_vertex``'s branch or the goal is met."""
    frontier = [(child, child) for child in children[vertex]]
    visited = set(children[vertex])
    steps = 0
    while frontier:
        if all(branch == next_vertex for _, branch in frontier):
            return steps
        steps += 1
        grown: list[list[int]] = []
        for v, branch in frontier:
            if v == goal:
                return steps
            for child in children[v]:
                if child not in visited:
                    grown.append([child, branch])
                    visited.add(child)
                elif branch == next_vertex:
                    for entry in grown:
                        if entry[0] == child:
                            entry[1] = branch
        frontier = [(v, branch) for v, branch in grown]
    return steps
