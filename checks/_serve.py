"""The kernel's side of the checks' protocol: serve the notebook's objects as data.

At grading time the grader sends the kernel one cell that calls :func:`serve`: it answers
requests on a Unix socket until the grader says ``bye`` (call this object with these
arguments, read this attribute, backpropagate this call, ...). Replies are data in the
format of :mod:`checks._wire`; objects that are not data (a module, a function, an array)
stay here and are named by a handle. The grader's side is :mod:`checks._remote`.

The same :class:`Server` answers, in the student's own process, the self-check's calls
(:func:`checks._remote.local`), so that a check sees the same thing wherever it runs.

Why one module: it is the one module a test cell has the kernel import
(``__import__('checks._serve').serve(...)``), and :class:`Server` is one table of objects by
handle that every request (call, attribute, backward, state, globals) reads and writes; it
answers, request for request, what :class:`checks._remote.Session` asks.
"""

from __future__ import annotations

import contextlib
import importlib
import socket

import torch

from checks import _watch, _wire
from checks._crash import crash_line, excerpt
from checks._errors import CheckError
from checks._expect import real_number
from checks._i18n import tr
from checks._wire import RemoteError, tensors_of

# Encoded values. On the wire a value is data, or one of these tagged tuples:
#   ("__ref__", handle, kind, name)   an object that stays in the kernel
#   ("__dtype__", "float64")          a torch.dtype
#   ("__device__", "cuda:0")          a torch.device
#   ("__tuple__", [items])            a tuple (kept apart from the tags)
#   ("__ellipsis__",)                 ... (an answer cell left as the notebook gives it)
TAGS = ("__ref__", "__dtype__", "__device__", "__tuple__", "__ellipsis__")


def dtype_named(name: str) -> torch.dtype:
    value = getattr(torch, name, None) if isinstance(name, str) else None
    if not isinstance(value, torch.dtype):
        raise RemoteError(tr("unknown dtype {name}").format(name=repr(str(name)[:40])))
    return value


class Server:
    """The kernel's end: a table of objects by handle and the graphs of recent calls."""

    KEEP_CALLS = 64  # graphs kept for a backward (the oldest are dropped first)

    def __init__(self, targets: dict):
        self.objects: dict[int, object] = {}
        self.handles: dict[int, int] = {}
        self.calls: dict[int, tuple] = {}
        self.next_call = 0
        self.targets = targets
        self.patches: dict[int, list] = {}
        self.watches: list = []  # the watches of the call being answered

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
        return ("__ref__", self.handles[key], kind, excerpt(str(name), 80, 1))

    def encode(self, value):
        if type(value).__module__ == "numpy":  # a NumPy scalar is the number it holds
            value = real_number(value)
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
        if isinstance(value, tuple) and value and value[0] in TAGS:
            tag = value[0]
            if tag == "__ref__":
                return self.objects[value[1]]
            if tag == "__dtype__":
                return dtype_named(value[1])
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
    def fingerprint(module: torch.nn.Module) -> dict:
        """Each parameter's identity, version and layout: what a change in place alters."""
        return {
            n: f"{id(t)}:{t._version}:{t.dtype}:{t.device}:{tuple(t.shape)}:{t.requires_grad}"
            for n, t in list(module.named_parameters()) + list(module.named_buffers())
        }

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

    def handle_request(self, request) -> tuple:
        """``("ok", value)`` or ``("err", crash report)``: the reply to one request."""
        try:
            if not isinstance(request, dict):
                raise RemoteError(tr("the grader sent a request that is not one"))
            reply = ("ok", self.answer(request))
        except Exception as err:  # the student's crash, reported as data
            fn = self.objects.get(request.get("ref")) if isinstance(request, dict) else None
            reply = ("err", self.crash_report(err, fn))
        finally:
            watches, self.watches = self.watches, []
        if reply[0] == "err":
            err = reply[1].pop("_err")
            reply[1]["watches"] = [w.report_crash(err) for w in watches]
        return reply

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
        raise RemoteError(tr("unknown request {name}").format(name=repr(str(op)[:40])))

    def record(self, request: dict) -> dict:
        """Call a module with hooks on some submodules; return what they saw (see
        :meth:`checks._remote.RemoteModule.recorded_call`)."""
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
        target = self.objects[request["ref"]]
        module = self.objects.get(request.get("module"))
        if module is not None and request.get("state"):
            self.load_state(module, request["state"])
        args, kwargs = self.decode(request["args"]), self.decode(request["kwargs"])
        inputs = list(request["grad_inputs"])
        grad = bool(request["grad"])
        unique = tensors_of((args, kwargs))
        for index in inputs:
            unique[index].requires_grad_(True)
        rng = request.get("rng")  # [CPU state, CUDA states...] when the checks changed it
        if rng is not None:
            torch.set_rng_state(rng[0])
            if len(rng) > 1 and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(rng[1:])
        self.watches = [_watch.WATCHES[name]() for name in request.get("watches", [])]
        # The module's tensors belong to the checks: a call that changes them in place is
        # undone (and reported), so that what the checks compute from them stays theirs.
        before = self.fingerprint(module) if module is not None else {}
        saved = self.state_of(module) if module is not None else {}
        saved = {n: (t.clone(), requires_grad) for n, (_, t, requires_grad) in saved.items()}
        changed = []
        try:
            with contextlib.ExitStack() as stack:
                for watch in self.watches:
                    stack.enter_context(watch)
                stack.enter_context(torch.set_grad_enabled(grad))
                out = target(*args, **kwargs)
        finally:
            if module is not None:
                after = self.fingerprint(module)
                changed = sorted(
                    n for n in set(before) | set(after) if before.get(n) != after.get(n)
                )
                if changed:
                    self.load_state(module, {n: saved[n] for n in changed if n in saved})
        reply = {
            "out": self.encode(out),
            "inputs": [t.detach() for t in unique],
            "watches": [w.report() for w in self.watches],
        }
        flat = [t for t in tensors_of(out) if isinstance(t, torch.Tensor)]
        reply["out_grad"] = [bool(t.requires_grad) for t in flat]
        if module is not None:
            reply["changed"] = changed
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
        if request["call"] not in self.calls:
            raise RemoteError(
                tr(
                    "the grader asked for the gradients of a call whose graph is gone (only the "
                    "last {count} calls keep theirs)"
                ).format(count=self.KEEP_CALLS)
            )
        flat, inputs, params = self.calls[request["call"]]
        pairs = [
            (o, g) for o, g in zip(flat, request["grads"]) if g is not None and o.requires_grad
        ]
        leaves = inputs + [p for _, p in params]
        if not pairs or not leaves:
            return [None] * len(leaves)
        grads = torch.autograd.grad(
            vector_jacobian_root(pairs), leaves, retain_graph=True, allow_unused=True
        )
        return [None if g is None else g.detach() for g in grads]

    @staticmethod
    def crash_report(err: BaseException, fn) -> dict:
        """What the grader needs of a crash: bounded text, and whether it was a stub or a watch."""
        where = crash_line(err, fn)
        return {
            "type": excerpt(type(err).__name__, 80, 1),
            "message": excerpt(str(err)),
            "where": excerpt(where, 300, 1),
            "not_implemented": isinstance(err, NotImplementedError),
            "check_error": isinstance(err, CheckError),
            "_err": err,  # for the watches, dropped before the reply is sent
        }


def vector_jacobian_root(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """One real scalar whose gradient with respect to each output ``o`` is exactly its ``g``.

    ``torch.autograd.grad(outputs, leaves, grad_outputs)`` gives the same vector-Jacobian
    products, but its first call imports ``torch.fx.experimental.symbolic_shapes`` (and with it
    ``torch._dynamo``): about 2.5 s of CPU in every graded kernel, for nothing. As torch does,
    an output whose shape is not its gradient's is an error (no silent broadcasting).
    """
    for i, (o, g) in enumerate(pairs):
        if o.is_complex() or o.shape != g.shape:
            raise RemoteError(
                tr(
                    "cannot take the gradient of output {index}: expected a real tensor of "
                    "shape {expected}, got {dtype} of shape {shape}"
                ).format(index=i, expected=tuple(g.shape), dtype=o.dtype, shape=tuple(o.shape))
            )
    total = None
    for o, g in pairs:
        term = (o * g.to(device=o.device, dtype=o.dtype)).sum()
        total = term if total is None else total + term
    return total


def serve(path: str, targets: dict) -> None:
    """Answer the grader's requests on the Unix socket ``path`` until it says ``bye``.

    Args:
        path: the socket the grader listens on.
        targets: ``{name: thunk}``; ``thunk()`` gives the notebook's object of that name
            (a NameError then is the student's: the cell that defines it did not run).
    """
    server = Server(targets)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    try:
        while True:
            request = _wire.recv(sock)
            if isinstance(request, dict) and request.get("op") == "bye":
                return
            _wire.send_payload(sock, payload_of(server.handle_request(request)))
    finally:
        sock.close()


def payload_of(reply: tuple) -> bytes:
    """The payload of ``reply``, or of the crash report that says why the codec cannot carry it."""
    try:
        return _wire.encode(reply)
    except (TypeError, ValueError, OverflowError, RecursionError) as err:
        report = Server.crash_report(err, None)
        report.pop("_err")
        report["message"] = excerpt(
            tr("the notebook's value cannot be sent to the grader: {error}").format(error=err)
        )
        report["watches"] = []
        return _wire.encode(("err", report))
