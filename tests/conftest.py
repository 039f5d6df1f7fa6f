"""Shared test fixtures.

Real captures live in ``../shared/fixtures-real`` (beside the project, never copied into it);
tests that need them use ``real_path(...)`` which skips cleanly when the folder is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

PROJECT_ROOT = Path(__file__).resolve().parents[1]
REAL_ROOT = Path(os.environ.get("MQTOOL_REAL_FIXTURES", PROJECT_ROOT.parent / "shared" / "fixtures-real"))
FIXTURES = PROJECT_ROOT / "fixtures"

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def real_path(*parts: str) -> Path:
    """Path under shared/fixtures-real, or skip the test when it is absent."""
    path = REAL_ROOT.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real fixture not available: {path}")
    return path
