"""Write five small ChampSim-format traces (xz) for cross-checking the `champsim` preset.

    python scripts/champsim_traces.py OUTDIR [--records N]

* chase.champsimtrace.xz:  a pointer chase; each load's address comes from the previous load
  (source register = the previous load's destination), over random lines of 64 MiB.
* rmw.champsimtrace.xz:    random read-modify-write (GUPS-like): load, add, store to the same
  random word of a 128 MiB table; iterations are independent.
* stream.champsimtrace.xz: a STREAM triad a[i] = b[i] + s * c[i] over three 64 MiB arrays.
* loop16k.champsimtrace.xz: 4M independent 8-byte loads cycling over a 16 KiB buffer (L1D
  hits: the core's load issue bound).
* readstream1g.champsimtrace.xz: 6M independent sequential 8-byte loads from the start of a
  1 GiB buffer (a first touch every 512 loads).

N (default 1M) is the number of memory records of the first three; the last two have the
lengths above, as docs/champsim.md runs them.

Records follow ChampSim's 64-byte `input_instr` layout (docs/trace-formats.md).
"""

from __future__ import annotations

import argparse
import lzma
import random
import struct
from pathlib import Path

# ip, is_branch, branch_taken, 2 destination registers, 4 source registers,
# 2 destination memory operands, 4 source memory operands.
_INSTR = struct.Struct("<QBB2B4B2Q4Q")


def _instr(ip: int, dst=(0, 0), src=(0, 0, 0, 0), dmem=(0, 0), smem=(0, 0, 0, 0)) -> bytes:
    return _INSTR.pack(ip, 0, 0, *dst, *src, *dmem, *smem)


def chase(n: int, rng: random.Random) -> list[bytes]:
    base, lines = 0x10_0000_0000, (64 << 20) // 64
    out = []
    for i in range(n):
        addr = base + rng.randrange(lines) * 64
        # Register 1 holds the pointer: read it for the address, overwrite it with the load.
        out.append(
            _instr(0x40_0000 + 8 * (i % 64), dst=(1, 0), src=(1, 0, 0, 0), smem=(addr, 0, 0, 0))
        )
    return out


def rmw(n: int, rng: random.Random) -> list[bytes]:
    base, words = 0x20_0000_0000, (128 << 20) // 8
    out = []
    for _ in range(n // 2):
        addr = base + rng.randrange(words) * 8
        out.append(_instr(0x50_0000, dst=(2, 0), smem=(addr, 0, 0, 0)))  # load r2 (independent)
        out.append(_instr(0x50_0004, dst=(2, 0), src=(2, 3, 0, 0)))  # r2 ^= r3
        out.append(_instr(0x50_0008, src=(2, 0, 0, 0), dmem=(addr, 0)))  # store r2
    return out


def stream(n: int, _rng: random.Random) -> list[bytes]:
    size = 64 << 20
    a, b, c = 0x30_0000_0000, 0x30_0000_0000 + size, 0x30_0000_0000 + 2 * size
    out = []
    for i in range(n // 3):
        off = (i * 8) % size
        out.append(_instr(0x60_0000, dst=(2, 0), smem=(b + off, 0, 0, 0)))
        out.append(_instr(0x60_0004, dst=(3, 0), smem=(c + off, 0, 0, 0)))
        out.append(_instr(0x60_0008, dst=(2, 0), src=(2, 3, 4, 0)))  # r2 += s * r3
        out.append(_instr(0x60_000C, src=(2, 0, 0, 0), dmem=(a + off, 0)))
    return out


def loop16k(n: int, _rng: random.Random) -> list[bytes]:
    base = 0x40_0000_0000
    return [
        _instr(0x70_0000 + 4 * (i % 16), dst=(2, 0), smem=(base + (i * 8) % (16 << 10), 0, 0, 0))
        for i in range(n)
    ]


def readstream1g(n: int, _rng: random.Random) -> list[bytes]:
    base, size = 0x50_0000_0000, 1 << 30
    return [
        _instr(0x80_0000 + 4 * (i % 16), dst=(2, 0), smem=(base + (i * 8) % size, 0, 0, 0))
        for i in range(n)
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("outdir", type=Path)
    p.add_argument("--records", type=int, default=1_000_000, help="memory records per trace")
    args = p.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)
    traces = [
        ("chase", chase, args.records),
        ("rmw", rmw, args.records),
        ("stream", stream, args.records),
        ("loop16k", loop16k, 4_000_000),
        ("readstream1g", readstream1g, 6_000_000),
    ]
    for name, make, records in traces:
        path = args.outdir / f"{name}.champsimtrace.xz"
        with lzma.open(path, "wb", preset=1) as f:
            f.write(b"".join(make(records, random.Random(1))))
        print(path)


if __name__ == "__main__":
    main()
