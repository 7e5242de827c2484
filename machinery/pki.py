"""Keys and X.509 certificates, as client-go's ``util/cert`` and kubeadm's ``pkiutil`` make them.

A cluster has one CA; it signs the APIServer's serving certificate and the
client certificates whose subject is the identity Kubernetes reads from them
(CN = user name, O = groups). Everything here is built with ``cryptography``
(the Python Cryptographic Authority's library, over OpenSSL): no certificate
is assembled by hand.

Certificates and their keys use ECDSA P-256, as kubeadm does with
``encryptionAlgorithm: ECDSA-P256``: a key is made in microseconds (an RSA
key takes tens of milliseconds) and a TLS handshake costs a fraction of an
RSA one, which matters to a test suite that starts hundreds of APIServers and
to components that open many connections. The ServiceAccount signing key is
RSA 2048, as Kubernetes makes it, because RS256 is what every JWT consumer of
service account tokens expects.

Pure functions plus :func:`write_private`, which writes files readable by their
owner only (0600), atomically (a crash never leaves half a key).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey

#: How long certificates are valid: kubeadm's one year for leaf certificates, ten for the CA.
LEAF_DAYS: Final = 365
CA_DAYS: Final = 3650
#: Backdating, so that a clock a little behind still accepts a certificate made a moment ago.
_BACKDATE: Final = dt.timedelta(minutes=5)


def new_key() -> ec.EllipticCurvePrivateKey:
    """An ECDSA P-256 private key."""
    return ec.generate_private_key(ec.SECP256R1())


def new_rsa_key(bits: int = 2048) -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=bits)


def _name(common_name: str, organizations: Sequence[str] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attrs)


def new_ca(common_name: str = "kubernetes", *, days: int = CA_DAYS,
           key: PrivateKey | None = None) -> tuple[x509.Certificate, PrivateKey]:
    """A self-signed CA certificate (kubeadm's CN is ``kubernetes``)."""
    key = key or new_key()
    now = dt.datetime.now(dt.UTC)
    name = _name(common_name)
    cert = (x509.CertificateBuilder()
            .subject_name(name).issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _BACKDATE).not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=True,
                                         content_commitment=False, data_encipherment=False, key_agreement=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return cert, key


def sign(ca_cert: x509.Certificate, ca_key: PrivateKey, *, common_name: str, organizations: Sequence[str] = (),
         dns_names: Iterable[str] = (), ips: Iterable[str] = (), server: bool = False, client: bool = False,
         days: int = LEAF_DAYS, key: PrivateKey | None = None) -> tuple[x509.Certificate, PrivateKey]:
    """A leaf certificate signed by the CA, for serving (``server``), client authentication, or both."""
    key = key or new_key()
    now = dt.datetime.now(dt.UTC)
    usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + ([ExtendedKeyUsageOID.CLIENT_AUTH] if client
                                                                       else [])
    builder = (x509.CertificateBuilder()
               .subject_name(_name(common_name, organizations)).issuer_name(ca_cert.subject)
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - _BACKDATE).not_valid_after(now + dt.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=False,
                                            content_commitment=False, data_encipherment=False,
                                            key_agreement=False, crl_sign=False, encipher_only=False,
                                            decipher_only=False), critical=True)
               .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                              critical=False))
    names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def self_signed_serving(hosts: Sequence[str]) -> tuple[x509.Certificate, PrivateKey]:
    """A serving certificate signed by a throwaway CA of its own, as kube-apiserver makes without ``--tls-cert-file``."""
    ca_cert, ca_key = new_ca(f"{hosts[0] if hosts else 'localhost'}-ca@{int(dt.datetime.now(dt.UTC).timestamp())}")
    dns, ips = split_hosts(hosts)
    return sign(ca_cert, ca_key, common_name=hosts[0] if hosts else "localhost", dns_names=dns, ips=ips,
                server=True)


def split_hosts(hosts: Iterable[str]) -> tuple[list[str], list[str]]:
    """(DNS names, IP addresses) among ``hosts``."""
    dns: list[str] = []
    ips: list[str] = []
    for host in hosts:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            dns.append(host)
        else:
            ips.append(host)
    return dns, ips


# --- PEM ------------------------------------------------------------------------------------


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def key_pem(key: PrivateKey) -> bytes:
    """The private key in PKCS#8 PEM (what Go's and OpenSSL's loaders all read)."""
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def public_key_pem(key: PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


def load_cert(path: str | os.PathLike[str]) -> x509.Certificate:
    return x509.load_pem_x509_certificate(Path(path).read_bytes())


def load_key(path: str | os.PathLike[str]) -> PrivateKey:
    key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise ValueError(f"{path}: unsupported key type {type(key).__name__}")  # noqa: TRY004
    return key


def write_private(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` readable by its owner only (0600), replacing it atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
