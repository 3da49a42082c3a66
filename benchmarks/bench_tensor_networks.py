"""Tensor-network gradients at the published sizes, under each SVD tie policy (issue 25).

The 2-D Ising model's energy E = -d(ln Z / N)/d(beta) (one backward) and specific heat
C = beta^2 d^2(ln Z / N)/d(beta)^2 (double backward, create_graph) through

- TRG (examples/ising_trg.py): Levin-Nave, bond dimension 16, 20 RG steps (the settings of
  Liao et al., PRX 9, 031041 (2019));
- CTMRG (examples/ctmrg.py): chi 24, 60 iterations, the projector from the SVD of the
  enlarged corner;

at a few temperatures, with minigrad under the default tie policy ("exact"),
tie_policy("zero") and tie_policy("lorentzian", eps=1e-12), and with PyTorch (when installed)
running the same example code with the paper's Lorentzian SVD backward (written here as a
torch.autograd.Function). Every case (network, temperature, E or C, policy) runs alone in a
fresh process with one thread, a cap on its resident memory and a timeout (CPU time), one
process at a time: a case that blows up is reported as killed at the cap or timed out.
Printed per case: wall and CPU time of the derivative (imports and a short warm-up run
excluded), the process's peak RSS and how far the derivative took it above the RSS before
it (+MB), the value beside Onsager's exact one and beside the "zero" policy's, and CPU time
and peak memory over the "zero" policy's (CPU time: one thread, and other processes on a
shared machine stretch the wall time, not that). Target (issue 25): the default policy
within 2x of "zero" in both, with the same values.

    python benchmarks/bench_tensor_networks.py [--quick] [--mem-gb 8] [--timeout 300]
        [--temps 1.5 1.8 2.0 2.5] [--nets trg ctmrg] [--policies ...] [--repeats 1] [--inner 1]
        [--no-skip] [--json FILE] [--from-json FILE]

``--repeats N`` runs every case N times, interleaved, and reports median times; ``--inner M``
runs the derivative M times in each process and takes the least time (a shared machine's
noise only adds: runs of under a second spread 1.5x), peak memory over all M. A case that
is killed or times out is not run again at the next temperatures (``--no-skip`` runs them).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))  # the networks are the examples' own code

from _common import LORENTZIAN_EPS, tie_context  # noqa: E402
from ising_trg import onsager  # noqa: E402

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMBA_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
POLICIES = ("exact", "zero", "lorentzian", "torch")  # "torch": PyTorch, Lorentzian backward
EPS = LORENTZIAN_EPS  # the Lorentzian's width, for minigrad and torch alike
TARGET = 2.0  # the default policy's time and memory over "zero"'s
SIZES = {"trg": {"full": (16, 20), "quick": (8, 8)},  # (bond, steps)
         "ctmrg": {"full": (24, 60), "quick": (8, 40)}}  # (chi, iterations)


# ---- the child: one case ---------------------------------------------------------------
def torch_lorentzian():
    """A module standing in for minigrad in the examples: torch, with linalg.svd replaced by
    the SVD whose backward broadens every pole 1/x into x / (x^2 + EPS)."""
    import types

    import torch

    def lor(x):
        return x / (x * x + EPS)

    class LorentzianSVD(torch.autograd.Function):
        @staticmethod
        def forward(ctx, A):
            U, S, Vh = torch.linalg.svd(A, full_matrices=False)
            ctx.save_for_backward(U, S, Vh)
            return U, S, Vh

        @staticmethod
        def backward(ctx, gU, gS, gVh):
            # gA = U [diag(gS) + (F+G) o (J - J^T)/2 + (F-G) o (K - K^T)/2] Vh + the
            # complements' terms, J = U^T gU, K = V^T gV, F_ij = 1/(s_j - s_i),
            # G_ij = 1/(s_j + s_i), each pole Lorentzian-broadened; written with torch ops
            # so that create_graph differentiates it again.
            U, S, Vh = ctx.saved_tensors
            V, gV = Vh.mT, gVh.mT
            off = 1 - torch.eye(S.shape[-1], dtype=S.dtype)
            F = lor(S[None, :] - S[:, None]) * off
            G = lor(S[None, :] + S[:, None]) * off
            J, K = U.mT @ gU, V.mT @ gV
            inner = (torch.diag(gS) + (F + G) * (J - J.mT) / 2 + (F - G) * (K - K.mT) / 2)
            gA = U @ inner @ Vh
            inv = lor(S)
            if U.shape[0] > S.shape[0]:
                gA = gA + (gU - U @ J) * inv @ Vh
            if V.shape[0] > S.shape[0]:
                gA = gA + (U * inv) @ (gV - V @ K).mT
            return gA

    def svd(A, full_matrices=True):
        if full_matrices:
            raise NotImplementedError("the Lorentzian SVD here is the reduced one")
        return torch.return_types.linalg_svd(LorentzianSVD.apply(A))  # .U, .S, .Vh as torch's

    class Shim(types.ModuleType):
        def __init__(self, name: str, target: types.ModuleType) -> None:
            super().__init__(name)
            self.target = target

        def __getattr__(self, name: str):
            return getattr(self.target, name)

    shim = Shim("torch_lorentzian", torch)
    shim.linalg = Shim("torch_lorentzian.linalg", torch.linalg)
    shim.linalg.svd = svd
    shim.linalg.svd_function = LorentzianSVD  # (for timing its backward)
    return torch, shim


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        line = next(x for x in f if x.startswith(field + ":"))
    return int(line.split()[1]) / 1024


def _reset_peak() -> bool:
    """Restart the kernel's RSS high-water mark (VmHWM) from the current RSS, so that what
    the derivative adds is not hidden under the peak that imports and the warm-up reached."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def child(case: dict) -> dict:
    """Run one case in this process and return its value, times and memory."""
    import ctmrg
    import ising_trg

    import minigrad as mg

    mg.set_num_threads(1)
    if case["policy"] == "torch":
        torch, lib = torch_lorentzian()
        torch.set_num_threads(1)
        ising_trg.mg = ctmrg.mg = lib  # the examples run on torch: the port is the import
        ties = "zero"  # minigrad's policy is not used
    else:
        lib, ties = mg, case["policy"]
    net = ising_trg if case["net"] == "trg" else ctmrg
    bond, length = case["size"]  # (bond, RG steps) or (chi, iterations)

    def derivative(n: int) -> float:
        beta = lib.tensor(1.0 / case["T"], dtype=lib.float64, requires_grad=True)
        f = net.ln_z(beta, bond, n)
        (d1,) = lib.autograd.grad(f, beta, create_graph=case["order"] == 2)
        if case["order"] == 1:
            return -d1.item()
        (d2,) = lib.autograd.grad(d1, beta)
        return beta.item() ** 2 * d2.item()

    with tie_context(ties):
        derivative(3 if case["net"] == "trg" else 6)  # load the kernels, fill the caches
        base, reset = _status_mb("VmRSS"), _reset_peak()
        walls, cpus = [], []
        for _ in range(case.get("inner", 1)):
            t, c = time.perf_counter(), time.process_time()
            value = derivative(length)
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
        wall, cpu = min(walls), min(cpus)  # noise only adds (timeit's rule)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the whole process's
    added = (_status_mb("VmHWM") if reset else peak) - base
    return {"value": value, "wall": wall, "cpu": cpu, "peak_mb": peak, "added_mb": added}


# ---- the parent: run each case in a capped process -------------------------------------
def _usage(pid: int) -> tuple[float, float]:
    """(resident MB, CPU seconds) of a running process, from /proc."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(x.split()[1]) for x in f if x.startswith("VmRSS:")) / 1024
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return rss, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, StopIteration):
        return 0.0, 0.0


def run_case(case: dict, mem_gb: float, timeout: float) -> dict:
    """Run ``case`` in a fresh process of one thread; kill it at ``mem_gb`` of resident memory
    (and give it an address-space limit 1 GB above, in case it outruns the watch) or after
    ``timeout`` seconds of CPU time (what a quiet machine's wall time would be; and after ten
    times that of wall time). Returns the child's result, or a status saying how it ended."""
    env = dict(os.environ, **{v: "1" for v in THREAD_VARS})
    limit = int((mem_gb + 1) * 2**30)

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    cmd = [sys.executable, __file__, "--child", json.dumps(case)]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as fout, tempfile.TemporaryFile("w+") as ferr:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, preexec_fn=cap, stdout=fout,
                                stderr=ferr, text=True)
        status, high = None, 0.0
        while True:
            pid, wstatus, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            rss, cpu = _usage(proc.pid)
            high = max(high, rss)
            if status is None and high > mem_gb * 1024:
                status = f"killed at {high / 1024:.1f} GB"
            elif status is None and (cpu > timeout or time.perf_counter() - t0 > 10 * timeout):
                status = f"timeout {timeout:g} s"
            if status is not None:
                proc.send_signal(signal.SIGKILL)
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(wstatus)
        fout.seek(0)
        ferr.seek(0)
        out, err = fout.read(), ferr.read()
    res: dict[str, Any] = {"peak_mb": usage.ru_maxrss / 1024, "wall": time.perf_counter() - t0,
           "cpu": usage.ru_utime + usage.ru_stime}
    if status is None and proc.returncode == 0:
        res.update(json.loads(out.strip().splitlines()[-1]), status="ok")
    elif status is None:
        last = (err.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        kind = last.partition(": ")[0].rsplit(".", 1)[-1]
        status = "out of memory" if kind == "MemoryError" else f"error: {kind}"[:24]
        res["message"] = last
    res.setdefault("status", status)
    return res


def cases(args: argparse.Namespace, torch_ok: bool) -> list[dict]:
    mode = "quick" if args.quick else "full"
    policies = [p for p in ("zero", "exact", "lorentzian", "torch") if p in args.policies]
    if not torch_ok:
        policies = [p for p in policies if p != "torch"]
    return [{"net": net, "size": SIZES[net][mode], "T": T, "order": order, "policy": p,
             "inner": args.inner}
            for net in args.nets for T in args.temps for order in (1, 2) for p in policies]


def _key(case: dict, policy: str | None = None) -> tuple:
    return case["net"], case["T"], case["order"], policy or case["policy"]


def measure(todo: list[dict], args: argparse.Namespace) -> dict:
    """Every case ``args.repeats`` times, interleaved; a case killed or timed out is not run
    again, nor (without --no-skip) at the next temperatures."""
    runs: dict = {}
    dead: dict = {}  # (net, order, policy) -> the temperature it died at
    for _ in range(args.repeats):
        for case in todo:
            k, fam = _key(case), (case["net"], case["order"], case["policy"])
            if runs.get(k) and runs[k][-1]["status"] != "ok":
                continue
            if fam in dead and dead[fam] != case["T"] and not args.no_skip:
                runs[k] = [{"status": f"skipped (died at T = {dead[fam]})"}]
                continue
            r = run_case(case, args.mem_gb, args.timeout)
            runs.setdefault(k, []).append(r)
            if r["status"].startswith(("killed", "timeout", "out of memory")):
                dead.setdefault(fam, case["T"])
            print(f"  {case['net']:5s} T={case['T']:<4g} {'EC'[case['order'] - 1]} "
                  f"{case['policy']:10s} {r['status']:24s} {r.get('wall', 0):8.2f} s "
                  f"{r.get('peak_mb', 0):8.0f} MB", flush=True)
    return runs


def summarise(runs: dict) -> dict:
    out = {}
    for k, rs in runs.items():
        ok = [r for r in rs if r["status"] == "ok"]
        if ok:
            out[k] = dict(ok[0], wall=statistics.median(r["wall"] for r in ok),
                          cpu=statistics.median(r["cpu"] for r in ok),
                          peak_mb=statistics.median(r["peak_mb"] for r in ok),
                          added_mb=statistics.median(r["added_mb"] for r in ok))
        else:
            out[k] = rs[-1]
    return out


def report(todo: list[dict], res: dict, exact) -> None:
    head = (f"{'net':5s} {'T':>4s} {'':1s} {'policy':10s} {'status':24s} {'wall s':>8s} "
            f"{'cpu s':>8s} {'peak MB':>8s} {'+MB':>6s} {'value':>15s} {'|v - exact|':>11s} "
            f"{'|v - zero|':>10s} {'cpu/zero':>8s} {'mem/zero':>8s}")
    print("\n" + head + "\n" + "-" * len(head))
    worst: dict = {}
    for case in todo:
        r, z = res[_key(case)], res.get(_key(case, "zero"), {})
        T, net, order = case["T"], case["net"], case["order"]
        line = f"{net:5s} {T:4.2f} {'EC'[order - 1]} {case['policy']:10s} {r['status']:24s} "
        if "peak_mb" in r:
            line += f"{r['wall']:8.2f} {r['cpu']:8.2f} {r['peak_mb']:8.0f} "
        if r["status"] == "ok":
            v = r["value"]
            line += (f"{r['added_mb']:6.0f} {v:15.10f} "
                     f"{abs(v - exact(T)[order - 1]):11.2e} ")
            if z.get("status") == "ok":
                tr, mr = r["cpu"] / z["cpu"], r["peak_mb"] / z["peak_mb"]
                line += f"{abs(v - z['value']):10.1e} {tr:8.2f} {mr:8.2f}"
                w = worst.setdefault((net, order), [0.0] * 4) \
                    if case["policy"] == "exact" else None
                if w is not None:
                    ar = r["added_mb"] / max(z["added_mb"], 1.0)
                    w[:] = (max(w[0], tr), max(w[1], mr), max(w[2], ar),
                            max(w[3], abs(v - z["value"])))
        elif case["policy"] == "exact":
            worst[(net, order)] = None  # did not finish: a miss
        print(line.rstrip())
    for case in todo:
        if "message" in res[_key(case)]:
            print(f"  {_key(case)}: {res[_key(case)]['message']}")
    print(f"\ntarget: the default policy's time and peak memory within {TARGET:g}x of "
          "\"zero\"'s, the same values")
    for (net, order), w in sorted(worst.items()):
        what = f"  {net} {'EC'[order - 1]}: "
        if w is None:
            print(what + "MISS (the default policy did not finish everywhere)")
        else:
            ok = w[0] <= TARGET and w[1] <= TARGET
            print(what + f"worst CPU time ratio {w[0]:.2f}, peak memory ratio {w[1]:.2f} "
                  f"(+MB ratio {w[2]:.2f}), |v - zero| {w[3]:.1e}  {'PASS' if ok else 'MISS'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="TRG bond 8, 8 steps and CTMRG chi 8, 40 iterations; T 1.8 and 2.5")
    ap.add_argument("--mem-gb", type=float, default=8.0, help="kill a case above this RSS")
    ap.add_argument("--timeout", type=float, default=300.0, help="CPU seconds per case")
    ap.add_argument("--temps", type=float, nargs="+")
    ap.add_argument("--nets", nargs="+", choices=tuple(SIZES), default=tuple(SIZES))
    ap.add_argument("--policies", nargs="+", choices=POLICIES, default=POLICIES)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--inner", type=int, default=1,
                    help="runs per process after the warm-up; times are their least")
    ap.add_argument("--no-skip", action="store_true",
                    help="run a case at every temperature even after it died at one")
    ap.add_argument("--json", help="also write every run's raw result to this file")
    ap.add_argument("--from-json", help="print the table of a run saved by --json")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    if args.from_json:
        with open(args.from_json) as f:
            runs = {tuple(k): rs for k, rs in json.load(f)}
        todo = [dict(zip(("net", "T", "order", "policy"), k)) for k in runs]
        report(todo, summarise(runs), onsager)
        return
    # 1.5: the ordered phase, whose doublets the loss reads far below s_1's rounding
    # (they had looked at ~30 nodes, 23x "zero"'s time)
    args.temps = args.temps or ([1.8, 2.5] if args.quick else [1.5, 1.8, 2.0, 2.5])
    try:
        import torch  # noqa: F401
        torch_ok = True
    except ImportError:
        torch_ok = False
    todo = cases(args, torch_ok)
    mode = "quick" if args.quick else "full"
    for net in args.nets:  # a first run may compile and cache kernels: not in the table
        run_case(dict(todo[0], net=net, size=SIZES[net][mode]), args.mem_gb, args.timeout)
    sizes = ", ".join(f"{net} {SIZES[net][mode][0]} x {SIZES[net][mode][1]}" for net in args.nets)
    print(f"{len(todo)} cases ({sizes}), one process each, one thread, cap {args.mem_gb:g} GB "
          f"RSS, timeout {args.timeout:g} s CPU" + ("" if torch_ok else "; torch not installed"))
    runs = measure(todo, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([[list(k), rs] for k, rs in runs.items()], f, indent=1)
    report(todo, summarise(runs), onsager)


if __name__ == "__main__":
    main()
