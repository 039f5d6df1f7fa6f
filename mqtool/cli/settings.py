"""What every command takes besides its own options (``--quiet``, ``--verbose``, ``--utc``),
set once per run by ``main`` before the command runs and read by the renderer and the time
helpers.  A plain module: no import cost at ``--help``."""

#: quiet: warnings, notes and progress are not printed (errors and the data still are);
#: verbose: steps and diagnostics are (query's index lookups, scan's JVM log);
#: utc: times print in UTC, and a time given without a zone is read as UTC.
SETTINGS: dict[str, bool] = {"quiet": False, "verbose": False, "utc": False}


def reset() -> None:
    SETTINGS.update(quiet=False, verbose=False, utc=False)


def quiet() -> bool:
    return SETTINGS["quiet"]


def verbose() -> bool:
    return SETTINGS["verbose"]


def utc() -> bool:
    return SETTINGS["utc"]
