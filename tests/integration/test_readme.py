"""Every command in the README runs, against a live `kubesim up`, and prints what the README says.

Commands are the ``$ `` lines of the README's ``console`` blocks (with their heredocs); each block
is followed by ``<!-- expect: REGEX -->`` comments that its output must match (multiline). The
quickstart's ``make`` targets are checked with ``make -n``; its other commands run too, and so do those of
``sh`` blocks. ``bash`` blocks are commands for other machines (several-machine setups, Docker): shown,
not run.
Commands run in order in one scratch directory holding the cluster's data dir (``.kubesim``), with
the cluster's real port in place of 6443 and this interpreter's ``bin`` in place of ``.venv/bin``.

The APIServer serves HTTPS only, and the README reads it with curl through ``kubectl proxy`` (plain
HTTP on 127.0.0.1:8001, the proxy authenticating as the kubeconfig's user). The test runs that proxy
itself, on a free port and stopped by its pid at the end, so that nothing a README command would
start in the background outlives the test: a ``kubectl proxy`` command is not run, and
127.0.0.1:8001 (and 8080, the port of the README before the APIServer was secure) point at the
test's proxy.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kubesim import procs
from tests import harness

pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.kubectl]

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n((?:<!-- expect: [^\n]* -->\n)*)", re.DOTALL | re.MULTILINE)


@dataclass
class Block:
    kind: str
    commands: list[str]
    expects: list[str] = field(default_factory=list)


def blocks(text: str) -> list[Block]:
    found = []
    for m in _FENCE.finditer(text):
        kind, body, expects = m.group(1), m.group(2), m.group(3)
        if kind not in ("console", "sh"):
            continue
        lines = body.splitlines()
        commands: list[str] = []
        i = 0
        while i < len(lines):
            line = lines[i]
            if kind == "console" and not line.startswith("$ "):
                i += 1
                continue
            command = line[2:] if kind == "console" else line
            heredoc = re.search(r"<<'?(\w+)'?", command)
            if heredoc:
                end = lines.index(heredoc.group(1), i + 1)
                command = "\n".join([command, *lines[i + 1:end + 1]])
                i = end
            if command.strip() and not command.lstrip().startswith("#"):
                commands.append(command.split("  #")[0] if kind == "sh" else command)
            i += 1
        found.append(Block(kind, commands, re.findall(r"<!-- expect: (.*) -->", expects)))
    return found


def test_the_readme_is_parsed_as_expected() -> None:
    parsed = blocks(README.read_text())
    console = [b for b in parsed if b.kind == "console"]
    assert len(console) >= 15
    assert all(b.expects for b in console), "every console block states what its output must show"
    assert any("kubectl apply -f - <<'EOF'" in c and c.endswith("EOF") for b in console for c in b.commands)


@dataclass
class Live:
    workdir: Path
    port: int
    proxy_port: int


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    port, etcd_port = procs.free_port(), procs.free_port()
    env = {**os.environ, "HOME": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "kubesim", "up", "--port", str(port), "--etcd-port",
                             str(etcd_port), "--data-dir", str(tmp_path / ".kubesim"), "--quiet", "--no-color"],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    proxy: procs.ManagedProcess | None = None
    try:
        harness.wait_for(lambda: (tmp_path / ".kubesim" / "components.json").exists(), timeout=90,
                         message="kubesim up with every component ready")
        proxy_port = procs.free_port()
        kubectl = shutil.which("kubectl")
        if kubectl is not None:
            proxy = procs.ManagedProcess(
                "kubectl-proxy", [kubectl, "proxy", f"--port={proxy_port}", "--kubeconfig",
                                  str(tmp_path / ".kubesim" / "kubeconfig")],
                log_path=tmp_path / "kubectl-proxy.log",
                ready=lambda: procs.http_ok(f"http://127.0.0.1:{proxy_port}/version"),
                env={"HOME": str(tmp_path)})
            proxy.start()
            proxy.wait_ready(30)
        yield Live(tmp_path, port, proxy_port)
    finally:
        if proxy is not None:
            proxy.stop()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def test_every_readme_command_runs_and_prints_what_it_says(live: Live) -> None:
    workdir, port = live.workdir, live.port
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "HOME": str(workdir), "KUBECONFIG": str(workdir / ".kubesim" / "kubeconfig"),
           "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    ran = 0
    for block in blocks(README.read_text()):
        outputs = []
        for command in block.commands:
            if command.startswith("make "):
                # The quickstart: `make up` runs until Ctrl-C, `make test` is this suite and `make bench`
                # takes a quarter of an hour; check what they would run.
                done = subprocess.run(["make", "-n", *shlex.split(command)[1:]], cwd=ROOT, capture_output=True,
                                      text=True, timeout=60, check=False)
                assert done.returncode == 0, f"{command}: {done.stderr}"
                target = shlex.split(command)[1]
                expected = {"up": "kubesim up", "test": "pytest", "bench": "kubesim bench"}[target]
                assert expected in done.stdout, (command, done.stdout)
                args = [a for a in shlex.split(command)[2:] if a.startswith("ARGS=")]
                assert all(a.removeprefix("ARGS=") in done.stdout for a in args), (command, done.stdout)
                continue
            if command.startswith("kubectl proxy"):
                # The test's own proxy stands for it (see the module docstring).
                continue
            concrete = (command.replace("127.0.0.1:6443", f"127.0.0.1:{port}")
                        .replace("127.0.0.1:8001", f"127.0.0.1:{live.proxy_port}")
                        .replace("127.0.0.1:8080", f"127.0.0.1:{live.proxy_port}")
                        .replace(".venv/bin/", f"{bindir}/"))
            done = subprocess.run(["bash", "-e", "-c", concrete], cwd=workdir, env=env, capture_output=True,
                                  text=True, timeout=120, check=False)
            assert done.returncode == 0, f"README command failed ({done.returncode}):\n{command}\n" \
                                         f"{done.stdout}\n{done.stderr}"
            outputs.append(done.stdout)
            ran += 1
        output = "".join(outputs)
        for expect in block.expects:
            assert re.search(expect, output, re.MULTILINE), f"expected /{expect}/ in the output of:\n" \
                                                    f"{block.commands}\n---\n{output}"
    assert ran >= 40
