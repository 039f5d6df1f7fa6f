"""Shell completion for bash, zsh and fish: the root's ``--show-completion`` / ``--install-completion``
and the completers of option values.

Commands, options and choice values (``--format``, ``--decode``, ``--fail-on``...) complete from
the click command typer builds; ``complete_*`` below add the values typer cannot know (layouts,
check families, finding codes).  Paths are the shells' own file completion: a PATH argument
answers nothing, and each script falls back to files (bash ``complete -o default``, zsh
``_files``, fish "allow files").

Nothing here is imported for a plain run beyond this module: typer's completion machinery loads
when the shell asks for completions (``_MQTOOL_COMPLETE`` set) or a script is printed, and each
completer imports its vocabulary when called.
"""

import os

import typer

PROG = "mqtool"
COMPLETE_VAR = "_MQTOOL_COMPLETE"
SHELLS = ("bash", "zsh", "fish")
#: the root options that take a shell name (or none: the shell running mqtool)
SHELL_OPTIONS = frozenset({"--show-completion", "--install-completion"})


def complete_layout(incomplete: str) -> list[str]:
    from mqtool.layouts import LAYOUTS

    return [name for name in LAYOUTS if name.startswith(incomplete)]


def complete_check_families(incomplete: str) -> list[str]:
    """``--checks files,com<TAB>``: the families not yet given, after the ones that are."""
    from mqtool.findings import FAMILIES

    done, _, last = incomplete.rpartition(",")
    given = set(done.split(",")) if done else set()
    prefix = f"{done}," if done else ""
    return [prefix + family for family in FAMILIES if family.startswith(last) and family not in given]


def complete_finding_code(incomplete: str) -> list[tuple[str, str]]:
    """Finding codes (``RMQ-CL-TORN-TAIL``...) with their one-line meaning; case-insensitive
    (``validate --ignore``)."""
    from mqtool.findings import CODES

    wanted = incomplete.upper()
    return [(code, info.summary) for code, info in CODES.items() if code.startswith(wanted)]


def shell_complete_requested() -> bool:
    """The shell is asking for completions (the scripts run ``mqtool`` with ``_MQTOOL_COMPLETE``)."""
    if not os.environ.get(COMPLETE_VAR):
        return False
    _register_typer_shells()
    return True


def _register_typer_shells() -> None:
    # typer's bash/zsh/fish classes: they read the variables the scripts below set (imported from
    # the module that defines them: ``typer.completion`` only re-imports them)
    from typer._completion_classes import completion_init

    completion_init()


def shell_option(args: list[str]) -> tuple[str, str] | None:
    """``(option, shell)`` when ``args`` is ``... --show-completion SHELL`` (or ``--install-completion
    SHELL``) among the root options, before any command.  click options cannot take an optional
    value, so ``run`` answers this form before parsing; the bare flag (the shell running mqtool)
    is the options' own callback."""
    for i, arg in enumerate(args):
        if not arg.startswith("-"):  # the command: root options come before it
            return None
        if arg in SHELL_OPTIONS and i + 1 < len(args) and not args[i + 1].startswith("-"):
            return arg, args[i + 1]
    return None


def answer(option: str, shell: str) -> int:
    """Print the script for ``shell`` (``--show-completion``) or install it (``--install-completion``)."""
    if shell not in SHELLS:
        raise typer.BadParameter(f"expected one of {', '.join(SHELLS)}, found {shell!r}", param_hint=option)
    if option == "--show-completion":
        typer.echo(script(shell))
        return 0
    from typer._completion_shared import install

    installed, path = install(shell=shell, prog_name=PROG, complete_var=COMPLETE_VAR)
    typer.echo(f"{installed} completion installed in {path}")
    typer.echo("Completion will take effect once you restart the terminal")
    return 0


def detect_shell(option: str) -> str:
    """The shell running mqtool (``shellingham``, as typer's own options; else ``$SHELL``)."""
    try:
        import shellingham  # type: ignore[import-untyped]  # shellingham ships neither inline types nor stubs

        name: str = shellingham.detect_shell()[0]  # (name, executable path)
    except Exception:  # shellingham.ShellDetectionFailure, or no shellingham
        name = os.path.basename(os.environ.get("SHELL", ""))
    if name not in SHELLS:
        raise typer.BadParameter(f"cannot tell which shell this is ({name or 'none found'}): name it, e.g. {option} bash", param_hint=option)
    return name


def script(shell: str) -> str:
    """The completion script for ``shell`` (what ``--show-completion SHELL`` prints)."""
    from typer._completion_shared import get_completion_script

    return get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell)


def show_completion(ctx: typer.Context, value: bool) -> None:
    """``--show-completion`` without a shell: the script for the shell running mqtool."""
    if value and not ctx.resilient_parsing:
        raise typer.Exit(answer("--show-completion", detect_shell("--show-completion")))


def install_completion(ctx: typer.Context, value: bool) -> None:
    """``--install-completion`` without a shell: typer's installation for the shell running mqtool
    (the script in the shell's completion directory, sourced from its startup file)."""
    if value and not ctx.resilient_parsing:
        raise typer.Exit(answer("--install-completion", detect_shell("--install-completion")))
