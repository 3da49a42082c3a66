"""The benchmarks' own pieces that can break silently: a case that errors is reported as
one row of a table, not as a failure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_tensor_networks.py"


def _case(net: str, policy: str, size: tuple[int, int]) -> dict:
    case = {"net": net, "T": 1.8, "order": 2, "policy": policy, "size": size, "inner": 1}
    out = subprocess.run([sys.executable, str(BENCH), "--child", json.dumps(case)],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("net", "size"), [("trg", (4, 4)), ("ctmrg", (4, 10))])
def test_the_torch_port_of_the_examples_runs_and_agrees_with_minigrad(net, size):
    """bench_tensor_networks.py runs the examples on torch with a Lorentzian SVD backward
    (the import is the port): its SVD must look like torch's (.U, .S, .Vh; the TRG example
    reads .S, and the port raised AttributeError there, one table row). Both Lorentzian
    backwards broaden the poles alike, so the specific heats agree."""
    pytest.importorskip("torch")
    ours, theirs = _case(net, "lorentzian", size), _case(net, "torch", size)
    assert theirs["value"] == pytest.approx(ours["value"], rel=1e-8)
