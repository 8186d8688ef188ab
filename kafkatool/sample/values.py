"""Deterministic record contents for ``kafkatool sample``: value pools, keys, headers, JSON documents.

Everything is derived from one partition seed. Bulk draws use numpy's PCG64 *raw* output
(``random_raw``), whose stream numpy keeps stable across releases, with our own arithmetic on top;
per-record choices in JSON documents use ``random.Random`` (Mersenne Twister, stable across Python
versions for ``random()``/``getrandbits``-based draws). So a seed gives the same bytes everywhere.

Value pool (a topic's ``compressible`` share C): a buffer of 32-byte runs; each run is, with probability C,
a copy of a slice of a 4 KiB text-like dictionary (cheap to compress, repeated across the records of a
batch), otherwise random bytes (incompressible). Measured payload/segment bytes for 16 x 1 KiB batches:
C=0.5 -> lz4 1.3, gzip 1.4; C=0.9 -> lz4 2.1, zstd 2.6, gzip 2.7; C=1 -> lz4 2.4, gzip 3.8.
Record values are slices of the pool at random offsets, so building a value costs one slice.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence

import numpy as np

# numpy loads numpy.random on first use of ``np.random`` (its module ``__getattr__``). A Ctrl-C landing inside that
# import, in the init of its Cython modules, can be swallowed there (the command then runs on) or come out as an
# ImportError: a SIGPROF handler raising KeyboardInterrupt at 0.5-20 ms into it lost it 2 times in 36. Loaded with
# this module, the import is over before a sample's work starts.
import numpy.random

POOL_BYTES = 4 * 1024 * 1024
RUN_BYTES = 32
DICTIONARY_BYTES = 4096
_TWO53 = float(1 << 53)

Headers = tuple[tuple[str, bytes | None], ...]


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any parts (topic name, partition, purpose): stable, unlike ``hash()``."""
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") >> 1


class Draws:
    """Uniform draws from PCG64's raw 64-bit stream (stable across numpy versions), drawn in chunks so a
    small request costs a list slice, not a numpy call."""

    __slots__ = ("bg", "_buf", "_pos")
    CHUNK = 1 << 14

    def __init__(self, seed: int) -> None:
        self.bg = np.random.PCG64(seed)
        self._buf: list[int] = []
        self._pos = 0

    def raw(self, n: int) -> np.ndarray:
        """``n`` raw 64-bit draws as an array (bulk use; independent of the buffered ``take``)."""
        return self.bg.random_raw(n)

    def take(self, n: int) -> list[int]:
        """The next ``n`` raw draws as Python ints."""
        pos = self._pos
        if pos + n > len(self._buf):
            self._buf = self._buf[pos:] + self.bg.random_raw(max(self.CHUNK, n)).tolist()
            pos = 0
        self._pos = pos + n
        return self._buf[pos:pos + n]

    def below(self, n: int, bound: int) -> list[int]:
        """``n`` integers in [0, bound) (modulo bias below 2**-40 for our bounds)."""
        b = max(1, bound)
        return [x % b for x in self.take(n)]

    def unit(self, n: int) -> np.ndarray:
        """``n`` floats in [0, 1) from the top 53 bits (bulk)."""
        return (self.raw(n) >> np.uint64(11)).astype(np.float64) / _TWO53

    def units(self, n: int) -> list[float]:
        return [(x >> 11) / _TWO53 for x in self.take(n)]


class BoundedDraws:
    """Integers in [0, bound) from PCG64's raw stream, reduced in bulk by numpy and served from a list."""

    __slots__ = ("bg", "bound", "_buf", "_pos")
    CHUNK = 1 << 14

    def __init__(self, seed: int, bound: int) -> None:
        self.bg = np.random.PCG64(seed)
        self.bound = np.uint64(max(1, bound))
        self._buf: list[int] = []
        self._pos = 0

    def take(self, n: int) -> list[int]:
        pos = self._pos
        if pos + n > len(self._buf):
            fresh = (self.bg.random_raw(max(self.CHUNK, n)) % self.bound).tolist()
            self._buf = self._buf[pos:] + fresh
            pos = 0
        self._pos = pos + n
        return self._buf[pos:pos + n]


def text_dictionary(rng: random.Random, size: int = DICTIONARY_BYTES) -> bytes:
    """Text-like bytes: words from a 512-word vocabulary, skewed towards the first ones, punctuation, numbers."""
    vocab = ["".join(chr(97 + rng.randrange(26)) for _ in range(2 + rng.randrange(8))) for _ in range(512)]
    out: list[str] = []
    n = 0
    while n < size:
        u = rng.random()
        w = vocab[int(len(vocab) * u * u * u)]
        p = rng.randrange(16)
        w += "," if p == 0 else ":" if p == 1 else '"' if p == 2 else " "
        if rng.randrange(24) == 0:
            w += f"{rng.randrange(100000)} "
        out.append(w)
        n += len(w)
    return "".join(out).encode("ascii")[:size]


class ValuePool:
    """``size`` bytes of tunable compressibility; values are slices at random offsets."""

    def __init__(self, seed: int, compressible: float, size: int = POOL_BYTES) -> None:
        if not 0.0 <= compressible <= 1.0:
            raise ValueError("compressible must be within [0, 1]")
        draws = Draws(derive_seed(seed, "pool"))
        dictionary = np.frombuffer(text_dictionary(random.Random(derive_seed(seed, "dict"))), dtype=np.uint8)
        runs = -(-size // RUN_BYTES)
        # Rows of RUN_BYTES: a window of the dictionary (text) or random bytes (noise).
        windows = np.lib.stride_tricks.sliding_window_view(dictionary, RUN_BYTES)
        text = windows[(draws.raw(runs) % np.uint64(len(windows))).astype(np.intp)]
        noise = draws.raw(runs * RUN_BYTES // 8).astype("<u8").view(np.uint8).reshape(runs, RUN_BYTES)
        from_text = (draws.unit(runs) < compressible)[:, None]
        self.data: bytes = np.where(from_text, text, noise).tobytes()[:size]
        self.compressible = compressible
        self.seed = seed
        self.draws = Draws(derive_seed(seed, "slices"))
        self._fixed: dict[int, BoundedDraws] = {}

    def values(self, sizes: Sequence[int]) -> list[bytes]:
        """One value per size, each a slice of the pool at a random offset."""
        if not sizes:
            return []
        top = max(sizes)
        if top > len(self.data):
            reps = top // len(self.data) + 1
            self.data = self.data * reps  # values larger than the pool: repeat it (rare, huge values)
        data = self.data
        starts = self.draws.below(len(sizes), len(data) - top + 1)
        return [data[s:s + n] for s, n in zip(starts, sizes, strict=True)]

    def fixed(self, count: int, size: int) -> list[bytes]:
        """``count`` values of ``size`` bytes."""
        if size >= len(self.data):
            return self.values([size] * count)
        starts = self._fixed.get(size)
        if starts is None:
            starts = self._fixed[size] = BoundedDraws(derive_seed(self.seed, "slices", size), len(self.data) - size + 1)
        data = self.data
        return [data[s:s + size] for s in starts.take(count)]


class KeyGen:
    """Keys ``<prefix><number>`` with ``cardinality`` distinct values (uniform), or null.

    ``cardinality`` 0 means every key is null (a keyless producer: sticky partitioner data).
    """

    def __init__(self, seed: int, cardinality: int, null_fraction: float = 0.0, prefix: str = "key-",
                 width: int = 0) -> None:
        self.cardinality = cardinality
        self.null_fraction = null_fraction
        self.prefix = prefix
        self.width = width
        self.draws = Draws(derive_seed(seed, "null-keys"))
        self.index = BoundedDraws(derive_seed(seed, "keys"), cardinality)
        self._cache: list[bytes] | None = None
        if 0 < cardinality <= 1 << 16:
            self._cache = [self._format(i) for i in range(cardinality)]

    def _format(self, i: int) -> bytes:
        return f"{self.prefix}{i:0{self.width}d}".encode()

    def keys(self, n: int) -> list[bytes | None]:
        if self.cardinality <= 0:
            return [None] * n
        idx = self.index.take(n)
        cache = self._cache
        out: list[bytes | None]
        if cache is not None:
            out = [cache[i] for i in idx]
        else:
            out = [self._format(i) for i in idx]
        if self.null_fraction > 0:
            f = self.null_fraction
            out = [None if u < f else k for k, u in zip(out, self.draws.units(n), strict=True)]
        return out


_HEADER_NAMES = ("traceparent", "content-type", "source", "schema-version", "tenant-id", "retry-count",
                 "correlation-id", "event-type")


def header_pool(seed: int, count: int, size: int = 64) -> list[Headers]:
    """``size`` distinct header lists of ``count`` headers each; records pick one at random."""
    if count <= 0:
        return [()]
    rng = random.Random(derive_seed(seed, "headers"))
    out = []
    for _ in range(size):
        hs: list[tuple[str, bytes | None]] = []
        for i in range(count):
            name = _HEADER_NAMES[i] if i < len(_HEADER_NAMES) else f"x-header-{i}"
            hs.append((name, _header_value(name, rng)))
        out.append(tuple(hs))
    return out


def _header_value(name: str, rng: random.Random) -> bytes:
    if name == "traceparent":
        return f"00-{rng.getrandbits(128):032x}-{rng.getrandbits(64):016x}-01".encode()
    if name == "content-type":
        return rng.choice((b"application/json", b"application/octet-stream", b"text/plain; charset=utf-8"))
    if name == "source":
        return f"svc-{rng.randrange(12)}".encode()
    if name == "schema-version":
        return str(1 + rng.randrange(4)).encode()
    if name == "retry-count":
        return str(rng.randrange(3)).encode()
    return f"{rng.getrandbits(48):012x}".encode()


# ---------------------------------------------------------------------------------------------- JSON documents

JsonDomain = Callable[[random.Random, bytes | None, int, int], bytes]

_SKUS = [f"SKU-{i:05d}" for i in range(0, 2000, 7)]
_CURRENCIES = ("EUR", "USD", "GBP", "CHF", "SEK")
_PAGES = ("/", "/search", "/cart", "/checkout", "/account", "/help", "/products", "/deals")
_AGENTS = ("Mozilla/5.0 (X11; Linux x86_64; rv:126.0) Gecko/20100101 Firefox/126.0",
           "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
           "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/125.0 Safari/537.36")
_ACTIONS = ("CREATE", "UPDATE", "DELETE", "LOGIN", "GRANT", "REVOKE")


def _iso(ms: int) -> str:
    from kafkatool.util.units import format_time_ms

    return format_time_ms(ms)


def _order(rng: random.Random, key: bytes | None, offset: int, ts: int) -> bytes:
    items = []
    total = 0
    for _ in range(1 + rng.randrange(4)):
        qty = 1 + rng.randrange(3)
        cents = 199 + rng.randrange(20000)
        total += qty * cents
        items.append(f'{{"sku":"{rng.choice(_SKUS)}","qty":{qty},"price":{cents // 100}.{cents % 100:02d}}}')
    customer = key.decode() if key else f"cust-{rng.randrange(100000):05d}"
    return (f'{{"order_id":"ord-{offset:08d}-{rng.getrandbits(16):04x}","customer_id":"{customer}",'
            f'"items":[{",".join(items)}],"currency":"{rng.choice(_CURRENCIES)}",'
            f'"total":{total // 100}.{total % 100:02d},"created_at":"{_iso(ts)}"}}').encode()


def _payment(rng: random.Random, key: bytes | None, offset: int, ts: int) -> bytes:
    cents = 500 + rng.randrange(50000)
    status = rng.choice(("authorized", "captured", "captured", "captured", "refunded", "declined"))
    method = rng.choice(("card", "card", "sepa", "paypal", "apple_pay"))
    order = key.decode() if key else f"ord-{rng.randrange(10**8):08d}"
    return (f'{{"payment_id":"pay-{rng.getrandbits(48):012x}","order_id":"{order}","amount":'
            f'{cents // 100}.{cents % 100:02d},"currency":"{rng.choice(_CURRENCIES)}","status":"{status}",'
            f'"method":"{method}","at":"{_iso(ts)}"}}').encode()


def _click(rng: random.Random, key: bytes | None, offset: int, ts: int) -> bytes:
    page = rng.choice(_PAGES)
    if page == "/products":
        page += f"/{rng.randrange(5000)}"
    user = key.decode() if key else None
    return (f'{{"event":"page_view","user":{_json_str(user)},"session":"{rng.getrandbits(64):016x}",'
            f'"page":"{page}","referrer":{_json_str(rng.choice((None, "/", "/search", "https://example.com/")))},'
            f'"ua":"{rng.choice(_AGENTS)}","ts":{ts}}}').encode()


def _audit(rng: random.Random, key: bytes | None, offset: int, ts: int) -> bytes:
    actor = key.decode() if key else "system"
    return (f'{{"actor":"{actor}","action":"{rng.choice(_ACTIONS)}","resource":"projects/{rng.randrange(40)}/'
            f'items/{rng.randrange(10**6)}","ip":"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)}",'
            f'"ok":{"true" if rng.random() < 0.97 else "false"}}}').encode()


def _json_str(s: str | None) -> str:
    return "null" if s is None else f'"{s}"'


JSON_DOMAINS: dict[str, JsonDomain] = {"orders": _order, "payments": _payment, "clicks": _click, "audit": _audit}
JSON_SOURCES = {"orders": "checkout-service", "payments": "payment-gateway", "clicks": "web-edge",
                "audit": "iam-service"}


def json_headers(domain: str, rng: random.Random, count: int) -> Headers:
    """Realistic headers for a JSON record: content type, W3C trace context, producing service."""
    hs: list[tuple[str, bytes | None]] = [
        ("content-type", b"application/json"),
        ("traceparent", f"00-{rng.getrandbits(128):032x}-{rng.getrandbits(64):016x}-01".encode()),
        ("source", JSON_SOURCES.get(domain, "app").encode()),
    ]
    while len(hs) < count:
        hs.append((f"x-header-{len(hs)}", f"{rng.getrandbits(32):08x}".encode()))
    return tuple(hs[:count])
