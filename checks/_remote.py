"""Checks whose verdict is computed outside the notebook: the grader's side of the protocol.

At grading time the checks run in the grader's trusted process, which never runs a line
of student code, and the student's functions and modules run in the sandboxed kernel.
The checks are the same ones a student runs in the notebook: the grader hands each
check a *proxy* in place of the student's function, and every call of the proxy is
one request to the kernel, answered with data only.

The protocol has three modules:

- :mod:`checks._wire`: the one codec both sides use (a JSON header and raw tensor bytes,
  never pickle);
- :mod:`checks._serve`: the kernel's side (:func:`checks._serve.serve` answers requests on
  a Unix socket: call this object with these arguments, read this attribute, backpropagate
  this call);
- this module: :class:`Session` and its proxies, :class:`RemoteFunction`,
  :class:`RemoteModule` (an ``nn.Module`` instance) and :class:`RemoteObject`.

The self-check in the notebook, and pytest on the solutions, go through the same proxies:
:func:`local` serves a function of this process with the kernel's own server, in this
process (:class:`InProcess`). So a check sees the same behaviour wherever it runs.

What the proxies keep of a local call's behaviour, and what they do not:

- the values returned; the inputs are **never** changed: the code under test works on
  copies, and a change it makes in place to one is recorded
  (:func:`checks._mutation.note_mutation`) for the checks that test it, ``invoke`` and
  ``expect_unchanged``; every reference a check computes from its inputs, before or after
  the call, is computed from what it made;
- the global random state (sent before a call whenever the checks changed it, so that
  seeded construction and dropout draw what they would draw locally; never taken back, so
  the kernel cannot choose the checks' inputs);
- gradients: an output that depends on inputs (or parameters) that require grad comes
  back attached to them through :class:`_RemoteCall`, whose backward asks the kernel
  for the gradients of that call;
- a module's parameters and buffers: local mirrors, pushed to the kernel before a
  call when the checks changed them, fetched again when a method (``train``, ``double``)
  changed the kernel's. A forward that changes them is undone by the server and recorded,
  like a change of an input;
- the checks' watches (:mod:`checks._watch`: the device and size watches): a call made
  inside one runs inside the same watch in the kernel.

A kernel that lies can only make *its own* calls return what it likes: the
references, the comparisons and the verdict are computed here.

Why one module: every proxy (function, class, module, submodule, method) is a view of one
:class:`Session`, whose handles, random-state push and graph of remote calls they all go
through, and :class:`InProcess`, the self-check's transport, must behave exactly as the
socket does; together they are what lets a check see the same thing wherever it runs.
"""

from __future__ import annotations

import contextlib
import socket
import threading

import torch

from checks import _watch, _wire
from checks._crash import excerpt
from checks._errors import CheckError, CrashInCodeUnderTest
from checks._i18n import tr
from checks._mutation import compared, note_mutation
from checks._serve import TAGS, Server, dtype_named, payload_of
from checks._wire import MAX_FRAME, RemoteError, tensors_of

__all__ = [
    "MAX_FRAME",
    "InProcess",
    "RemoteClass",
    "RemoteError",
    "RemoteFunction",
    "RemoteModule",
    "RemoteObject",
    "Session",
    "is_proxy",
    "local",
]


# --------------------------------------------------------------------------
# Transports: a socket to the kernel, or the kernel's server in this process.
# --------------------------------------------------------------------------


class SocketTransport:
    """Requests and replies as frames on a connected socket."""

    def __init__(self, sock: socket.socket):
        self.sock = sock

    def exchange(self, request):
        with _untracked():
            _wire.send(self.sock, request)
            return _wire.recv(self.sock)

    def close(self) -> None:
        with contextlib.suppress(OSError), _untracked():
            _wire.send(self.sock, {"op": "bye"})
        self.sock.close()


class InProcess:
    """The kernel's :class:`checks._serve.Server`, in this process: the self-check's kernel.

    Each request and reply goes through the codec, as on a socket, so the server works on
    copies and the checks get copies; the server runs outside the checks' watches (it enters
    its own, as in a kernel) and with its own random state.
    """

    def __init__(self, targets: dict):
        self.server = Server(targets)
        self.rng: list | None = None  # the "kernel's" random state between requests

    # The requests that run the code under test where it may draw random numbers.
    DRAWS = ("call", "record")

    def exchange(self, request):
        with _untracked():
            payload = _wire.encode(request)
        # as in a kernel: gradients on (a call says when it wants them off), no watch but its
        # own, and for a call its own random state
        rng = self._own_random_state() if request.get("op") in self.DRAWS else _nothing()
        with _without_function_modes(), rng, torch.enable_grad():
            reply = self.server.handle_request(_wire.decode(payload))
            payload = payload_of(reply)
        with _untracked():
            return _wire.decode(payload)

    @contextlib.contextmanager
    def _own_random_state(self):
        cuda = torch.cuda.is_available()
        mine = [torch.get_rng_state()] + (torch.cuda.get_rng_state_all() if cuda else [])
        if self.rng is not None:
            torch.set_rng_state(self.rng[0])
            if cuda and len(self.rng) > 1:
                torch.cuda.set_rng_state_all(self.rng[1:])
        try:
            yield
        finally:
            self.rng = [torch.get_rng_state()] + (torch.cuda.get_rng_state_all() if cuda else [])
            torch.set_rng_state(mine[0])
            if cuda and len(mine) > 1:
                torch.cuda.set_rng_state_all(mine[1:])

    def close(self) -> None:
        self.server = None


@contextlib.contextmanager
def _nothing():
    yield


@contextlib.contextmanager
def _without_function_modes():
    """Run the block with no TorchFunctionMode active (the checks' watches are the grader's)."""
    if not hasattr(torch._C, "_len_torch_function_stack"):  # an older PyTorch: watch twice
        yield
        return
    stack = []
    while torch._C._len_torch_function_stack() > 0:
        stack.append(torch._C._pop_torch_function_stack())
    try:
        yield
    finally:
        while torch._C._len_torch_function_stack() > 0:  # one the code under test left behind
            torch._C._pop_torch_function_stack()
        for mode in reversed(stack):
            torch._C._push_on_torch_function_stack(mode)


def local(fn) -> tuple[Session, object]:
    """A session whose kernel is this process, and a proxy of ``fn`` served by it."""
    session = Session(InProcess({"fn": lambda: fn}))
    return session, session.target("fn")


def is_proxy(obj) -> bool:
    """Whether ``obj`` is a stand-in for an object of a kernel (or of :func:`local`)."""
    return isinstance(obj, _Proxy)


# --------------------------------------------------------------------------
# The grader's side.
# --------------------------------------------------------------------------


class Session:
    """The grader's end of one connection to a kernel running :func:`checks._serve.serve`.

    Args:
        transport: a connected socket, or a transport (:class:`InProcess`).
    """

    def __init__(self, transport):
        if isinstance(transport, socket.socket):
            transport = SocketTransport(transport)
        self.transport = transport
        self.proxies: dict[int, object] = {}
        self.lock = threading.Lock()
        self._rng_sent: list | None = None  # the random states the kernel last got

    # ---- one request

    def request(self, **request):
        try:
            with self.lock:
                reply = self.transport.exchange(request)
        except OSError as err:  # a timeout, a closed or reset connection
            raise RemoteError(
                tr(
                    "the notebook stopped answering the grader's checks ({error}): it was "
                    "interrupted, ran out of a limit or hung"
                ).format(error=f"{type(err).__name__}: {err or 'timed out'}")
            ) from None
        if not (isinstance(reply, tuple) and len(reply) == 2 and reply[0] in ("ok", "err")):
            raise RemoteError(tr("the notebook answered something that is not the protocol"))
        status, value = reply
        if status == "err":
            raise _crash_from(value)
        return value

    def close(self) -> None:
        with self.lock:
            self.transport.close()

    # ---- values

    def decode(self, value):
        if isinstance(value, torch.Tensor):
            return value
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, tuple) and value and value[0] in TAGS:
            tag = value[0]
            if tag == "__ref__" and len(value) == 4:
                return self.proxy_for(int(value[1]), str(value[2]), str(value[3]))
            if tag == "__dtype__":
                return dtype_named(str(value[1]))
            if tag == "__device__":
                return torch.device(str(value[1]))
            if tag == "__tuple__":
                return tuple(self.decode(v) for v in value[1])
            if tag == "__ellipsis__":
                return ...
            raise RemoteError(tr("the notebook sent a malformed value {tag}").format(tag=repr(tag)))
        if isinstance(value, list):
            return [self.decode(v) for v in value]
        if isinstance(value, dict):
            return {str(k): self.decode(v) for k, v in value.items()}
        raise RemoteError(
            tr("the notebook sent a value of type {type}").format(type=type(value).__name__)
        )

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
        try:
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
        except (CrashInCodeUnderTest, CheckError) as err:  # what the watches saw, until the crash
            for watch, report in zip(_active_watches(), getattr(err, "watch_reports", ())):
                watch.merge(report)
                if isinstance(report, dict) and report.get("data_dependent"):
                    err.data_dependent = excerpt(report["data_dependent"], 40, 1)
            raise
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
        """Record what the call changed in place; the checks' own tensors stay as they were.

        The kernel worked on copies and sends them back after the call: a copy that differs
        from the checks' tensor is a change in place, noted for ``invoke`` and
        ``expect_unchanged`` (:func:`checks._mutation.note_mutation`). Nothing is copied back, so
        a reference computed from that tensor after the call sees what the checks made.
        """
        with _untracked():
            after = reply.get("inputs") or []
            if not isinstance(after, list) or len(after) != len(tensors):
                raise RemoteError(tr("the notebook did not send back the inputs after the call"))
            for before, now in zip(tensors, after):
                change = compared(before, _tensor(now, tr("an input after the call")))
                if change is not None:
                    note_mutation(before, change)
            for watch, report in zip(_active_watches(), reply.get("watches") or []):
                watch.merge(report)
            changed = reply.get("changed")
            if module is not None and changed:  # the server has put them back already
                names = [excerpt(n, 80, 1) for n in changed if isinstance(n, str)][:8]
                note_mutation(module._root, ("parameters", names))


def _tensor(value, what: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise RemoteError(
            tr("the notebook sent {type} for {what}").format(
                type=excerpt(type(value).__name__, 40, 1), what=what
            )
        )
    return value


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
        outs = tensors_of(session.decode(reply["out"]))
        flags = list(reply.get("out_grad") or [])
        if len(flags) != len(outs) or list(reply.get("params") or []) != param_names:
            raise RemoteError(tr("the notebook's answer does not match its call"))
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
            raise RemoteError(tr("the notebook sent back the wrong number of gradients"))
        result = [None if g is None else _tensor(g, tr("a gradient")) for g in result]
        return (None, None, None, None, None, *result)


_CRASH_KEYS = {"type", "message", "where", "not_implemented", "check_error", "watches"}


def _crash_from(report) -> Exception:
    """The exception a crash in the kernel becomes here, its text bounded and sanitized.

    It carries what the kernel's watches saw until the crash (``watch_reports``), for
    :meth:`Session.call` to merge.
    """
    if not (isinstance(report, dict) and set(report) == _CRASH_KEYS):
        return RemoteError(tr("the notebook reported an error in a form the grader does not know"))
    type_name = excerpt(report["type"], 80, 1)
    message, where = excerpt(report["message"]), excerpt(report["where"], 300, 1)
    if report["check_error"] is True:  # a watch of the checks, running in the kernel, found it
        err = CheckError(message)
    else:
        cls = (
            RemoteNotImplementedError if report["not_implemented"] is True else CrashInCodeUnderTest
        )
        err = cls(type_name, message, where)
    watches = report["watches"]
    err.watch_reports = watches if isinstance(watches, list) else []
    return err


class RemoteNotImplementedError(CrashInCodeUnderTest, NotImplementedError):
    """``NotImplementedError`` raised in the kernel: an exercise not done yet."""


def _active_watches() -> list:
    return list(_watch.ACTIVE_WATCHES)


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
                    value = _tensor(
                        value, tr("the module's tensor {name}").format(name=name)
                    ).clone()
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
