"""Write ``machinery/api/builtin_resources.json``: the resources Kubernetes 1.32 serves by default.

kubesim does not retype Kubernetes' discovery by hand. This script derives it
from two pieces of Kubernetes' own data that ship as packages:

- the official Python client of the same minor (``kubernetes==32.*``, fetched
  from PyPI into a temporary directory): its generated API modules hold every
  REST path with its method and response type, which give each resource's
  plural, scope, verbs and subresources (with the kind each subresource
  answers with);
- the OpenAPI definitions of 1.32 that ``kubernetes-validate`` ships: their
  ``x-kubernetes-group-version-kind`` tell which group-versions and kinds exist.

Kubernetes 1.32 serves by default only its GA group-versions; alpha and beta
ones are off. A few discovery facts are in no package (short names,
categories, the etcd key prefixes kube-apiserver uses when they differ from the
resource name, verbs a generated client cannot tell apart, such as
componentstatuses having no watch, and subresources behind feature gates that
are off by default): they are in :data:`FACTS` below, checked
against ``kubectl api-resources`` of a real 1.32 cluster.

Run from the repository root with the project's virtualenv::

    .venv/bin/python hack/gen_builtin_resources.py

The output is committed; the APIServer and every client read it at import.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from machinery.api import schema

CLIENT_VERSION = "32.0.1"
OUTPUT = ROOT / "machinery" / "api" / "builtin_resources.json"

#: Facts of `kubectl api-resources` that no package carries.
FACTS: dict[str, dict[str, Any]] = {
    # resource (group/plural): facts
    "/componentstatuses": {"shortNames": ["cs"], "verbs": ["get", "list"]},
    "/configmaps": {"shortNames": ["cm"]},
    "/endpoints": {"shortNames": ["ep"], "etcdResource": "services/endpoints"},
    "/events": {"shortNames": ["ev"]},
    "/limitranges": {"shortNames": ["limits"]},
    "/namespaces": {"shortNames": ["ns"]},
    "/nodes": {"shortNames": ["no"], "etcdResource": "minions"},
    "/persistentvolumeclaims": {"shortNames": ["pvc"]},
    "/persistentvolumes": {"shortNames": ["pv"]},
    # pods/resize is alpha in 1.32 (InPlacePodVerticalScaling), so not served by default.
    "/pods": {"shortNames": ["po"], "categories": ["all"], "withoutSubresources": ["resize"]},
    "/replicationcontrollers": {"shortNames": ["rc"], "categories": ["all"], "etcdResource": "controllers"},
    "/resourcequotas": {"shortNames": ["quota"]},
    "/serviceaccounts": {"shortNames": ["sa"]},
    "/services": {"shortNames": ["svc"], "categories": ["all"], "etcdResource": "services/specs"},
    "admissionregistration.k8s.io/mutatingwebhookconfigurations": {"categories": ["api-extensions"]},
    "admissionregistration.k8s.io/validatingwebhookconfigurations": {"categories": ["api-extensions"]},
    "admissionregistration.k8s.io/validatingadmissionpolicies": {"categories": ["api-extensions"]},
    "admissionregistration.k8s.io/validatingadmissionpolicybindings": {"categories": ["api-extensions"]},
    "apiextensions.k8s.io/customresourcedefinitions": {
        "shortNames": ["crd", "crds"], "categories": ["api-extensions"],
        "etcdResource": "apiextensions.k8s.io/customresourcedefinitions"},
    "apiregistration.k8s.io/apiservices": {"categories": ["api-extensions"],
                                           "etcdResource": "apiregistration.k8s.io/apiservices"},
    "apps/daemonsets": {"shortNames": ["ds"], "categories": ["all"]},
    "apps/deployments": {"shortNames": ["deploy"], "categories": ["all"]},
    "apps/replicasets": {"shortNames": ["rs"], "categories": ["all"]},
    "apps/statefulsets": {"shortNames": ["sts"], "categories": ["all"]},
    "autoscaling/horizontalpodautoscalers": {"shortNames": ["hpa"], "categories": ["all"]},
    "batch/cronjobs": {"shortNames": ["cj"], "categories": ["all"]},
    "batch/jobs": {"categories": ["all"]},
    "certificates.k8s.io/certificatesigningrequests": {"shortNames": ["csr"]},
    "events.k8s.io/events": {"shortNames": ["ev"]},
    "networking.k8s.io/ingresses": {"shortNames": ["ing"], "etcdResource": "ingress"},
    "networking.k8s.io/networkpolicies": {"shortNames": ["netpol"]},
    "policy/poddisruptionbudgets": {"shortNames": ["pdb"]},
    "scheduling.k8s.io/priorityclasses": {"shortNames": ["pc"]},
    "storage.k8s.io/storageclasses": {"shortNames": ["sc"]},
}

#: Kinds of the streaming and proxy subresources: their client methods answer plain text.
_OPTIONS_KINDS = {"attach": "AttachOptions", "exec": "ExecOptions", "portforward": "PortForwardOptions",
                  "proxy": "ProxyOptions"}
#: The version of each group that 1.32 prefers (lists first) when it serves several.
PREFERRED = {"autoscaling": "v2"}

_CALL = re.compile(r"call_api\(\s*'([^']+)',\s*'([A-Z]+)'.*?response_type=(?:'([^']*)'|None)", re.DOTALL)
_PATH = re.compile(r"^/(?:api/(?P<cv>v\d+)|apis/(?P<g>[^/]+)/(?P<v>[^/]+))"
                   r"(?P<ns>/namespaces/\{namespace\})?/(?P<plural>[a-z0-9]+)"
                   r"(?P<item>/\{name\}(?:/(?P<sub>[a-z]+)(?:/\{path\})?)?)?$")
_GA = re.compile(r"v\d+")


def fetch_client(into: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    f"kubernetes=={CLIENT_VERSION}", "-d", str(into)], check=True)
    wheel = next(into.glob("kubernetes-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        z.extractall(into, [n for n in z.namelist() if n.startswith("kubernetes/client/api/")])
    return into / "kubernetes" / "client" / "api"


def gvk_of_model() -> dict[str, tuple[str, str, str, str]]:
    """The official client's model name for each GA definition: (group, version, kind, definition)."""
    from kubernetes import client

    out: dict[str, tuple[str, str, str, str]] = {}
    for name, definition in schema.definitions().items():
        for gvk in definition.get("x-kubernetes-group-version-kind", ()):
            group, version, kind = gvk.get("group", ""), gvk["version"], gvk["kind"]
            group_word = (group.split(".")[0] if group else "core")
            candidates = [f"{version.capitalize()}{kind}",
                          f"{group_word.capitalize()}{version.capitalize()}{kind}"]
            for model in candidates:
                if hasattr(client, model) and model not in out:
                    out[model] = (group, version, kind, name)
    return out


def _verb(method: str, op_is_connect: bool, collection: bool) -> str | None:
    if op_is_connect:
        return {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method)
    if collection:
        return {"GET": "list", "POST": "create", "DELETE": "deletecollection"}.get(method)
    return {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "POST": "create"}.get(method)


def build(api_dir: Path) -> list[dict[str, Any]]:
    models = gvk_of_model()
    served_kinds = {(g, v, k) for g, v, k, _ in models.values() if _GA.fullmatch(v)}
    resources: dict[tuple[str, str, str], dict[str, Any]] = {}
    subresources: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
    for module in sorted(api_dir.glob("*_api.py")):
        text = module.read_text()
        for m in _CALL.finditer(text):
            path, method, response = m.group(1), m.group(2), m.group(3) or ""
            p = _PATH.match(path)
            if p is None:
                continue
            group = p.group("g") or ""
            version = p.group("cv") or p.group("v")
            if not _GA.fullmatch(version):
                continue
            plural, sub = p.group("plural"), p.group("sub")
            if plural == "namespaces" and p.group("ns"):
                continue
            key = (group, version, plural)
            connect = sub in _OPTIONS_KINDS or (sub is None and response == "str")
            verb = _verb(method, sub in _OPTIONS_KINDS, p.group("item") is None)
            if sub is None:
                entry = resources.setdefault(key, {"group": group, "version": version, "resource": plural,
                                                   "namespaced": bool(p.group("ns")), "verbs": set()})
                if p.group("ns"):
                    entry["namespaced"] = True
                base = response.removesuffix("List") if response.endswith("List") else response
                if base in models and "kind" not in entry:
                    g, v, kind, definition = models[base]
                    entry.update(kind=kind, model=base, definition=definition)
                if verb == "delete":
                    entry["deleteResponse"] = response
                if verb and not connect:
                    entry["verbs"].add(verb)
                if verb == "list":
                    entry["verbs"].add("watch")
                continue
            subs = subresources.setdefault(key, {})
            s = subs.setdefault(sub, {"name": sub, "verbs": set(), "response": response})
            if verb:
                s["verbs"].add(verb)
            if response and response != "str":
                s["response"] = response
    out = []
    for key, entry in resources.items():
        if "kind" not in entry or (entry["group"], entry["version"], entry["kind"]) not in served_kinds:
            continue
        group, version, plural = key
        facts = FACTS.get(f"{group}/{plural}", {})
        subs_out = []
        for sub in sorted(subresources.get(key, {}).values(), key=lambda s: s["name"]):
            if sub["name"] in facts.get("withoutSubresources", ()):
                continue
            sub_entry: dict[str, Any] = {"name": sub["name"], "verbs": sorted(sub["verbs"])}
            if sub["name"] in _OPTIONS_KINDS:
                sub_entry["kind"] = entry["kind"] + _OPTIONS_KINDS[sub["name"]]
            elif sub["response"] in models:
                g, v, kind, _ = models[sub["response"]]
                sub_entry["kind"] = kind
                if (g, v) != (group, version):
                    sub_entry["group"], sub_entry["version"] = g, v
            else:
                sub_entry["kind"] = entry["kind"]
            subs_out.append(sub_entry)
        verbs = facts.get("verbs") or sorted(entry["verbs"])
        out.append({
            "group": group, "version": version, "resource": plural, "singular": entry["kind"].lower(),
            "kind": entry["kind"], "namespaced": entry["namespaced"], "verbs": sorted(verbs),
            "shortNames": facts.get("shortNames", []), "categories": facts.get("categories", []),
            "model": entry["model"], "definition": entry["definition"],
            "etcdResource": facts.get("etcdResource", plural), "subresources": subs_out,
            # DELETE answers with the object (kube-apiserver's ReturnDeletedObject) or with a Status.
            "deleteReturnsObject": entry.get("deleteResponse") == entry["model"],
        })
    out.sort(key=lambda r: (r["group"], r["version"], r["resource"]))
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        api_dir = fetch_client(Path(tmp))
        resources = build(api_dir)
    document = {
        "comment": "Generated by hack/gen_builtin_resources.py from the kubernetes==" + CLIENT_VERSION +
                   " client and the 1.32 OpenAPI definitions; do not edit.",
        "kubernetesVersion": schema.KUBERNETES_VERSION,
        "preferredVersions": PREFERRED,
        "resources": resources,
    }
    OUTPUT.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(resources)} resources to {OUTPUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
