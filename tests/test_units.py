"""Units at the boundary: durations as users write them (the README's `--budget 20m`)."""

import pytest

from tcpprofile import units
from tcpprofile.errors import ValidationError


@pytest.mark.parametrize("text, expected", [("20m", 1200.0), ("20min", 1200.0), ("1.5h", 5400.0),
                                            ("91.6ms", 0.0916), ("8s", 8.0), ("8", 8.0), ("250us", 250e-6)])
def test_durations(text, expected):
    assert units.seconds("budget", text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["20 minutes", "5d", "-3s", "1e400s"])
def test_bad_durations_name_the_field(text):
    with pytest.raises(ValidationError, match="budget"):
        units.seconds("budget", text)
