"""The worked analysis of docs/python.md: three yield_to() forms on dedup in
two 16-vCPU VMs on 16 pCPUs, five seeds each; mean and 95% CI per policy with
pandas; a bar chart with error bars saved to docs/python-policies.png.

    .venv/bin/python python/examples/policies.py [--backend ray] [--table-only]

--table-only prints the table and draws nothing (no matplotlib needed):
python/tests checks that docs/python.md shows exactly what it prints.
"""

import argparse
import math
from pathlib import Path

import oversub

ROOT = Path(__file__).resolve().parents[2]

# Student t, two-sided 95%, by degrees of freedom (n - 1).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def ci95(x):
    """Half-width of the 95% confidence interval of the mean of x."""
    n = len(x)
    return T95.get(n - 1, 1.96) * x.std(ddof=1) / math.sqrt(n) if n > 1 else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="local", choices=["local", "ray"])
    ap.add_argument("--out", default=str(ROOT / "docs" / "python-policies.png"))
    ap.add_argument("--table-only", action="store_true", help="print the table, draw nothing")
    args = ap.parse_args()

    df = oversub.sweep(
        base=ROOT / "scenarios" / "overcommit" / "dedup-2x16.toml",
        axes={
            "policy": [
                {"label": "upstream", "set": ["host.yield.yield_to=upstream", "kvm.on_spin='6.12'"]},
                {"label": "seed-v1", "set": ["host.yield.yield_to=deboost-v1", "kvm.on_spin=ipi_v1"]},
                {"label": "series", "set": ["host.yield.yield_to=borrow", "kvm.on_spin=ipi_hint"]},
            ]
        },
        seeds=[1, 2, 3, 4, 5],
        duration="200ms",
        backend=args.backend,
    )
    metrics = ["throughput", "steal_pct", "yields_per_op"]
    table = df.groupby("policy", sort=False)[metrics].agg(["mean", ci95])
    print(table.round(3).to_string())
    if args.table_only:
        return

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(metrics), figsize=(11, 3.2))
    for ax, m in zip(axes, metrics):
        t = table[m]
        ax.bar(t.index, t["mean"], yerr=t["ci95"], capsize=4, color=["#999", "#c66", "#36a"])
        ax.set_title(m)
        ax.tick_params(axis="x", labelrotation=20)
    fig.suptitle("dedup, 2 VMs x 16 vCPUs on 16 pCPUs, 200 ms, 5 seeds (mean, 95% CI)")
    fig.tight_layout()
    fig.savefig(args.out, dpi=90)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
