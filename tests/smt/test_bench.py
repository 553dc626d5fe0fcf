"""The SMT benchmark's pairs: every pair is comparable on one input vector (the bench once
grouped presets without b's format and the scaling, and distinguish refused a mixed pair)."""

from mmaprobe.smt.bench import _pairs
from mmaprobe.smt.distinguish import _same_shape, shape


def test_bench_pairs_share_the_shape_distinguish_requires():
    pairs = _pairs()
    assert pairs
    for na, nb, a, b in pairs:
        _same_shape([a, b])  # raises InputError on a pair distinguish refuses
        assert shape(a) == shape(b), (na, nb)
        assert a != b, (na, nb)
    # mixed a x b presets (e4m3 x e5m2 and the like) are paired with their own kind only
    assert any(a.in_format != a.b_fmt for _, _, a, _ in pairs)
