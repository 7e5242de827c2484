"""certificates.k8s.io: CertificateSigningRequests."""

from __future__ import annotations

from apiserver.registry.certificates import certificatesigningrequests

RESOURCES = [certificatesigningrequests.RESOURCE]
