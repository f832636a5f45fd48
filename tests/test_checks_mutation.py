"""Do the changes in place (checks/_mutation.py) say where a value changed and what the layout
became, from a copy made before the call or from what the proxies recorded?"""

import pytest
import torch

from checks import CheckError
from checks._mutation import compared, expect_unchanged, mutation_of, note_mutation


def test_an_unchanged_input_passes_nan_included():
    """Does a tensor equal to its copy pass, NaN where the copy has NaN too?"""
    before = torch.tensor([[1.0, 2.0], [3.0, float("nan")]])
    expect_unchanged(before, before.clone(), "X")
    assert compared(before, before.clone()) is None


def test_a_changed_value_is_named_with_its_index():
    """Is the first changed element named, with what it was and what it is now?"""
    before = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    after = before.clone()
    after[1, 0] = 7.5
    with pytest.raises(CheckError, match=r"X was modified in place: at index \(1, 0\) it was 3 "):
        expect_unchanged(before, after, "X")
    assert compared(before, after) == ("value", (1, 0), 3.0, 7.5)


def test_a_new_dtype_or_shape_is_named():
    """Is an input whose dtype or shape changed reported with both layouts?"""
    before = torch.zeros(2, 3)
    with pytest.raises(CheckError, match=r"float32 of shape \(2, 3\) and is now torch.int64 "):
        expect_unchanged(before, torch.zeros(2, 3, dtype=torch.int64), "X")
    with pytest.raises(CheckError, match=r"is now torch.float32 of shape \(1, 2, 3\)"):
        expect_unchanged(before, before.unsqueeze(0), "X")


def test_a_recorded_change_is_reported_though_the_tensor_is_as_it_was():
    """Does a change the proxies recorded for the checks' own tensor (whose values never
    changed) fail expect_unchanged, and is it kept for that tensor only?"""
    X = torch.zeros(3)
    note_mutation(X, ("value", (1,), 0.0, 5.0))
    assert mutation_of(X) == ("value", (1,), 0.0, 5.0)
    assert mutation_of(X.clone()) is None
    with pytest.raises(CheckError, match=r"at index \(1,\) it was 0 and is now 5\."):
        expect_unchanged(X.clone(), X, "X")


def test_meta_tensors_are_compared_by_layout_only():
    """On the meta device, where there are no values, is only a new layout a change?"""
    X = torch.zeros(2, 3, device="meta")
    assert compared(X, torch.zeros(2, 3, device="meta")) is None
    assert compared(X, torch.zeros(3, 2, device="meta"))[0] == "layout"
