"""The walk's extension point (autograd/downstream.py): a node that wants its downstream
gets a walk that records only when it asks, replayed up to it, with each earlier answer
reused and the record dropped after it."""

from __future__ import annotations

import numpy as np
import pytest

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
    replayable = True  # its backward may run again in a replay
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
    z = x
    for _ in range(8):  # below both, so that neither replay runs most of the graph
        z = z * 1.0
    a = _Curious.apply(z, True)
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


def test_a_replay_of_most_of_the_graph_gives_way_to_a_record_at_once() -> None:
    """An asking node far from the loss with another wanting node below it: replaying the
    walk to it would run more than half the graph, and the next ask would then cost more
    than recording it; so the walk runs again from its start, recording, without that
    replay (a second pass meets its SVDs after the whole recorded first pass: CTMRG's
    replayed ~all of it, then restarted)."""
    _Curious.log = []
    x = f64([0.5, 1.5])
    y = _Curious.apply(_Curious.apply(x * 1.0, True) * 1.0, True)
    for _ in range(6):
        y = y * 1.0
    (y ** 2).sum().backward()
    assert [e["replaying"] for e in _Curious.log] == [False, False]  # no replay ran
    assert all(e["records"] for e in _Curious.log)  # both asked in the walk run again
    for e in _Curious.log:
        np.testing.assert_allclose(e["hvp"], [2.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([0.5, 1.5]))


def test_a_lone_far_ask_replays() -> None:
    """The same far ask with nothing wanting below it replays (a restart would record,
    and keep to the walk's end, the graph below it as well)."""
    _Curious.log = []
    x = f64([0.5, 1.5])
    z = x
    for _ in range(4):
        z = z * 1.0  # below the asking node: a record of these would be kept
    y = _Curious.apply(z, True)
    for _ in range(8):  # above it: its replay runs more than half the graph
        y = y * 1.0
    (y ** 2).sum().backward()
    (entry,) = _Curious.log
    assert not entry["records"] and not entry["replaying"]  # asked in the optimistic walk
    np.testing.assert_allclose(entry["hvp"], [2.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([0.5, 1.5]))


def _tied_svd_loss(A: mg.Tensor, W: mg.Tensor) -> mg.Tensor:
    """<W, U S^3 Vh> = <W, A A^T A>: a function of A, read at a tie (a look downstream)."""
    U, S, Vh = mg.linalg.svd(A, full_matrices=False)
    return ((U * (S ** 3).unsqueeze(-2)) @ Vh) * W


def _tied() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    Q1, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    Q2, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    A0 = Q1[:, :3] @ np.diag([2.0, 1.0, 1.0]) @ Q2.T  # s_2 = s_3
    W = rng.standard_normal((4, 3))
    return A0, W, W @ A0.T @ A0 + A0 @ W.T @ A0 + A0 @ A0.T @ W


class _Once(Function):
    """Doubles; its backward consumes its ctx (torch runs a backward once per walk)."""

    calls = 0

    @staticmethod
    def forward(ctx, x):
        ctx.k = 2.0
        return x._array * 2.0

    @staticmethod
    def backward(ctx, g):
        _Once.calls += 1
        k = ctx.k
        del ctx.k
        return g * k


def test_a_users_backward_runs_once_though_a_node_below_it_looks() -> None:
    """A replay would run the backwards between the loss and the looking node again: a
    Function not minigrad's own (not ``replayable``) makes the walk record from the start."""
    A0, W, exact = _tied()
    _Once.calls = 0
    A = f64(A0)
    (_Once.apply(_tied_svd_loss(A, mg.tensor(W)))).sum().backward()
    assert _Once.calls == 1
    np.testing.assert_allclose(A.grad.numpy(), 2 * exact, rtol=0,
                               atol=1e-12 * np.abs(exact).max())


def test_a_hook_on_an_input_of_grad_runs_once_through_a_restart() -> None:
    """autograd.grad runs the hooks of its inputs even off the paths to the others, where
    the test for hooks did not look: then too the walk records from the start."""
    calls = []
    x = f64([0.5, 1.5])
    y = x * 1.0
    for _ in range(6):  # enough asking nodes that replays give way to a Restart
        y = _Curious.apply(y, True) * 1.0
    z = f64([1.0, 2.0]) * 3.0
    z.register_hook(lambda g: calls.append(1))
    gx, gz = mg.autograd.grad((y ** 2).sum() + (z * z).sum(), [x, z])
    assert calls == [1]
    np.testing.assert_allclose(gz.numpy(), [6.0, 12.0])
    np.testing.assert_allclose(gx.numpy(), [1.0, 3.0])


class _Boom(Function):
    @staticmethod
    def forward(ctx, x):
        return x._array.copy()

    @staticmethod
    def backward(ctx, g):
        raise ValueError("boom")


def test_leaves_reached_before_an_error_keep_their_gradients() -> None:
    """As in a plain walk (and torch's): an optimistic walk holds back what it adds into
    leaves until it ends, and an error ends it too."""
    a = f64([1.0, 2.0])
    b = f64([3.0, 4.0])
    loss = _Boom.apply(_Curious.apply(a * 1.0, False)).sum()
    loss = loss + (b * 2.0).sum()  # b's node is newer than _Boom's: reached first
    try:
        loss.backward()
    except ValueError:
        pass
    np.testing.assert_allclose(b.grad.numpy(), [2.0, 2.0])


def test_a_checkpointed_svd_at_a_tie_looks_at_the_loss_past_its_segment() -> None:
    """A recomputed segment's walk starts from constant gradients, where a look downstream
    would see no second derivatives past the segment (0.41 off, silently): a segment
    holding a node that may look keeps its graph instead."""
    from minigrad.utils.checkpoint import checkpoint

    A0, W, exact = _tied()
    A = f64(A0)

    def svd(a):
        return mg.linalg.svd(a, full_matrices=False)

    U, S, Vh = checkpoint(svd, A, use_reentrant=False)
    (((U * (S ** 3).unsqueeze(-2)) @ Vh) * mg.tensor(W)).sum().backward()
    np.testing.assert_allclose(A.grad.numpy(), exact, rtol=0, atol=1e-12 * np.abs(exact).max())


def test_a_look_through_a_once_differentiable_backward_says_why_it_needs_one() -> None:
    """A first-order backward: the look at a tie differentiates the loss after the SVD
    again, which a once_differentiable Function cannot be. The error (torch's kind, a
    RuntimeError) says so and names the policies that need no look, instead of telling
    the user to drop a create_graph=True they never passed."""
    from tests.autograd.test_backward_edge_cases import CubeFirstOrder

    A0, W, _ = _tied()
    A = f64(A0)
    with pytest.raises(RuntimeError, match="once_differentiable") as e:
        CubeFirstOrder.apply(_tied_svd_loss(A, mg.tensor(W))).sum().backward()
    assert "CubeFirstOrderBackward" in str(e.value)
    assert "ties=" in str(e.value) and "create_graph" not in str(e.value)


class _RunsWhenReached(Function):
    """The identity, marked as a node that runs whenever a walk reaches it (DelayedError's
    flag): the nodes above it lead somewhere even when it leads to no input."""

    runs_when_reached = True

    @staticmethod
    def forward(ctx, x):
        return mg.tensor(x._array.copy())

    @staticmethod
    def backward(ctx, g):
        return g


@pytest.mark.parametrize("seed", range(6))
def test_what_nested_walks_remember_of_the_graph_is_the_plain_scan(seed: int) -> None:
    """Reach (a node's bits: the wanting nodes below it) gives the nodes leading to any set
    of wanting nodes that the plain scan gives, on random graphs, and again for later
    walks from nodes made after it scanned (which reuse what the first walks found)."""
    from minigrad.autograd.engine import _scan_leading_to

    rng = np.random.default_rng(seed)
    leaves = [f64(rng.standard_normal(3)) for _ in range(3)]
    ts = list(leaves)
    wanting = []
    keep = []  # the wanting contexts must stay alive for Reach to know them

    def grow(n: int) -> None:
        for _ in range(n):
            a, b = (ts[i] for i in rng.integers(0, len(ts), 2))
            kind = rng.integers(0, 5)
            y = (a * b if kind == 0 else a + b.sin() if kind == 1 else a.exp() if kind == 2
                 else _RunsWhenReached.apply(a) if kind == 3 else _Curious.apply(a, False))
            if kind == 4:
                wanting.append(y.grad_fn)
            ts.append(y)

    grow(40)
    keep.extend(wanting)
    reach = downstream.Reach()
    for round_ in range(2):
        if round_:
            grow(15)  # nodes made after the first walks scanned (their wanting ones unknown)
        starts = [ts[-1].grad_fn, ts[-5].grad_fn]
        known = [w for w in wanting if w in reach.bit]
        assert known
        for k in range(1, len(known) + 1):
            targets = set(rng.choice(np.array(known, dtype=object), k, replace=False))
            mask = reach.mask(targets)
            assert mask is not None
            assert reach.leading_to(mask, starts) == _scan_leading_to(targets, starts)
        later = [w for w in wanting if w not in reach.bit]
        if later:
            assert reach.mask({later[0]}) is None  # unknown to it: the caller scans


def test_a_walk_that_looked_leaves_no_wanting_node_alive_behind_its_leaves() -> None:
    """A parameter outlives each walk, and its sink was scanned (it carries a Reach mark):
    the mark must hold nothing of the walk, or every SVD of a training loop stays alive
    (and every later walk scans for wanting nodes again)."""
    import weakref

    def live() -> set:
        return {r() for r in list(downstream.WANTING)} - {None}

    A0, W, _ = _tied()
    A = f64(A0)
    for _ in range(3):
        before = live()
        loss = _tied_svd_loss(A * 1.0, mg.tensor(W)).sum()
        (ctx,) = live() - before
        ref = weakref.ref(ctx)
        del ctx, before
        loss.backward()
        del loss
        assert ref() is None  # freed by its count, no cycle, nothing holding it


def test_reach_marks_overwritten_by_another_threads_walk_are_not_misread() -> None:
    """node._reach is shared, each thread's Reach numbers the wanting nodes its own way:
    a walk whose marks another overwrote in between still finds the scan's nodes."""
    from minigrad.autograd.engine import _scan_leading_to

    x = f64([1.0, 2.0])
    w1, w2 = _Curious.apply(x * 1.0, False), _Curious.apply(x * 3.0, False)
    top = w1 * 2.0 + w2.exp()
    loss = (top * top).sum()
    mine = downstream.Reach()
    other = downstream.Reach()
    a, b = w1.grad_fn, w2.grad_fn
    other.bit[a], other.bit[b] = other.bit[b], other.bit[a]  # its own numbering
    assert other.bit[w1.grad_fn] != mine.bit[w1.grad_fn]
    mine.below(loss.grad_fn)
    other.below(top.grad_fn)  # the other thread's walk through the shared part
    for w in (w1.grad_fn, w2.grad_fn):
        mask = mine.mask({w})
        assert mask is not None
        assert mine.leading_to(mask, [loss.grad_fn]) == _scan_leading_to({w}, [loss.grad_fn])
