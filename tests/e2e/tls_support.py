"""Certificates for the TLS tests, made with the openssl CLI at test time, and
a server with a TLS listener.

make_certs(dir) writes, all with P-256 keys (fast to generate):
  ca.crt/.key              the CA the server trusts for client certificates
  server.crt/.key          the server's certificate, signed by ca (CN=bloomgate-a)
  server-b.crt/.key        a second server certificate, signed by ca (CN=bloomgate-b),
                           for the reload test
  server-enc.key           server.key encrypted with the passphrase KEY_PASS
  client.crt/.key          a client certificate signed by ca
  other-ca.crt/.key        a CA the server does not know
  rogue.crt/.key           a client certificate signed by other-ca
"""

import os
import socket
import ssl
import subprocess
import time

import redis

from harness import BloomgateServer, IO_TIMEOUT_S, READY_DEADLINE_S, encode_command, free_port

KEY_PASS = "correct horse"
EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _ca(cwd, name, cn):
    _openssl("req", "-x509", *EC_KEY, "-keyout", f"{name}.key", "-out", f"{name}.crt",
             "-days", "2", "-subj", f"/CN={cn}", cwd=cwd)


def _signed(cwd, name, cn, ca, ext=None):
    _openssl("req", "-new", *EC_KEY, "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN={cn}", cwd=cwd)
    args = ["x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", f"{name}.crt", "-days", "2"]
    if ext:
        args += ["-extfile", ext]
    _openssl(*args, cwd=cwd)


def make_certs(directory):
    """Writes the files above into `directory`; returns {name: absolute path}."""
    with open(os.path.join(directory, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _ca(directory, "ca", "Bloomgate Test CA")
    _ca(directory, "other-ca", "Unknown CA")
    _signed(directory, "server", "bloomgate-a", "ca", "san.ext")
    _signed(directory, "server-b", "bloomgate-b", "ca", "san.ext")
    _signed(directory, "client", "client", "ca")
    _signed(directory, "rogue", "rogue", "other-ca")
    _openssl("pkey", "-in", "server.key", "-aes256", "-passout", f"pass:{KEY_PASS}",
             "-out", "server-enc.key", cwd=directory)
    return {name: os.path.join(directory, name) for name in os.listdir(directory)}


def tls_args(certs, tls_port, auth_clients="yes", extra=()):
    return ["--tls-port", tls_port, "--tls-cert-file", certs["server.crt"],
            "--tls-key-file", certs["server.key"], "--tls-ca-cert-file", certs["ca.crt"],
            "--tls-auth-clients", auth_clients, *extra]


def client_context(certs, cert="client", minimum=None, maximum=None):
    """A client-side SSLContext trusting ca; presenting `cert` unless None."""
    context = ssl.create_default_context(cafile=certs["ca.crt"])
    context.check_hostname = False
    if cert is not None:
        context.load_cert_chain(certs[f"{cert}.crt"], certs[f"{cert}.key"])
    if minimum is not None:
        context.minimum_version = minimum
    if maximum is not None:
        context.maximum_version = maximum
    return context


def tls_call(port, context, *args, source=None, timeout=5.0):
    """Handshakes, sends one command, returns the raw reply bytes (b"" if
    the server closed first). Raises ssl.SSLError / OSError when the
    handshake fails."""
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.settimeout(timeout)
    if source is not None:
        raw.bind((source, 0))
    raw.connect(("127.0.0.1", port))
    with context.wrap_socket(raw, server_hostname="localhost") as sock:
        sock.sendall(encode_command(*args))
        data = b""
        while not data.endswith(b"\r\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        return data


def tls_client(port, certs, cert="client", **kwargs):
    """A redis-py client over TLS (ssl=True)."""
    kwargs.setdefault("socket_timeout", IO_TIMEOUT_S)
    kwargs.setdefault("socket_connect_timeout", IO_TIMEOUT_S)
    if cert is not None:
        kwargs["ssl_certfile"] = certs[f"{cert}.crt"]
        kwargs["ssl_keyfile"] = certs[f"{cert}.key"]
    return redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=certs["ca.crt"],
                       **kwargs)


class TlsOnlyServer(BloomgateServer):
    """A server started with --port 0: ready once PING answers over TLS."""

    def __init__(self, certs, args=()):
        self.certs = certs
        self.tls_port = free_port()
        super().__init__([*tls_args(certs, self.tls_port), "--port", "0", *args])

    def _wait_until_ready(self):
        deadline = time.monotonic() + READY_DEADLINE_S
        context = client_context(self.certs)
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"bloomgate exited with code {self.proc.returncode}"
                                     f"\n--- server log ---\n{self.log()}")
            try:
                if tls_call(self.tls_port, context, "PING", timeout=1.0) == b"+PONG\r\n":
                    return
            except (OSError, ssl.SSLError):
                pass
            time.sleep(0.02)
        raise AssertionError(f"no PONG over TLS within {READY_DEADLINE_S}s"
                             f"\n--- server log ---\n{self.log()}")
