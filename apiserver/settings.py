"""The APIServer's settings: what ``python -m apiserver``'s flags set, in one value every part reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SecuritySettings:
    """Authentication, authorization and audit, with kube-apiserver's flags' names and defaults."""

    #: ``--authorization-mode``: Node, RBAC, AlwaysAllow, AlwaysDeny, in the order asked.
    authorization_modes: tuple[str, ...] = ("Node", "RBAC")
    anonymous_auth: bool = True
    token_auth_file: str | None = None
    service_account_key_files: tuple[str, ...] = ()
    service_account_signing_key_file: str | None = None
    service_account_issuers: tuple[str, ...] = ()
    api_audiences: tuple[str, ...] = ()
    #: Seconds; 0 means no limit beyond the API's own (2^32 seconds).
    service_account_max_token_expiration: float = 0.0
    #: Projected tokens of 3607 s bound to Pods are valid for a year (``--service-account-extend-token-expiration``).
    service_account_extend_token_expiration: bool = True
    audit_policy_file: str | None = None
    audit_log_path: str | None = None
    audit_log_maxage: int = 0
    audit_log_maxbackup: int = 0
    audit_log_maxsize: int = 0
    #: How the APIServer reaches kubelets (see :mod:`apiserver.proxy.kubelet`).
    kubelet_client_certificate: str | None = None
    kubelet_client_key: str | None = None
    kubelet_certificate_authority: str | None = None


@dataclass
class Settings:
    etcd_servers: list[str]
    etcd_request_timeout: float = 5.0
    compaction_interval: float = 300.0
    watch_cache_size: int = 10_000
    watcher_queue_size: int = 10_000
    bookmark_interval: float = 30.0
    event_ttl: int = 3600
    max_body_bytes: int = 3 * 1024 * 1024
    min_request_timeout: int = 1800
    track_managed_fields: bool = True
    default_not_ready_toleration_seconds: int = 300
    default_unreachable_toleration_seconds: int = 300
    #: How often the system namespaces controller checks default, kube-system, kube-public, kube-node-lease.
    system_namespaces_interval: float = 60.0
    #: The handler chain's limits (kube-apiserver's flags of the same names; 0 disables a limit).
    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    request_timeout: float = 60.0
    #: Where Services' ClusterIPs come from: one CIDR, or one per IP family (``--service-cluster-ip-range``).
    service_cluster_ip_range: str = "10.96.0.0/12"
    #: Where NodePorts come from (``--service-node-port-range``).
    service_node_port_range: str = "30000-32767"
    #: The address and port the ``kubernetes`` Service's endpoints point at (this APIServer).
    advertise_address: str = "127.0.0.1"
    advertise_port: int = 0
    #: Admission plugins switched off (``--disable-admission-plugins``).
    disabled_admission_plugins: tuple[str, ...] = ()
    security: SecuritySettings = field(default_factory=SecuritySettings)
    extra: dict[str, Any] = field(default_factory=dict)
