"""Connection admission: per client and in all."""

from extender.serving.admission import PER_CLIENT, TOTAL, Admission


def test_each_client_gets_its_share_and_all_together_the_total():
    a = Admission(total=5, per_client=3)
    assert [a.admit("10.0.0.1") for _ in range(4)] == [None, None, None, PER_CLIENT]
    assert [a.admit("10.0.0.2") for _ in range(2)] == [None, None]
    assert a.admit("10.0.0.3") == TOTAL  # 5 open: nobody else
    a.release("10.0.0.1")
    assert a.admit("10.0.0.3") is None  # one left, one came in
    assert a.admit("10.0.0.1") == TOTAL


def test_a_refused_connection_is_not_counted_and_released_clients_are_forgotten():
    a = Admission(total=2, per_client=1)
    assert a.admit("c") is None and a.admit("c") == PER_CLIENT
    a.release("c")
    assert a._open == {} and a.admit("c") is None and a.admit("d") is None
