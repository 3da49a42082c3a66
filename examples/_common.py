"""Shared by the examples: command-line flags, the tie policies, the optional loss-curve PNG."""

from __future__ import annotations

import argparse
import sys
from contextlib import AbstractContextManager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # so `python examples/x.py` runs from a checkout

import minigrad as mg  # noqa: E402

TIES = ("exact", "zero", "lorentzian")  # the SVD tie policies an example can run under
LORENTZIAN_EPS = 1e-12  # Liao et al.'s broadening


def parser(doc: str, training: bool = True) -> argparse.ArgumentParser:
    """The flags every example takes; add an example's own before parse_args()."""
    ap = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    ap.add_argument("--fast", action="store_true", help="a short run (what the tests use)")
    if training:
        ap.add_argument("--plot-dir", default=".",
                        help="where to save the loss-curve PNG if matplotlib is installed")
    return ap


def parse_args(doc: str, training: bool = True) -> argparse.Namespace:
    return parser(doc, training).parse_args()


def tie_context(ties: str) -> AbstractContextManager:
    """mg.linalg.tie_policy for one of TIES; the Lorentzian with width LORENTZIAN_EPS."""
    if ties == "lorentzian":
        return mg.linalg.tie_policy("lorentzian", eps=LORENTZIAN_EPS)
    return mg.linalg.tie_policy(ties)


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
