"""A derivation step as text: sympy's pretty form or LaTeX, with descriptive symbol names kept readable.

Derivations name some quantities with descriptive symbols (``E[(wᵀx)² x_j²|w]``, ``da/dt``).  sympy
reads ``_`` and ``^`` in a name as sub- and superscripts, which garbles such names in both forms
and leaves unicode or unbalanced braces in LaTeX; here they are rewritten for each form.
"""
from __future__ import annotations

import re

import sympy
from sympy.printing.latex import greek_letters_set

from icl_sim.theory.symbolic import Step

#: a name sympy typesets well by itself: letters, then digits or an _subscript
_PLAIN_NAME = re.compile(r"[A-Za-z]+\d*(_[A-Za-z0-9]+)*")
#: characters of descriptive names -> LaTeX (math mode)
_LATEX = {"ᵀ": "^{T}", "²": "^{2}", "³": "^{3}", "‖": r"\|", "−": "-", "·": r"\cdot ", "σ": r"\sigma ",
          "μ": r"\mu ", "κ": r"\kappa ", "λ": r"\lambda ", "η": r"\eta ", "γ": r"\gamma ", "Σ": r"\Sigma ",
          "δ": r"\delta ", "Γ": r"\Gamma ", "ŵ": r"\hat{w}", "|": r"\mid ", "'": "^{\\prime}"}
_SUBSCRIPTS = str.maketrans("0123456789aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ")
_SUPERSCRIPTS = str.maketrans("0123456789Tin-", "⁰¹²³⁴⁵⁶⁷⁸⁹ᵀⁱⁿ⁻")


def render(step: Step, latex: bool = False) -> str:
    """``step``'s expression pretty-printed (unicode), or as LaTeX."""
    descriptive = [symbol for symbol in step.expression.free_symbols
                   if isinstance(symbol, sympy.Symbol) and not _PLAIN_NAME.fullmatch(symbol.name)]
    if latex:
        return sympy.latex(step.expression, symbol_names={symbol: latex_name(symbol.name) for symbol in descriptive})
    readable = {symbol: sympy.Symbol(plain_name(symbol.name), **symbol.assumptions0) for symbol in descriptive}
    return sympy.pretty(step.expression.xreplace(readable), use_unicode=True)


def latex_name(name: str) -> str:
    """A descriptive name in LaTeX math: unicode and Greek words as commands, ``_x`` as a subscript."""
    text = "".join(_LATEX.get(character, character) for character in name)
    text = re.sub(r"[A-Za-z]+", lambda word: f"\\{word[0]} " if word[0] in greek_letters_set else word[0], text)
    text = re.sub(r"_(\w)", r"_{\1}", text)
    return text.replace("[", "\\left[").replace("]", "\\right]") if text.count("[") == text.count("]") else text


def plain_name(name: str) -> str:
    """A descriptive name that sympy's pretty printer keeps as written: ``_j`` becomes ``ⱼ``, ``^2`` ``²``."""
    name = re.sub(r"_(\w)", lambda match: match[1].translate(_SUBSCRIPTS), name)
    return re.sub(r"\^([\w*-])", lambda match: match[1].translate(_SUPERSCRIPTS), name)
