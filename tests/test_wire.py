"""Does the wire format carry plain data exactly, and refuse everything else cheaply?

Both sides of the checks' protocol (the grader and the kernel) read each other's frames
with :mod:`checks._wire`. The kernel is hostile: whatever it sends, reading a frame must
cost time bounded by the frame's size and the caps, raise only ``RemoteError``, and never
run anything.
"""

import contextlib
import io
import json
import math
import os
import pickle
import random
import socket
import struct
import threading

import pytest
import torch

from checks._wire import MAX_FRAME, MAX_HEADER, RemoteError, decode, encode, recv, send


def roundtrip(value):
    return decode(encode(value))


def same(a, b) -> bool:
    """Equal values of equal types, tensors by dtype, shape, strides, device and bits."""
    if isinstance(a, torch.Tensor):
        return (
            isinstance(b, torch.Tensor)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and a.stride() == b.stride()
            and a.device == b.device
            and (a.device.type == "meta" or torch.equal(a, b))
        )
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


PLAIN = [
    None,
    True,
    0,
    -(2**62),
    1.5,
    -0.0,
    math.inf,
    -math.inf,
    math.nan,
    "",
    "masked_softmax ✓ 注意力 \u202e",
    b"\x00\xff raw",
    [],
    (),
    {},
    [1, (2, [3, {"a": (None,)}])],
    ("__ref__", 3, "module", "MultiHeadAttention"),
    {"op": "call", "args": ("__tuple__", [1, 2.0]), "grad_inputs": [0]},
]


@pytest.mark.parametrize("value", PLAIN, ids=repr)
def test_plain_data_comes_back_as_it_was(value):
    """Do None, bools, ints, floats (NaN, ±inf, -0.0), strings, bytes, lists, tuples and
    string-keyed dicts come back equal and of the same type?"""
    assert same(roundtrip(value), value)


TENSORS = {
    "float32": torch.randn(2, 3),
    "float64": torch.randn(4, dtype=torch.float64),
    "float16": torch.randn(3).half(),
    "bfloat16": torch.randn(3).bfloat16(),
    "int64": torch.arange(6).reshape(2, 3),
    "bool": torch.tensor([True, False, True]),
    "uint8": torch.arange(5, dtype=torch.uint8),
    "complex64": torch.randn(2, dtype=torch.complex64),
    "scalar": torch.tensor(2.5),
    "empty": torch.zeros(0, 3),
    "transposed": torch.randn(3, 4).t(),
    "expanded": torch.randn(1, 4).expand(5, 4),
    "sliced with a gap": torch.randn(4, 6)[1:, ::2],
    "meta": torch.empty(2, 5, 3, device="meta"),
    "meta transposed": torch.empty(2, 5, device="meta").t(),
}


@pytest.mark.parametrize("name", TENSORS)
def test_tensors_keep_dtype_shape_strides_device_and_bits(name):
    """Does a tensor come back with its dtype, shape, strides, device and exact bits, detached,
    as a tensor of its own (not a view that autograd would refuse to change in place)?"""
    t = TENSORS[name]
    back = roundtrip(t)
    assert same(back, t.detach())
    assert not back.requires_grad and back._base is None


def test_nan_payloads_and_negative_zero_keep_their_bits():
    """Are float bits kept exactly (NaN, -0.0, subnormals), not just values?"""
    t = torch.tensor([math.nan, -0.0, 5e-324, 1e308], dtype=torch.float64)
    back = roundtrip(t)
    assert torch.equal(back.view(torch.int64), t.view(torch.int64))


def test_a_tensor_twice_is_one_tensor_on_the_other_side():
    """Does a value that holds the same tensor twice come back holding one tensor twice?"""
    t = torch.randn(3)
    a, b, c = roundtrip((t, [t], torch.randn(3)))
    assert a is b[0] and a is not c


def test_what_is_not_plain_data_cannot_be_sent():
    """Are objects, dicts with other keys and sparse tensors refused when encoding?"""
    for value in (object(), {1: 2}, torch.nn.Linear(2, 2), torch.randn(2, 2).to_sparse(), {1.5}):
        with pytest.raises(TypeError):
            encode(value)


def frame(payload: bytes) -> bytes:
    return struct.pack(">Q", len(payload)) + payload


def received(data: bytes):
    a, b = socket.socketpair()

    def write():
        with contextlib.suppress(OSError):  # the reader may refuse, and close, before the end
            a.sendall(data)
        a.close()

    try:
        threading.Thread(target=write, daemon=True).start()
        b.settimeout(30)
        return recv(b)
    finally:
        b.close()


def test_frames_go_over_a_socket():
    """Does a value sent on a socket come back from recv?"""
    a, b = socket.socketpair()
    value = {"out": torch.randn(2, 3).t(), "inputs": [torch.ones(2)], "watches": [None]}
    send(a, value)
    assert same(recv(b), value)
    a.close()
    b.close()


def test_a_pickle_is_not_data():
    """Is a torch.save (pickle) payload refused, and is nothing in it run?"""

    class Evil:
        def __reduce__(self):
            return (os.system, ("touch /tmp/attention-evil-wire",))

    buf = io.BytesIO()
    torch.save({"out": Evil()}, buf, pickle_module=pickle)
    with pytest.raises(RemoteError, match="not data"):
        received(frame(buf.getvalue()))
    assert not os.path.exists("/tmp/attention-evil-wire")


def header_frame(header: dict, body: bytes = b"") -> bytes:
    text = json.dumps(header).encode()
    return frame(struct.pack(">I", len(text)) + text + body)


MALFORMED = {
    "not JSON": frame(struct.pack(">I", 3) + b"{{{"),
    "header longer than the frame": frame(struct.pack(">I", 100) + b"{}"),
    "no tensors table": header_frame({"value": 1, "blobs": []}),
    "an unknown tag": header_frame({"value": {"Z": 1}, "tensors": [], "blobs": []}),
    "two keys in a tag": header_frame({"value": {"T": [], "D": {}}, "tensors": [], "blobs": []}),
    "a tensor that is not in the table": header_frame(
        {"value": {"X": 0}, "tensors": [], "blobs": []}
    ),
    "a blob that is not in the frame": header_frame(
        {"value": {"B": 3}, "tensors": [], "blobs": []}
    ),
    "an unknown dtype": header_frame(
        {"value": {"X": 0}, "tensors": [[0, "object", [1], [1], "cpu"]], "blobs": [8]}, bytes(8)
    ),
    "a device this machine lacks": header_frame(
        {"value": {"X": 0}, "tensors": [[0, "float32", [1], [1], "cuda:7"]], "blobs": [4]},
        bytes(4),
    ),
    "too few bytes for the shape": header_frame(
        {"value": {"X": 0}, "tensors": [[0, "float32", [4], [1], "cpu"]], "blobs": [8]}, bytes(8)
    ),
    "a negative stride": header_frame(
        {"value": {"X": 0}, "tensors": [[0, "float32", [2], [-1], "cpu"]], "blobs": [8]}, bytes(8)
    ),
    "data for a meta tensor": header_frame(
        {"value": {"X": 0}, "tensors": [[0, "float32", [1], [1], "meta"]], "blobs": [4]}, bytes(4)
    ),
    "an expanded tensor of a terabyte": header_frame(
        {"value": {"X": 0}, "tensors": [[0, "float32", [2**40], [0], "cpu"]], "blobs": [4]},
        bytes(4),
    ),
    "blobs that do not add up": header_frame(
        {"value": None, "tensors": [], "blobs": [10]}, bytes(4)
    ),
    "a number of 5000 digits": frame(
        struct.pack(">I", 5040)
        + b'{"value":'
        + b"9" * 5000
        + b',"tensors":[],"blobs":[]'
        + b" " * 6
        + b"}"
    ),
    "nesting 100 000 deep": frame(
        struct.pack(">I", 200_030)
        + b'{"value":'
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}"
        + b" " * 20
    ),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_frames_are_refused(name):
    """Does each malformed frame raise RemoteError, whatever is wrong with it?"""
    with pytest.raises(RemoteError):
        received(MALFORMED[name])


def test_random_corruption_only_ever_raises_remote_error():
    """Fuzz: does a valid frame with random bytes changed, cut or added either decode or raise
    RemoteError (never another exception)?"""
    rng = random.Random(0)
    value = {
        "out": ("__tuple__", [torch.randn(3, 2).t(), torch.arange(4)]),
        "inputs": [torch.empty(2, device="meta"), b"xyz"],
        "watches": [None, [3, [2, 2]]],
        "call": 7,
    }
    good = encode(value)
    for _ in range(400):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            what = rng.random()
            i = rng.randrange(len(data))
            if what < 0.6:
                data[i] = rng.randrange(256)
            elif what < 0.8:
                del data[i : i + rng.randint(1, 8)]
            else:
                data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        try:
            decode(bytes(data))
        except RemoteError:
            pass


def refused_before_the_body(prefix: bytes, claimed: int):
    """Send only ``prefix`` of a frame that claims ``claimed`` bytes, keep the socket open, and
    return what recv raised: it must not wait for the rest (the receiver's timeout would)."""
    a, b = socket.socketpair()
    try:
        a.sendall(struct.pack(">Q", claimed) + prefix)
        b.settimeout(20)
        with pytest.raises(RemoteError) as caught:
            recv(b)
        return caught.value
    finally:
        a.close()
        b.close()


def test_an_oversized_frame_is_refused_before_it_is_read():
    """Is a frame over MAX_FRAME refused from its length alone?"""
    assert "more than" in str(refused_before_the_body(b"", MAX_FRAME + 1))


def test_thirty_million_objects_are_refused_from_the_header_length():
    """A header for 30 million objects is over MAX_HEADER: is it refused from its length,
    before a byte of it is read or parsed?"""
    claimed_header = len("[0,") * 30_000_000
    assert claimed_header > MAX_HEADER
    error = refused_before_the_body(struct.pack(">I", claimed_header), MAX_FRAME - 1)
    assert "header" in str(error)


def test_a_frame_full_of_padding_costs_only_its_header():
    """300 MB of padding after a small header (the pickle no-op attack's equivalent): the
    header's blob sizes do not account for it, so is the frame refused after reading the
    header alone, without reading (let alone decoding) the padding?"""
    text = json.dumps({"value": [1, 2], "tensors": [], "blobs": []}).encode()
    prefix = struct.pack(">I", len(text)) + text
    error = refused_before_the_body(prefix, 300 * 2**20)
    assert "accounts for" in str(error)


def test_padding_inside_the_header_is_bounded_by_its_cap():
    """Whitespace padding inside the JSON header counts against MAX_HEADER: is a header of
    MAX_HEADER bytes of padding read (it is only JSON whitespace), and one byte more refused?"""
    body = b'{"value":1,"tensors":[],"blobs":[]}'
    text = body[:-1] + b" " * (MAX_HEADER - len(body)) + b"}"
    assert received(frame(struct.pack(">I", len(text)) + text)) == 1
    text = body[:-1] + b" " * (MAX_HEADER + 1 - len(body)) + b"}"
    with pytest.raises(RemoteError, match="header"):
        received(frame(struct.pack(">I", len(text)) + text))


def test_a_value_too_large_to_describe_cannot_be_sent():
    """Is a value whose structure alone is over MAX_HEADER refused by the sender's encoder?"""
    with pytest.raises(TypeError, match="more than"):
        encode(list(range(MAX_HEADER // 2)))
