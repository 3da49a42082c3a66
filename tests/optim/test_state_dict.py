"""Optimizer state dicts: a saved run resumes bit for bit, the layout is torch's, loading
checks the layout and casts buffers as torch does, and mg.save / mg.load carry it."""

from __future__ import annotations

import copy
import io

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn as nn
import minigrad.optim as optim
from tests.optim.run import ATOL, RTOL, Run


@pytest.mark.parametrize("name,kw", [("RMSprop", dict(momentum=0.9, centered=True)),
                                     ("AdamW", dict(amsgrad=True)),
                                     ("Adagrad", dict(lr_decay=0.1)),
                                     ("SGD", dict(lr=0.01, momentum=0.9)),
                                     ("Adam", dict(lr=0.1))])
def test_state_dict_round_trip_resumes_exactly(name, kw) -> None:
    full = Run(mg, name, None, kw).steps(6)
    first = Run(mg, name, None, kw).steps(3)
    saved = copy.deepcopy(first.opt.state_dict())
    first.steps(1)  # the saved copy must not see later steps
    resumed, done = Run(mg, name, None, kw), Run(mg, name, None, kw).steps(3)
    with mg.no_grad():
        for p, q in zip(resumed.params, done.params):
            p.copy_(q.detach())
    resumed.opt.load_state_dict(saved)
    owned = [v for s in resumed.opt.state.values() for v in s.values() if isinstance(v, mg.Tensor)]
    given = [v for s in saved["state"].values() for v in s.values() if isinstance(v, mg.Tensor)]
    assert owned and not {id(v) for v in owned} & {id(v) for v in given}  # loading copies
    resumed.steps(3)
    for a, b in zip(full.values(), resumed.values()):
        np.testing.assert_array_equal(a, b)


def test_state_dict_layout_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    groups = [dict(params=[0, 1], centered=True), dict(params=[2], momentum=0.9)]
    ours = Run(mg, "RMSprop", groups, dict(lr=0.01)).steps(2).opt.state_dict()
    theirs = Run(torch, "RMSprop", groups, dict(lr=0.01)).steps(2).opt.state_dict()
    assert sorted(ours["state"]) == sorted(theirs["state"]) == [0, 1, 2]
    for i in ours["state"]:
        assert sorted(ours["state"][i]) == sorted(theirs["state"][i])
        assert ours["state"][i]["step"] == float(theirs["state"][i]["step"]) == 2
        for key, value in ours["state"][i].items():
            if key != "step":
                np.testing.assert_allclose(value.numpy(), theirs["state"][i][key].numpy(),
                                           rtol=RTOL, atol=ATOL)
    assert [g["params"] for g in ours["param_groups"]] == [[0, 1], [2]]
    for o, t in zip(ours["param_groups"], theirs["param_groups"]):
        assert all(t[k] == v for k, v in o.items())


def test_adagrad_state_exists_before_the_first_step_as_in_torch() -> None:
    p = nn.Parameter(mg.ones(2, 2))
    state = optim.Adagrad([p], initial_accumulator_value=0.5).state_dict()["state"]
    assert state[0]["step"] == 0
    np.testing.assert_array_equal(state[0]["sum"].numpy(), np.full((2, 2), 0.5, np.float32))


def test_load_state_dict_checks_layout_and_casts_buffers_like_torch() -> None:
    a, b = nn.Parameter(mg.ones(2)), nn.Parameter(mg.ones(3))
    opt = optim.Adam([a, b], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": [{"params": [0]}, {"params": [1]}]})
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict({"state": {}, "param_groups": [{"params": [0]}]})
    # A float64 checkpoint loaded into float32 parameters; string keys as a file may give.
    saved = {"state": {"1": {"step": 1, "exp_avg": mg.ones(3, dtype=mg.float64),
                             "exp_avg_sq": mg.ones(3, dtype=mg.float64)}},
             "param_groups": [dict(opt.state_dict()["param_groups"][0], lr=0.5)]}
    opt.load_state_dict(saved)
    assert opt.param_groups[0]["lr"] == 0.5 and opt.param_groups[0]["params"] == [a, b]
    assert opt.state[b]["exp_avg"].dtype == mg.float32 and opt.state[b]["step"] == 1


def _saves_nested_dicts() -> bool:
    """Whether mg.save/mg.load round-trip a nested dict (another change of issue 13 adds it)."""
    buf = io.BytesIO()
    try:
        mg.save({"state": {0: {"step": 1}}, "groups": [{"lr": 0.1}]}, buf)
        buf.seek(0)
        back = mg.load(buf)
        return back["state"][0]["step"] == 1 and back["groups"][0]["lr"] == 0.1
    except (TypeError, ValueError, KeyError):
        return False


@pytest.mark.skipif(not _saves_nested_dicts(), reason="mg.save does not store nested dicts yet")
def test_state_dict_through_mg_save_and_load() -> None:
    groups = [dict(params=[0, 1]), dict(params=[2], lr=0.1)]
    run = Run(mg, "AdamW", groups, dict(amsgrad=True)).steps(2)
    buf = io.BytesIO()
    mg.save(run.opt.state_dict(), buf)
    buf.seek(0)
    other = Run(mg, "AdamW", groups, dict(amsgrad=True))
    other.opt.load_state_dict(mg.load(buf))
    assert other.opt.param_groups[1]["lr"] == 0.1
    assert tuple(other.opt.param_groups[0]["betas"]) == (0.9, 0.999)
    for p, q in zip(run.params, other.params):
        for k, v in run.opt.state[p].items():
            w = other.opt.state[q][k]
            assert (v == w) if k == "step" else np.array_equal(v.numpy(), w.numpy())
