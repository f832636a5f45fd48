"""From the chapter "A small language model, and how it is served": tokenize, detokenize, Vocab, TinyLM, sampling_probs, check_cache_step, attend_with_cache, KVCache, cached_step, generate, beam_search.

Generated from book/kv_cache.ipynb by ``python -m autograder export``. Do not edit this
file: edit the ``#@save kv_cache`` cells of the notebook, then run ``make export``.
"""

# Thirteen of Aesop's fables in the translation of George Fyler Townsend (London: Routledge,
# 1867), in the public domain; typed for this course (see book/data/README.md).
FABLES = """The Wolf and the Lamb

A Wolf, meeting with a Lamb astray from the fold, resolved not to lay violent hands on him, but to find some plea to justify to the Lamb the Wolf's right to eat him. He thus addressed him: "Sirrah, last year you grossly insulted me." "Indeed," bleated the Lamb in a mournful tone of voice, "I was not then born." Then said the Wolf, "You feed in my pasture." "No, good sir," replied the Lamb, "I have not yet tasted grass." Again said the Wolf, "You drink of my well." "No," exclaimed the Lamb, "I never yet drank water, for as yet my mother's milk is both food and drink to me." Upon which the Wolf seized him and ate him up, saying, "Well! I won't remain supperless, even though you refute every one of my imputations." The tyrant will always find a pretext for his tyranny.

The Fox and the Grapes

A famished Fox saw some clusters of ripe black grapes hanging from a trellised vine. She resorted to all her tricks to get at them, but wearied herself in vain, for she could not reach them. At last she turned away, hiding her disappointment and saying: "The Grapes are sour, and not ripe as I thought."

The Lion and the Mouse

A Lion was awakened from sleep by a Mouse running over his face. Rising up angrily, he caught him and was about to kill him, when the Mouse piteously entreated, saying: "If you would only spare my life, I would be sure to repay your kindness." The Lion laughed and let him go. It happened shortly after this that the Lion was caught by some hunters, who bound him by strong ropes to the ground. The Mouse, recognizing his roar, came and gnawed the rope with his teeth, and set him free, exclaiming: "You ridiculed the idea of my ever being able to help you, not expecting to receive from me any repayment of your favor; now you know that it is possible for even a Mouse to confer benefits on a Lion."

The Hare and the Tortoise

A Hare one day ridiculed the short feet and slow pace of the Tortoise, who replied, laughing: "Though you be swift as the wind, I will beat you in a race." The Hare, believing her assertion to be simply impossible, assented to the proposal; and they agreed that the Fox should choose the course and fix the goal. On the day appointed for the race the two started together. The Tortoise never for a moment stopped, but went on with a slow but steady pace straight to the end of the course. The Hare, lying down by the wayside, fell fast asleep. At last waking up, and moving as fast as he could, he saw the Tortoise had reached the goal, and was comfortably dozing after her fatigue. Slow but steady wins the race.

The North Wind and the Sun

The North Wind and the Sun disputed as to which was the most powerful, and agreed that he should be declared the victor who could first strip a wayfaring man of his clothes. The North Wind first tried his power and blew with all his might, but the keener his blasts, the closer the Traveler wrapped his cloak around him, until at last, resigning all hope of victory, the Wind called upon the Sun to see what he could do. The Sun suddenly shone out with all his warmth. The Traveler no sooner felt his genial rays than he took off one garment after another, and at last, fairly overcome with heat, undressed and bathed in a stream that lay in his path. Persuasion is better than Force.

The Shepherd's Boy and the Wolf

A Shepherd-boy, who watched a flock of sheep near a village, brought out the villagers three or four times by crying out, "Wolf! Wolf!" and when his neighbors came to help him, laughed at them for their pains. The Wolf, however, did truly come at last. The Shepherd-boy, now really alarmed, shouted in an agony of terror: "Pray, do come and help me; the Wolf is killing the sheep"; but no one paid any heed to his cries, nor rendered any assistance. The Wolf, having no cause of fear, at his leisure lacerated or destroyed the whole flock. There is no believing a liar, even when he speaks the truth.

The Ants and the Grasshopper

The Ants were spending a fine winter's day drying grain collected in the summertime. A Grasshopper, perishing with famine, passed by and earnestly begged for a little food. The Ants inquired of him, "Why did you not treasure up food during the summer?" He replied, "I had not leisure enough. I passed the days in singing." They then said in derision: "If you were foolish enough to sing all the summer, you must dance supperless to bed in the winter."

The Crow and the Pitcher

A Crow perishing with thirst saw a pitcher, and hoping to find water, flew to it with delight. When he reached it, he discovered to his grief that it contained so little water that he could not possibly get at it. He tried everything he could think of to reach the water, but all his efforts were in vain. At last he collected as many stones as he could carry and dropped them one by one with his beak into the pitcher, until he brought the water within his reach and thus saved his life. Necessity is the mother of invention.

The Dog and the Shadow

A Dog, crossing a bridge over a stream with a piece of flesh in his mouth, saw his own shadow in the water and took it for that of another Dog, with a piece of meat double his own in size. He immediately let go of his own, and fiercely attacked the other Dog to get his larger piece from him. He thus lost both: that which he grasped at in the water, because it was a shadow; and his own, because the stream swept it away.

The Fox and the Crow

A Crow having stolen a bit of meat, perched in a tree and held it in her beak. A Fox, seeing this, longed to possess the meat himself, and by a wily stratagem succeeded. "How handsome is the Crow," he exclaimed, "in the beauty of her shape and in the fairness of her complexion! Oh, if her voice were only equal to her beauty, she would deservedly be considered the Queen of Birds!" This he said deceitfully; but the Crow, anxious to refute the reflection cast upon her voice, set up a loud caw and dropped the flesh. The Fox quickly picked it up, and thus addressed the Crow: "My good Crow, your voice is right enough, but your wit is wanting."

The Father and His Sons

A Father had a family of sons who were perpetually quarreling among themselves. When he failed to heal their disputes by his exhortations, he determined to give them a practical illustration of the evils of disunion; and for this purpose he one day told them to bring him a bundle of sticks. When they had done so, he placed the faggot into the hands of each of them in succession, and ordered them to break it in pieces. They tried with all their strength, and were not able to do it. He next opened the faggot, took the sticks separately, one by one, and again put them into his sons' hands, upon which they broke them easily. He then addressed them in these words: "My sons, if you are of one mind, and unite to assist each other, you will be as this faggot, uninjured by all the attempts of your enemies; but if you are divided among yourselves, you will be broken as easily as these sticks."

The Bat and the Weasels

A Bat who fell upon the ground and was caught by a Weasel pleaded to be spared his life. The Weasel refused, saying that he was by nature the enemy of all birds. The Bat assured him that he was not a bird, but a mouse, and thus was set free. Shortly afterwards the Bat again fell to the ground and was caught by another Weasel, whom he likewise entreated not to eat him. The Weasel said that he had a special hostility to mice. The Bat assured him that he was not a mouse, but a bat, and thus a second time escaped. It is wise to turn circumstances to good account.

The Frogs Asking for a King

The Frogs, grieved at having no established Ruler, sent ambassadors to Jupiter entreating for a King. Perceiving their simplicity, he cast down a huge log into the lake. The Frogs were terrified at the splash occasioned by its fall and hid themselves in the depths of the pool. But as soon as they realized that the huge log was motionless, they swam again to the top of the water, dismissed their fears, climbed up, and began squatting on it in contempt. After some time they began to think themselves ill-treated in the appointment of so inert a Ruler, and sent a second deputation to Jupiter to pray that he would set over them another sovereign. He then gave them an Eel to govern them. When the Frogs discovered his easy good nature, they sent yet a third time to Jupiter to beg him to choose for them still another King. Jupiter, displeased with all their complaints, sent a Heron, who preyed upon the Frogs day by day till there were none left to croak upon the lake.
"""


import re

# A word (with an apostrophe's ending, as in "won't"), a line break, or one other character.
TOKEN = re.compile(r"[A-Za-z]+(?:'[a-z]+)?|\n|[^\sA-Za-z]")


def tokenize(text):
    """Split ``text`` into words, punctuation marks and line breaks."""
    return TOKEN.findall(text)


def detokenize(tokens):
    """Join tokens into text: no space before punctuation, quotation marks hug what they quote."""
    text, quoting = "", False
    for token in tokens:
        if token == "\n":
            text = text.rstrip(" ") + "\n"
        elif token == "-":
            text = text.rstrip(" ") + "-"
        elif token in ",.;:!?'" or (token == '"' and quoting):
            text = text.rstrip(" ") + token + " "
        elif token == '"':
            text += token
        else:
            text += token + " "
        quoting ^= token == '"'
    return text.rstrip(" ")


class Vocab:
    """The distinct tokens of a text, numbered in sorted order (d2l's ``Vocab``, without ``<unk>``)."""

    def __init__(self, tokens):
        self.idx_to_token = sorted(set(tokens))
        self.token_to_idx = {token: i for i, token in enumerate(self.idx_to_token)}

    def __len__(self):
        return len(self.idx_to_token)

    def encode(self, tokens):
        """Token strings -> indices."""
        return [self.token_to_idx[token] for token in tokens]

    def decode(self, indices):
        """Indices -> token strings."""
        return [self.idx_to_token[int(i)] for i in indices]


import torch
from torch import nn

from solutions.multihead import causal_valid_lens
from solutions.self_attention import PositionalEncoding
from solutions.transformer import TransformerBlock


class TinyLM(nn.Module):
    """A decoder-only language model built from the book's modules (GPT's design, pre-norm).

    Token embedding and sinusoidal positions (chapter 6), ``num_layers`` pre-norm
    ``TransformerBlock``s (chapter 8) made causal by ``causal_valid_lens`` (chapter 7), a final
    LayerNorm and a linear layer to the vocabulary.

    Args:
        vocab_size: number of distinct tokens V.
        num_hiddens: size d of every position's vector.
        ffn_num_hiddens: hidden size of the blocks' feed-forward networks.
        num_heads: attention heads per block; must divide num_hiddens.
        num_layers: number of blocks L.
        dropout: dropout of the positions, the attention weights and the sublayers.
        max_len: the longest sequence the positional encoding covers.

    Shape:
        - tokens: (B, T), integer token indices, T <= max_len
        - output: (B, T, vocab_size); row t scores the token that follows position t
    """

    def __init__(
        self,
        vocab_size,
        num_hiddens=64,
        ffn_num_hiddens=256,
        num_heads=4,
        num_layers=2,
        dropout=0.0,
        max_len=1024,
    ):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.positions = PositionalEncoding(num_hiddens, dropout, max_len)
        self.blocks = nn.ModuleList(
            TransformerBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, norm_first=True)
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(num_hiddens)
        self.head = nn.Linear(num_hiddens, vocab_size)

    def forward(self, tokens):
        X = self.positions(self.embedding(tokens))  # (B, T, d)
        lens = causal_valid_lens(X)  # (B, T): position t sees positions 0..t
        for block in self.blocks:
            X = block(X, lens)  # (B, T, d)
        return self.head(self.norm(X))  # (B, T, V)


def sampling_probs(logits, temperature=1.0, top_k=None):
    """The distribution that sampling with a temperature and top-k draws the next token from.

    p_w ∝ exp(z_w / temperature) for the top_k tokens with the largest scores z_w of their row
    (all tokens if top_k is None), and p_w = 0 for the others.

    Args:
        logits: the scores z of every token of the vocabulary.
        temperature: T > 0; below 1 sharpens the distribution, above 1 flattens it.
        top_k: None, or an integer k from 1 to V: keep the k most likely tokens of each row.

    Shape:
        - logits: (..., V)
        - output: (..., V), rows that sum to 1, same dtype and device as logits
    """
    if not isinstance(logits, torch.Tensor) or logits.dim() < 1 or not logits.is_floating_point():
        shape = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"logits must be a floating-point tensor of shape (..., V), got {shape}")
    if not temperature > 0:
        raise ValueError(f"temperature must be positive, got {temperature!r}")
    V = logits.shape[-1]
    if top_k is not None and (
        isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= V
    ):
        raise ValueError(f"top_k must be None or an integer from 1 to V = {V}, got {top_k!r}")
    scores = logits / temperature  # (..., V)
    if top_k is not None:
        kth = scores.topk(top_k, dim=-1).values[..., -1:]  # (..., 1): each row's k-th largest
        scores = scores.masked_fill(scores < kth, float("-inf"))  # exp(-inf) = 0 exactly
    return torch.softmax(scores, dim=-1)


def check_cache_step(queries, keys, values, cache, window):
    """Raise a clear error unless the arguments of one cached attention step fit together."""
    for name, x in (("queries", queries), ("keys", keys), ("values", values)):
        if not isinstance(x, torch.Tensor) or x.dim() != 4 or not x.is_floating_point():
            got = (
                f"shape {tuple(x.shape)}, {x.dtype}"
                if isinstance(x, torch.Tensor)
                else type(x).__name__
            )
            raise ValueError(
                f"{name} must be a floating-point tensor (batch, heads, new positions, features), got {got}"
            )
    B, h, t, d = queries.shape
    if tuple(keys.shape) != (B, h, t, d) or tuple(values.shape[:3]) != (B, h, t):
        raise ValueError(
            f"keys must have the shape of queries, {(B, h, t, d)}, and values (B, h, t, d_v) = "
            f"{(B, h, t)} + (d_v,); got keys {tuple(keys.shape)} and values {tuple(values.shape)}"
        )
    tensors = {"queries": queries, "keys": keys, "values": values}
    if cache is not None:
        if not isinstance(cache, (tuple, list)) or len(cache) != 2:
            raise TypeError(
                f"cache must be None or a pair (keys, values), got {type(cache).__name__}"
            )
        cached_keys, cached_values = cache
        for name, x, size in (
            ("cache keys", cached_keys, d),
            ("cache values", cached_values, values.shape[-1]),
        ):
            if (
                not isinstance(x, torch.Tensor)
                or x.dim() != 4
                or tuple(x.shape[:2]) != (B, h)
                or x.shape[-1] != size
            ):
                got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
                raise ValueError(f"{name} must have shape {(B, h)} + (n, {size}), got {got}")
            tensors[name] = x
        if cached_keys.shape[2] != cached_values.shape[2]:
            raise ValueError(
                f"cache keys and values must hold the same number of positions, got "
                f"{cached_keys.shape[2]} and {cached_values.shape[2]}"
            )
    for name, x in tensors.items():
        if x.dtype != queries.dtype or x.device != queries.device:
            raise ValueError(
                f"{name} is {x.dtype} on {x.device}, but queries are {queries.dtype} on {queries.device}"
            )
    if window is not None and (
        isinstance(window, bool) or not isinstance(window, int) or window < 1
    ):
        raise ValueError(f"window must be None or a positive integer, got {window!r}")


import math


def attend_with_cache(queries, keys, values, cache=None, window=None):
    """Causal attention of t new positions over the cached positions and themselves.

    New query i (0 <= i < t) sees every cached position and the new positions 0..i; with a
    window W, only the last W of those (itself included). Nothing given is changed in place.

    Args:
        queries, keys, values: the new positions, split into heads.
        cache: None, or (keys, values) of the n positions before the new ones, oldest first.
        window: None, or W >= 1: each query sees itself and the W - 1 positions before it,
            and the cache keeps the last W positions.

    Shape:
        - queries, keys: (B, h, t, d); values: (B, h, t, d_v)
        - cache: None, or (B, h, n, d) and (B, h, n, d_v)
        - output: (B, h, t, d_v), and the new cache (B, h, n', d) and (B, h, n', d_v) with
          n' = n + t, or min(n + t, W) with a window
    """
    check_cache_step(queries, keys, values, cache, window)
    if cache is not None:
        keys = torch.cat([cache[0], keys], dim=2)  # (B, h, n + t, d): along the positions
        values = torch.cat([cache[1], values], dim=2)  # (B, h, n + t, d_v)
    t, total = queries.shape[2], keys.shape[2]
    rows = torch.arange(total - t, total, device=queries.device)[:, None]  # (t, 1): own position
    cols = torch.arange(total, device=queries.device)[None, :]  # (1, n + t): every position
    attend = cols <= rows  # (t, n + t): the cache and the new positions up to its own
    if window is not None:
        attend = attend & (cols > rows - window)  # ... and only the last W of them
    scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])  # (B, h, t, n + t)
    weights = torch.softmax(scores.masked_fill(~attend, float("-inf")), dim=-1)
    output = weights @ values  # (B, h, t, n + t) @ (B, h, n + t, d_v) -> (B, h, t, d_v)
    if window is not None:
        keys, values = keys[:, :, -window:], values[:, :, -window:]  # the last W positions
    return output, (keys, values)


from solutions.multihead import transpose_output, transpose_qkv


class KVCache:
    """The keys and values that a decoder keeps between steps: one pair per layer.

    A step never changes a KVCache: it returns a new one. So caches can be kept, shared and
    reordered (beam search) without copying their tensors first.

    Args:
        layers: one pair (keys, values) per layer, each of shape (B, h, n, d / h).
        length: the number of positions the sequences have so far: the index of the next
            position (n, unless a sliding window dropped the oldest).
    """

    def __init__(self, layers, length):
        self.layers = tuple((k, v) for k, v in layers)
        self.length = length

    def nbytes(self):
        """The memory of the cached keys and values, in bytes."""
        return sum(x.nbytes for pair in self.layers for x in pair)

    def select(self, index):
        """The caches of the sequences ``index`` (a (B',) tensor of indices into the batch)."""
        return KVCache([(k[index], v[index]) for k, v in self.layers], self.length)


def cached_step(model, tokens, cache=None):
    """Run a ``TinyLM`` (in evaluation mode) on new tokens only, reading and extending a cache.

    Each block is ``TransformerBlock.forward`` (pre-norm) with its attention computed by
    ``attend_with_cache``, so the logits are those of ``model`` run on the whole sequence.

    Args:
        model: a TinyLM.
        tokens: the new tokens (a whole prompt, or one token per sequence).
        cache: the KVCache of the tokens before them, or None.

    Shape:
        - tokens: (B, t), integer token indices
        - output: logits (B, t, V) of the new positions, and the new KVCache
    """
    B, t = tokens.shape
    start = 0 if cache is None else cache.length
    P = model.positions.P  # (1, max_len, d)
    if start + t > P.shape[1]:
        raise ValueError(f"positions up to {start + t - 1} are beyond max_len={P.shape[1]}")
    X = model.embedding(tokens)  # (B, t, d)
    X = model.positions.dropout(X + P[:, start : start + t].to(X.dtype))  # the new positions
    layers = []
    for i, block in enumerate(model.blocks):
        attention, h = block.attention, block.attention.num_heads
        Y = block.norm1(X)  # (B, t, d): pre-norm
        q, k, v = (  # (B, t, d) -> (B*h, t, d/h) -> (B, h, t, d/h)
            transpose_qkv(W(Y), h).reshape(B, h, t, -1)
            for W in (attention.W_q, attention.W_k, attention.W_v)
        )
        out, pair = attend_with_cache(q, k, v, None if cache is None else cache.layers[i])
        layers.append(pair)
        out = transpose_output(out.reshape(B * h, t, -1), h)  # (B, h, t, d/h) -> (B, t, d)
        X = X + block.dropout(attention.W_o(out))  # (B, t, d)
        X = X + block.dropout(block.ffn(block.norm2(X)))  # (B, t, d)
    return model.head(model.norm(X)), KVCache(layers, start + t)


@torch.no_grad()
def generate(
    model, prompt, num_tokens, temperature=None, top_k=None, use_cache=True, generator=None
):
    """Write ``num_tokens`` tokens after ``prompt`` with a ``TinyLM``, one at a time.

    Greedy (the most likely token) when ``temperature`` is None; otherwise each token is drawn
    from ``sampling_probs(logits, temperature, top_k)`` with ``generator``. With ``use_cache``
    each step runs the new token only (``cached_step``); without, the whole sequence so far.

    Shape:
        - prompt: (B, T0), integer token indices
        - output: (B, T0 + num_tokens)
    """
    tokens = prompt
    if use_cache:
        logits, cache = cached_step(model, prompt)  # the prompt in one step
    else:
        logits = model(prompt)
    for i in range(num_tokens):
        last = logits[:, -1]  # (B, V): the scores of the next token
        if temperature is None:
            next_token = last.argmax(dim=-1, keepdim=True)  # (B, 1)
        else:
            probs = sampling_probs(last, temperature, top_k)  # (B, V)
            next_token = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
        tokens = torch.cat([tokens, next_token], dim=1)  # (B, T0 + i + 1)
        if i + 1 < num_tokens and use_cache:
            logits, cache = cached_step(model, next_token, cache)  # the new token only
        elif i + 1 < num_tokens:
            logits = model(tokens)  # the whole sequence again
    return tokens


@torch.no_grad()
def beam_search(model, prompt, num_tokens, beam_size=4):
    """The most likely continuation that keeping ``beam_size`` partial sequences finds.

    Each step extends every beam by every token, scores the candidates by their total
    log-probability, and keeps the best ``beam_size``; each survivor continues the cache of
    the beam it came from (``KVCache.select``). With ``beam_size=1`` this is greedy decoding.

    Shape:
        - prompt: (T0,), integer token indices of one sequence
        - output: the best sequence (T0 + num_tokens,), and its log-probability (a float)
    """
    logits, cache = cached_step(model, prompt[None])  # (1, T0, V)
    beams = prompt[None]  # (1, T0): one beam to start with
    scores = torch.zeros(1, device=prompt.device)  # (1,): the log-probability of each beam
    for i in range(num_tokens):
        log_probs = torch.log_softmax(logits[:, -1].float(), dim=-1)  # (k, V)
        candidates = (scores[:, None] + log_probs).flatten()  # (k * V,): every beam, every token
        scores, best = candidates.topk(min(beam_size, candidates.numel()))  # (k,), best first
        parents, next_tokens = best // log_probs.shape[-1], best % log_probs.shape[-1]  # (k,)
        beams = torch.cat([beams[parents], next_tokens[:, None]], dim=1)  # (k, T0 + i + 1)
        if i + 1 < num_tokens:
            logits, cache = cached_step(model, next_tokens[:, None], cache.select(parents))
    return beams[0], scores[0].item()
