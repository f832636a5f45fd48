"""The wire format between the grader and the kernel: one codec, used by both sides.

A frame is an 8-byte big-endian length, then the payload: a 4-byte big-endian header
length, a JSON header, and the raw bytes of the tensors (and ``bytes`` values) it names,
one after the other. The header holds plain data only::

    {"value": <tree>, "tensors": [[blob, dtype, shape, stride, device], ...],
     "blobs": [n0, n1, ...]}

where a tree is a JSON ``null``, boolean, number, string or array (a list), or an object
with one reserved key:

- ``{"T": [...]}``: a tuple;
- ``{"D": {"key": ..., ...}}``: a dict with string keys;
- ``{"B": i}``: ``bytes``, blob ``i``;
- ``{"X": i}``: tensor ``i`` of the table, whose storage is its blob (``-1`` on the
  ``meta`` device, which has no data). A tensor that appears twice in a value is one
  entry, and one tensor again when it is read.

*Why not pickle, or ``torch.save``.* A pickle is a program: even restricted to plain data
(``weights_only=True``), its opcodes run one by one, and 300 MB of no-op opcodes cost
minutes of the reader's CPU. A header here is JSON of at most :data:`MAX_HEADER` bytes,
checked before a byte of it is parsed, and the tensors' bytes are copied, never
interpreted: reading a frame costs time linear in its size and bounded by the caps below,
whatever it holds. Every size is checked against the header before the bytes are read: a
frame whose blobs do not add up to its length is refused before its body is read.

What it keeps of a tensor: its dtype, shape, strides (views, transposes and expanded
tensors arrive as such) and device; not ``requires_grad`` (the protocol carries that
apart) nor storage shared between two tensors of one message.

Why one module: it is both sides of one format (:func:`encode` and :func:`send`;
:func:`parse_header`, :func:`decode` and :func:`recv`), and its caps (:data:`MAX_FRAME`,
:data:`MAX_HEADER`, :data:`MAX_DEPTH`, ...) bound the writer and the reader alike. The
grader and the kernel import this same file, so they cannot disagree on a frame.
"""

from __future__ import annotations

import json
import math
import socket
import struct

import torch

from checks._errors import CheckError
from checks._i18n import tr

MAX_FRAME = 512 * 2**20  # the largest message either side accepts, tensors included
MAX_HEADER = 4 * 2**20  # the largest JSON header: structure only, the tensors are apart
MAX_DEPTH = 64  # nesting of lists, tuples and dicts
MAX_DIMS = 16
_FRAME = struct.Struct(">Q")
_HEAD = struct.Struct(">I")

DTYPES = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.complex64,
        torch.complex128,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.uint8,
        torch.bool,
    )
}


class RemoteError(CheckError):
    """The kernel stopped answering or answered something that is not the protocol."""


# --------------------------------------------------------------------------
# Encoding: plain data to bytes.
# --------------------------------------------------------------------------


def _region(t: torch.Tensor) -> int:
    """How many elements of storage the tensor reaches, from its first one (0 if empty)."""
    if t.numel() == 0:
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))


def _tensor_bytes(t: torch.Tensor) -> bytes:
    """The bytes of the storage ``t`` reaches, from its first element, on the CPU."""
    n = _region(t)
    flat = torch.as_strided(t, (n,), (1,), t.storage_offset()).cpu()
    out = bytearray(n * t.element_size())
    if out:
        torch.frombuffer(out, dtype=torch.uint8).copy_(flat.view(torch.uint8))
    return bytes(out)


def encode(value) -> bytes:
    """The payload of a frame holding ``value``; ``TypeError`` for what is not plain data."""
    blobs: list[bytes] = []
    tensors: list[list] = []
    seen: dict[int, int] = {}  # id of a tensor -> its index in the table

    def tree(v, depth):
        if depth > MAX_DEPTH:
            raise TypeError(f"a value nested more than {MAX_DEPTH} deep cannot be sent")
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, int):
            return int(v)
        if isinstance(v, float):
            return float(v)
        if isinstance(v, torch.Tensor):
            if id(v) in seen:
                return {"X": seen[id(v)]}
            t = v.detach()
            if t.layout != torch.strided or t.is_quantized:
                raise TypeError(f"a tensor with layout {t.layout} cannot be sent")
            dtype = str(t.dtype).removeprefix("torch.")
            if dtype not in DTYPES:
                raise TypeError(f"a tensor of dtype {t.dtype} cannot be sent")
            index = -1
            if t.device.type != "meta":
                blobs.append(_tensor_bytes(t))
                index = len(blobs) - 1
            tensors.append([index, dtype, list(t.shape), list(t.stride()), str(t.device)])
            seen[id(v)] = len(tensors) - 1
            return {"X": seen[id(v)]}
        if isinstance(v, (bytes, bytearray)):
            blobs.append(bytes(v))
            return {"B": len(blobs) - 1}
        if type(v) is list:
            return [tree(x, depth + 1) for x in v]
        if type(v) is tuple:
            return {"T": [tree(x, depth + 1) for x in v]}
        if type(v) is dict:
            if not all(type(k) is str for k in v):
                raise TypeError("a dict with keys that are not strings cannot be sent")
            return {"D": {k: tree(x, depth + 1) for k, x in v.items()}}
        raise TypeError(f"a {type(v).__name__} cannot be sent")

    value = tree(value, 0)
    header = json.dumps(
        {"value": value, "tensors": tensors, "blobs": [len(b) for b in blobs]},
        separators=(",", ":"),
    ).encode("ascii")
    if len(header) > MAX_HEADER:
        raise TypeError(
            f"the value's structure takes {len(header):,} bytes, more than {MAX_HEADER:,}"
        )
    return b"".join([_HEAD.pack(len(header)), header, *blobs])


# --------------------------------------------------------------------------
# Decoding: bytes to plain data, every size checked before it is used.
# --------------------------------------------------------------------------


def _refuse(what: str) -> RemoteError:
    # ``what``, a detail of the frame only a forged protocol sends, stays as it is
    return RemoteError(tr("the notebook sent something that is not data: {what}").format(what=what))


def _allowed_device(name) -> torch.device:
    if not isinstance(name, str) or len(name) > 16:
        raise _refuse("a tensor on an unknown device")
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError):
        raise _refuse(f"a tensor on an unknown device {name!r}") from None
    if device.type in ("cpu", "meta"):
        return device
    if device.type == "cuda" and (device.index or 0) < torch.cuda.device_count():
        return device
    mps = getattr(torch.backends, "mps", None)
    if device.type == "mps" and mps is not None and mps.is_available():
        return device
    raise _refuse(f"a tensor on a device this machine does not have ({name!r})")


def _sizes(values, what: str) -> list[int]:
    if not isinstance(values, list) or len(values) > MAX_DIMS:
        raise _refuse(f"a tensor {what} that is not a list of at most {MAX_DIMS} numbers")
    for v in values:
        if type(v) is not int or not 0 <= v <= 2**48:
            raise _refuse(f"a tensor {what} with the entry {str(v)[:20]}")
    return values


class _Reader:
    def __init__(self, header: dict, body: memoryview, offsets: list[int]):
        self.body, self.offsets = body, offsets
        self.lengths = header["blobs"]
        self.specs = header["tensors"]
        self.made: dict[int, torch.Tensor] = {}
        self.logical = 0  # bytes of every tensor as its shape says, expanded ones included

    def blob(self, index) -> memoryview:
        if type(index) is not int or not 0 <= index < len(self.lengths):
            raise _refuse("a reference to a blob that is not in the frame")
        start = self.offsets[index]
        return self.body[start : start + self.lengths[index]]

    def tensor(self, spec) -> torch.Tensor:
        if not (isinstance(spec, list) and len(spec) == 5):
            raise _refuse("a malformed tensor")
        index, dtype_name, shape, stride, device_name = spec
        dtype = DTYPES.get(dtype_name) if isinstance(dtype_name, str) else None
        if dtype is None:
            raise _refuse(f"a tensor of an unknown dtype {str(dtype_name)[:20]!r}")
        shape, stride = _sizes(shape, "shape"), _sizes(stride, "stride")
        if len(shape) != len(stride):
            raise _refuse("a tensor whose shape and strides differ in length")
        device = _allowed_device(device_name)
        itemsize = torch.empty((), dtype=dtype).element_size()
        numel = math.prod(shape)
        self.logical += numel * itemsize
        if self.logical > MAX_FRAME:
            raise _refuse(f"tensors of more than {MAX_FRAME:,} bytes in all")
        region = 0 if numel == 0 else 1 + sum((s - 1) * st for s, st in zip(shape, stride))
        if device.type == "meta":
            if index != -1:
                raise _refuse("data for a tensor on the meta device")
            return torch.empty_strided(shape, stride, dtype=dtype, device="meta")
        data = self.blob(index)
        if len(data) != region * itemsize:
            raise _refuse(
                f"a tensor of shape {tuple(shape)} with {len(data)} bytes, expected "
                f"{region * itemsize}"
            )
        if region == 0:
            return torch.empty_strided(shape, stride, dtype=dtype, device=device)
        storage = torch.frombuffer(bytearray(data), dtype=torch.uint8).untyped_storage()
        # set_, not a view: the tensor is a base of its own, as torch.load would give it
        out = torch.empty(0, dtype=dtype).set_(storage, 0, shape, stride)
        return out.to(device)

    def value(self, v, depth: int):
        if depth > MAX_DEPTH:
            raise _refuse(f"a value nested more than {MAX_DEPTH} deep")
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, list):
            return [self.value(x, depth + 1) for x in v]
        if isinstance(v, dict) and len(v) == 1:
            ((tag, body),) = v.items()
            if tag == "T" and isinstance(body, list):
                return tuple(self.value(x, depth + 1) for x in body)
            if tag == "D" and isinstance(body, dict):
                return {k: self.value(x, depth + 1) for k, x in body.items()}
            if tag == "B":
                return bytes(self.blob(body))
            if tag == "X":
                if type(body) is not int or not 0 <= body < len(self.specs):
                    raise _refuse("a reference to a tensor that is not in the frame")
                if body not in self.made:
                    self.made[body] = self.tensor(self.specs[body])
                return self.made[body]
        raise _refuse("a value of an unknown form")


def _constant(name: str) -> float:
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[name]


def parse_header(payload_size: int, header_bytes: bytes) -> tuple[dict, list[int]]:
    """The header, and the offset of each blob in the body; checks that the sizes add up."""
    try:
        header = json.loads(header_bytes.decode("ascii"), parse_constant=_constant)
    except (ValueError, RecursionError, UnicodeDecodeError):
        raise _refuse("a header that is not JSON") from None
    if not (isinstance(header, dict) and set(header) == {"value", "tensors", "blobs"}):
        raise _refuse("a header without its value, tensors and blobs")
    if not isinstance(header["tensors"], list):
        raise _refuse("a tensor table that is not a list")
    lengths = header["blobs"]
    if not isinstance(lengths, list) or not all(
        type(n) is int and 0 <= n <= MAX_FRAME for n in lengths
    ):
        raise _refuse("blob lengths that are not sizes")
    offsets, total = [], 0
    for n in lengths:
        offsets.append(total)
        total += n
    if _HEAD.size + len(header_bytes) + total != payload_size:
        raise _refuse(
            f"a frame of {payload_size:,} bytes whose header accounts for "
            f"{_HEAD.size + len(header_bytes) + total:,}"
        )
    return header, offsets


def decode(payload: bytes):
    """The value a payload holds (see :func:`encode`); :class:`RemoteError` if it is not one."""
    view = memoryview(payload)
    if len(view) < _HEAD.size:
        raise _refuse("a frame too short to hold a header")
    (size,) = _HEAD.unpack(view[: _HEAD.size])
    if size > MAX_HEADER or _HEAD.size + size > len(view):
        raise _refuse(f"a header of {size:,} bytes")
    header, offsets = parse_header(len(view), bytes(view[_HEAD.size : _HEAD.size + size]))
    body = view[_HEAD.size + size :]
    return _Reader(header, body, offsets).value(header["value"], 0)


# --------------------------------------------------------------------------
# Frames on a socket.
# --------------------------------------------------------------------------


def send(sock: socket.socket, value) -> None:
    """Send ``value`` as one frame."""
    send_payload(sock, encode(value))


def send_payload(sock: socket.socket, payload: bytes) -> None:
    """Send a payload made by :func:`encode` as one frame."""
    sock.sendall(_FRAME.pack(len(payload)) + payload)


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise RemoteError(
                tr(
                    "the notebook stopped answering the grader's checks (its kernel was "
                    "interrupted, ran out of a limit, or closed the connection)"
                )
            )
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv(sock: socket.socket):
    """Read one frame and return its value.

    The frame's length, then its header's, are checked before anything else is read, and
    the header's blob sizes before the body is: a frame that would not add up is refused
    after at most ``MAX_HEADER`` bytes, however long it claims to be.
    """
    (size,) = _FRAME.unpack(_recv_exactly(sock, _FRAME.size))
    if size > MAX_FRAME:
        raise RemoteError(
            tr("the notebook sent {size} bytes at once, more than {limit}").format(
                size=f"{size:,}", limit=f"{MAX_FRAME:,}"
            )
        )
    if size < _HEAD.size:
        raise _refuse("a frame too short to hold a header")
    (head,) = _HEAD.unpack(_recv_exactly(sock, _HEAD.size))
    if head > MAX_HEADER or _HEAD.size + head > size:
        raise _refuse(f"a header of {head:,} bytes")
    header_bytes = _recv_exactly(sock, head)
    header, offsets = parse_header(size, header_bytes)
    body = _recv_exactly(sock, size - _HEAD.size - head)
    return _Reader(header, memoryview(body), offsets).value(header["value"], 0)


def tensors_of(value) -> list:
    """The distinct tensors in a nested value, in order of first appearance."""
    seen, out = set(), []

    def walk(v):
        if isinstance(v, torch.Tensor):
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        elif isinstance(v, (list, tuple)):
            for item in v:
                walk(item)
        elif isinstance(v, dict):
            for item in v.values():
                walk(item)

    walk(value)
    return out
