"""Redis's DUMP and RDB framing for the tests that move RedisBloom data in:
CRC-64/Jones (Redis's crc64.c), re-signing a payload or an RDB file after a
test edits it, and the RedisBloom fixtures of tests/data/redisbloom-sketches/.
"""

import base64
import json
import os

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                        "redisbloom-sketches")

_POLY = 0x95AC9329AC4BC9B5  # 0xad93d23594c935a9 reflected


def _table():
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _table()


def crc64(data, crc=0):
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA


def sign_dump(body, rdb_version=10):
    """A DUMP payload: `body` (type byte + value), the version, the CRC."""
    framed = body + rdb_version.to_bytes(2, "little")
    return framed + crc64(framed).to_bytes(8, "little")


def dump_body(payload):
    return payload[:-10]


def resign_rdb(data):
    """An RDB file whose last 8 bytes are the CRC-64 of everything before."""
    return data[:-8] + crc64(data[:-8]).to_bytes(8, "little")


def payloads():
    """name -> (module type, payload bytes, pttl when dumped, probe command,
    RedisBloom's reply on the RESTOREd copy)."""
    with open(os.path.join(FIXTURES, "dump-payloads.json")) as f:
        data = json.load(f)["payloads"]
    out = {}
    for name, p in data.items():
        out[name] = (p["module_type"], base64.b64decode(p["dump_base64"]),
                     p["pttl_ms_when_dumped"], p["answers_on_source"]["command"],
                     p["answers_after_restore_on_redisbloom"])
        assert p["answers_on_source"]["reply"] == p["answers_after_restore_on_redisbloom"]
    return out


def as_text(reply):
    if isinstance(reply, bytes):
        return reply.decode()
    if isinstance(reply, list):
        return [as_text(x) for x in reply]
    return reply


def probe(testcase, client, key, command, expected):
    """Runs the fixture's probe command against `key` and compares every
    element of the reply with RedisBloom's."""
    args = list(command)
    args[1] = key
    reply = as_text(client.execute_command(*args))
    testcase.assertEqual(reply, expected, f"{command[0]} on {key}")
