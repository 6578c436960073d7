"""One style per series label, the same in every figure: the registry :mod:`xlat.plots` draws with.

A *style* is a fill colour, a hatch (bars: so that a figure survives a black-and-white print)
and a marker (lines). Styles are slots of a grid of :data:`COLORS` x :data:`HATCHES`; slot
``k`` has colour ``k % 10`` and hatch ``(k % 10 + k // 10) % 20``, so consecutive slots differ
in both colour and hatch, and no two slots share both. A marker goes with each hatch, so two
slots never share colour and marker either.

:data:`KNOWN` lists every label the reproductions draw (systems such as ``Radix``, ``4K+4K``,
``shadow-4K``, and the other series: stacked parts such as ``L1`` or ``DRAM``, workloads drawn
as lines), each with its own slot in that order: ``Radix`` is the same blue bar in every
figure, and no two labels look alike anywhere. Any other label (a user's sweep point such as
``l2tlb=1536``) gets a slot that no known label has, picked from a hash of the label, so it
too keeps its style from figure to figure; when a label of a figure hashes to a slot that an
earlier one took, or whose hatch an earlier unknown one has, it takes the next free slot with
a hatch of its own (:func:`styles_for`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["COLORS", "HATCHES", "KNOWN", "MARKERS", "Style", "style", "styles_for"]

#: Fill colours: muted, print-friendly tones like the papers' bar charts.
COLORS = (
    "#4c72b0",
    "#dd8452",
    "#55a868",
    "#c44e52",
    "#8172b3",
    "#937860",
    "#da8bc3",
    "#8c8c8c",
    "#ccb974",
    "#64b5cd",
)
#: Hatches, sparse to dense, plain before combined.
HATCHES = (
    "",
    "//",
    "\\\\",
    "xx",
    "..",
    "--",
    "||",
    "++",
    "oo",
    "**",
    "OO",
    "//..",
    "\\\\..",
    "--..",
    "||..",
    "xx..",
    "oo..",
    "**..",
    "OO..",
    "++..",
)
#: Line markers, one per hatch.
MARKERS = (
    "o",
    "s",
    "^",
    "D",
    "v",
    "P",
    "X",
    "*",
    "<",
    ">",
    "h",
    "p",
    "d",
    "H",
    "8",
    "x",
    "+",
    "1",
    "2",
    "3",
)

#: Every series label the reproductions draw, in slot order. Labels drawn together come
#: together, so that the series of one figure differ in colour as well as hatch.
KNOWN = (
    # Utopia, ME-HPT: the systems.
    "Radix",
    "ECH",
    "RMM",
    "P-TLB",
    "POM-TLB",
    "Utopia",
    "ECPT",
    "ME-HPT",
    "ECPT THP",
    "ME-HPT THP",
    "Radix THP",
    # Gandhi et al.: native page sizes, guest+host page sizes, the direct-segment modes.
    "4K",
    "2M",
    "1G",
    "4K+4K",
    "4K+2M",
    "4K+1G",
    "2M+2M",
    "4K+VD",
    "4K+GD",
    "DD",
    # Gandhi Table II and Fig 13: ten labels, so that shadow paging below takes the colour of
    # its native page size (shadow-4K that of 4K) with a hatch far from it.
    "Base virtualized",
    "VMM Direct",
    "Guest Direct",
    "Dual Direct",
    "00 bad",
    "01 bad",
    "02 bad",
    "04 bad",
    "08 bad",
    "16 bad",
    "shadow-4K",
    "shadow-2M",
    # Gandhi's self-ballooning experiment.
    "DD 0.0",
    "DD 0.4",
    "DD 0.4 no balloon",
    "DD 0.8",
    "DD 0.8 no balloon",
    "4K+GD 0.0",
    "4K+GD 0.4",
    "4K+GD 0.4 no balloon",
    "4K+GD 0.8",
    "4K+GD 0.8 no balloon",
    # ME-HPT: ways, chunk sizes, ratios, page sizes, the parts of Fig 10's saving.
    "ME-HPT way 0",
    "ME-HPT way 1",
    "ME-HPT way 2",
    "ME-HPT THP way 0",
    "ME-HPT THP way 1",
    "ME-HPT THP way 2",
    "ME-HPT 1MB",
    "ME-HPT 1MB+8KB",
    "ME-HPT / ECPT",
    "ME-HPT / Radix",
    "ECPT / Radix",
    "4 KiB pages",
    "2 MiB pages",
    "in-place",
    "per-way",
    "THP",
    "no THP",
    # Utopia: where walk requests are served, walk kinds, caches, mappings, structures.
    "L1",
    "L2",
    "LLC",
    "DRAM",
    "FlexSeg walk",
    "RestSeg walk",
    "Range walk",
    "Radix L2",
    "Radix LLC",
    "ECH L2",
    "ECH LLC",
    "Flexible-only",
    "Restrictive-only",
    "Inverted page table",
    "Radix page table",
    "Utopia: SF + TAR",
    "SF + TAR, unpadded tags",
    "SF cache",
    "TAR cache",
    "to RestSeg",
    "from RestSeg",
    "Utopia (from empty)",
    "0",
    "1-5",
    "6-20",
    ">20",
    # Workloads, where they are the series (lines over a parameter), and their mean.
    "bc",
    "bfs",
    "cc",
    "gc",
    "pr",
    "tc",
    "sssp",
    "xsbench",
    "gups",
    "dlrm-sls",
    "kmer",
    "GMEAN",
    # Mosaic pages: Fig 6's TLBs, Table 4's swap policies, Table 3's workloads.
    "Vanilla",
    "Mosaic-4",
    "Mosaic-8",
    "Mosaic-16",
    "Mosaic-32",
    "Mosaic-64",
    "Linux LRU",
    "Horizon LRU",
    "Graph500",
    "BTree",
    "XSBench",
    # SPARTA: Fig 2's structures, the systems of Figs 4, 7, 9 and 10, Fig 5's threads, Fig 6's
    # partitions, Fig 8's programs, Fig 9's accelerator-side TLB sizes.
    "BST-External",
    "BST-Internal",
    "Hash Table",
    "Skip List",
    "Conventional 4K",
    "Conventional 2M",
    "SPARTA-4 4K",
    "SPARTA-4 2M",
    "SPARTA-128 4K",
    "SPARTA-128 2M",
    "1 thread",
    "4 threads",
    "16 threads",
    "1 partition",
    "32 partitions",
    "Conventional",
    "SPARTA",
    "BST-E x1",
    "BST-E x2",
    "BST-E x4",
    "+ Hash Table",
    "+ all",
    "SPARTA-8 1",
    "SPARTA-8 2",
    "SPARTA-8 4",
    "SPARTA-8 8",
    "SPARTA-8 16",
    "SPARTA-8 32",
    "SPARTA-8 64",
    "SPARTA-8 128",
    "SPARTA-8 virtual",
    "SPARTA-8 4K",
    "SPARTA-8 2M",
    "SPARTA-32 4K",
    "SPARTA-32 2M",
    "DIPTA",
    "Ideal",
)

_SLOTS = len(COLORS) * len(HATCHES)


@dataclass(frozen=True)
class Style:
    """How one series is drawn: ``color`` and ``hatch`` for bars, ``color`` and ``marker`` for
    lines."""

    color: str
    hatch: str
    marker: str


def _slot_style(slot: int) -> Style:
    color = slot % len(COLORS)
    hatch = (color + slot // len(COLORS)) % len(HATCHES)
    return Style(COLORS[color], HATCHES[hatch], MARKERS[hatch])


_KNOWN_SLOTS = {label: k for k, label in enumerate(KNOWN)}
#: Slots no known label has, for the others.
_FREE = tuple(k for k in range(_SLOTS) if k >= len(KNOWN))
if len(set(KNOWN)) != len(KNOWN) or not _FREE:  # pragma: no cover - a bad edit of KNOWN
    raise ImportError("xlat.styles.KNOWN repeats a label or fills every slot")


def _hashed_slot(label: str) -> int:
    digest = hashlib.sha256(label.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % len(_FREE)


def style(label: object) -> Style:
    """The style of series ``label`` (its own slot if it is known, else its hashed one)."""
    return styles_for([label])[0]


def styles_for(labels: Sequence[object]) -> list[Style]:
    """The styles of the series of one figure, in order: known labels their own; every other
    its hashed slot among the free ones, or the next free slot that no earlier label of the
    figure took and whose hatch no earlier unknown label has. Labels are compared as text."""
    names = [str(label) for label in labels]
    taken = {_KNOWN_SLOTS[n] for n in names if n in _KNOWN_SLOTS}
    slots: dict[str, int] = {}
    for name in names:
        if name in slots:
            continue
        if name in _KNOWN_SLOTS:
            slots[name] = _KNOWN_SLOTS[name]
            continue
        start = _hashed_slot(name)
        order = [_FREE[(start + step) % len(_FREE)] for step in range(len(_FREE))]
        hatches = {_slot_style(slots[n]).hatch for n in slots if n not in _KNOWN_SLOTS}
        # A free slot whose hatch no earlier unknown label of the figure has, so that a
        # sweep's points read apart in black and white; else any free slot; else share. Known
        # labels do not move it, so a label drawn beside known ones keeps its style.
        slot = next(
            (k for k in order if k not in taken and _slot_style(k).hatch not in hatches),
            next((k for k in order if k not in taken), order[0]),
        )
        taken.add(slot)
        slots[name] = slot
    return [_slot_style(slots[name]) for name in names]
