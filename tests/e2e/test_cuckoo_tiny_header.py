"""CF.LOADCHUNK of RedisBloom headers at the edges of its format: a filter of
one bucket of one slot (RedisBloom loads it and inserts into it, every item's
two buckets being that one), and a header claiming 2^32 one-slot buckets,
which max-filter-memory refuses before anything is allocated
(docs/redisbloom.md, "Cuckoo filters from RedisBloom")."""

import struct
import unittest

from harness import RespError, ServerTestCase


def redisbloom_header(items, buckets, filters, bucket_size, max_iterations=20, expansion=1,
                      deletes=0):
    # RedisBloom's packed CFHeader: numItems, numBuckets, numDeletes, numFilters (u64),
    # bucketSize, maxIterations, expansion (u16), little-endian: 38 bytes.
    return struct.pack("<QQQQHHH", items, buckets, deletes, filters, bucket_size,
                       max_iterations, expansion)


def info(c, key):
    reply = c.call("CF.INFO", key)
    return {k.decode() if isinstance(k, bytes) else str(k): v
            for k, v in zip(reply[0::2], reply[1::2])}


class TinyRedisBloomCuckooTest(ServerTestCase):

    def test_a_one_bucket_filter_loads_and_takes_inserts(self):
        c = self.raw()
        self.assertEqual(c.call("CF.LOADCHUNK", "tiny", 1, redisbloom_header(0, 1, 1, 1)), "OK")
        # RedisBloom's data chunk for sub-filter 0: iterator = offset + length + 1.
        self.assertEqual(c.call("CF.LOADCHUNK", "tiny", 2, b"\x00"), "OK")
        self.assertEqual((info(c, "tiny")["Number of buckets"],
                          info(c, "tiny")["Number of filters"]), (1, 1))
        self.assertEqual(c.call("CF.ADD", "tiny", "a"), 1)
        # The one slot is taken: the next item grows a sub-filter of one bucket.
        self.assertEqual(c.call("CF.INSERT", "tiny", "ITEMS", "b", "c"), [1, 1])
        self.assertEqual(info(c, "tiny")["Number of filters"], 3)
        self.assertEqual(c.call("CF.MEXISTS", "tiny", "a", "b", "c"), [1, 1, 1])
        # RedisBloom counts an item in both of its buckets, here one and the same.
        self.assertEqual(c.call("CF.COUNT", "tiny", "a"), 2)
        # Its snapshot form loads again (DUMP/RESTORE goes through the same codec).
        self.assertEqual(c.call("RESTORE", "copy", 0, c.call("DUMP", "tiny")), "OK")
        self.assertEqual(c.call("CF.MEXISTS", "copy", "a", "b", "c"), [1, 1, 1])
        self.assertEqual(info(c, "copy"), info(c, "tiny"))

    def test_a_header_of_2_to_the_32_one_slot_buckets_is_refused_by_the_cap(self):
        # 4 GiB of slots and the sub-filter's record: over max-filter-memory's 4 GiB
        # default. A 38-byte header must not make the server commit 4 GiB; an
        # operator who has such a filter raises max-filter-memory first.
        c = self.raw()
        header = redisbloom_header(0, 1 << 32, 1, 1)
        self.assertEqual(c.call("CF.LOADCHUNK", "huge", 1, header),
                         RespError("Couldn't create filter!"))
        self.assertEqual(c.call("EXISTS", "huge"), 0)
        used = int(dict(line.split(":", 1) for line in c.call("INFO", "memory").decode()
                        .split("\r\n") if ":" in line)["used_memory"])
        self.assertLess(used, 1 << 30, "nothing of the 4 GiB was reserved or allocated")


if __name__ == "__main__":
    unittest.main()
