"""Shared by the examples: command-line flags and the optional loss-curve PNG."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # so `python examples/x.py` runs from a checkout


def parse_args(doc: str, training: bool = True) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    ap.add_argument("--fast", action="store_true", help="a short run (what the tests use)")
    if training:
        ap.add_argument("--plot-dir", default=".",
                        help="where to save the loss-curve PNG if matplotlib is installed")
    return ap.parse_args()


def save_loss_curve(losses: list[float], plot_dir: str | None, name: str,
                    ylabel: str = "loss") -> str | None:
    """Save a log-scale loss curve as <plot_dir>/<name>.png; None without matplotlib."""
    if plot_dir is None:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.semilogy(losses)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.set_title(name.replace("_", " "))
    fig.tight_layout()
    path = str(Path(plot_dir) / f"{name}.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
