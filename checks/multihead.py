"""Visible checks for the chapter "Causal and multi-head attention".

Why one module: it mirrors one chapter notebook, whose three graded targets build on one
another (the causal lengths, the two head transposes, ``MultiHeadAttention``): the module's
checks swap in the checks' own transposes (:func:`own_transposes`), so that a wrong answer
to 7.2 costs nothing in 7.3, and :func:`diagnose` names the wrong step of 7.3.
checks/hidden/multihead.py imports the wrappers and contracts from here.
"""

import contextlib
import functools
import math

import torch
import torch.nn.functional as F

from checks._contract import (
    FLOAT64,
    expect_dropout_pattern,
    expect_gradient_values,
    expect_gradients,
    float64_device,
    invoke,
    module_tensors,
    on_meta,
    seeded,
)
from checks._core import check, random_lengths, random_tensor
from checks._errors import CheckError
from checks._expect import expect_choice, expect_close, expect_number, expect_tensor, shape_str
from checks._i18n import tr
from checks.scoring import build, describe_forward, describe_lengths


def reference_attention(X, lens):
    """Self-attention of X with itself (no projections), keys j < lens[b, t] only, in float64.

    Rows with no valid key get zero weights: the rule of masked_softmax.
    """
    x = X.detach().double()
    scores = x @ x.transpose(1, 2) / math.sqrt(x.shape[-1])  # (B, T, T)
    keep = torch.arange(x.shape[1], device=x.device) < lens[..., None].to(x.device)  # (B, T, T)
    weights = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
    weights = torch.where(keep.any(-1, keepdim=True), weights, torch.zeros_like(weights))
    return weights @ x


def causal_lengths(causal_valid_lens, X, valid_lens=None):
    """Call the student's function and check it returns int64 (B, T) lengths on X's device."""
    what = tr("causal_valid_lens(X of shape {X_shape}, {lens})").format(
        X_shape=shape_str(X.shape), lens=describe_lengths(valid_lens)
    )
    lens = invoke(causal_valid_lens, X, valid_lens, what=what, names=("X", "valid_lens"))
    expect_tensor(lens, "causal_valid_lens(X)", shape=X.shape[:2], device=X.device)
    if lens.dtype != torch.int64:
        raise CheckError(
            tr(
                "causal_valid_lens must return int64 lengths (the dtype of torch.arange and of "
                "valid_lens), got dtype {dtype}"
            ).format(dtype=lens.dtype)
        )
    return lens


def causal_contract(causal_valid_lens, device, *, B, T):
    """The lengths are made on X's device (checked on meta) and valid_lens is left unchanged."""
    X = torch.zeros(B, T, 3, device="meta")
    lens = random_lengths(B, low=0, high=T + 2, seed=T, device=device)
    lens[-1] = T + 2  # beyond T (and not to be clamped in place)
    for valid_lens in (None, lens.to("meta")):
        on_meta(
            lambda lens=valid_lens: causal_lengths(causal_valid_lens, X, lens),
            (
                tr("causal_valid_lens on the meta device (B={B}, T={T}, valid_lens None)")
                if valid_lens is None
                else tr("causal_valid_lens on the meta device (B={B}, T={T}, valid_lens given)")
            ).format(B=B, T=T),
        )
    causal_lengths(causal_valid_lens, torch.zeros(B, T, 3, device=device), lens)


def expect_causal(causal_valid_lens, X, valid_lens, name):
    """Changing x[t+1:] must leave y[:t+1] alone, and must change y[t+1] (a valid position)."""
    Y = reference_attention(X, causal_lengths(causal_valid_lens, X, valid_lens))
    T = X.shape[1]
    for t in range(T - 1):
        changed = X.clone()
        changed[:, t + 1 :] = random_tensor(*changed[:, t + 1 :].shape, seed=t, device=X.device) + 3
        Y2 = reference_attention(changed, causal_lengths(causal_valid_lens, changed, valid_lens))
        expect_close(
            Y2[:, : t + 1],
            Y[:, : t + 1],
            tr(
                "{name}: outputs at positions 0..{t} after changing the inputs from position "
                "{next} on (a causal layer must not see them)"
            ).format(name=name, t=t, next=t + 1),
            labels=("batch", "position"),
        )
    ells = [T] * X.shape[0] if valid_lens is None else valid_lens.tolist()
    for t in range(T):
        changed = X.clone()
        changed[:, t] += 3
        Y2 = reference_attention(changed, causal_lengths(causal_valid_lens, changed, valid_lens))
        for b, ell in enumerate(ells):
            if t < ell and torch.allclose(Y2[b, t], Y[b, t]):
                raise CheckError(
                    tr(
                        "{name}: output {t} of sequence {b} did not change when input {t} "
                        "changed: position {t} must see itself (query t gets t + 1 keys)"
                    ).format(name=name, t=t, b=b)
                )


@check("causal_valid_lens")
def small_example(causal_valid_lens, device):
    """For T = 4 and valid_lens [4, 2], are the lengths [[1, 2, 3, 4], [1, 2, 2, 2]]?"""
    X = torch.zeros(2, 4, 3, device=device)
    lens = causal_lengths(causal_valid_lens, X, torch.tensor([4, 2], device=device))
    expect_close(
        lens,
        torch.tensor([[1, 2, 3, 4], [1, 2, 2, 2]], device=device),
        tr("causal_valid_lens(X, [4, 2]) for T = 4"),
        labels=("sequence",),
        check_dtype=False,
    )
    lens = causal_lengths(causal_valid_lens, X)
    expect_close(
        lens,
        torch.tensor([[1, 2, 3, 4]] * 2, device=device),
        tr("causal_valid_lens(X) for T = 4, without valid_lens"),
        labels=("sequence",),
        check_dtype=False,
    )


@check("causal_valid_lens")
def causal_properties(causal_valid_lens, device):
    """Are the lengths int64 and made on X's device (not the CPU), with valid_lens left unchanged?"""
    causal_contract(causal_valid_lens, device, B=2, T=3)


@check("causal_valid_lens")
def perturbation(causal_valid_lens, device):
    """Does changing x[t+1:] leave the attention outputs y[:t+1] unchanged (T = 5, no padding)?"""
    X = random_tensor(2, 5, 4, seed=0, device=device)
    expect_causal(causal_valid_lens, X, None, tr("without padding"))


def heads_of(X, num_heads):
    """The (B*h, T, d/h) tensor whose entry b*h + i is head i of example b, by slicing."""
    B, T, d = X.shape
    hs = d // num_heads
    return torch.stack([X[b, :, i * hs : (i + 1) * hs] for b in range(B) for i in range(num_heads)])


def split(transpose_qkv, X, h):
    """transpose_qkv(X, h), with X left unchanged, checked for shape, dtype and device."""
    B, T, d = X.shape
    out = invoke(
        transpose_qkv,
        X,
        h,
        what=tr("transpose_qkv(X of shape {X_shape}, {h})").format(X_shape=shape_str(X.shape), h=h),
        names=("X",),
    )
    expect_tensor(
        out, f"transpose_qkv(X, {h})", shape=(B * h, T, d // h), dtype=X.dtype, device=X.device
    )
    return out


def merge(transpose_output, X, h):
    """transpose_output(X, h), with X left unchanged, checked for shape, dtype and device."""
    BH, T, hs = X.shape
    out = invoke(
        transpose_output,
        X,
        h,
        what=tr("transpose_output(X of shape {X_shape}, {h})").format(
            X_shape=shape_str(X.shape), h=h
        ),
        names=("X",),
    )
    shape = (BH // h, T, h * hs)
    expect_tensor(out, f"transpose_output(heads, {h})", shape=shape, dtype=X.dtype, device=X.device)
    return out


def transpose_contract(fn, device, *, B, T, d, h, inverse):
    """float64 and float16 kept, gradients flow back to X, X unchanged, nothing made on the CPU."""
    call = merge if inverse else split
    shape = (B * h, T, d // h) if inverse else (B, T, d)
    X = random_tensor(*shape, seed=B + T + d, device=device)
    expected = (
        X.reshape(B, h, T, d // h).permute(0, 2, 1, 3).reshape(B, T, d)
        if inverse
        else heads_of(X, h)
    )
    name = "transpose_output" if inverse else "transpose_qkv"
    dev64 = float64_device(device)
    for dtype, dev in ((torch.float64, dev64), (torch.float16, device)):
        out = call(fn, X.to(dev, dtype), h)
        expect_close(  # a rearrangement: every entry exactly one of X's
            out,
            expected.to(dev, dtype),
            tr("{name} of a {dtype} X of shape {shape}").format(
                name=name, dtype=dtype, shape=shape_str(shape)
            ),
            atol=0,
            rtol=0,
        )
    leaf = X.clone().requires_grad_()
    expect_gradients(call(fn, leaf, h), {"X": leaf}, f"{name}(X, {h})")
    expect_gradient_values(
        lambda X: call(fn, X, h),
        {"X": X.to(dev64, torch.float64)},
        tr("{what} in float64").format(what=f"{name}(X, {h})"),
    )
    Xm = X.to("meta")
    on_meta(lambda: call(fn, Xm, h), tr("{name} on the meta device").format(name=name))


@check("transpose_qkv")
def split_small(transpose_qkv, device):
    """For X of shape (2, 3, 6) and 3 heads, is entry b*3 + i the features 2i, 2i+1 of example b?"""
    X = torch.arange(36, dtype=torch.float32, device=device).reshape(2, 3, 6)
    expect_close(
        split(transpose_qkv, X, 3),
        heads_of(X, 3),
        "transpose_qkv(X, 3)",
        labels=("batch*head", "position"),
    )


@check("transpose_qkv")
def split_properties(transpose_qkv, device):
    """float64 and float16 kept, gradients flow to X, X unchanged, no tensor made on the CPU?"""
    transpose_contract(transpose_qkv, device, B=2, T=3, d=4, h=2, inverse=False)


@check("transpose_output")
def merge_properties(transpose_output, device):
    """float64 and float16 kept, gradients flow to X, X unchanged, no tensor made on the CPU?"""
    transpose_contract(transpose_output, device, B=2, T=3, d=4, h=2, inverse=True)


@check("transpose_output")
def merge_small(transpose_output, device):
    """Does transpose_output turn the (6, 3, 2) heads of a (2, 3, 6) tensor back into it?"""
    X = torch.arange(36, dtype=torch.float32, device=device).reshape(2, 3, 6)
    expect_close(
        merge(transpose_output, heads_of(X, 3), 3),
        X,
        "transpose_output(heads, 3)",
        labels=("batch", "position"),
    )


def check_split(X, h):
    """The checks' own transpose_qkv: (B, T, d) -> (B*h, T, d/h), entry b*h + i = head i of b."""
    B, T, d = X.shape
    return X.reshape(B, T, h, d // h).transpose(1, 2).reshape(B * h, T, d // h)


def check_merge(X, h):
    """The checks' own transpose_output: (B*h, T, d/h) -> (B, T, d)."""
    BH, T, hs = X.shape
    return X.reshape(BH // h, h, T, hs).transpose(1, 2).reshape(BH // h, T, h * hs)


@contextlib.contextmanager
def own_transposes(MultiHeadAttention):
    """Let the forward call the checks' transpose_qkv and transpose_output, not the student's.

    Exercise 7.3 is graded on its own: a wrong answer to 7.2 must not cost points here. The
    forward finds the two functions in its module's (the notebook's) globals; they are
    replaced for the length of the check and restored after.
    """
    from checks._remote import RemoteClass

    if isinstance(MultiHeadAttention, RemoteClass):  # the class runs in the grader's kernel
        names = {
            "transpose_qkv": f"{__name__}:check_split",
            "transpose_output": f"{__name__}:check_merge",
        }
        with MultiHeadAttention.patched_globals("forward", names):
            yield
        return
    forward = getattr(MultiHeadAttention, "forward", None)
    namespace = getattr(forward, "__globals__", None)
    if namespace is None:
        yield
        return
    saved = {
        name: namespace[name] for name in ("transpose_qkv", "transpose_output") if name in namespace
    }
    namespace["transpose_qkv"], namespace["transpose_output"] = check_split, check_merge
    try:
        yield
    finally:
        for name in ("transpose_qkv", "transpose_output"):
            namespace.pop(name, None)
        namespace.update(saved)


def independent(check_fn):
    """Run a MultiHeadAttention check with the checks' own transposes (see own_transposes)."""

    @functools.wraps(check_fn)
    def run(MultiHeadAttention, device):
        with own_transposes(MultiHeadAttention):
            return check_fn(MultiHeadAttention, device)

    return run


def mask_of(valid_lens, B, m, n, device):
    """(B, 1, m, n) boolean mask, True = attend, or None."""
    if valid_lens is None:
        return None
    lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(B, m)
    return (torch.arange(n, device=device) < lens[..., None].to(device))[:, None]


def split_heads_reference(module, queries, keys, values, valid_lens):
    """Multi-head attention from the module's weights, head by head, with SDPA (True = attend)."""
    h, d = module.num_heads, module.W_q.in_features
    with torch.no_grad():
        q, k, v = module.W_q(queries), module.W_k(keys), module.W_v(values)
        B, m, n = q.shape[0], q.shape[1], k.shape[1]
        # (B, T, d) -> (B, h, T, d/h), by slicing the features of each head
        q, k, v = (
            torch.stack([t[..., i * d // h : (i + 1) * d // h] for i in range(h)], 1)
            for t in (q, k, v)
        )
        mask = mask_of(valid_lens, B, m, n, q.device)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, h, m, d/h)
        return module.W_o(torch.cat(out.unbind(1), dim=-1))  # (B, m, d)


def stored_weights(module):
    """The weights the forward left in ``module.attention_weights``, or a CheckError."""
    try:
        weights = module.attention_weights
    except AttributeError as err:
        raise CheckError(
            tr(
                "reading attention_weights failed ({err}): the given property reads "
                "self.attention.attention_weights, so the forward must call self.attention "
                "(step 3), not F.scaled_dot_product_attention or its own softmax"
            ).format(err=err)
        ) from None
    if weights is None:
        raise CheckError(tr("forward must store the weights in self.attention_weights"))
    return weights


def mha(module, queries, keys, values, valid_lens=None):
    """Call the module; check the (B, m, d) output and (B, h, m, n) weights; inputs unchanged."""
    B, m, n, d = queries.shape[0], queries.shape[1], keys.shape[1], queries.shape[2]
    what = describe_forward(queries, keys, values, valid_lens)
    names = ("queries", "keys", "values", "valid_lens")
    out = invoke(
        module, queries, keys, values, valid_lens, what=what, names=names, under=type(module)
    )
    expect_tensor(
        out, tr("the output"), shape=(B, m, d), dtype=queries.dtype, device=queries.device
    )
    weights = stored_weights(module)
    shape = (B, module.num_heads, m, n)
    expect_tensor(
        weights, "attention_weights", shape=shape, dtype=queries.dtype, device=queries.device
    )
    return out, weights


def diagnose(module, queries, keys, values, valid_lens) -> str:
    """Which step of the forward goes wrong: compare its intermediates with the steps of 7.3."""
    from checks._remote import RemoteModule

    h = module.num_heads
    seen = {}
    if isinstance(module, RemoteModule):  # the module runs in the grader's kernel
        try:
            seen = module.recorded_call(
                {"attention": "after", "W_o": "before"}, queries, keys, values, valid_lens
            )
        except Exception:  # the failure itself was reported already; this only explains it
            return ""
        return explain(module, seen, h, valid_lens, queries, keys, values)

    def at_attention(_, args, kwargs, output):
        seen["attention"] = (list(args) + list(kwargs.values()), output)

    def at_output(_, args):
        seen["W_o"] = args[0]

    try:
        hooks = [
            module.attention.register_forward_hook(at_attention, with_kwargs=True),
            module.W_o.register_forward_pre_hook(at_output),
        ]
    except AttributeError:  # no self.attention or W_o: the given __init__ was changed
        return ""
    try:
        with torch.no_grad():
            module(queries, keys, values, valid_lens)
    except Exception:  # the failure itself was reported already; this only explains it
        return ""
    finally:
        for hook in hooks:
            hook.remove()
    return explain(module, seen, h, valid_lens, queries, keys, values)


def explain(module, seen, h, valid_lens, queries, keys, values) -> str:
    """The first step of 7.3 whose intermediate (``seen`` by hooks) is wrong, in words."""
    if "attention" not in seen:
        return tr("(the forward never called self.attention: step 3 must use it)")
    args, output = seen["attention"]
    with torch.no_grad():
        steps = [
            (
                "queries",
                module.W_q(queries),
                tr("W_q(queries) split into heads with transpose_qkv (step 1)"),
            ),
            (
                "keys",
                module.W_k(keys),
                tr("W_k(keys) split into heads with transpose_qkv (step 1)"),
            ),
            (
                "values",
                module.W_v(values),
                tr("W_v(values) split into heads with transpose_qkv (step 1)"),
            ),
        ]
        for i, (name, projected, rule) in enumerate(steps):
            given = args[i] if i < len(args) else None
            expected = check_split(projected, h)
            if (
                not isinstance(given, torch.Tensor)
                or given.shape != expected.shape
                or not torch.allclose(given.to(expected.dtype), expected, atol=1e-5, rtol=1e-4)
            ):
                return tr("(the {name} given to self.attention are not {rule})").format(
                    name=name, rule=rule
                )
        given_lens = args[3] if len(args) > 3 else None
        if valid_lens is not None:
            expected = torch.repeat_interleave(valid_lens, h, dim=0)
            if (
                not isinstance(given_lens, torch.Tensor)
                or given_lens.shape != expected.shape
                or not torch.equal(given_lens, expected)
            ):
                return tr(
                    "(the valid_lens given to self.attention are not "
                    "repeat_interleave(valid_lens, h, dim=0) (step 2))"
                )
        if "W_o" not in seen:
            return tr("(the forward never applied W_o (step 4))")
        if not torch.allclose(seen["W_o"], check_merge(output, h), atol=1e-5, rtol=1e-4):
            return tr("(the input of W_o is not the heads merged with transpose_output (step 4))")
    return tr(
        "(every intermediate step matches: is the output W_o of the merged heads, returned as "
        "it is?)"
    )


def expect_mha_close(module, out, expected, name, queries, keys, values, valid_lens, **kwargs):
    """expect_close, and on failure say which step of the forward is wrong."""
    try:
        expect_close(out, expected, name, labels=("batch", "query"), **kwargs)
    except CheckError as err:
        where = diagnose(module, queries, keys, values, valid_lens)
        raise CheckError(f"{err}\n      {where}" if where else str(err)) from None


def mha_contract(MultiHeadAttention, device, *, seed, d, h, B, m, n, bias, reference=None):
    """float64 in and out, gradients to every projection and input, nothing made on the CPU.

    Args:
        reference: ``reference(module64, q, k, v, lens)`` gives the float64 output.
    """
    make = lambda dev: build(MultiHeadAttention, d, h, 0.0, bias=bias, seed=seed, device=dev)  # noqa: E731
    dev64 = float64_device(device)
    q = random_tensor(B, m, d, seed=seed, device=device)
    k = random_tensor(B, n, d, seed=seed + 1, device=device)
    v = random_tensor(B, n, d, seed=seed + 2, device=device)
    lens = random_lengths(B, low=1, high=n, seed=seed, device=device)
    shapes = tr("d={d}, heads={h}, B={B}, m={m}, n={n}, bias={bias}").format(
        d=d, h=h, B=B, m=m, n=n, bias=bias
    )
    module = make(device)
    out32, _ = mha(module, q, k, v, lens)
    module64 = make(dev64).double()
    as64 = [t.to(dev64, torch.float64) for t in (q, k, v)] + [lens.to(dev64)]
    out64, _ = mha(module64, *as64)
    if reference is not None:
        expected, tol = reference(module64, *as64).to(dev64), FLOAT64
    else:
        expected, tol = out32.detach().to(dev64, torch.float64), dict(atol=1e-4, rtol=1e-3)
    expect_mha_close(
        module64,
        out64,
        expected,
        tr("the float64 output ({shapes})").format(shapes=shapes),
        *as64,
        **tol,
    )
    module = make(device)
    q, k, v = (t.clone() for t in (q, k, v))
    named = module_tensors(module, queries=q, keys=k, values=v)
    out, _ = mha(module, q, k, v, lens)
    expect_gradients(out, named, tr("the forward ({shapes})").format(shapes=shapes), seed=seed)
    expect_gradient_values(
        lambda queries, keys, values: mha(module64, queries, keys, values, as64[3])[0],
        dict(zip(("queries", "keys", "values"), as64[:3])),
        tr("the forward in float64 ({shapes})").format(shapes=shapes),
        seed=seed,
    )
    meta = make("meta")
    qm, km, vm, lm = (t.detach().to("meta") for t in (q, k, v, lens))
    on_meta(
        lambda: mha(meta, qm, km, vm, lm),
        tr("the forward on the meta device ({shapes})").format(shapes=shapes),
    )


def mha_dropout_contract(MultiHeadAttention, device, *, seed, B, m, p, h=2, n=8):
    """Dropout(p) on the weights in training, once. W_v = W_o = I and values made of identity
    blocks make the output the dropped weights of every head side by side."""
    d = h * n
    module = build(MultiHeadAttention, d, h, p, seed=seed, device=device)
    with torch.no_grad():
        for linear in (module.W_v, module.W_o):
            linear.weight.copy_(torch.eye(d))
    q = random_tensor(B, m, d, seed=seed, device=device)
    k = random_tensor(B, n, d, seed=seed + 1, device=device)
    v = torch.eye(n, device=device).repeat(1, h).expand(B, n, d).contiguous()
    lens = random_lengths(B, low=2, high=n, seed=seed, device=device)
    what = tr(
        "(p={p}, {h} heads, W_v = W_o = I and values = [I, I] so that the output is the weights)"
    ).format(p=p, h=h)
    heads = lambda out: out.reshape(B, m, h, n).transpose(1, 2)  # noqa: E731
    out, weights = mha(module.eval(), q, k, v, lens)
    expect_close(
        heads(out),
        weights,
        tr("the output in eval mode {what}: dropout must be off").format(what=what),
    )
    with seeded(seed):
        out, weights = mha(module.train(), q, k, v, lens)
    module.eval()
    expect_dropout_pattern(
        heads(out), weights, p, tr("the output in train mode {what}").format(what=what)
    )


@check("MultiHeadAttention")
@independent
def shapes_and_heads(MultiHeadAttention, device):
    """Does d = 8 with 2 heads give outputs (2, 3, 8), weights (2, 2, 3, 5), and match SDPA head by head, with keys ≠ values, for (B,) and (B, m) valid_lens?"""
    module = build(MultiHeadAttention, 8, 2, 0.0, device=device)
    q = random_tensor(2, 3, 8, seed=1, device=device)
    k = random_tensor(2, 5, 8, seed=2, device=device)
    v = random_tensor(2, 5, 8, seed=3, device=device)
    for lens in (
        torch.tensor([5, 2], device=device),
        torch.tensor([[5, 1, 3], [2, 4, 0]], device=device),
    ):
        out, _ = mha(module, q, k, v, lens)
        expected = split_heads_reference(module, q, k, v, lens)
        expect_mha_close(
            module,
            out,
            expected,
            tr("the output with valid_lens {lens} against SDPA per head").format(
                lens=lens.tolist()
            ),
            q,
            k,
            v,
            lens,
        )


@check("MultiHeadAttention")
@independent
def mha_properties(MultiHeadAttention, device):
    """float64 in and out, gradients to every projection and input, inputs unchanged, no tensor made on the CPU?"""
    mha_contract(MultiHeadAttention, device, seed=4, d=4, h=2, B=2, m=2, n=3, bias=True)


@check("MultiHeadAttention")
@independent
def mha_dropout_half(MultiHeadAttention, device):
    """With dropout=0.5 in training, is a fraction ≈ 0.5 of the weights zeroed and the rest doubled, once?"""
    mha_dropout_contract(MultiHeadAttention, device, seed=5, B=4, m=5, p=0.5)


# --------------------------------------------------------------------------
# Check your understanding: the visible groups check only the form of an answer.
# --------------------------------------------------------------------------


@check("quiz_7_1")
def quiz_causal_length_form(answer, device):
    """Is answer_7_1 a number?"""
    expect_number(answer(), "answer_7_1")


@check("quiz_7_2")
def quiz_head_entry_form(answer, device):
    """Is answer_7_2 one of the letters "a" to "d"?"""
    expect_choice(answer(), "abcd", "answer_7_2")


@check("quiz_7_3")
def quiz_parameters_form(answer, device):
    """Is answer_7_3 a number?"""
    expect_number(answer(), "answer_7_3")
