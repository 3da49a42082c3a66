"""The walk's extension point (autograd/downstream.py): a node that wants its downstream
gets a walk that records only when it asks, replayed up to it, with each earlier answer
reused and the record dropped after it."""

from __future__ import annotations

import numpy as np

import minigrad as mg
from minigrad.autograd import Function, downstream
from minigrad.autograd.engine import run_backward
from minigrad.autograd.grad_mode import is_grad_enabled


def f64(x) -> mg.Tensor:
    return mg.tensor(np.asarray(x, dtype=np.float64), requires_grad=True)


class _Curious(Function):
    """The identity; its backward notes whether the walk records, and when ``asks`` it
    reads its record and differentiates it along ``v`` (a Hessian-vector product of the
    loss downstream, the tie limits' use)."""

    log: list = []
    inside = False  # in its own look: then other nodes answer plainly (as nested() looks)

    @staticmethod
    def forward(ctx, x, asks):
        ctx.wants_downstream = True
        ctx.asks = asks
        y = mg.tensor(x._array.copy())
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        if _Curious.inside:
            return g, None
        entry = {"records": is_grad_enabled(), "replaying": _replaying()}
        if ctx.asks:
            (y,) = ctx.saved_tensors
            (rec,) = downstream.recorded_output_grads(ctx, [g])
            entry["record_requires_grad"] = rec.requires_grad
            v = mg.ones(y.shape, dtype=y.dtype)
            with mg.enable_grad():
                q = (rec * v).sum()
            _Curious.inside = True
            try:  # retained: the record is shared with the gradients that go on
                (h,) = run_backward([q], [mg.tensor(1.0, dtype=q.dtype)], True, False,
                                    inputs=[y], look_downstream=False)
            finally:
                _Curious.inside = False
            entry["hvp"] = h.numpy()
            entry["record"] = rec.detach().numpy()
        _Curious.log.append(entry)
        return g, None


def _replaying() -> bool:
    return downstream.running.stack[-1].replaying is not None


def test_a_wanting_node_that_does_not_ask_leaves_the_walk_unrecorded() -> None:
    _Curious.log = []
    x = f64([1.0, 2.0])
    y = _Curious.apply(x * 1.0, False)
    (y ** 3).sum().backward()
    assert _Curious.log == [{"records": False, "replaying": False}]
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.array([1.0, 4.0]))


def test_a_node_that_asks_gets_its_record_as_a_function_of_its_outputs() -> None:
    _Curious.log = []
    x = f64([1.0, 2.0])
    y = _Curious.apply(x * 1.0, True)
    (y ** 3).sum().backward()
    (entry,) = _Curious.log
    assert entry["record_requires_grad"] and not entry["records"]
    np.testing.assert_allclose(entry["record"], 3 * np.array([1.0, 4.0]))  # 3 y^2
    np.testing.assert_allclose(entry["hvp"], 6 * np.array([1.0, 2.0]))  # d(3 y^2 . 1)/dy
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.array([1.0, 4.0]))


def test_a_replay_passes_a_node_that_asked_without_asking_again() -> None:
    """Two asking nodes in a chain: the one nearer the loss asks first (its replay is the
    loss's part alone); the farther one's replay runs the nearer one's backward again, as a
    recording of the same numbers, and the nearer one's look is not made again there (here
    it would be: this node asks outside the tie sources' memory, so its backward runs once
    more inside the replay, recording: the replay records)."""
    _Curious.log = []
    x = f64([1.0, 2.0])
    a = _Curious.apply(x * 1.0, True)
    b = _Curious.apply(a * a, True)
    (b ** 3).sum().backward()
    first, again, second = _Curious.log
    assert not first["replaying"] and not first["records"]
    assert again["replaying"] and again["records"]  # b's backward, replayed for a
    assert not second["replaying"]
    # a's record is d/da of sum((a^2)^3) = 6 a^5, its derivative along 1 is 30 a^4
    np.testing.assert_allclose(second["record"], 6 * np.array([1.0, 32.0]))
    np.testing.assert_allclose(second["hvp"], 30 * np.array([1.0, 16.0]))
    np.testing.assert_allclose(x.grad.numpy(), 6 * np.array([1.0, 32.0]))


def test_hooks_below_a_wanting_node_run_once() -> None:
    """A walk through hooks records from the start: a replay would run them again."""
    _Curious.log = []
    calls = []
    x = f64([1.0, 2.0])
    y = _Curious.apply(x * 1.0, True)
    z2 = (y * 2.0) ** 2
    z2.register_hook(lambda g: calls.append(1))  # off the look's own path (its record)
    z2.sum().backward()
    assert calls == [1]
    (entry,) = _Curious.log
    assert entry["records"] and not entry["replaying"]
    np.testing.assert_allclose(x.grad.numpy(), 8 * np.array([1.0, 2.0]))


def test_the_graph_is_freed_when_an_unrecorded_walk_ends() -> None:
    x = f64([1.0, 2.0])
    y = _Curious.apply(x * 1.0, True)
    loss = (y ** 3).sum()
    loss.backward()
    try:
        loss.backward()
    except RuntimeError as e:
        assert "second time" in str(e) or "freed" in str(e)
    else:
        raise AssertionError("a second backward through a freed graph did not raise")


def test_replays_that_would_cost_more_than_a_record_give_way_to_one() -> None:
    """A chain of asking nodes: each replay runs all the chain below its node, so soon the
    replays would run more nodes than the graph has; the walk then runs again from its
    start, recording, and the leaf gets its gradient once."""
    _Curious.log = []
    x = f64([0.5, 1.5])
    y = x * 1.0
    for _ in range(6):
        y = _Curious.apply(y, True) * 1.0
    (y ** 2).sum().backward()
    assert any(not e["records"] for e in _Curious.log)  # it started unrecorded
    assert _Curious.log[-1]["records"] and not _Curious.log[-1]["replaying"]  # restarted
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([0.5, 1.5]))
    for e in _Curious.log:
        if "hvp" in e:
            np.testing.assert_allclose(e["hvp"], [2.0, 2.0])  # d(2 y . 1)/dy
