"""Services: Kubernetes 1.32's defaulting, validation, update rules and warnings, with its paths and words."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.validation import defaults
from apiserver.validation import service as validation

STORED = {"uid": "u1", "resourceVersion": "3", "creationTimestamp": "2024-05-01T10:00:00Z"}
DNS1035 = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
           "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
           "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")


def errors_of(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def service(*, name: str = "web", allocated: bool = True, **spec: Any) -> dict[str, Any]:
    """A Service as it is validated: defaulted, and with the IPs allocation would have given it."""
    base: dict[str, Any] = {"selector": {"app": "web"}, "ports": [{"port": 80}]}
    base.update(spec)
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Service",
                           "metadata": {"name": name, "namespace": "default", **STORED},
                           "spec": {k: v for k, v in base.items() if v is not None}}
    defaults.default_service(obj)
    if allocated and obj["spec"]["type"] != "ExternalName":
        obj["spec"].setdefault("clusterIP", "10.96.0.10")
        obj["spec"].setdefault("clusterIPs", [obj["spec"]["clusterIP"]])
        obj["spec"].setdefault("ipFamilies", ["IPv4"])
        obj["spec"].setdefault("ipFamilyPolicy", "SingleStack")
    return obj


# --- defaulting ----------------------------------------------------------------------------------

def test_service_defaults() -> None:
    spec = service(allocated=False)["spec"]
    assert spec == {"selector": {"app": "web"}, "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
                    "sessionAffinity": "None", "type": "ClusterIP", "internalTrafficPolicy": "Cluster"}


@pytest.mark.parametrize(("spec", "expected"), [
    pytest.param({"type": "NodePort"}, {"externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster"},
                 id="nodeport"),
    pytest.param({"type": "LoadBalancer"}, {"externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster",
                                            "allocateLoadBalancerNodePorts": True}, id="loadbalancer"),
    pytest.param({"type": "ExternalName", "externalName": "db.example.com"}, {}, id="externalname"),
    pytest.param({"externalIPs": ["203.0.113.9"]}, {"externalTrafficPolicy": "Cluster",
                                                    "internalTrafficPolicy": "Cluster"}, id="clusterip-external-ips"),
])
def test_type_dependent_defaults(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    got = service(allocated=False, **spec)["spec"]
    for key in ("externalTrafficPolicy", "internalTrafficPolicy", "allocateLoadBalancerNodePorts"):
        assert got.get(key) == expected.get(key), key


def test_client_ip_affinity_gets_its_timeout() -> None:
    assert service(sessionAffinity="ClientIP")["spec"]["sessionAffinityConfig"] == {
        "clientIP": {"timeoutSeconds": 10800}}
    # Affinity None drops a config the client sent.
    assert "sessionAffinityConfig" not in service(sessionAffinityConfig={"clientIP": {"timeoutSeconds": 5}})["spec"]


def test_a_named_target_port_is_kept() -> None:
    assert service(ports=[{"port": 80, "targetPort": "http"}])["spec"]["ports"][0]["targetPort"] == "http"


# --- validation ----------------------------------------------------------------------------------

CASES = [
    pytest.param({}, [], id="valid"),
    pytest.param({"name": "1web"}, [f'metadata.name: Invalid value: "1web": {DNS1035}'], id="dns-1035-name"),
    pytest.param({"ports": []}, ["spec.ports: Required value"], id="ports-required"),
    pytest.param({"ports": [], "clusterIP": "None", "clusterIPs": ["None"]}, [], id="headless-without-ports"),
    pytest.param({"ports": [{"port": 80}, {"port": 81, "name": "b"}]}, ["spec.ports[0].name: Required value"],
                 id="several-ports-need-names"),
    pytest.param({"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "a"}]},
                 ['spec.ports[1].name: Duplicate value: "a"'], id="duplicate-port-name"),
    pytest.param({"ports": [{"port": 80, "name": "a"}, {"port": 80, "name": "b"}]},
                 [('spec.ports[1]: Duplicate value: {"AppProtocol":null,"Name":"","NodePort":0,"Port":80,'
                  '"Protocol":"TCP","TargetPort":0}')], id="duplicate-port"),
    pytest.param({"ports": [{"port": 70000}]},
                 ["spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
                  # The targetPort defaulted to the port.
                  "spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive"],
                 id="port-range"),
    pytest.param({"ports": [{"port": 80, "targetPort": "http_port"}]},
                 [('spec.ports[0].targetPort: Invalid value: "http_port": must contain only alpha-numeric characters '
                  "(a-z, 0-9), and hyphens (-)")], id="target-port-name"),
    pytest.param({"ports": [{"port": 80, "nodePort": 30080}]},
                 ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"],
                 id="nodeport-on-clusterip"),
    pytest.param({"type": "Magic"},
                 [('spec.type: Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", '
                  '"LoadBalancer", "NodePort"')], id="type"),
    pytest.param({"type": "NodePort", "clusterIP": "None", "clusterIPs": ["None"]},
                 ["spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services"],
                 id="headless-nodeport"),
    pytest.param({"sessionAffinity": "Sticky"},
                 ['spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None"'],
                 id="affinity"),
    pytest.param({"sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 90000}}},
                 [("spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 90000: must be greater than 0 "
                  "and less than 86400")], id="affinity-timeout"),
    pytest.param({"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.11"]},
                 ['spec.clusterIPs: Invalid value: ["10.96.0.11"]: first value must match `clusterIP`'],
                 id="ips-agree"),
    pytest.param({"clusterIP": "10.96.0.300", "clusterIPs": ["10.96.0.300"]},
                 [('spec.clusterIPs[0]: Invalid value: "10.96.0.300": must be a valid IP address, (e.g. 10.9.8.7 or '
                  "2001:db8::ffff)")], id="bad-ip"),
    pytest.param({"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10", "10.96.0.11"],
                  "ipFamilyPolicy": "PreferDualStack"},
                 [('spec.clusterIPs: Invalid value: ["10.96.0.10","10.96.0.11"]: may specify no more than one IP for '
                  "each IP family")], id="two-ips-one-family"),
    pytest.param({"ipFamilies": ["IPv6"]},
                 [('spec.clusterIPs[0]: Invalid value: "10.96.0.10": expected an IPv6 value as indicated by '
                  "`ipFamilies[0]`")], id="family-mismatch"),
    pytest.param({"ipFamilyPolicy": "MostlyDualStack"},
                 [('spec.ipFamilyPolicy: Unsupported value: "MostlyDualStack": supported values: "PreferDualStack", '
                  '"RequireDualStack", "SingleStack"')], id="policy"),
    pytest.param({"externalIPs": ["127.0.0.1"]},
                 [('spec.externalIPs[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, '
                  "::1/128)")], id="loopback-external-ip"),
    pytest.param({"type": "NodePort", "ports": [{"port": 80, "name": "a", "nodePort": 30080},
                                                {"port": 81, "name": "b", "nodePort": 30080}]},
                 ["spec.ports[1].nodePort: Duplicate value: 30080"], id="duplicate-nodeport"),
    pytest.param({"loadBalancerSourceRanges": ["10.0.0.0/8"]},
                 ["spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'"],
                 id="source-ranges-not-lb"),
    pytest.param({"type": "LoadBalancer", "loadBalancerSourceRanges": ["10.0.0.0/33"]},
                 [('spec.LoadBalancerSourceRanges[0]: Invalid value: "10.0.0.0/33": must be a valid CIDR value, '
                  "(e.g. 10.9.8.0/24 or 2001:db8::/64)")], id="source-range-cidr"),
    pytest.param({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": None},
                 [], id="lb-allocation-defaulted"),
    pytest.param({"allocateLoadBalancerNodePorts": True},
                 ["spec.allocateLoadBalancerNodePorts: Forbidden: may only be used when `type` is 'LoadBalancer'"],
                 id="allocate-lb-ports-not-lb"),
    pytest.param({"loadBalancerClass": "example.com/lb"},
                 ["spec.loadBalancerClass: Forbidden: may only be used when `type` is 'LoadBalancer'"], id="lb-class"),
    pytest.param({"externalTrafficPolicy": "Local"},
                 [('spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible '
                  "services")], id="external-policy-internal-service"),
    pytest.param({"type": "LoadBalancer", "externalTrafficPolicy": "Local"},
                 ["spec.healthCheckNodePort: Required value"], id="local-lb-needs-health-port"),
    pytest.param({"healthCheckNodePort": 30000},
                 [("spec.healthCheckNodePort: Invalid value: 30000: may only be set when `type` is 'LoadBalancer' and "
                  "`externalTrafficPolicy` is 'Local'")], id="health-port-not-needed"),
    pytest.param({"internalTrafficPolicy": "Nearby"},
                 ['spec.internalTrafficPolicy: Unsupported value: "Nearby": supported values: "Cluster", "Local"'],
                 id="internal-policy"),
    pytest.param({"trafficDistribution": "Anywhere"},
                 ['spec.trafficDistribution: Unsupported value: "Anywhere": supported values: "PreferClose"'],
                 id="traffic-distribution"),
    pytest.param({"selector": {"app": "a b"}},
                 [('spec.selector: Invalid value: "a b": a valid label must be an empty string or consist of '
                  "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
                  "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                  "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")], id="selector"),
]


@pytest.mark.parametrize(("spec", "expected"), CASES)
def test_validate_service(spec: dict[str, Any], expected: list[str]) -> None:
    name = spec.pop("name", "web")
    assert errors_of(validation.validate_service(service(name=name, **spec))) == expected


@pytest.mark.parametrize(("spec", "expected"), [
    pytest.param({"externalName": "db.example.com."}, [], id="trailing-dot"),
    pytest.param({}, ["spec.externalName: Required value"], id="name-required"),
    pytest.param({"externalName": "db_1.example.com"},
                 [('spec.externalName: Invalid value: "db_1.example.com": a lowercase RFC 1123 subdomain must consist '
                  "of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
                  "character (e.g. 'example.com', regex used for validation is "
                  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")], id="name-syntax"),
    pytest.param({"externalName": "db.example.com", "ipFamilyPolicy": "SingleStack"},
                 ["spec.ipFamilyPolicy: Forbidden: may not be set for ExternalName services"], id="no-policy"),
])
def test_external_name_services(spec: dict[str, Any], expected: list[str]) -> None:
    obj = service(type="ExternalName", ports=None, **spec)
    assert errors_of(validation.validate_service(obj)) == expected


# --- updates -------------------------------------------------------------------------------------

def test_the_cluster_ip_may_not_change() -> None:
    old = service()
    new = service(clusterIP="10.96.0.99", clusterIPs=["10.96.0.99"])
    assert errors_of(validation.validate_service_update(new, old)) == [
        'spec.clusterIPs[0]: Invalid value: ["10.96.0.99"]: may not change once set']


def test_releasing_a_secondary_ip_needs_single_stack() -> None:
    old = service(clusterIP="10.96.0.10", clusterIPs=["10.96.0.10", "fd00::10"], ipFamilies=["IPv4", "IPv6"],
                  ipFamilyPolicy="PreferDualStack")
    new = service(clusterIP="10.96.0.10", clusterIPs=["10.96.0.10"], ipFamilies=["IPv4"],
                  ipFamilyPolicy="PreferDualStack")
    assert errors_of(validation.validate_service_update(new, old)) == [
        ('spec.ipFamilyPolicy: Invalid value: "PreferDualStack": must be set to \'SingleStack\' when releasing the '
        "secondary clusterIP"),
        ('spec.ipFamilyPolicy: Invalid value: "PreferDualStack": must be set to \'SingleStack\' when releasing the '
        "secondary ipFamily")]


def test_the_primary_family_may_not_change() -> None:
    old = service()
    new = service(ipFamilies=["IPv6"], clusterIP="fd00::10", clusterIPs=["fd00::10"])
    errs = errors_of(validation.validate_service_update(new, old))
    assert 'spec.ipFamilies[0]: Invalid value: ["IPv6"]: may not change once set' in errs


def test_the_health_check_port_is_fixed_while_needed() -> None:
    old = service(type="LoadBalancer", externalTrafficPolicy="Local", healthCheckNodePort=30100)
    new = copy.deepcopy(old)
    new["spec"]["healthCheckNodePort"] = 30101
    assert errors_of(validation.validate_service_update(new, old)) == [
        "spec.healthCheckNodePort: Forbidden: field is immutable"]


def test_load_balancer_status_only_on_load_balancers() -> None:
    old = service()
    new = copy.deepcopy(old)
    new["status"] = {"loadBalancer": {"ingress": [{"ip": "203.0.113.1", "ipMode": "VIP"}]}}
    assert errors_of(validation.validate_service_status_update(new, old)) == [
        "status.loadBalancer.ingress: Forbidden: may only be used when `spec.type` is 'LoadBalancer'"]
    lb_old = service(type="LoadBalancer")
    lb_new = copy.deepcopy(lb_old)
    lb_new["status"] = {"loadBalancer": {"ingress": [{"ip": "203.0.113.1"}, {"hostname": "10.0.0.1"}]}}
    defaults.default_service_status(lb_new)
    assert lb_new["status"]["loadBalancer"]["ingress"][0]["ipMode"] == "VIP"
    assert errors_of(validation.validate_service_status_update(lb_new, lb_old)) == [
        'status.loadBalancer.ingress[1].hostname: Invalid value: "10.0.0.1": must be a DNS name, not an IP address']


def test_service_warnings() -> None:
    assert validation.service_warnings(service(externalName="db.example.com")) == [
        'spec.externalName is ignored when spec.type is not "ExternalName"']
    assert validation.service_warnings(service(externalIPs=["010.0.0.1"])) == [
        ('spec.externalIPs[0]: non-standard IP address "010.0.0.1" will be considered invalid in a future Kubernetes '
        'release: use "10.0.0.1"')]
