"""Backward walks in several threads at once that add into the same leaves: every update
lands (numpy releases the GIL inside a large in-place add, so unguarded accumulation into
``.grad`` lost some), as in torch."""

import threading

import numpy as np
import pytest

import minigrad as mg


def _in_threads(n: int, work) -> None:
    start = threading.Barrier(n)
    errors: list = []

    def run() -> None:
        try:
            start.wait()
            work()
        except BaseException as e:  # noqa: BLE001 (reported by the main thread)
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_concurrent_backward_into_a_large_shared_leaf_loses_no_update():
    w = mg.zeros(600, 600, dtype=mg.float64, requires_grad=True)
    threads, steps = 4, 20

    def work() -> None:
        for _ in range(steps):
            (w * 1.0).sum().backward()

    _in_threads(threads, work)
    assert np.all(w.grad.numpy() == threads * steps)


def test_retain_graph_backward_of_one_graph_from_several_threads():
    """One graph, kept with retain_graph, walked from several threads: each walk adds its
    gradient into both leaves (one of them large) and into a retained non-leaf."""
    a = mg.ones(500, 500, dtype=mg.float64, requires_grad=True)
    b = mg.tensor(2.0, dtype=mg.float64, requires_grad=True)
    h = a * b
    h.retain_grad()
    loss = (h * 3.0).sum()
    threads, steps = 4, 10

    def work() -> None:
        for _ in range(steps):
            loss.backward(retain_graph=True)

    _in_threads(threads, work)
    walks = threads * steps
    assert np.all(a.grad.numpy() == walks * 6.0)
    assert b.grad.item() == walks * 3.0 * 500 * 500
    assert np.all(h.grad.numpy() == walks * 3.0)


def test_concurrent_backward_matches_torch():
    """The issue's case, two threads of 40 backward calls into one 1000 x 1000 leaf, as
    torch computes it."""
    torch = pytest.importorskip("torch")
    threads, steps = 2, 40
    w = mg.zeros(1000, 1000, dtype=mg.float64, requires_grad=True)
    tw = torch.zeros(1000, 1000, dtype=torch.float64, requires_grad=True)
    _in_threads(threads, lambda: [(w * 1.0).sum().backward() for _ in range(steps)])
    _in_threads(threads, lambda: [(tw * 1.0).sum().backward() for _ in range(steps)])
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())
