"""Shell completion: the scripts ``--show-completion SHELL`` prints, and the answers the scripts
get back when they run ``mqtool`` with ``_MQTOOL_COMPLETE`` set (commands, options, choice values,
layouts, check families, and no answer for a path, so the shell completes files)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from mqtool.cli import completion
from mqtool.cli.app import run
from mqtool.findings import CODES, FAMILIES
from tests.conftest import PROJECT_ROOT

SHELLS = {"bash": "complete_bash", "zsh": "complete_zsh", "fish": "complete_fish"}


def _env(**extra: str) -> dict[str, str]:
    """The environment of a run from a shell's completion script: no SHELL to guess from, no
    completion variable left over from the test run's own environment."""
    env = {k: v for k, v in os.environ.items() if k != "SHELL" and not k.startswith(("_MQTOOL", "_TYPER", "COMP_"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def mqtool(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mqtool", *args], capture_output=True, text=True, env=_env(**env), cwd=PROJECT_ROOT, timeout=60)


def bash(line: str) -> list[str]:
    """What bash's completion function gets for the command line ``line`` (the cursor at its end)."""
    words = line.split(" ")
    proc = mqtool(_MQTOOL_COMPLETE="complete_bash", COMP_WORDS=line, COMP_CWORD=str(len(words) - 1))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip("\n").splitlines()  # as $( ) gives it to COMPREPLY


@pytest.mark.parametrize("shell", SHELLS)
def test_show_completion_prints_the_script_for_the_named_shell(shell):
    proc = mqtool("--show-completion", shell)
    assert proc.returncode == 0, proc.stderr
    assert f"_MQTOOL_COMPLETE={SHELLS[shell]}" in proc.stdout
    assert "mqtool" in proc.stdout
    assert proc.stdout.strip() == completion.script(shell)


def test_show_completion_of_an_unknown_shell_is_a_usage_error():
    proc = mqtool("--show-completion", "tcsh")
    assert proc.returncode == 2
    assert "bash, zsh, fish" in proc.stderr and not proc.stdout


def test_install_completion_writes_the_script_where_the_shell_reads_it(tmp_path):
    proc = mqtool("--install-completion", "bash", HOME=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    script = tmp_path / ".bash_completions" / "mqtool.sh"
    assert script.read_text() == completion.script("bash")
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text()


def test_a_shell_name_is_read_only_among_the_root_options():
    assert completion.shell_option(["--show-completion", "zsh"]) == ("--show-completion", "zsh")
    assert completion.shell_option(["--debug", "--install-completion", "fish"]) == ("--install-completion", "fish")
    assert completion.shell_option(["--show-completion"]) is None  # the flag: the shell running mqtool
    assert completion.shell_option(["--show-completion", "--debug"]) is None
    assert completion.shell_option(["info", "--show-completion", "bash"]) is None  # not a root option there


def test_the_completion_options_are_in_the_root_help(capsys):
    assert run(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--show-completion" in out and "--install-completion" in out


def test_completes_a_command():
    assert bash("mqtool va") == ["validate"]
    assert bash("mqtool dump kafka-t") == ["kafka-timeindex", "kafka-txnindex"]


def test_completes_an_option():
    assert bash("mqtool validate --fa") == ["--fail-on"]
    assert "--layout" in bash("mqtool info --")


def test_completes_option_values():
    assert bash("mqtool info --layout ") == ["rocketmq", "kafka", "jafka", "metaq"]
    assert bash("mqtool info --layout k") == ["kafka"]
    assert bash("mqtool dump commitlog --decode h") == ["hex"]
    assert bash("mqtool bench flush --mode kafka-") == ["kafka-count", "kafka-interval"]


def test_completes_finding_severities_and_check_families():
    assert bash("mqtool validate store --fail-on w") == ["warning"]
    assert bash("mqtool validate store --checks ") == list(FAMILIES)
    assert bash("mqtool validate store --checks commitlog,con") == ["commitlog,consumequeue", "commitlog,config"]


def test_the_finding_code_completer_names_every_code_with_its_meaning():
    """Ready for an option that takes finding codes (none does yet)."""
    assert [code for code, _ in completion.complete_finding_code("")] == list(CODES)
    torn = completion.complete_finding_code("rmq-cl-torn")
    assert [code for code, _ in torn] == ["RMQ-CL-TORN-TAIL"]
    assert torn[0][1] == CODES["RMQ-CL-TORN-TAIL"].summary


def test_a_path_gets_no_answer_so_the_shell_completes_files():
    assert bash("mqtool info fix") == []  # bash: `complete -o default` falls back to file names
    zsh = mqtool(_MQTOOL_COMPLETE="complete_zsh", _TYPER_COMPLETE_ARGS="mqtool info fix")
    assert zsh.stdout.strip() == "_files"
    fish = mqtool(_MQTOOL_COMPLETE="complete_fish", _TYPER_COMPLETE_FISH_ACTION="is-args", _TYPER_COMPLETE_ARGS="mqtool info fix")
    assert fish.returncode == 1  # "no arguments": fish completes files


def test_zsh_and_fish_get_commands_with_their_help():
    zsh = mqtool(_MQTOOL_COMPLETE="complete_zsh", _TYPER_COMPLETE_ARGS="mqtool sta")
    assert zsh.returncode == 0 and '"stats":"Messages, bytes' in zsh.stdout
    fish = mqtool(_MQTOOL_COMPLETE="complete_fish", _TYPER_COMPLETE_FISH_ACTION="get-args", _TYPER_COMPLETE_ARGS="mqtool info --layout ")
    assert fish.returncode == 0 and fish.stdout.split() == ["rocketmq", "kafka", "jafka", "metaq"]


def test_bash_sources_the_script_and_completes_through_it(tmp_path):
    """The whole path: bash sources what --show-completion printed, and its completion function
    runs `mqtool` (here a wrapper running this checkout) and fills COMPREPLY."""
    bash_exe = shutil.which("bash")
    if bash_exe is None:
        pytest.skip("no bash")
    wrapper = tmp_path / "mqtool"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m mqtool "$@"\n')
    wrapper.chmod(0o755)
    script = tmp_path / "mqtool.bash"
    script.write_text(completion.script("bash"))
    line = f'source "{script}"; COMP_WORDS=(mqtool dump kafka-l); COMP_CWORD=2; _mqtool_completion mqtool; echo "${{COMPREPLY[@]}}"'
    env = _env(PATH=f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([bash_exe, "--norc", "-c", line], capture_output=True, text=True, env=env, cwd=PROJECT_ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["kafka-log"]


def test_completes_a_finding_code_for_validate_ignore():
    assert bash("mqtool validate STORE --ignore RMQ-CL-TO") == ["RMQ-CL-TORN-TAIL"]
    assert "KAFKA-LOG-TORN-TAIL" in bash("mqtool validate STORE --ignore KAFKA-LOG-T")
