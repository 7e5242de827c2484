"""docker-compose.yml and the Dockerfile, checked as far as a machine without a Docker engine can.

- Debian's docker-compose (1.29) validates the file offline (unknown keys, bad shapes);
  `.ci/run` installs it. Without it this test is skipped, saying so.
- Every kubesim service runs `python -m <module>` of this package: the program exists and
  answers `--help`, and the flags compose passes are accepted by that program's own parser.
- They are the flags `kubesim up` passes, plus only the ones a container needs to be reached
  at its own address.
- etcd is an official etcd 3.5 image whose data is on a named volume; every service has a
  healthcheck and waits for what it needs to be healthy.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesim import up

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
MODULES = {"apiserver": "apiserver", "controller-manager": "controller_manager", "scheduler": "scheduler",
           "kubelet": "kubelet_sim"}
#: Flags a container needs and `kubesim up` (all on 127.0.0.1) does not.
CONTAINER_ONLY = {"--bind-address", "--node-ip", "--kubelet-port", "--health-port"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return doc


def flag_names(argv: list[str]) -> set[str]:
    return {a.split("=", 1)[0] for a in argv if a.startswith("--")}


def test_docker_compose_validates_the_file() -> None:
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.skip("Debian's docker-compose is not installed here (.ci/run installs it)")
    done = subprocess.run([binary, "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True,
                          timeout=60, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_every_service_runs_a_program_of_this_package(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"etcd", *MODULES}
    for name, module in MODULES.items():
        command = services[name]["command"]
        assert command[:3] == ["python", "-m", module], (name, command)
        done = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == 0 and "usage:" in done.stdout, (name, done.stderr)
        parser: argparse.ArgumentParser = importlib.import_module(f"{module}.__main__").build_parser()
        parser.parse_args(command[3:])  # exits (fails the test) on an unknown or malformed flag


def test_compose_passes_the_flags_kubesim_up_passes(compose: dict[str, Any]) -> None:
    args = argparse.Namespace(scheduler_config=None, nodes=3, node_profile=None)
    for name, module, argv in up.component_commands(args, "http://127.0.0.1:8080"):
        command = compose["services"][name]["command"]
        assert command[2] == module
        assert flag_names(command[3:]) - CONTAINER_ONLY == flag_names(argv), name
    api = compose["services"]["apiserver"]["command"]
    assert flag_names(api[3:]) == {"--etcd-servers", "--bind-address", "--port"}


def test_etcd_is_official_3_5_with_a_volume(compose: dict[str, Any]) -> None:
    etcd = compose["services"]["etcd"]
    image = etcd["image"]
    assert image.split(":")[0] in ("quay.io/coreos/etcd", "gcr.io/etcd-development/etcd")
    assert image.split(":")[1].startswith("v3.5.")
    volume = etcd["volumes"][0].split(":")
    assert volume[0] in compose["volumes"] and volume[1] == "/etcd-data"
    assert "--data-dir=/etcd-data" in etcd["command"]


def test_healthchecks_and_start_order(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        assert service["healthcheck"]["test"], name
    assert services["apiserver"]["depends_on"] == {"etcd": {"condition": "service_healthy"}}
    for name in ("controller-manager", "scheduler", "kubelet"):
        assert services[name]["depends_on"] == {"apiserver": {"condition": "service_healthy"}}
    assert services["apiserver"]["ports"] == ["8080:8080"]


def test_dockerfile_installs_like_the_makefile() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert dockerfile.startswith("#") and "\nFROM python:3.11-slim\n" in dockerfile
    assert "-m venv .venv" in dockerfile and "-m venv $(VENV)" in makefile
    assert "pip install --quiet -e ." in dockerfile
    for package in MODULES.values():
        assert f"COPY {package} ./{package}" in dockerfile
    assert "COPY machinery ./machinery" in dockerfile and "COPY kubesim ./kubesim" in dockerfile
