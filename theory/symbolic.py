"""From sympy to torch: a derived closed form becomes a batched, device-agnostic torch function."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import sympy
import torch

@dataclass(frozen=True)
class Step:
    """One line of a derivation: a label and a sympy expression (or equation)."""

    label: str
    expression: sympy.Basic


# sympy function names -> torch implementations, for lambdify
TORCH_FUNCTIONS = {
    "sqrt": torch.sqrt, "exp": torch.exp, "log": torch.log, "sin": torch.sin, "cos": torch.cos,
    "tanh": torch.tanh, "Abs": torch.abs, "sign": torch.sign, "Max": torch.maximum, "Min": torch.minimum,
}


def torch_function(expression: sympy.Expr, symbols: Sequence[sympy.Symbol]) -> Callable[..., torch.Tensor]:
    """``expression`` as a function of ``symbols`` that accepts tensors (broadcasting) or floats."""
    compiled = sympy.lambdify(list(symbols), expression, modules=[TORCH_FUNCTIONS, "math"])

    def evaluate(*values):
        return compiled(*(torch.as_tensor(v, dtype=torch.float64) if not torch.is_tensor(v) else v
                          for v in values))

    evaluate.__doc__ = f"{expression} as a function of {', '.join(map(str, symbols))}"
    return evaluate
