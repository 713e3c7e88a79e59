"""Across probe76's per-CTA dumps of one call (PROBE_DUMP, files cta_<file>_<mode>.pt): is a slow CTA slow because
of its SM? Every file is a different build on the same machine, each with its own placement of CTAs on SMs, so an SM
that is slow in every file is the hardware's, a CTA index slow in every file is the data's, and neither is chance.
    python cta_spans.py DIR [DIR ...]
Prints, for each file, the span (chunk 1's top to chunk n-2's arrival, %globaltimer) of its median and slowest CTA
and its fill (entry to chunk 1's top) and drain (chunk n-2's arrival to exit); then the rank correlation of the
spans between files, keyed by SM and keyed by CTA index, and the SMs slowest on average with their neighbour SM ^ 1."""
import sys
from pathlib import Path

import torch


def ranks(x: torch.Tensor) -> torch.Tensor:
    return x.argsort().argsort().double()


def spearman(a: torch.Tensor, b: torch.Tensor) -> float:
    ra, rb = ranks(a), ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    return float((ra * rb).sum() / (ra.norm() * rb.norm()))


def load(path: Path) -> dict:
    d = torch.load(path)
    n = d["top_ns"].shape[1]
    span = (d["arrival_ns"][:, n - 1] - d["top_ns"][:, 1]).double() / 1000.0
    fill = (d["top_ns"][:, 1] - d["entry_ns"]).double() / 1000.0
    drain = (d["exit_ns"] - d["arrival_ns"][:, n - 1]).double() / 1000.0
    return {"smid": d["smid"].long(), "span": span, "fill": fill, "drain": drain}


def main(dirs: list[str]) -> None:
    files = sorted(p for d in dirs for p in Path(d).glob("cta_*.pt"))
    if len(files) < 1:
        sys.exit(f"no cta_*.pt under {dirs}")
    runs = {p.stem[4:]: load(p) for p in files}
    for name, r in runs.items():
        s = r["span"]
        print(f"{name:28s} span median {s.median().item():6.1f} max {s.max().item():6.1f} us "
              f"(+{100 * (s.max() / s.median() - 1).item():.1f}%); fill {r['fill'].median().item():5.2f}, "
              f"drain {r['drain'].median().item():5.2f} us; SMs {r['smid'].unique().numel()}")
    names = list(runs)
    nsm = 1 + max(int(r["smid"].max()) for r in runs.values())
    by_sm = {}
    for name, r in runs.items():
        v = torch.full((nsm,), float("nan"), dtype=torch.double)
        v[r["smid"]] = r["span"]
        by_sm[name] = v
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = ~(by_sm[a].isnan() | by_sm[b].isnan())
            print(f"  {a} ~ {b}: spans by SM rho {spearman(by_sm[a][both], by_sm[b][both]):+.2f} ({int(both.sum())} SMs), "
                  f"by CTA rho {spearman(runs[a]['span'], runs[b]['span']):+.2f}")
    rel = torch.stack([v / v.nanmedian() for v in by_sm.values()])  # each file's spans over its median
    mean = rel.nanmean(dim=0)
    seen = ~rel.isnan().all(dim=0)
    order = [int(i) for i in mean.argsort(descending=True) if seen[i]]
    print("SMs slowest on average (span over each file's median, %; SM ^ 1 beside):")
    for sm in order[:8]:
        nb = sm ^ 1
        nbs = f"{100 * (mean[nb].item() - 1):+.2f}" if nb < nsm and seen[nb] else "idle"
        print(f"  SM {sm:3d} {100 * (mean[sm].item() - 1):+.2f}  (SM {nb:3d} {nbs})")


if __name__ == "__main__":
    main(sys.argv[1:])
