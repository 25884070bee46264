"""scripts/nist_digits.py, the NIST digits table of docs/numerics.md: one row order or the median
(min–max) over several, and qr against Cholesky on the same orders; and what that table says
about the qr mode on the exact fits (Wampler 1 and 2) over row orders, on both engines."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import NATIVE_CPU, require_module

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import nist_digits  # a script: importable once scripts/ is on the path

NUMBER = r"\d+\.\d"
SPREAD = rf"{NUMBER} \({NUMBER}–{NUMBER}\)"
PAIRED = rf"[+-]{NUMBER} \(\d+/\d+\)"


def test_row_orders_are_the_natural_order_then_seeded_permutations():
    orders = nist_digits.row_orders(21, 4)
    assert len(orders) == 4
    np.testing.assert_array_equal(orders[0], np.arange(21))
    for seed, order in enumerate(orders[1:], start=1):
        np.testing.assert_array_equal(order, np.random.default_rng(seed).permutation(21))
        assert sorted(order) == list(range(21))
    assert nist_digits.row_orders(21, 1)[0].tolist() == list(range(21))


def test_cells_give_the_median_and_the_range_and_pairs_compare_order_by_order():
    assert nist_digits.cell([10.26]) == "10.3"
    assert nist_digits.cell([9.0, 11.0, 10.2]) == "10.2 (9.0–11.0)"
    assert nist_digits.cell(None) == "refused"
    # Medians of 10.5 each, but qr is behind in two of three orders: the pairs say so.
    assert nist_digits.paired([10.5, 10.0, 11.0], [10.5, 9.0, 10.0]) == "-1.0 (1/3)"
    assert nist_digits.paired([10.0, 10.04], [10.0, 10.0]) == "+0.0 (1/2)"  # never "-0.0"
    assert nist_digits.paired(None, [10.0]) == "refused"


def test_the_table_over_row_orders(capsys):
    assert nist_digits.main(["--backend", "numpy", "--orders", "3", "--paired",
                             "--data-set", "Wampler 1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("| data set | batch | cholesky numpy | qr numpy | "
                        "qr − cholesky numpy |")
    rows = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines[2:]]
    assert [row[:2] for row in rows] == [["Wampler 1", "21 (at once)"], ["Wampler 1", "7"],
                                         ["Wampler 1", "3"]]
    for row in rows:
        assert re.fullmatch(SPREAD, row[2]) and re.fullmatch(SPREAD, row[3])
        assert re.fullmatch(PAIRED, row[4])
    # The cells are what digits() gives on those orders.
    X, y, certified, _ = nist_digits.data_sets()["Wampler 1"]
    found = nist_digits.over_orders(X, y, certified, 7, "numpy", "qr", 3)
    assert rows[1][3] == nist_digits.cell(found)


@pytest.mark.parametrize(("flags", "message"), [
    (["--orders", "0"], "--orders must be at least 1, got 0"),
    (["--data-set", "Norris"], "unknown data set(s) ['Norris']"),
])
def test_bad_options_are_refused_by_name(capsys, flags, message):
    with pytest.raises(SystemExit) as exit_:
        nist_digits.main(flags)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("backend", ["numpy", "native_cpu"])
@pytest.mark.parametrize("name", ["Wampler 1", "Wampler 2"])
def test_over_row_orders_the_qr_mode_keeps_the_exact_fits_digits(backend, name):
    """Over 12 row orders (docs/numerics.md, "Digits"): in batches of 3 the qr mode keeps more
    digits than the Cholesky mode (median over orders +0.8 to +1.6); in batches of 7 it trails
    by under a digit (−0.4 … 0.0 on an AVX-512 Xeon, −0.55 on the reference on an AMD EPYC, −0.5
    on the CUDA engine: the qr history's centre R̃⁻¹z̃ lagging the refined β̃, issue 39), and it is
    never below 9 digits in any order."""
    if backend == "native_cpu":
        require_module(*NATIVE_CPU)
    X, y, certified, _ = nist_digits.data_sets()[name]
    for batch, least_lead in ((7, -0.75), (3, 0.3)):
        found = {mode: np.asarray(nist_digits.over_orders(X, y, certified, batch, backend, mode,
                                                          12))
                 for mode in ("cholesky", "qr")}
        assert np.median(found["qr"] - found["cholesky"]) >= least_lead, (batch, found)
        assert np.median(found["qr"]) >= np.median(found["cholesky"]) + least_lead
        assert found["qr"].min() >= 9.0
