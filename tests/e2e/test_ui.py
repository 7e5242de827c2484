"""The web page, in headless Chromium, against the whole cluster: what a learner sees and does.

Chromium is Debian's (``.ci/run`` installs the ``chromium`` package), driven by
Playwright's Python package; without /usr/bin/chromium these tests are skipped,
saying so. The page is served by ``python -m kubesim.ui``, started as
``kubesim up`` starts it; a second, smaller cluster (etcd and an APIServer,
with Node objects but no kubelets) is used for what would disturb the shared
one: 250 nodes (the heat map) and an APIServer restart (the banner).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubesim import procs
from kubesim.ui.server import UI_VERSION
from tests import harness
from tests.kubectl import Kubectl

pytestmark = pytest.mark.e2e

CHROMIUM = "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed here (.ci/run installs it)", allow_module_level=True)

from playwright.sync_api import Browser, Page, expect, sync_playwright

CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"]


def start_ui(kubeconfig: Path, workdir: Path, *, scheduler_url: str | None = None) -> tuple[procs.ManagedProcess, str]:
    port = procs.free_port()
    flags = [f"--kubeconfig={kubeconfig}", f"--port={port}"]
    if scheduler_url:
        flags.append(f"--scheduler-url={scheduler_url}")
    proc = procs.python_module("kubesim.ui", flags, name="ui", log_path=workdir / "logs" / f"ui-{port}.log",
                               ready_url=f"http://{procs.LOOPBACK}:{port}/readyz")
    proc.start()
    try:
        proc.wait_ready(30)
    except Exception:
        proc.stop()
        raise
    return proc, f"http://{procs.LOOPBACK}:{port}"


def health_url(cluster: harness.Cluster, name: str) -> str:
    """The health port of a component the e2e cluster started (``--health-port N`` in its command line)."""
    proc = next(p for p in cluster.components if p.name == name)
    return f"http://{procs.LOOPBACK}:{proc.argv[proc.argv.index('--health-port') + 1]}"


@pytest.fixture(scope="module")
def ui(cluster: harness.Cluster) -> Iterator[str]:
    proc, url = start_ui(cluster.kubeconfig(), cluster.workdir,
                         scheduler_url=health_url(cluster, "scheduler"))
    try:
        yield url
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        yield page
    finally:
        context.close()
    assert errors == [], errors


def node_card(page: Page, name: str) -> Any:
    return page.locator(f'article.node[data-node="{name}"]')


def test_the_page_shows_the_three_nodes_and_is_live(page: Page, ui: str) -> None:
    page.goto(ui)
    for name in ("node-1", "node-2", "node-3"):
        expect(node_card(page, name).locator(".badge.Ready")).to_be_visible()
    expect(page.locator("#connection")).to_have_text("live")
    expect(page.locator("#banner")).to_be_hidden()


def test_a_pod_created_with_kubectl_appears_and_turns_running(page: Page, ui: str, kubectl: Kubectl,
                                                              namespace: str) -> None:
    page.goto(ui)
    expect(node_card(page, "node-1")).to_be_visible()
    kubectl("run", "seen", "--image=nginx:1.25")
    chip = page.locator(f'.chip[aria-label="Pod {namespace}/seen, Running"]')
    expect(chip).to_be_visible(timeout=5000)
    # It sits in its node's card, and the card's pod bar counts it.
    node = kubectl("get", "pod", "seen", "-o", "jsonpath={.spec.nodeName}")
    expect(node_card(page, node).locator(".chip", has_text="seen")).to_be_visible()


def test_a_pods_13_steps_and_its_scheduling_decision(page: Page, ui: str, kubectl: Kubectl, namespace: str) -> None:
    # The seeds' flow: a ReplicationController's Pod, from kubectl apply to Running.
    kubectl.apply({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "traced"},
                   "spec": {"replicas": 1, "selector": {"app": "traced"},
                            "template": {"metadata": {"labels": {"app": "traced"}},
                                         "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}})
    kubectl("wait", "--for=condition=Ready", "pod", "-l", "app=traced", "--timeout=60s")
    name = kubectl("get", "pods", "-l", "app=traced", "-o", "jsonpath={.items[0].metadata.name}")
    page.goto(ui)
    page.locator(f'.chip[aria-label="Pod {namespace}/{name}, Running"]').click()
    expect(page.locator("#details-title")).to_have_text(f"Pod {namespace}/{name}")
    steps = page.locator("table.steps tbody tr")
    expect(steps).to_have_count(15, timeout=15000)  # step 1 once per component (3), then steps 2 to 13
    expect(steps.last).to_contain_text("stored the Running status")
    expect(page.locator("table.steps tr.pending")).to_have_count(0)
    page.get_by_role("tab", name="Scheduling").click()
    expect(page.locator("#details-body")).to_contain_text("feasible")
    chosen = page.locator("table[aria-label='Scores'] tr.chosen td").first
    node = kubectl("get", "pod", name, "-o", "jsonpath={.spec.nodeName}")
    expect(chosen).to_have_text(f"{node} (chosen)")
    page.get_by_role("tab", name="YAML").click()
    yaml_view = page.locator("#details-body > pre")
    expect(yaml_view).to_contain_text("nodeName: " + node)
    expect(yaml_view).to_contain_text("managedFields: # folded")
    # The folded managedFields open on demand.
    expect(page.locator("#details-body details pre")).to_be_hidden()
    page.locator("#details-body details summary").click()
    expect(page.locator("#details-body details pre")).to_contain_text("manager:")


def test_a_pod_that_cannot_be_scheduled_waits_in_the_queue_with_its_reason(page: Page, ui: str, kubectl: Kubectl,
                                                                           namespace: str) -> None:
    page.goto(ui)
    kubectl("run", "stuck", "--image=nginx:1.25", '--overrides={"spec":{"nodeSelector":{"gpu":"true"}}}')
    lane = page.locator('.lane[data-lane="unschedulable"]')
    expect(lane.locator(".chip", has_text="stuck")).to_be_visible(timeout=10000)
    expect(lane).to_contain_text("didn't match Pod's node affinity/selector")


def test_a_taint_added_from_the_page_reaches_the_node(page: Page, ui: str, api: httpx.Client,
                                                      nodes: tuple[str, ...]) -> None:
    page.goto(ui)
    node_card(page, "node-2").locator("h3").click()
    expect(page.locator("#details-title")).to_have_text("Node node-2")
    page.get_by_role("button", name="Taint…").click()
    page.fill("#taint-key", "dedicated")
    page.fill("#taint-value", "ui")
    page.select_option("#taint-effect", "NoSchedule")
    page.click("#taint-submit")
    expect(page.locator("#details-command code")).to_have_text("kubectl taint nodes node-2 dedicated=ui:NoSchedule")
    harness.wait_for(lambda: {"key": "dedicated", "value": "ui", "effect": "NoSchedule"} in
                     (api.get("/api/v1/nodes/node-2").json()["spec"].get("taints") or []),
                     message="the taint on node-2")
    expect(node_card(page, "node-2").locator(".taints")).to_contain_text("dedicated=ui:NoSchedule")
    page.get_by_role("button", name="Untaint dedicated:NoSchedule").click()
    harness.wait_for(lambda: not api.get("/api/v1/nodes/node-2").json()["spec"].get("taints"),
                     message="the taint removed")
    page.get_by_role("button", name="Cordon").click()
    expect(page.locator("#details-command code")).to_have_text("kubectl cordon node-2")
    harness.wait_for(lambda: api.get("/api/v1/nodes/node-2").json()["spec"].get("unschedulable"),
                     message="node-2 cordoned")
    expect(node_card(page, "node-2").locator(".badge.cordoned")).to_be_visible()


def test_a_simulated_node_stopped_and_started_from_the_page(page: Page, ui: str) -> None:
    page.goto(ui)
    node_card(page, "node-3").locator("h3").click()
    page.get_by_role("button", name="Stop node").click()
    expect(page.locator("#details-command code")).to_have_text("kubesim node stop node-3")
    expect(page.locator("#details-result")).to_have_text("node/node-3 stopped")
    page.get_by_role("button", name="Start node").click()
    expect(page.locator("#details-result")).to_have_text("node/node-3 started")


def test_creating_from_the_page_and_a_malformed_yaml(page: Page, ui: str, api: httpx.Client, namespace: str) -> None:
    page.goto(ui)
    page.click("#create-button")
    page.select_option("#create-kind", "ReplicationController")
    page.fill("#create-name", "formed")
    page.fill("#create-namespace", namespace)
    page.fill("#create-replicas", "2")
    page.click("#create-submit")
    expect(page.locator("#create-result")).to_have_text("replicationcontroller/formed created")
    expect(page.locator("#create-command code")).to_have_text(f"kubectl create -n {namespace} -f -")
    rc = api.get(f"/api/v1/namespaces/{namespace}/replicationcontrollers/formed")
    assert rc.status_code == 200 and rc.json()["spec"]["replicas"] == 2
    page.click("#create-tab-yaml")
    page.fill("#create-yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: bad\n  spec: [")
    page.click("#create-submit")
    expect(page.locator("#create-result")).to_contain_text("error parsing the YAML")
    # A well-formed object the APIServer refuses: its Status message, and nothing created.
    page.fill("#create-yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: nameless-containers}\nspec: {containers: []}")
    page.click("#create-submit")
    expect(page.locator("#create-result")).to_contain_text(
        'Error from server: Pod "nameless-containers" is invalid: spec.containers: Required value')
    assert api.get(f"/api/v1/namespaces/{namespace}/pods/nameless-containers").status_code == 404


def test_scaling_from_the_page_creates_the_pods(page: Page, ui: str, api: httpx.Client, kubectl: Kubectl,
                                                 namespace: str) -> None:
    kubectl.apply({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "grow"},
                   "spec": {"replicas": 1, "selector": {"app": "grow"},
                            "template": {"metadata": {"labels": {"app": "grow"}},
                                         "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}})
    page.goto(ui + "#objects")
    page.get_by_role("button", name="replicationcontrollers", exact=True).click()
    page.locator("#objects-table tbody tr", has_text="grow").click()
    expect(page.locator("#details-title")).to_have_text(f"ReplicationController {namespace}/grow")
    page.once("dialog", lambda d: d.accept("4"))
    page.get_by_role("button", name="Scale…").click()
    expect(page.locator("#details-command code")).to_have_text(
        f"kubectl scale replicationcontroller grow -n {namespace} --replicas=4")
    page.goto(ui)
    expect(page.locator(".nodes .chip.Running", has_text="grow-")).to_have_count(4, timeout=15000)


def test_every_kind_is_listed_and_a_kind_without_columns_gets_the_generic_table(page: Page, ui: str) -> None:
    page.goto(ui + "#objects")
    page.get_by_role("button", name="customresourcedefinitions.apiextensions.k8s.io", exact=True).click()
    expect(page.locator("#objects-table thead")).to_have_text(re.compile(r"Name\s*Created At"))
    page.get_by_role("button", name="pods", exact=True).click()
    expect(page.locator("#objects-table thead")).to_contain_text("Restarts")


def test_the_page_can_be_used_with_the_keyboard(page: Page, ui: str) -> None:
    page.goto(ui)
    head = node_card(page, "node-3").locator("h3")
    head.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#details-title")).to_have_text("Node node-3")


def test_the_scheduler_tells_which_pods_wait_in_which_queue(cluster: harness.Cluster, kubectl: Kubectl,
                                                            namespace: str) -> None:
    kubectl("run", "queued", "--image=nginx:1.25", '--overrides={"spec":{"nodeSelector":{"gpu":"true"}}}')

    def lanes() -> dict[str, list[str]]:
        answer: dict[str, list[str]] = httpx.get(health_url(cluster, "scheduler") + "/debug/queue").json()
        return answer
    harness.wait_for(lambda: f"{namespace}/queued" in lanes()["unschedulable"], message="the Pod unschedulable")
    assert set(lanes()) == {"active", "backoff", "unschedulable", "gated"}


# --- a cluster of our own: many nodes, and an APIServer that goes away ------------------------------


@pytest.fixture(scope="module")
def lone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[harness.Cluster, str]]:
    workdir = tmp_path_factory.mktemp("ui-lone")
    with harness.cluster(workdir=workdir) as c:
        kubeconfig = c.kubeconfig()
        with c.client(timeout=30) as api:
            for i in range(250):
                node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"sim-{i:03d}"},
                        "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                                   "conditions": [{"type": "Ready", "status": "True" if i % 50 else "False"}]}}
                assert api.post("/api/v1/nodes", json=node).status_code == 201
        proc, url = start_ui(kubeconfig, workdir)
        try:
            yield c, url
        finally:
            proc.stop()


def test_many_nodes_are_drawn_as_a_heat_map(page: Page, lone: tuple[harness.Cluster, str]) -> None:
    _cluster, url = lone
    page.goto(url)
    expect(page.locator("#node-count")).to_have_text("(250)")
    expect(page.locator("#heatmap")).to_be_visible()
    expect(page.locator("#nodes")).to_be_hidden()
    page.locator("#heatmap").click(position={"x": 2, "y": 2})
    expect(page.locator("#details-title")).to_have_text("Node sim-000")


def test_many_objects_are_listed_a_page_at_a_time_and_drawn_as_they_scroll(
        page: Page, lone: tuple[harness.Cluster, str]) -> None:
    cluster, url = lone
    with cluster.client(timeout=30) as api:
        ns = f"many-{uuid.uuid4().hex[:6]}"
        api.post("/api/v1/namespaces", json={"metadata": {"name": ns}})
        for i in range(1200):
            api.post(f"/api/v1/namespaces/{ns}/configmaps", json={"metadata": {"name": f"cm-{i:04d}"}})
    page.goto(url + "#objects")
    page.get_by_role("button", name="configmaps", exact=True).click()
    expect(page.locator("#table-more")).to_be_visible()
    page.click("#table-more")
    page.click("#table-more")
    expect(page.locator("#table-more")).to_be_hidden()
    rows = page.locator("#objects-table tbody tr")
    assert rows.count() < 100  # 1,200 objects, a screenful of rows in the page
    page.locator("#table-scroll").evaluate("el => el.scrollTop = el.scrollHeight")
    expect(page.locator("#objects-table tbody")).to_contain_text("cm-1199")


def test_an_apiserver_restart_shows_a_banner_and_the_page_recovers(
        page: Page, lone: tuple[harness.Cluster, str]) -> None:
    cluster, url = lone
    page.goto(url)
    expect(page.locator("#connection")).to_have_text("live")
    cluster.apiserver.process.stop()
    try:
        expect(page.locator("#banner")).to_contain_text("APIServer", timeout=10000)
        expect(page.locator("#connection")).to_have_text("disconnected")
    finally:
        cluster.apiserver.process.start()
        cluster.apiserver.process.wait_ready(30)
    expect(page.locator("#banner")).to_be_hidden(timeout=15000)
    with cluster.client(timeout=30) as api:
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "zz-after-restart"},
                "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
        assert api.post("/api/v1/nodes", json=node).status_code == 201
    expect(page.locator("#node-count")).to_have_text("(251)", timeout=10000)


def test_the_readme_screenshots_are_of_this_page() -> None:
    stamp = Path(__file__).resolve().parents[2] / "docs" / "ui" / "VERSION"
    assert stamp.read_text().strip() == UI_VERSION, "run `make screenshots` after changing the page"
    for name in ("cluster.png", "pod.png"):
        assert (stamp.parent / name).stat().st_size > 10_000, name
