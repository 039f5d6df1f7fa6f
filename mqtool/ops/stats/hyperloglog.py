"""The HyperLogLog sketch stats counts distinct TAGS and KEYS with (Flajolet, Fusy, Gandouet,
Meunier 2007): 64-bit hashes (``formats.checksums.hash64``), ``2**p`` one-byte registers
(``2**12``: 4 KiB per sketch, relative standard error 1.04/sqrt(4096) = 1.6 %), and, as in
HyperLogLog++'s sparse mode, the first distinct hashes kept as they are, so small counts are exact.
A value is hashed as its UTF-8 bytes: text and the same text's bytes count as one value.
"""

from __future__ import annotations

import math
from array import array

from mqtool.formats.checksums import hash64


class HyperLogLog:
    """A HyperLogLog sketch with ``2**p`` one-byte registers (64-bit hashes: no large-range
    correction needed).  Like HyperLogLog++'s sparse mode, the first ``EXACT_LIMIT`` distinct
    hashes are kept as they are, so small cardinalities (typical for tags) are exact and a
    sketch costs a few hundred bytes until it needs its registers."""

    EXACT_LIMIT = 256

    def __init__(self, p: int = 12) -> None:
        if not 4 <= p <= 16:
            raise ValueError("p must be in 4..16")
        self.p = p
        self.m = 1 << p
        self.exact: array[int] | None = array("Q")  # distinct hashes, until EXACT_LIMIT of them
        self.registers: bytearray | None = None

    @property
    def relative_error(self) -> float:
        return 1.04 / math.sqrt(self.m)

    @staticmethod
    def hash(value: str | bytes) -> int:
        data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else bytes(value)
        return hash64(data)

    def add(self, value: str | bytes) -> None:
        h = self.hash(value)
        if self.exact is not None:
            if h not in self.exact:
                self.exact.append(h)
                if len(self.exact) > self.EXACT_LIMIT:
                    self._to_registers()
            return
        self._put(h)

    def _put(self, h: int) -> None:
        assert self.registers is not None
        index = h >> (64 - self.p)
        rest = h & ((1 << (64 - self.p)) - 1)
        rank = (64 - self.p) - rest.bit_length() + 1
        if rank > self.registers[index]:
            self.registers[index] = rank

    def _to_registers(self) -> None:
        hashes, self.exact = self.exact if self.exact is not None else array("Q"), None
        self.registers = bytearray(self.m)
        for h in hashes:
            self._put(h)

    def merge(self, other: HyperLogLog) -> None:
        if other.p != self.p:
            raise ValueError("sketches of different precision")
        if self.exact is not None and other.exact is not None:
            for h in other.exact:
                if h not in self.exact:
                    self.exact.append(h)
            if len(self.exact) > self.EXACT_LIMIT:
                self._to_registers()
            return
        if self.exact is not None:
            self._to_registers()
        assert self.registers is not None
        if other.exact is not None:
            for h in other.exact:
                self._put(h)
        else:
            assert other.registers is not None
            self.registers = bytearray(max(a, b) for a, b in zip(self.registers, other.registers))

    def estimate(self) -> int:
        if self.exact is not None:
            return len(self.exact)
        assert self.registers is not None
        m = self.m
        alpha = 0.7213 / (1 + 1.079 / m) if m >= 128 else {16: 0.673, 32: 0.697, 64: 0.709}[m]
        zeros = self.registers.count(0)
        raw = alpha * m * m / sum(2.0**-r for r in self.registers)
        if raw <= 2.5 * m and zeros:
            return round(m * math.log(m / zeros))
        return round(raw)
