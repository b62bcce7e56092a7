"""Feature-fit modes: which events the SVD may see (whole log, time prefix, held-out split,
online)."""

import numpy as np
import pytest

from dpbandits.data import DataError
from dpbandits.data.fitting import WHOLE, FeatureFit, parse_fit


@pytest.mark.parametrize("token,mode,percent", [("whole", "whole", 100), ("prefix10", "prefix", 10),
                                                ("split80", "split", 80), ("prefix1", "prefix", 1),
                                                ("online", "online", 100),
                                                ("online14", "online", 14)])
def test_tokens_round_trip(token, mode, percent):
    fit = parse_fit(token)
    assert (fit.mode, fit.percent, fit.token) == (mode, percent, token)
    assert fit.leak_free == (mode != "whole")


@pytest.mark.parametrize("token", ["prefix", "prefix0", "prefix100", "split", "all", "prefix10 ",
                                   "Prefix10", "split-5", "online0", "online100", "onlinex"])
def test_bad_tokens_say_what_is_allowed(token):
    with pytest.raises(DataError) as err:
        parse_fit(token)
    message = str(err.value)
    assert repr(token) in message
    assert "allowed: whole, online, online<p>, prefix<p> or split<p>" in message


def test_prefix_mask_is_the_earliest_events():
    mask = FeatureFit("prefix", 10).mask(1001)
    assert mask[:100].all() and not mask[100:].any()
    assert WHOLE.mask(7).all()


def test_split_mask_is_seeded_and_of_the_stated_share():
    fit = FeatureFit("split", 80)
    a, b, c = fit.mask(5000, seed=0), fit.mask(5000, seed=0), fit.mask(5000, seed=1)
    assert a.sum() == 4000 and np.array_equal(a, b) and not np.array_equal(a, c)
    # spread over the whole log, not a block
    assert 0.7 < a[:1000].mean() < 0.9 and 0.7 < a[-1000:].mean() < 0.9


def test_online_covers_the_earliest_share_and_fits_nothing_once_and_for_all():
    assert parse_fit("online14").n_fit(1000) == 140 and parse_fit("online").n_fit(1000) == 1000
    assert not parse_fit("online").mask(50).any()
