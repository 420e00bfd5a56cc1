"""PRODUCER_HASH: SelectMessageQueueByHash with String, Integer and Long args.

Every record's hashCode and index come from hashing.py in one vectorised call per arg type; the
selected queue is the list entry at that index. Hand-worked values check the arithmetic itself.
The Go hash selector's records are in test_conformance_producer_go.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from rmqsim.producers.hashing import java_hash_index, java_integer_hash, java_long_hash, java_string_hash
from rmqsim.producers.shares import hash_shares
from tests.conformance import records

HASH = records("PRODUCER_HASH")
HASH_OF = {"String": java_string_hash, "Integer": java_integer_hash, "Long": java_long_hash}


@pytest.mark.parametrize("arg_type", ["String", "Integer", "Long"])
def test_every_record(arg_type):
    recs = [r for r in HASH if r["arg_type"] == arg_type]
    args = [r["arg"] for r in recs]
    hash_code = HASH_OF[arg_type](pa.array(args, type=pa.string()) if arg_type == "String" else args)
    assert hash_code.dtype == np.int32
    assert hash_code.tolist() == [r["arg_hash_code"] for r in recs]
    index = java_hash_index(hash_code, np.array([r["queue_count"] for r in recs]))
    assert index.tolist() == [r["index"] for r in recs]
    for r, i in zip(recs, index.tolist()):
        assert len(r["queues"]) == r["queue_count"] and r["queues"][i] == r["selected"], r["case_id"]


def test_string_inputs_in_any_form():
    strings = [r["arg"] for r in HASH if r["arg_type"] == "String"]
    expected = java_string_hash(pa.array(strings))
    assert (java_string_hash(np.array(strings, dtype=object)) == expected).all()
    assert (java_string_hash(pa.chunked_array([strings[:7], strings[7:]])) == expected).all()
    assert (java_string_hash(pa.array(strings, type=pa.large_string()).slice(3)) == expected[3:]).all()


def test_hash_arithmetic_by_hand():
    # "" -> 0; "a" -> 97; "ab" -> 97*31 + 98 = 3105; U+1F600 is the pair D83D DE00:
    # 0xD83D*31 + 0xDE00 = 55357*31 + 56832 = 1772899; "polygenelubricants" wraps to exactly -2^31.
    keys = ["", "a", "ab", "\U0001f600", "polygenelubricants"]
    assert java_string_hash(keys).tolist() == [0, 97, 3105, 1772899, -(2**31)]
    # Long: (int)(v ^ (v >>> 32)): -1 -> 0xFFFFFFFF ^ 0xFFFFFFFF = 0; 2^32 -> 0x1_00000001 -> 1.
    assert java_long_hash([-1, 2**32, 5]).tolist() == [0, 1, 5]
    # Java's % keeps the dividend's sign: -2^31 % 3 = -2, abs 2; -7 % 4 = -3, abs 3.
    assert java_hash_index(np.array([-(2**31), -7, 7]), np.array([3, 4, 4])).tolist() == [2, 3, 3]


def test_hash_shares_with_a_key_mix():
    # List 0 (8 entries): keys "a" (weight 3) and "ab" (weight 1): 97 % 8 = 1, 3105 % 8 = 1, so entry 1
    # gets everything. List 1 (5 entries): the same keys: 97 % 5 = 2 -> 3/4, 3105 % 5 = 0 -> 1/4.
    # List 2 (4 entries): no keys -> 1/4 each.
    offsets = np.array([0, 8, 13, 17])
    key_list = np.array([0, 0, 1, 1])
    hash_code = java_string_hash(["a", "ab", "a", "ab"])
    key_index = java_hash_index(hash_code, np.diff(offsets)[key_list])
    shares = hash_shares(offsets, key_list, key_index, np.array([3.0, 1.0, 3.0, 1.0]))
    assert shares[:8].tolist() == [0, 1, 0, 0, 0, 0, 0, 0]
    assert shares[8:13].tolist() == [0.25, 0, 0.75, 0, 0]
    assert shares[13:].tolist() == [0.25] * 4


def test_hash_shares_over_every_string_record():
    """Each String record as its own list with its arg as the only key: all of the list's
    traffic goes to the record's index."""
    recs = [r for r in HASH if r["arg_type"] == "String"]
    sizes = np.array([r["queue_count"] for r in recs])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    key_index = java_hash_index(java_string_hash([r["arg"] for r in recs]), sizes)
    shares = hash_shares(offsets, np.arange(len(recs)), key_index)
    assert (shares[offsets[:-1] + np.array([r["index"] for r in recs])] == 1).all() and shares.sum() == len(
        recs
    )
