"""Kafka's own tools from an install (DumpLogSegments), and kafkatool's CLI run in this process."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kafkatool.canary.sandbox import KafkaInstall, find_java
from kafkatool.commands.app import main as app_main
from kafkatool.util import budget
from tests.broker.cds import jvm_options

_TOOL_LOG4J1 = """\
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=%p %m (%c)%n
"""
_TOOL_LOG4J2 = """\
status = warn
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = STDERR
"""


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


def run_tool(install: KafkaInstall, main: str, args: Sequence[str], *, workdir: Path, timeout: float = 300) -> Run:
    """One of Kafka's command-line tools (``kafka-run-class.sh <main>``), its log4j output on stderr at WARN."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "tool-log4j.properties").write_text(_TOOL_LOG4J1)
    (workdir / "tool-log4j2.properties").write_text(_TOOL_LOG4J2)
    cmd = [str(find_java()), "-Xmx512m", *jvm_options(install),
           f"-Dlog4j.configuration=file:{workdir / 'tool-log4j.properties'}",
           f"-Dlog4j2.configurationFile={workdir / 'tool-log4j2.properties'}",
           "-cp", install.classpath(), main, *args]
    # bytes, decoded here: text mode would turn a '\r' inside a printed key or value into '\n'
    p = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return Run(p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"))


def dump_log_segments_class(install: KafkaInstall) -> str:
    """3.x: the Scala tool in kafka_2.13; 4.x: the Java port in kafka-tools."""
    return "kafka.tools.DumpLogSegments" if install.major < 4 else "org.apache.kafka.tools.DumpLogSegments"


def dump_log_segments(install: KafkaInstall, files: Sequence[Path], options: Sequence[str], *,
                      workdir: Path) -> Run:
    """``kafka-dump-log.sh --files a,b,... OPTIONS`` (one JVM for every file)."""
    return run_tool(install, dump_log_segments_class(install),
                    [*options, "--files", ",".join(str(f) for f in files)], workdir=workdir)


def kafkatool(*args: str | os.PathLike[str]) -> Run:
    """``kafkatool ARGS`` through its entry point, in this process (stdout, stderr and the exit code)."""
    argv = [str(a) for a in args]
    previous_budget = budget.activate(None)
    budget.activate(previous_budget)
    sigint = signal.getsignal(signal.SIGINT)
    out, err = io.StringIO(), io.StringIO()
    env = {"NO_COLOR": os.environ.get("NO_COLOR"), "COLUMNS": os.environ.get("COLUMNS")}
    os.environ.update(NO_COLOR="1", COLUMNS="200")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                app_main(argv)
                rc = 0
            except SystemExit as e:
                rc = int(e.code or 0) if not isinstance(e.code, str) else 2
    finally:
        budget.activate(previous_budget)
        signal.signal(signal.SIGINT, sigint)
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return Run(rc, out.getvalue(), err.getvalue())


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst
