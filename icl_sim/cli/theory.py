"""``icl-sim theory list | show | verify``: theoretical claims, their derivations and numerical checks."""
from __future__ import annotations

import json
import sys
import time

import click
from tqdm import tqdm

from icl_sim import catalogue
from icl_sim.cli.given_once import option
from icl_sim.cli.options import progress_option
from icl_sim.validation import LARGEST_INT


@click.command("list")
def theory_list():
    """Every claim with its source."""
    click.echo("\n".join(catalogue.read()["theory"]))


@click.command("show")
@click.argument("name")
@option("--latex", is_flag=True, help="print LaTeX instead of pretty-printed formulas")
def theory_show(name, latex):
    """The derivation of claim NAME, step by step, ending with the final formula."""
    claim = _claim(name)
    from icl_sim.claims.rendering import render

    click.echo(f"{claim.name}: {claim.summary}\nsource: {claim.source}\n")
    for number, step in enumerate(claim.derive(), start=1):
        click.echo(f"({number}) {step.label}\n{render(step, latex)}\n")


@click.command("verify")
@click.argument("names", nargs=-1)
@option("--seed", type=click.IntRange(min=0, max=LARGEST_INT), default=0, show_default=True)
@option("--json", "as_json", is_flag=True, help="print one JSON object instead of a table")
@progress_option
def theory_verify(names, seed, as_json, progress):
    """Check claims NAMES (default: all) against numbers; exit 1 if any fails."""
    for name in names:
        catalogue.check_name("claims", "claim", name)
    repeated = next((name for name in names if names.count(name) > 1), None)
    if repeated is not None:
        raise click.UsageError(f"claim {repeated!r} is named twice; name each claim once")
    from icl_sim.claims import CLAIMS

    selected = [CLAIMS[name] for name in names] or list(CLAIMS.values())
    results = []
    for claim in tqdm(selected, desc="theory verify", disable=not progress):
        start = time.perf_counter()
        checks = claim.verify(seed)
        results.append({"name": claim.name, "source": claim.source, "passed": all(c.passed for c in checks),
                        "seconds": round(time.perf_counter() - start, 3), "checks": checks})
    passed = all(result["passed"] for result in results)
    if as_json:
        claims = [{**result, "checks": [check.as_dict() for check in result["checks"]]} for result in results]
        click.echo(json.dumps({"passed": passed, "seed": seed, "claims": claims}, indent=2))
    else:
        for result in results:
            click.echo(f"[{'PASS' if result['passed'] else 'FAIL'}] {result['name']} ({result['seconds']:.1f} s)")
            for check in result["checks"]:
                click.echo(f"    {check.describe()}")
        click.echo(f"{sum(r['passed'] for r in results)} of {len(results)} claims verified")
    if not passed:
        sys.exit(1)


def _claim(name):
    catalogue.check_name("claims", "claim", name)
    from icl_sim.claims import CLAIMS

    return CLAIMS[name]
