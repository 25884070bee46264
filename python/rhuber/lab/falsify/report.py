"""The results rendered: the counts, the text scorecard (line by line under the categories, then
``N/M passed (K not applicable)``) and the JSON list of ``rhuber tune falsify --json``."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from .registry import FAIL, NA, PASS, Result


def summary(results: Sequence[Result]) -> dict[str, int]:
    counts = Counter(r.status for r in results)
    return {"passed": counts[PASS], "failed": counts[FAIL], "not_applicable": counts[NA],
            "applicable": counts[PASS] + counts[FAIL], "total": len(results)}


def scorecard(results: Sequence[Result], seconds: float | None = None) -> str:
    """The results line by line under their categories, then ``N/M passed (K not
    applicable)``."""
    lines: list[str] = []
    category = None
    for r in results:
        if r.category != category:
            category = r.category
            lines += ["", f"## {category}"]
        label = {PASS: "PASS", FAIL: "FAIL", NA: "N/A "}[r.status]
        if r.status == NA:
            lines.append(f"{r.id} {label} {r.title}: {r.reason}")
            continue
        text = f"{r.id} {label} {r.title}: {r.measured} (threshold {r.threshold})"
        lines.append(text + (f"; {r.reason}" if r.reason else ""))
    s = summary(results)
    tail = f"; {seconds:.1f} s" if seconds is not None else ""
    lines += ["", f"{s['passed']}/{s['applicable']} passed ({s['not_applicable']} not "
              f"applicable, {s['total']} items{tail})"]
    return "\n".join(lines).lstrip("\n") + "\n"


def to_json(results: Sequence[Result]) -> str:
    """The results as the JSON list ``--json`` prints (one object per :meth:`Result.as_dict`)."""
    return json.dumps([r.as_dict() for r in results], indent=2, ensure_ascii=False)
