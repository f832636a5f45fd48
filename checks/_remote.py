"""Checks whose verdict is computed outside the notebook: the student's code runs remotely.

At grading time the checks run in the grader's trusted process, which never runs a line
of student code, and the student's functions and modules run in the sandboxed kernel.
The checks are the same ones a student runs in the notebook: the grader hands each
check a *proxy* in place of the student's function, and every call of the proxy is
one request to the kernel, answered with data only.

The two sides:

- :func:`serve` runs in the kernel (the grader sends one cell that calls it). It
  answers requests from a Unix socket until the grader says ``bye``: call this object
  with these arguments, read this attribute, backpropagate this call.
- :class:`Session` runs in the grader. :meth:`Session.proxy` gives a stand-in for a
  named object of the notebook: :class:`RemoteFunction`, :class:`RemoteModule` (an
  ``nn.Module`` instance), or :class:`RemoteObject`.

What crosses the socket is ``torch.save`` of plain data (tensors, numbers, strings,
tuples, lists, dicts, None) and is read with ``torch.load(weights_only=True)``: no
object of the kernel's making is ever unpickled by the grader. Objects that are not
data (a module, a function, an array) stay in the kernel and are named by a handle.

What the proxies keep of a local call's behaviour:

- the values returned, the inputs after the call (a change in place shows up in the
  caller's tensors, as it would locally) and the global random state (sent before a call
  whenever the checks changed it, so that seeded construction and dropout draw what they
  would draw locally; never taken back, so the kernel cannot choose the checks' inputs);
- gradients: an output that depends on inputs (or parameters) that require grad comes
  back attached to them through :class:`_RemoteCall`, whose backward asks the kernel
  for the gradients of that call;
- a module's parameters and buffers: local mirrors, pushed to the kernel before a
  call when the checks changed them, fetched again when the kernel's changed;
- the checks' watches (:mod:`checks._contract`'s device and size watches): a call made
  inside one runs inside the same watch in the kernel.

A kernel that lies can only make *its own* calls return what it likes: the
references, the comparisons and the verdict are computed here.
"""

from __future__ import annotations

import contextlib
import io
import socket
import struct
import threading

import torch

from checks._core import CheckError, CrashInCodeUnderTest, describe_crash

MAX_FRAME = 512 * 2**20  # the largest message either side accepts
_HEADER = struct.Struct(">Q")


class RemoteError(CheckError):
    """The kernel stopped answering or answered something that is not the protocol."""


# --------------------------------------------------------------------------
# Frames: an 8-byte length and a torch.save payload, read with weights_only=True.
# --------------------------------------------------------------------------


def _send(sock: socket.socket, obj) -> None:
    buf = io.BytesIO()
    torch.save(obj, buf)
    data = buf.getvalue()
    sock.sendall(_HEADER.pack(len(data)) + data)


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise RemoteError(
                "the notebook stopped answering the grader's checks (its kernel was "
                "interrupted, ran out of a limit, or closed the connection)"
            )
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _recv(sock: socket.socket):
    (size,) = _HEADER.unpack(_recv_exactly(sock, _HEADER.size))
    if size > MAX_FRAME:
        raise RemoteError(f"the notebook sent {size:,} bytes at once, more than {MAX_FRAME:,}")
    data = _recv_exactly(sock, size)
    try:
        return torch.load(io.BytesIO(data), weights_only=True, map_location=None)
    except Exception as err:
        raise RemoteError(f"the notebook sent something that is not data: {err}") from None


# Encoded values. On the wire a value is data, or one of these tagged tuples:
#   ("__ref__", handle, kind, name)   an object that stays in the kernel
#   ("__dtype__", "float64")          a torch.dtype
#   ("__device__", "cuda:0")          a torch.device
#   ("__tuple__", [items])            a tuple (kept apart from lists)
#   ("__ellipsis__",)                 ... (an answer cell left as the notebook gives it)
_TAGS = ("__ref__", "__dtype__", "__device__", "__tuple__", "__ellipsis__")


def _dtype(name: str) -> torch.dtype:
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise RemoteError(f"unknown dtype {name!r}")
    return value


# --------------------------------------------------------------------------
# The kernel's side.
# --------------------------------------------------------------------------


class _Server:
    """The kernel's end: a table of objects by handle and the graphs of recent calls."""

    KEEP_CALLS = 64  # graphs kept for a backward (the oldest are dropped first)

    def __init__(self, targets: dict):
        self.objects: dict[int, object] = {}
        self.handles: dict[int, int] = {}
        self.calls: dict[int, tuple] = {}
        self.next_call = 0
        self.targets = targets
        self.patches: dict[int, list] = {}

    # ---- values

    def handle(self, obj) -> tuple:
        key = id(obj)
        if key not in self.handles:
            self.handles[key] = len(self.objects) + 1
            self.objects[self.handles[key]] = obj
        if isinstance(obj, torch.nn.Module):
            kind = "module"
        elif isinstance(obj, type):
            kind = "class"
        elif callable(obj):
            kind = "callable"
        else:
            kind = "object"
        name = getattr(obj, "__qualname__", None) or type(obj).__name__
        return ("__ref__", self.handles[key], kind, str(name))

    def encode(self, value):
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if value is ...:
            return ("__ellipsis__",)
        if isinstance(value, torch.Tensor):
            return value.detach()
        if isinstance(value, torch.dtype):
            return ("__dtype__", str(value).removeprefix("torch."))
        if isinstance(value, torch.device):
            return ("__device__", str(value))
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            return ("__tuple__", [self.encode(v) for v in value])
        if type(value) is list:
            return [self.encode(v) for v in value]
        if type(value) is dict and all(isinstance(k, str) for k in value):
            return {k: self.encode(v) for k, v in value.items()}
        return self.handle(value)

    def decode(self, value):
        if isinstance(value, tuple) and value and value[0] in _TAGS:
            tag = value[0]
            if tag == "__ref__":
                return self.objects[value[1]]
            if tag == "__dtype__":
                return _dtype(value[1])
            if tag == "__device__":
                return torch.device(value[1])
            if tag == "__tuple__":
                return tuple(self.decode(v) for v in value[1])
            if tag == "__ellipsis__":
                return ...
        if isinstance(value, list):
            return [self.decode(v) for v in value]
        if isinstance(value, dict):
            return {k: self.decode(v) for k, v in value.items()}
        return value

    # ---- module state

    @staticmethod
    def state_of(module: torch.nn.Module) -> dict:
        state = {}
        for name, p in module.named_parameters():
            state[name] = ("param", p.detach(), p.requires_grad)
        for name, b in module.named_buffers():
            state[name] = ("buffer", b.detach(), False)
        return state

    @staticmethod
    def fingerprint(module: torch.nn.Module) -> list:
        items = list(module.named_parameters()) + list(module.named_buffers())
        return [
            f"{n}:{id(t)}:{t._version}:{t.dtype}:{t.device}:{tuple(t.shape)}:{t.requires_grad}"
            for n, t in items
        ]

    @staticmethod
    def load_state(module: torch.nn.Module, state: dict) -> None:
        tensors = dict(module.named_parameters())
        tensors.update(module.named_buffers())
        with torch.no_grad():
            for name, (value, requires_grad) in state.items():
                t = tensors.get(name)
                if t is None:
                    continue
                if t.shape == value.shape and t.dtype == value.dtype and t.device == value.device:
                    t.copy_(value)
                else:
                    t.data = value.clone()
                if isinstance(t, torch.nn.Parameter):
                    t.requires_grad_(requires_grad)

    # ---- requests

    def answer(self, request: dict):
        op = request["op"]
        if op == "target":
            return self.encode(self.targets[request["name"]]())
        if op == "getattr":
            return self.encode(getattr(self.objects[request["ref"]], request["name"]))
        if op == "setattr":
            setattr(self.objects[request["ref"]], request["name"], self.decode(request["value"]))
            return None
        if op == "call":
            return self.call(request)
        if op == "backward":
            return self.backward(request)
        if op == "push_state":
            self.load_state(self.objects[request["ref"]], request["state"])
            return None
        if op == "state":
            module = self.objects[request["ref"]]
            return {"state": self.state_of(module)}
        if op == "record":
            return self.record(request)
        if op == "patch_globals":
            return self.patch_globals(request)
        if op == "unpatch":
            for namespace, saved, names in self.patches.pop(request["token"], []):
                for name in names:
                    namespace.pop(name, None)
                namespace.update(saved)
            return None
        raise RemoteError(f"unknown request {op!r}")

    def record(self, request: dict) -> dict:
        """Call a module with hooks on some submodules; return what they saw (see
        :meth:`RemoteModule.recorded_call`)."""
        module = self.objects[request["ref"]]
        seen, hooks = {}, []

        def after(name):
            def hook(_, args, kwargs, output):
                seen[name] = (list(args) + list(kwargs.values()), output)

            return hook

        def before(name):
            def hook(_, args):
                seen[name] = args[0]

            return hook

        try:
            for name, when in request["hooks"].items():
                sub = module.get_submodule(name)
                if when == "after":
                    hooks.append(sub.register_forward_hook(after(name), with_kwargs=True))
                else:
                    hooks.append(sub.register_forward_pre_hook(before(name)))
            with torch.no_grad():
                module(*self.decode(request["args"]))
        finally:
            for hook in hooks:
                hook.remove()
        return self.encode(seen)

    def patch_globals(self, request: dict) -> int:
        import importlib

        fn = getattr(self.objects[request["ref"]], request["attribute"], None)
        namespace = getattr(fn, "__globals__", None)
        token = len(self.patches) + 1
        if namespace is None:
            self.patches[token] = []
            return token
        names = list(request["names"])
        saved = {n: namespace[n] for n in names if n in namespace}
        for name, where in request["names"].items():
            module, attr = where.split(":")
            namespace[name] = getattr(importlib.import_module(module), attr)
        self.patches[token] = [(namespace, saved, names)]
        return token

    def call(self, request: dict):
        from checks import _contract

        target = self.objects[request["ref"]]
        module = self.objects.get(request.get("module"))
        if module is not None and request.get("state"):
            self.load_state(module, request["state"])
        before = self.fingerprint(module) if module is not None else None
        args, kwargs = self.decode(request["args"]), self.decode(request["kwargs"])
        inputs = [t for t in request["grad_inputs"]]
        grad = bool(request["grad"])
        unique = _tensors_of((args, kwargs))
        for index in inputs:
            unique[index].requires_grad_(True)
        rng = request.get("rng")  # [CPU state, CUDA states...] when the checks changed it
        if rng is not None:
            torch.set_rng_state(rng[0])
            if len(rng) > 1 and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(rng[1:])
        watches = [_contract.WATCHES[name]() for name in request.get("watches", [])]
        with contextlib.ExitStack() as stack:
            for watch in watches:
                stack.enter_context(watch)
            stack.enter_context(torch.set_grad_enabled(grad))
            out = target(*args, **kwargs)
        reply = {
            "out": self.encode(out),
            "inputs": [t.detach() for t in unique],
            "watches": [w.report() for w in watches],
        }
        flat = [t for t in _tensors_of(out) if isinstance(t, torch.Tensor)]
        reply["out_grad"] = [bool(t.requires_grad) for t in flat]
        if module is not None:  # did the call itself change the module's tensors?
            reply["changed"] = self.fingerprint(module) != before
        if grad:
            params = []
            if module is not None:
                params = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
            self.next_call += 1
            self.calls[self.next_call] = (flat, [unique[i] for i in inputs], params)
            while len(self.calls) > self.KEEP_CALLS:
                self.calls.pop(next(iter(self.calls)))
            reply["call"] = self.next_call
            reply["params"] = [n for n, _ in params]
        return reply

    def backward(self, request: dict):
        flat, inputs, params = self.calls[request["call"]]
        pairs = [
            (o, g) for o, g in zip(flat, request["grads"]) if g is not None and o.requires_grad
        ]
        leaves = inputs + [p for _, p in params]
        if not pairs or not leaves:
            return [None] * len(leaves)
        grads = torch.autograd.grad(
            [o for o, _ in pairs],
            leaves,
            [g for _, g in pairs],
            retain_graph=True,
            allow_unused=True,
        )
        return [None if g is None else g.detach() for g in grads]


def _tensors_of(value) -> list:
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


def _crash_report(err: BaseException, fn) -> tuple:
    text = describe_crash("", err, fn)  # " raised Type: message\n      at line ..."
    where = text.split("\n", 1)[1].strip() if "\n" in text else ""
    return (
        "__crash__",
        type(err).__name__,
        str(err),
        where,
        isinstance(err, NotImplementedError),
        isinstance(err, CheckError),
    )


def serve(path: str, targets: dict) -> None:
    """Answer the grader's requests on the Unix socket ``path`` until it says ``bye``.

    Args:
        path: the socket the grader listens on.
        targets: ``{name: thunk}``; ``thunk()`` gives the notebook's object of that name
            (a NameError then is the student's: the cell that defines it did not run).
    """
    server = _Server(targets)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    try:
        while True:
            request = _recv(sock)
            if request.get("op") == "bye":
                return
            try:
                reply = ("ok", server.answer(request))
            except Exception as err:  # the student's crash, reported as data
                fn = server.objects.get(request.get("ref"))
                reply = ("err", _crash_report(err, fn))
            _send(sock, reply)
    finally:
        sock.close()


# --------------------------------------------------------------------------
# The grader's side.
# --------------------------------------------------------------------------


class Session:
    """The grader's end of one connection to a kernel running :func:`serve`."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.proxies: dict[int, object] = {}
        self.lock = threading.Lock()
        self._rng_sent: list | None = None  # the random states the kernel last got

    # ---- one request

    def request(self, **request):
        try:
            with self.lock, _untracked():
                _send(self.sock, request)
                reply = _recv(self.sock)
        except OSError as err:  # a timeout, a closed or reset connection
            raise RemoteError(
                f"the notebook stopped answering the grader's checks ({type(err).__name__}: "
                f"{err or 'timed out'}): it was interrupted, ran out of a limit or hung"
            ) from None
        if not (isinstance(reply, tuple) and len(reply) == 2 and reply[0] in ("ok", "err")):
            raise RemoteError("the notebook answered something that is not the protocol")
        status, value = reply
        if status == "err":
            raise _crash_from(value)
        return value

    def close(self) -> None:
        with contextlib.suppress(OSError):
            with self.lock, _untracked():
                _send(self.sock, {"op": "bye"})
        self.sock.close()

    # ---- values

    def decode(self, value):
        if isinstance(value, torch.Tensor):
            return value
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, tuple) and value and value[0] in _TAGS:
            tag = value[0]
            if tag == "__ref__" and len(value) == 4:
                return self.proxy_for(int(value[1]), str(value[2]), str(value[3]))
            if tag == "__dtype__":
                return _dtype(str(value[1]))
            if tag == "__device__":
                return torch.device(str(value[1]))
            if tag == "__tuple__":
                return tuple(self.decode(v) for v in value[1])
            if tag == "__ellipsis__":
                return ...
            raise RemoteError(f"the notebook sent a malformed value {tag!r}")
        if isinstance(value, list):
            return [self.decode(v) for v in value]
        if isinstance(value, dict):
            return {str(k): self.decode(v) for k, v in value.items()}
        raise RemoteError(f"the notebook sent a value of type {type(value).__name__}")

    def encode(self, value, memo: dict):
        """``value`` for the wire; each distinct tensor once, in ``memo`` (id -> index)."""
        if isinstance(value, torch.Tensor):  # the same tensor twice is one tensor there too
            if id(value) not in memo:
                memo[id(value)] = (len(memo), value, value.detach())
            return memo[id(value)][2]
        if isinstance(value, _Proxy):
            return ("__ref__", value._ref)
        if isinstance(value, torch.dtype):
            return ("__dtype__", str(value).removeprefix("torch."))
        if isinstance(value, torch.device):
            return ("__device__", str(value))
        if isinstance(value, tuple):
            return ("__tuple__", [self.encode(v, memo) for v in value])
        if isinstance(value, list):
            return [self.encode(v, memo) for v in value]
        if isinstance(value, dict):
            return {k: self.encode(v, memo) for k, v in value.items()}
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if value is ...:
            return ("__ellipsis__",)
        raise TypeError(f"cannot send a {type(value).__name__} to the notebook")

    def proxy_for(self, ref: int, kind: str, name: str):
        if ref not in self.proxies:
            cls = {"module": RemoteModule, "class": RemoteClass, "callable": RemoteFunction}.get(
                kind, RemoteObject
            )
            # Named after the kernel's type, so that "got ndarray" reads as it would locally.
            label = name if kind == "object" else cls.__name__
            proxy_cls = type(label, (cls,), {}) if kind == "object" else cls
            self.proxies[ref] = proxy_cls(self, ref, name)
        return self.proxies[ref]

    def target(self, name: str):
        """The notebook's object ``name`` (as the test cell wrote it), as a proxy or data."""
        return self.decode(self.request(op="target", name=name))

    # ---- calls

    def call(self, ref: int, args: tuple, kwargs: dict, module: RemoteModule | None = None):
        memo: dict = {}
        wire_args = self.encode(tuple(args), memo)
        wire_kwargs = self.encode(dict(kwargs), memo)
        tensors = [t for _, t, _ in sorted(memo.values(), key=lambda item: item[0])]
        grad = torch.is_grad_enabled()
        grad_inputs = [
            i for i, t in enumerate(tensors) if grad and t.requires_grad and t.is_floating_point()
        ]
        if module is not None:
            module = module._root
        fetch = module is not None and (grad or module._mirror is not None)
        mirrors = module._mirrors() if fetch else None
        state = module._changed_state() if module is not None else None
        params = []
        if grad and mirrors is not None:
            params = [(n, p) for n, p in mirrors.items() if isinstance(p, torch.nn.Parameter)]
            params = [(n, p) for n, p in params if p.requires_grad]
        request = dict(
            op="call",
            ref=ref,
            args=wire_args,
            kwargs=wire_kwargs,
            grad=grad,
            grad_inputs=grad_inputs,
            module=module._ref if module is not None else None,
            state=state,
            rng=self._rng_if_changed(),
            watches=[w.NAME for w in _active_watches()],
        )
        if grad_inputs or (grad and params):
            box = {}
            leaves = [tensors[i] for i in grad_inputs] + [p for _, p in params]
            flat = _RemoteCall.apply(
                self, request, box, len(grad_inputs), [n for n, _ in params], *leaves
            )
            reply = box["reply"]
            out = _rebuild(self.decode(reply["out"]), list(flat))
        else:
            reply = self.request(**request)
            out = self.decode(reply["out"])
        self._after_call(reply, tensors, module)
        return out

    def _rng_if_changed(self):
        """The grader's random state if the checks changed it since the last call, else None.

        The kernel draws from the state it was last sent, so a seeded block of calls draws
        what it would draw locally (``build``'s seeded constructor, dropout under ``seeded``).
        The kernel's state never comes back: nothing the kernel does can choose the random
        inputs that the checks draw here.
        """
        with _untracked():
            state = [torch.get_rng_state()]
            if torch.cuda.is_available():
                state += torch.cuda.get_rng_state_all()
            sent = self._rng_sent
            if sent is not None and len(sent) == len(state):
                if all(torch.equal(a, b) for a, b in zip(sent, state)):
                    return None
            self._rng_sent = state
            return state

    def _after_call(self, reply: dict, tensors: list, module) -> None:
        with _untracked():
            after = reply.get("inputs") or []
            if len(after) != len(tensors):
                raise RemoteError("the notebook did not send back the inputs after the call")
            for before, now in zip(tensors, after):
                now = _tensor(now, "an input after the call")
                if before.device.type == "meta":
                    continue
                if before.dtype != now.dtype or before.shape != now.shape or not _same(before, now):
                    before.data = now.to(before.device)
            for watch, report in zip(_active_watches(), reply.get("watches") or []):
                watch.merge(report)
            if module is not None and reply.get("changed"):
                object.__setattr__(module._root, "_stale", True)


def _tensor(value, what: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise RemoteError(f"the notebook sent {type(value).__name__} for {what}")
    return value


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    a, b = a.detach(), b.detach().to(a.device)
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return bool((a == b).all())


def _rebuild(value, flat: list):
    """``value`` with its tensors, in order, replaced by those of ``flat``."""
    if isinstance(value, torch.Tensor):
        return flat.pop(0)
    if isinstance(value, tuple):
        return tuple(_rebuild(v, flat) for v in value)
    if isinstance(value, list):
        return [_rebuild(v, flat) for v in value]
    if isinstance(value, dict):
        return {k: _rebuild(v, flat) for k, v in value.items()}
    return value


class _RemoteCall(torch.autograd.Function):
    """A call made in the kernel, as one node of the grader's graph; backward asks the kernel."""

    @staticmethod
    def forward(ctx, session, request, box, n_inputs, param_names, *leaves):
        reply = session.request(**request)
        box["reply"] = reply
        outs = _tensors_of(session.decode(reply["out"]))
        flags = list(reply.get("out_grad") or [])
        if len(flags) != len(outs) or list(reply.get("params") or []) != param_names:
            raise RemoteError("the notebook's answer does not match its call")
        outs = [o.clone() for o in outs]
        ctx.session, ctx.call, ctx.n_leaves = session, reply["call"], len(leaves)
        ctx.differentiable = [f and o.is_floating_point() for f, o in zip(flags, outs)]
        ctx.mark_non_differentiable(*[o for o, d in zip(outs, ctx.differentiable) if not d])
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        wire = [
            g.detach() if (d and g is not None) else None for g, d in zip(grads, ctx.differentiable)
        ]
        result = ctx.session.request(op="backward", call=ctx.call, grads=wire)
        if not isinstance(result, list) or len(result) != ctx.n_leaves:
            raise RemoteError("the notebook sent back the wrong number of gradients")
        result = [None if g is None else _tensor(g, "a gradient") for g in result]
        return (None, None, None, None, None, *result)


def _crash_from(report) -> Exception:
    """The exception a crash in the kernel becomes here."""
    if not (isinstance(report, tuple) and len(report) == 6 and report[0] == "__crash__"):
        return RemoteError("the notebook reported an error in a form the grader does not know")
    _, type_name, message, where, not_implemented, check_error = report
    type_name, message, where = str(type_name), str(message), str(where)
    if check_error:  # a watch of the checks, running in the kernel, found the problem
        return CheckError(message)
    cls = RemoteNotImplementedError if not_implemented else CrashInCodeUnderTest
    return cls(type_name, message, where)


class RemoteNotImplementedError(CrashInCodeUnderTest, NotImplementedError):
    """``NotImplementedError`` raised in the kernel: an exercise not done yet."""


def _active_watches() -> list:
    from checks import _contract

    return list(_contract.ACTIVE_WATCHES)


@contextlib.contextmanager
def _untracked():
    """Run the proxy's own tensor work outside the checks' watches (they watch the student)."""
    with torch._C.DisableTorchFunction():
        yield


class _Proxy:
    """A stand-in for an object that stays in the kernel."""

    def __init__(self, session: Session, ref: int, name: str):
        object.__setattr__(self, "_session", session)
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "__qualname__", name)
        object.__setattr__(self, "__name__", name.rsplit(".", 1)[-1])

    def __getattr__(self, name: str):
        if name.startswith("__") or name in ("_render_traceback_", "_ipython_display_"):
            raise AttributeError(name)
        try:
            return self._session.decode(
                self._session.request(op="getattr", ref=self._ref, name=name)
            )
        except CrashInCodeUnderTest as err:
            if err.type_name == "AttributeError":
                raise AttributeError(err.message) from None
            raise

    def __setattr__(self, name: str, value) -> None:
        self._session.request(
            op="setattr", ref=self._ref, name=name, value=self._session.encode(value, {})
        )

    def __repr__(self) -> str:
        return f"<{self.__qualname__} in the notebook>"


class RemoteFunction(_Proxy):
    def __call__(self, *args, **kwargs):
        return self._session.call(self._ref, args, kwargs)


class RemoteObject(_Proxy):
    def __call__(self, *args, **kwargs):
        return self._session.call(self._ref, args, kwargs)


class RemoteClass(_Proxy):
    """A class of the notebook: calling it makes an instance in the kernel."""

    def __call__(self, *args, **kwargs):
        return self._session.call(self._ref, args, kwargs)

    @contextlib.contextmanager
    def patched_globals(self, attribute: str, names: dict):
        """Within the block, ``self.<attribute>`` sees ``names`` (``"module:attr"``) as globals."""
        token = self._session.request(
            op="patch_globals", ref=self._ref, attribute=attribute, names=dict(names)
        )
        try:
            yield
        finally:
            self._session.request(op="unpatch", token=token)


class RemoteModule(_Proxy):
    """An ``nn.Module`` instance of the notebook, with local mirrors of its parameters."""

    def __init__(self, session, ref, name):
        super().__init__(session, ref, name)
        object.__setattr__(self, "_mirror", None)  # name -> local tensor
        object.__setattr__(self, "_synced", {})  # name -> _version at the last sync
        object.__setattr__(self, "_stale", True)
        object.__setattr__(self, "_root", self)
        object.__setattr__(self, "_prefix", "")

    def __call__(self, *args, **kwargs):
        return self._session.call(self._ref, args, kwargs, module=self)

    def forward(self, *args, **kwargs):
        return self(*args, **kwargs)

    # ---- mirrors of the parameters and buffers

    def _mirrors(self) -> dict:
        if self._stale or self._mirror is None:
            state = self._session.request(op="state", ref=self._ref)["state"]
            mirror = dict(self._mirror or {})
            with _untracked():
                for name in list(mirror):
                    if name not in state:
                        del mirror[name]
                for name, (kind, value, requires_grad) in state.items():
                    value = _tensor(value, f"the module's tensor {name}").clone()
                    old = mirror.get(name)
                    if old is not None and isinstance(old, torch.nn.Parameter) == (kind == "param"):
                        old.data = value  # the same object: the checks may hold it
                        if kind == "param":
                            old.requires_grad_(bool(requires_grad))
                    elif kind == "param":
                        mirror[name] = torch.nn.Parameter(value, requires_grad=bool(requires_grad))
                    else:
                        mirror[name] = value
            object.__setattr__(self, "_mirror", mirror)
            object.__setattr__(self, "_synced", {n: t._version for n, t in mirror.items()})
            object.__setattr__(self, "_stale", False)
        return self._mirror

    def _changed_state(self) -> dict | None:
        """The mirrors the checks changed since the last sync, to be pushed before a call."""
        if self._mirror is None or self._stale:
            return None
        changed = {
            n: (t.detach(), bool(t.requires_grad))
            for n, t in self._mirror.items()
            if t._version != self._synced.get(n)
        }
        self._synced.update({n: self._mirror[n]._version for n in changed})
        return changed or None

    def named_parameters(self, prefix: str = "", recurse: bool = True):
        for name, t in self._mirrors().items():
            if isinstance(t, torch.nn.Parameter):
                yield prefix + name, t

    def parameters(self, recurse: bool = True):
        for _, p in self.named_parameters():
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True):
        for name, t in self._mirrors().items():
            if not isinstance(t, torch.nn.Parameter):
                yield prefix + name, t

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers():
            yield b

    def recorded_call(self, hooks: dict, *args) -> dict:
        """Call the module under ``torch.no_grad()`` with hooks on submodules, in the kernel.

        ``hooks`` maps a submodule's name to ``"after"`` (record its inputs and output as
        ``(args, output)``) or ``"before"`` (record its first input).
        """
        state = self._root._changed_state()
        if state:
            self._session.request(op="push_state", ref=self._root._ref, state=state)
        reply = self._session.request(
            op="record", ref=self._ref, hooks=dict(hooks), args=self._session.encode(args, {})
        )
        return self._session.decode(reply)

    def state_dict(self):
        return {n: t.detach() for n, t in self._mirrors().items()}

    def __getattr__(self, name: str):
        value = super().__getattr__(name)
        if isinstance(value, RemoteModule):  # a submodule: its mirrors are views of ours
            return _SubModule(self, name, value)
        if isinstance(value, torch.Tensor) and name in self._mirrors():
            return self._mirrors()[name]
        if isinstance(value, _Proxy) and name in (
            "train",
            "eval",
            "to",
            "double",
            "float",
            "half",
            "cuda",
            "cpu",
            "requires_grad_",
            "zero_grad",
            "load_state_dict",
            "apply",
        ):
            return _ModuleMethod(self, name, value)
        return value


class _SubModule(RemoteModule):
    """A submodule reached from a module proxy: its tensors are the root's mirrors."""

    def __init__(self, root: RemoteModule, path: str, remote: RemoteModule):
        _Proxy.__init__(self, root._session, remote._ref, remote.__qualname__)
        object.__setattr__(self, "_root", root._root)
        object.__setattr__(self, "_prefix", (getattr(root, "_prefix", "") or "") + path + ".")

    def _mirrors(self) -> dict:
        prefix = self._prefix
        return {
            n[len(prefix) :]: t for n, t in self._root._mirrors().items() if n.startswith(prefix)
        }

    def _changed_state(self):
        return None

    def __call__(self, *args, **kwargs):
        return self._session.call(self._ref, args, kwargs, module=self._root)


class _ModuleMethod:
    """A method of a module proxy that may change its parameters (train, to, double, ...)."""

    def __init__(self, module: RemoteModule, name: str, remote):
        self.module, self.name, self.remote = module, name, remote

    def __call__(self, *args, **kwargs):
        root = self.module._root
        state = root._changed_state()
        if state:  # the checks' changes first
            root._session.request(op="push_state", ref=root._ref, state=state)
        out = self.remote(*args, **kwargs)
        object.__setattr__(root, "_stale", True)
        if isinstance(out, _Proxy) and out._ref == self.module._ref:
            return self.module
        return out
