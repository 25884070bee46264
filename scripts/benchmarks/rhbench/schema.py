"""Validation of sweep documents against ``scripts/benchmarks/schema_v2.json``."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schema_v2.json"


@cache
def load_schema() -> dict[str, Any]:
    """The schema v2 document."""
    return json.loads(SCHEMA_PATH.read_text())


def validation_errors(document: dict[str, Any]) -> list[str]:
    """Every schema violation of ``document``, as "path: message" lines (empty when valid)."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(load_schema())
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    return [f"/{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]


def validate_document(document: dict[str, Any]) -> None:
    """Raise ``ValueError`` listing the violations when ``document`` breaks schema v2."""
    errors = validation_errors(document)
    if errors:
        shown = "\n".join(errors[:20])
        more = f"\n... and {len(errors) - 20} more" if len(errors) > 20 else ""
        raise ValueError(f"the benchmark document does not follow schema v2:\n{shown}{more}")
