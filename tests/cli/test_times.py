"""Times (issue 19): printed as ISO-8601 with their zone, UTC with --utc; a time given without a
zone is refused with a hint unless --utc says to read it as UTC."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys

from tests.conftest import FIXTURES, PROJECT_ROOT

LOGS = FIXTURES / "kafka-logs"


def cli(*args: object, tz: str = "UTC") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TZ": tz, "COLUMNS": "200", "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.run([sys.executable, "-m", "mqtool", *map(str, args)], capture_output=True, text=True, env=env, cwd=PROJECT_ROOT, check=False)


def test_a_time_without_a_zone_is_refused_with_a_hint():
    proc = cli("query", LOGS / "orders-0", "--timestamp", "2023-11-14T22:13:21", "--json")
    assert proc.returncode == 2
    assert "expected a time with its zone" in proc.stderr and "--utc" in proc.stderr


def test_utc_reads_a_zoneless_time_as_utc():
    zoned = cli("query", LOGS / "orders-0", "--timestamp", "2023-11-14T22:13:21Z", "--json", tz="Asia/Shanghai")
    utc = cli("query", LOGS / "orders-0", "--timestamp", "2023-11-14T22:13:21", "--json", "--utc", tz="Asia/Shanghai")
    assert zoned.returncode == utc.returncode == 0
    assert json.loads(zoned.stdout) == json.loads(utc.stdout)


def test_printed_times_carry_their_zone_and_mean_the_same_instant():
    local = cli("stats", FIXTURES / "rocketmq-store", tz="Asia/Shanghai").stdout
    utc = cli("stats", FIXTURES / "rocketmq-store", "--utc", tz="Asia/Shanghai").stdout
    pattern = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d"
    shanghai, zulu = re.findall(pattern, local), re.findall(pattern, utc)
    assert shanghai and all(t.endswith("+08:00") for t in shanghai)
    assert zulu and all(t.endswith("+00:00") for t in zulu)
    assert [dt.datetime.fromisoformat(t) for t in shanghai] == [dt.datetime.fromisoformat(t) for t in zulu]


def test_quiet_drops_warnings_but_keeps_data_and_errors(tmp_path):
    import shutil

    root = tmp_path / "store"
    shutil.copytree(FIXTURES / "rocketmq-store", root)
    os.truncate(root / "commitlog" / "00000000000000081920", 4000)  # a torn tail (warning) and a wrong size (error)
    loud = cli("dump", "commitlog", root, "--jsonl")
    quiet = cli("dump", "commitlog", root, "--jsonl", "--quiet")
    assert loud.stdout == quiet.stdout and loud.returncode == quiet.returncode
    assert "RMQ-CL-TORN-TAIL" in loud.stderr and "RMQ-CL-TORN-TAIL" not in quiet.stderr
    assert [line for line in quiet.stderr.splitlines() if "error" not in line] == []
