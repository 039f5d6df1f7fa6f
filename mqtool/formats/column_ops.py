"""Byte columns with numpy: big-endian integers gathered at many positions of a buffer at once,
byte ranges packed end to end, and their offsets -- what the columnar readers of the formats
(:mod:`mqtool.formats.rocketmq.columns`, :mod:`mqtool.formats.rocketmq.record_fields`) build on."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def gather(data: np.ndarray, at: np.ndarray, dtype: str) -> np.ndarray:
    """The big-endian integers of ``dtype`` at byte positions ``at`` of ``data``."""
    width = np.dtype(dtype).itemsize
    if not len(at):
        return np.zeros(0, dtype=np.dtype(dtype).newbyteorder("="))
    raw = data[at[:, None] + np.arange(width)]
    return raw.view(dtype).ravel().astype(np.dtype(dtype).newbyteorder("="))


def gather_clipped(data: np.ndarray, at: np.ndarray, dtype: str) -> np.ndarray:
    """``gather`` at positions clipped into ``data``: a position a damaged record computes may lie
    anywhere; what is read there only matters for records whose checks hold."""
    width = np.dtype(dtype).itemsize
    return gather(data, np.clip(at, 0, max(len(data) - width, 0)), dtype)


def joined(buf: bytes, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The byte ranges ``[starts[i], stops[i])`` of ``buf`` packed end to end (one copy of each)."""
    view = memoryview(buf)
    return np.frombuffer(b"".join(map(view.__getitem__, map(slice, starts.tolist(), stops.tolist()))), dtype=np.uint8)


def offsets_of(lengths: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


@dataclass
class Spans:
    """Variable-length values packed end to end: value ``i`` is ``values[offsets[i]:offsets[i + 1]]``."""

    values: np.ndarray  # uint8 (int32 for key hashes)
    offsets: np.ndarray  # int32, one more than there are values

    def __len__(self) -> int:
        return len(self.offsets) - 1


__all__ = ["Spans", "gather", "gather_clipped", "joined", "offsets_of"]
