"""Running the real kubectl binaries (1.27 to 1.33) in tests, each with its own cache and HOME."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

KUBECTL_DIR = Path("/usr/lib/google-cloud-sdk/bin")
ALL_VERSIONS = ("1.27", "1.28", "1.29", "1.30", "1.31", "1.32", "1.33")


def binary(version: str) -> Path:
    path = KUBECTL_DIR / f"kubectl.{version}"
    if not path.exists():
        pytest.skip(f"{path} is not installed")
    return path


def admin_kubeconfig(server: str, directory: Path) -> Path:
    """A kubeconfig in ``directory`` for the test APIServer at ``server``, as the admin (system:masters)."""
    from tests import harness

    path = directory / "kubeconfig"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        text = harness.session_files().admin_kubeconfig.read_text().replace(harness.PLACEHOLDER_SERVER, server)
        path.write_text(text)
        path.chmod(0o600)
    return path


@dataclass
class Kubectl:
    """kubectl of one version pointed at one server, as the admin, with a namespace by default.

    ``server`` is the APIServer's URL (an ``https`` one gets an admin kubeconfig in ``home``)
    or a kubeconfig file to use as it is.
    """

    path: Path
    server: str | Path
    home: Path
    namespace: str | None = None

    def connection(self) -> list[str]:
        """The flags that point kubectl at the server: ``--kubeconfig``, or ``--server`` for plain HTTP."""
        if isinstance(self.server, Path):
            return ["--kubeconfig", str(self.server)]
        if self.server.startswith("https:"):
            return ["--kubeconfig", str(admin_kubeconfig(self.server, self.home))]
        return ["--server", self.server]

    def run(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 90,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.path), *self.connection(), "--cache-dir", str(self.home / "cache")]
        if self.namespace and "-A" not in args and "--all-namespaces" not in args:
            cmd += ["--namespace", self.namespace]
        cmd += list(args)
        full_env = {"HOME": str(self.home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        full_env.update(env or {})
        done = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout, env=full_env,
                              check=False)
        if check:
            assert done.returncode == 0, f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        return done

    def __call__(self, *args: str, input: str | None = None) -> str:
        return self.run(*args, input=input).stdout

    def apply(self, *objects: dict[str, Any]) -> str:
        """``kubectl apply -f -`` of the objects, written as a YAML manifest."""
        return self("apply", "-f", "-", input=yaml.safe_dump_all(objects, sort_keys=False))
