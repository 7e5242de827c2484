"""kubectl with CustomResourceDefinitions: 1.27 to 1.33 for the core set, 1.32 for everything."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from tests import harness
from tests.crds import CRDS, create_crd, delete_crd, unique_group, widget, widget_crd, widget_version
from tests.kubectl import ALL_VERSIONS, Kubectl, binary

pytestmark = [pytest.mark.integration, pytest.mark.kubectl]


@pytest.fixture
def kubectl_of(cluster: harness.Cluster, namespace: str, tmp_path: Path) -> Iterator[object]:
    def make(version: str) -> Kubectl:
        return Kubectl(binary(version), cluster.url, tmp_path / version, namespace=namespace)
    yield make


def _apply_crd(k: Kubectl, api: httpx.Client, group: str) -> None:
    assert "created" in k("apply", "-f", "-", input=yaml.safe_dump(widget_crd(group)))
    harness.wait_for(lambda: api.get(f"/apis/{group}/v1/widgets").status_code == 200, message="served")


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_core_set(kubectl_of: object, api: httpx.Client, namespace: str, version: str) -> None:
    k: Kubectl = kubectl_of(version)  # type: ignore[operator]
    group = unique_group()
    _apply_crd(k, api, group)
    out = k.apply(widget("w1", group, size=5), widget("w2", group, color="blue"))
    assert f"widget.{group}/w1 created" in out and f"widget.{group}/w2 created" in out
    lines = k("get", "widgets").splitlines()
    assert lines[0].split() == ["NAME", "COLOR", "SIZE", "AGE"]
    assert lines[1].split()[:3] == ["w1", "red", "5"] and lines[2].split()[:3] == ["w2", "blue", "3"]
    api.patch(f"/apis/{group}/v1/namespaces/{namespace}/widgets/w1/status",
              content='{"status":{"phase":"Ready"}}', headers={"Content-Type": "application/merge-patch+json"})
    wide = k("get", "wd", "-o", "wide").splitlines()
    assert wide[0].split() == ["NAME", "COLOR", "SIZE", "PHASE", "AGE"] and wide[1].split()[:4] == [
        "w1", "red", "5", "Ready"]
    assert f"widget.{group}/w1 scaled" in k("scale", "widget/w1", "--replicas=3")
    assert k("get", "widget", "w1", "-o", "jsonpath={.spec.replicas}") == "3"
    assert "deleted" in k("delete", "crd", f"widgets.{group}")
    harness.wait_for(lambda: api.get(f"{CRDS}/widgets.{group}").status_code == 404, timeout=30, message="gone")
    err = k.run("get", f"widgets.{group}", check=False)
    assert err.returncode != 0


def test_explain_reads_the_schema_from_openapi_v2(kubectl_of: object, api: httpx.Client) -> None:
    """``--output=plaintext-openapiv2`` (kubectl 1.27+) reads /openapi/v2, in protobuf, instead of v3."""
    group = unique_group()
    _apply_crd(kubectl_of("1.32"), api, group)  # type: ignore[operator]
    try:
        for version in ALL_VERSIONS:
            k: Kubectl = kubectl_of(version)  # type: ignore[operator]
            spec = k("explain", "widgets.spec", "--output=plaintext-openapiv2")
            assert f"VERSION:  {group}/v1" in spec and "RESOURCE: spec <Object>" in spec, version
            assert "What the widget should be." in spec, version
            assert "color\t<string> -required-\n     The widget's color." in spec, version
            assert "size\t<integer>\n     How big, from 1 to 100." in spec, version
            assert "tags\t<[]string>" in spec and "labels\t<map[string]string>" in spec, version
            ports = k("explain", "widget.spec.ports", "--recursive", "--output=plaintext-openapiv2")
            assert "RESOURCE: ports <[]Object>" in ports and "name\t<string>\n   port\t<integer>" in ports, version
    finally:
        api.delete(f"{CRDS}/widgets.{group}")


def test_an_unserved_storage_version_is_not_offered_to_kubectl(kubectl_of: object, api: httpx.Client) -> None:
    """kubectl finds only served versions: objects go through v1 and are kept as v2, which it never sees."""
    k: Kubectl = kubectl_of("1.32")  # type: ignore[operator]
    group = unique_group()
    create_crd(api, widget_crd(group, versions=[widget_version("v1", storage=False),
                                                widget_version("v2", served=False)]))
    try:
        assert f"widget.{group}/w created" in k.apply(widget("w", group))
        assert k("get", f"widgets.{group}", "-o", "jsonpath={.items[*].apiVersion}") == f"{group}/v1"
        versions = k("api-versions").split()
        assert f"{group}/v1" in versions and f"{group}/v2" not in versions
        assert [line.split()[2] for line in k("api-resources", "--api-group", group).splitlines()[1:]] == [
            f"{group}/v1"]
        by_version = k.run("get", f"widgets.v2.{group}", check=False)
        assert by_version.returncode != 0
        assert 'the server doesn\'t have a resource type "widgets"' in by_version.stderr
        applied = k.run("apply", "-f", "-", input=yaml.safe_dump(widget("x", group, "v2")), check=False)
        assert applied.returncode != 0 and f'no matches for kind "Widget" in version "{group}/v2"' in applied.stderr
        delete_crd(api, f"widgets.{group}")
    finally:
        api.delete(f"{CRDS}/widgets.{group}")


def test_everything_with_kubectl_1_32(kubectl_of: object, api: httpx.Client, namespace: str,
                                      tmp_path: Path) -> None:
    k: Kubectl = kubectl_of("1.32")  # type: ignore[operator]
    group = unique_group()
    _apply_crd(k, api, group)
    # The second line of most operators' quick starts.
    assert k("wait", "--for", "condition=Established", f"crd/widgets.{group}", "--timeout=30s").strip() == \
        f"customresourcedefinition.apiextensions.k8s.io/widgets.{group} condition met"
    resources = k("api-resources", "--api-group", group).splitlines()
    assert resources[1].split() == ["widgets", "wd", f"{group}/v1", "true", "Widget"]
    explained = k("explain", "widgets.spec.size")
    assert "How big, from 1 to 100." in explained and "FIELD: size <integer>" in explained
    assert "The widget's color." in k("explain", "widget.spec", "--recursive=false")
    k.apply(widget("e1", group))
    described = k("describe", "widget", "e1")
    assert "Name:         e1" in described and f"API Version:  {group}/v1" in described
    assert "Kind:         Widget" in described and "Color:  red" in described
    # kubectl get by category lists the custom kind beside the built-in ones.
    assert "e1" in k("get", "tests")
    # Schema violations come back as kubectl prints 422s.
    bad = k.run("apply", "-f", "-", input=yaml.safe_dump(widget("bad", group, size=1000)), check=False)
    assert bad.returncode != 0
    assert "spec.size: Invalid value: 1000: spec.size in body should be less than or equal to 100" in bad.stderr
    # Unknown fields: kubectl validates on the server (Strict) since it finds fieldValidation in OpenAPI.
    unknown = k.run("apply", "-f", "-", input=yaml.safe_dump(widget("u", group, colour="red")), check=False)
    assert unknown.returncode != 0 and 'unknown field "spec.colour"' in unknown.stderr
    # edit with a scripted editor
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/color: red/color: green/' \"$1\"\n")
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    edited = k.run("edit", "widget/e1", env={"KUBE_EDITOR": str(editor), "EDITOR": str(editor)})
    assert f"widget.{group}/e1 edited" in edited.stdout
    assert k("get", "widget", "e1", "-o", "jsonpath={.spec.color}") == "green"
    # server-side apply and a strategic merge patch refused as Kubernetes refuses it
    assert "serverside-applied" in k("apply", "--server-side", "-f", "-",
                                     input=yaml.safe_dump(widget("e2", group, size=9)))
    smp = k.run("patch", "widget", "e1", "--type", "strategic", "-p", '{"spec":{"size":4}}', check=False)
    assert smp.returncode != 0
    assert f"application/strategic-merge-patch+json is not supported by {group}/v1, Kind=Widget" in smp.stderr
    assert "patched" in k("patch", "widget", "e1", "--type", "merge", "-p", '{"spec":{"size":4}}')
    # deleting the CRD deletes its objects
    started = time.monotonic()
    assert "deleted" in k("delete", "crd", f"widgets.{group}")
    harness.wait_for(lambda: api.get(f"{CRDS}/widgets.{group}").status_code == 404, timeout=30, message="gone")
    print(f"CRD and its objects deleted in {time.monotonic() - started:.2f}s")
    assert os.path.exists(editor)
