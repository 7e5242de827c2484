"""docker-compose.yml and the Dockerfile, checked as far as a machine without a Docker engine can.

- Debian's docker-compose (1.29) validates the file offline (unknown keys, bad shapes);
  `.ci/run` installs it. Without it this test is skipped, saying so.
- Every kubesim service runs `python -m <module>` of this package: the program exists and
  answers `--help`, and the flags compose passes are accepted by that program's own parser.
- They are the flags `kubesim up` passes, plus only the ones a container needs to be reached
  at its own address.
- etcd is an official etcd 3.5 image whose data is on a named volume; every service has a
  healthcheck and waits for what it needs to be healthy.
- The ``ha`` profile is one cluster of three etcd members, two APIServers behind a load
  balancer and two kubelet_sim shards, whose flags fit together.
- Security as ``kubesim up`` has it: a first-start ``certs`` service makes the certificates,
  tokens and kubeconfigs into a volume every kubesim service mounts, the APIServer gets the
  flags ``kubesim up`` gives it and serves HTTPS, published on 127.0.0.1 only; the ``ha``
  profile likewise, with its own ``ha-certs`` and volume, through a TLS-passthrough balancer.
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

from kubesim import certs, up
from kubesim.clusterfiles import ClusterFiles

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
MODULES = {"apiserver": "apiserver", "controller-manager": "controller_manager", "scheduler": "scheduler",
           "kubelet": "kubelet_sim", "ui": "kubesim.ui", "metrics-server": "metrics_server"}
#: Flags a container needs and `kubesim up` (all on 127.0.0.1) does not.
CONTAINER_ONLY = {"--bind-address", "--node-ip", "--kubelet-port", "--health-port", "--advertise-address"}


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


#: Where docker-compose.yml's volume holds the cluster's files.
FILES = ClusterFiles(Path("/kubesim"), certs.ClusterPKI(Path("/kubesim/pki")))


def default_services(compose: dict[str, Any]) -> dict[str, Any]:
    return {name: s for name, s in compose["services"].items() if not s.get("profiles")}


def ha_services(compose: dict[str, Any]) -> dict[str, Any]:
    return {name: s for name, s in compose["services"].items() if "ha" in s.get("profiles", ())}


def test_every_service_runs_a_program_of_this_package(compose: dict[str, Any], tmp_path: Path) -> None:
    services = default_services(compose)
    assert set(services) == {"etcd", "certs", *MODULES}
    assert set(compose["services"]) == set(services) | set(ha_services(compose))
    ha = {name: s for name, s in ha_services(compose).items()
          if s.get("image") == "kubesim:latest" and name != "ha-certs"}
    for name, service in [*((n, services[n]) for n in MODULES), *ha.items()]:
        module = MODULES.get(name) or MODULES[name.removeprefix("ha-").rstrip("-12")]
        command = service["command"]
        assert command[:3] == ["python", "-m", module], (name, command)
        done = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == 0 and "usage:" in done.stdout, (name, done.stderr)
        parser: argparse.ArgumentParser = importlib.import_module(f"{module}.__main__").build_parser()
        # --root-ca-file is read as it is parsed: the volume's CA is stood in for by a file here.
        ca = tmp_path / "ca.crt"
        ca.write_text("-----BEGIN CERTIFICATE-----\n")
        flags = [a.replace("=/kubesim/pki/ca.crt", f"={ca}") if a.startswith("--root-ca-file=") else a
                 for a in command[3:]]
        parser.parse_args(flags)  # exits (fails the test) on an unknown or malformed flag


def test_compose_passes_the_flags_kubesim_up_passes(compose: dict[str, Any]) -> None:
    args = argparse.Namespace(scheduler_config=None, scheduler_plugin_module=[], nodes=3, node_profile=None)
    for name, module, argv in up.component_commands(args, FILES, 4443):
        command = compose["services"][name]["command"]
        assert command[2] == module
        assert flag_names(command[3:]) - CONTAINER_ONLY == flag_names(argv), name
        # The same files, at the volume's paths.
        assert set(argv) <= set(command[3:]), name
    api = compose["services"]["apiserver"]["command"]
    assert flag_names(api[3:]) == {"--etcd-servers", "--bind-address", "--secure-port",
                                   *flag_names(FILES.apiserver_flags())}
    assert set(FILES.apiserver_flags()) <= set(api[3:])


def test_certificates_are_made_at_first_start_into_a_volume(compose: dict[str, Any]) -> None:
    services = compose["services"]
    command = services["certs"]["command"]
    assert command[:4] == ["python", "-m", "kubesim", "certs"] and "--data-dir=/kubesim" in command
    assert "--host=apiserver" in command and "--server=https://apiserver:6443" in command
    assert services["certs"]["restart"] == "no"
    for name in MODULES:
        assert "kubesim:/kubesim" in services[name]["volumes"], name
    assert "kubesim" in compose["volumes"]
    assert services["apiserver"]["depends_on"]["certs"] == {"condition": "service_completed_successfully"}


def test_etcd_is_official_3_5_with_a_volume(compose: dict[str, Any]) -> None:
    etcd = compose["services"]["etcd"]
    image = etcd["image"]
    assert image.split(":")[0] in ("quay.io/coreos/etcd", "gcr.io/etcd-development/etcd")
    assert image.split(":")[1].startswith("v3.5.")
    volume = etcd["volumes"][0].split(":")
    assert volume[0] in compose["volumes"] and volume[1] == "/etcd-data"
    assert "--data-dir=/etcd-data" in etcd["command"]


def test_healthchecks_and_start_order(compose: dict[str, Any]) -> None:
    services = default_services(compose)
    for name, service in services.items():
        assert service["healthcheck"]["test"], name
    assert services["apiserver"]["depends_on"]["etcd"] == {"condition": "service_healthy"}
    for name in ("controller-manager", "scheduler", "kubelet", "metrics-server"):
        assert services[name]["depends_on"] == {"apiserver": {"condition": "service_healthy"}}
    # HTTPS, and only on the host's loopback unless the user changes it.
    assert services["apiserver"]["ports"] == ["127.0.0.1:6443:6443"]
    assert "https://127.0.0.1:6443/readyz" in " ".join(services["apiserver"]["healthcheck"]["test"])


def test_dockerfile_installs_like_the_makefile() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert dockerfile.startswith("#") and "\nFROM python:3.11-slim\n" in dockerfile
    assert "-m venv .venv" in dockerfile and "-m venv $(VENV)" in makefile
    assert "pip install --quiet -e ." in dockerfile
    for module in MODULES.values():
        package = module.split(".")[0]
        assert f"COPY {package} ./{package}" in dockerfile
    assert "COPY machinery ./machinery" in dockerfile and "COPY kubesim ./kubesim" in dockerfile
    # The example out-of-tree scheduler plugins (--plugin-module scheduler_plugins.coscheduling) are in the image.
    assert "COPY scheduler_plugins ./scheduler_plugins" in dockerfile


def _flag(command: list[str], name: str) -> str:
    [value] = [a.split("=", 1)[1] for a in command if a.startswith(f"{name}=")]
    return value


def test_the_ha_profile_is_three_etcd_members_two_apiservers_and_two_kubelet_shards(
        compose: dict[str, Any]) -> None:
    ha = ha_services(compose)
    assert set(ha) == {"ha-certs", "ha-etcd-1", "ha-etcd-2", "ha-etcd-3", "ha-apiserver-1", "ha-apiserver-2",
                       "ha-apiserver", "ha-controller-manager", "ha-scheduler", "ha-kubelet-1", "ha-kubelet-2"}
    members = ["ha-etcd-1", "ha-etcd-2", "ha-etcd-3"]
    cluster = ",".join(f"{m}=http://{m}:2380" for m in members)
    volumes = set()
    for m in members:
        command = ha[m]["command"]
        assert _flag(command, "--name") == m and _flag(command, "--initial-cluster") == cluster
        assert _flag(command, "--initial-advertise-peer-urls") == f"http://{m}:2380"
        assert _flag(command, "--advertise-client-urls") == f"http://{m}:2379"
        volumes.add(ha[m]["volumes"][0].split(":")[0])
    assert len(volumes) == 3 and volumes <= set(compose["volumes"])
    for api in ("ha-apiserver-1", "ha-apiserver-2"):
        assert _flag(ha[api]["command"], "--etcd-servers") == ",".join(f"http://{m}:2379" for m in members)
        assert set(ha[api]["depends_on"]) == {*members, "ha-certs"}
        assert "ports" not in ha[api]  # reached through the load balancer only
    # Secure as the default cluster: the same flags, each replica auditing to its own file.
    default_api = compose["services"]["apiserver"]["command"]
    for api in ("ha-apiserver-1", "ha-apiserver-2"):
        command = ha[api]["command"]
        assert flag_names(command[3:]) == flag_names(default_api[3:]), api
        assert set(FILES.apiserver_flags()) - {f"--audit-log-path={FILES.audit_log}"} <= set(command[3:]), api
        assert _flag(command, "--audit-log-path") == f"/kubesim/logs/audit-{api}.log"
        assert ha[api]["depends_on"]["ha-certs"] == {"condition": "service_completed_successfully"}
    certs_command = ha["ha-certs"]["command"]
    for host in ("ha-apiserver", "ha-apiserver-1", "ha-apiserver-2"):
        assert f"--host={host}" in certs_command
    assert "--server=https://ha-apiserver:6443" in certs_command
    assert "--admin-server=https://127.0.0.1:8081" in certs_command
    # The load balancer passes TLS through to both APIServers, checking their /readyz over HTTPS.
    lb = ha["ha-apiserver"]
    config = (ROOT / lb["volumes"][0].split(":")[0]).read_text()
    assert "server ha-apiserver-1 ha-apiserver-1:6443 check" in config
    assert "server ha-apiserver-2 ha-apiserver-2:6443 check" in config
    assert "option httpchk GET /readyz" in config and "mode tcp" in config and "check-ssl" in config
    assert lb["ports"] == ["127.0.0.1:8081:6443"]
    shards = ("ha-kubelet-1", "ha-kubelet-2")
    for name in ("ha-controller-manager", "ha-scheduler", *shards):
        service = ha[name]
        assert service["volumes"] == ["ha-kubesim:/kubesim"], name
        assert "--master" not in flag_names(service["command"]), name
    assert "--use-service-account-credentials" in ha["ha-controller-manager"]["command"]
    for name in shards:
        assert _flag(ha[name]["command"], "--kubeconfig") == "/kubesim/kubelet.conf"
        assert _flag(ha[name]["command"], "--node-tokens") == "/kubesim/pki/tokens.csv"
    # Tokens for every node the shards run.
    assert _flag(certs_command, "--nodes") == str(sum(int(_flag(ha[k]["command"], "--nodes")) for k in shards))
    # The shards host consecutive ranges of one cluster's nodes.
    shards = [(int(_flag(ha[k]["command"], "--node-offset")), int(_flag(ha[k]["command"], "--nodes")))
              for k in ("ha-kubelet-1", "ha-kubelet-2")]
    assert shards[0][0] == 0 and shards[1][0] == shards[0][0] + shards[0][1]
