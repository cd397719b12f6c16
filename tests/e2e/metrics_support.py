"""Helpers for the metrics endpoint's tests: raw HTTP to the metrics port
(from a chosen source address), and the text format parsed back."""

import base64
import re
import socket

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$')


def http_get(port, path="/metrics", source="127.0.0.1", headers=(), method="GET",
             raw=None, timeout=10.0):
    """Sends one request to 127.0.0.1:port from `source`; returns
    (status, {header: value} lower-cased names, body as text). `raw` sends
    those bytes instead of a request built from the arguments."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.bind((source, 0))
        sock.connect(("127.0.0.1", port))
        if raw is None:
            lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", *headers, "", ""]
            raw = "\r\n".join(lines).encode()
        sock.sendall(raw)
        data = bytearray()
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            data += chunk
    finally:
        sock.close()
    head, _, body = bytes(data).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return status, fields, body.decode("utf-8")


def basic(user, password):
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return f"Authorization: Basic {token}"


def samples(text):
    """Exposition text -> {name{labels}: float}."""
    values = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match, f"not a sample line: {line!r}"
        values[(match.group(1) + (match.group(2) or ""))] = float(match.group(3))
    return values


def families(text):
    """Exposition text -> {family name: type} from its TYPE lines."""
    types = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
    return types


def filter_series(metric, key, type_name, **extra):
    labels = f'key="{key}",type="{type_name}"'
    for name, value in extra.items():
        labels += f',{name}="{value}"'
    return f"{metric}{{{labels}}}"
