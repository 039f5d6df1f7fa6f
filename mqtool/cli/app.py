"""Where ``mqtool`` used to be built; kept so that ``from mqtool.cli.app import run`` (tests, fuzzing,
benchmarks) and entry points installed before ``mqtool.cli.main`` keep working.  Nothing is
registered here: see ``mqtool.cli.main``."""

from mqtool.cli.main import _click_command, _state, app, main, run

__all__ = ["_click_command", "_state", "app", "main", "run"]
