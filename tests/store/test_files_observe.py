"""``observe_reads`` hands a consumer every read from disk once: what it was given is exactly the
bytes read, at their positions, and a read the kept piece answers is not handed over again."""

from __future__ import annotations

from mqtool.store.files import KEEP_PIECE, ReadOnlyFile, count_reads, observe_reads


def test_every_read_from_disk_is_handed_over_once(tmp_path) -> None:
    path = tmp_path / "f"
    data = bytes(range(256)) * (KEEP_PIECE // 64)
    path.write_bytes(data)
    seen: list[tuple[str, int, bytes]] = []
    with count_reads() as reads, observe_reads(lambda p, pos, got: seen.append((p, pos, got))), ReadOnlyFile(path) as f:
        f.pread(0, KEEP_PIECE)
        f.pread(10, 100)  # inside the kept piece: no disk read, nothing handed over
        f.pread(KEEP_PIECE, 50)
    assert [(p, pos, len(got)) for p, pos, got in seen] == [(str(path), 0, KEEP_PIECE), (str(path), KEEP_PIECE, 50)]
    assert all(got == data[pos : pos + len(got)] for _p, pos, got in seen)
    assert sum(len(got) for *_x, got in seen) == reads[str(path)]
    with ReadOnlyFile(path) as f:  # outside the block: nothing
        f.pread(0, 10)
    assert len(seen) == 2
