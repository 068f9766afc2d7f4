"""armctl.teleop.followers: where this process's one follower of an arm stands, for a leader without a pose."""

from __future__ import annotations

from armctl.teleop import followers


def test_the_one_follower_of_an_arm_is_found_and_none_when_several_or_stopped():
    assert followers.standing("mearm-test") is None
    a = followers.driving("mearm-test", lambda: ([0.1, 0.2, 0.3], 0.5))
    other = followers.driving("so101-test", lambda: ([0.0] * 5, 0.0))
    assert followers.standing("mearm-test") == ([0.1, 0.2, 0.3], 0.5)
    b = followers.driving("mearm-test", lambda: ([0.0, 0.0, 0.0], 0.0))
    assert followers.standing("mearm-test") is None  # two: which one a leader leads is not known
    followers.stopped(a)
    assert followers.standing("mearm-test") == ([0.0, 0.0, 0.0], 0.0)
    for t in (b, other, b):  # a token stopped twice is ignored
        followers.stopped(t)
    assert followers.standing("mearm-test") is None and followers.standing("so101-test") is None
