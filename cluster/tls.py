"""Self-signed TLS material for a private cluster: one CA, one certificate for every node.

``omkl cluster certs --out DIR`` writes ``ca.pem``, ``node.pem`` and ``node-key.pem``; the
scheduler, the workers and the clients all present ``node.pem`` and trust only ``ca.pem`` (mutual
TLS), so only holders of the key can join or submit. Good for a cluster you run yourself; use your
organisation's CA for anything shared.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path

CA, CERT, KEY = "ca.pem", "node.pem", "node-key.pem"


def make_certificates(out_dir, *, hosts=("127.0.0.1", "localhost"), days: int = 365) -> Path:
    """Create a CA and a node certificate valid for ``hosts`` in ``out_dir`` (refuses to overwrite)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    out = Path(out_dir).expanduser()
    existing = [name for name in (CA, CERT, KEY) if (out / name).exists()]
    if existing:
        raise FileExistsError(f"{out} already holds {existing}; choose another directory or delete them first")
    out.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "omkl-dist cluster CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "omkl-dist node")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    (out / CA).write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    (out / CERT).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path = out / KEY
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    os.chmod(key_path, 0o600)
    return out


def tls_files(tls_dir) -> dict:
    """Paths of the three files, checked to exist."""
    d = Path(tls_dir).expanduser()
    files = {"ca": d / CA, "cert": d / CERT, "key": d / KEY}
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"TLS files missing: {missing}; create them with `omkl cluster certs --out {d}`")
    return files


def security(tls_dir):
    """A ``distributed.Security`` for clients of a TLS cluster (None without ``tls_dir``)."""
    if tls_dir is None:
        return None
    from distributed.security import Security

    f = tls_files(tls_dir)
    return Security(
        tls_ca_file=str(f["ca"]), tls_client_cert=str(f["cert"]), tls_client_key=str(f["key"]), require_encryption=True
    )
