"""Quantities, effective requests and QoS as upstream computes them."""

from __future__ import annotations

import re

import pytest

from policy.qos import QoS, compute_qos
from policy.quantity import QuantityError, to_units
from policy.resources import effective_requests, shortfalls


@pytest.mark.parametrize(
    "resource, text, expected",
    [
        ("cpu", "500m", 500),
        ("cpu", "2", 2000),
        ("cpu", "0.1", 100),
        ("cpu", "1e3", 1_000_000),
        ("cpu", "1u", 1),  # rounds up, like MilliValue()
        ("memory", "4Gi", 4 * 2**30),
        ("memory", "1G", 10**9),
        ("memory", "1.5Ki", 1536),
        ("memory", "100m", 1),  # 0.1 byte rounds up to 1
        ("example.com/gpu", "2", 2),
        ("pods", 110, 110),
    ],
)
def test_quantities(resource, text, expected):
    assert to_units(resource, text) == expected


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "5X", "Gi", True, None])
def test_bad_quantities(text):
    with pytest.raises(QuantityError):
        to_units("cpu", text)


@pytest.mark.parametrize(
    "text, message",
    [
        # upstream's parseQuantityString reads only '0'..'9'; Python's \d and Decimal read any script's digits
        pytest.param("\u0661\u0662", "digits, sign and suffix are ASCII", id="arabic-indic"),
        pytest.param("\uff15Gi", "digits, sign and suffix are ASCII", id="fullwidth"),
        pytest.param("\u00a05", "digits, sign and suffix are ASCII", id="no-break-space"),
        # a million digits overflowed decimal's context (decimal.Overflow is no ValueError)
        pytest.param("1" * 1_000_000 + "k", "is too long for a quantity (1000001 characters, at most 64)", id="million-digits"),
        pytest.param("0." + "0" * 63 + "1", "at most 64", id="long-fraction"),
        pytest.param(2**70, "out of range", id="huge-integer"),
        pytest.param(10**4400, "out of range", id="beyond-int-str-limit"),
    ],
)
def test_quantities_as_the_api_server_reads_them(text, message):
    with pytest.raises(QuantityError, match=re.escape(message)) as caught:
        to_units("cpu", text)
    assert len(str(caught.value)) < 200  # never the whole text back


def test_longest_quantity_still_parses():
    assert to_units("memory", " " + "0" * 61 + "1 ") == 1  # 64 characters, surrounding spaces stripped as upstream


@pytest.mark.parametrize(
    "containers, inits, overhead, expected_cpu",
    [
        # Two containers: 1 + 2 = 3.
        pytest.param([{"cpu": 1000}, {"cpu": 2000}], [], {}, 3000, id="sum-of-containers"),
        # A plain init container of 5 runs alone: max(3, 5) = 5.
        pytest.param([{"cpu": 1000}, {"cpu": 2000}], [({"cpu": 5000}, False)], {}, 5000, id="init-peak"),
        # A sidecar of 1 runs beside everything: running 3+1 = 4; the later init needs 2+1 = 3; max = 4.
        pytest.param(
            [{"cpu": 1000}, {"cpu": 2000}], [({"cpu": 1000}, True), ({"cpu": 2000}, False)], {}, 4000, id="sidecar-adds"
        ),
        # An init container before the sidecar does not include it: init 4 vs running 1+1 = 2.
        pytest.param([{"cpu": 1000}], [({"cpu": 4000}, False), ({"cpu": 1000}, True)], {}, 4000, id="init-before-sidecar"),
        # Overhead is added on top: max(1, 0) + 0.25.
        pytest.param([{"cpu": 1000}], [], {"cpu": 250}, 1250, id="overhead"),
    ],
)
def test_effective_requests(containers, inits, overhead, expected_cpu):
    requests = effective_requests(containers=containers, init_containers=inits, overhead=overhead)
    assert requests["cpu"] == expected_cpu
    assert requests["pods"] == 1


def test_only_requested_resources_are_checked():
    # The node is overcommitted on memory, but a pod asking no memory still fits on cpu.
    assert shortfalls(request={"cpu": 100, "pods": 1}, allocatable={"cpu": 1000, "memory": 10, "pods": 5}, used={"memory": 20}) == {}
    assert shortfalls(request={"cpu": 100, "pods": 1}, allocatable={"cpu": 1000, "pods": 1}, used={"pods": 1}) == {"pods": 1}
    # An extended resource the node does not offer is short by the whole request.
    assert shortfalls(request={"example.com/gpu": 1}, allocatable={}, used={}) == {"example.com/gpu": 1}


R, L = "requests", "limits"


@pytest.mark.parametrize(
    "containers, expected",
    [
        pytest.param([({}, {})], QoS.BEST_EFFORT, id="nothing-set"),
        pytest.param([({"cpu": 1, "memory": 1}, {"cpu": 1, "memory": 1})], QoS.GUARANTEED, id="equal-cpu-and-memory"),
        pytest.param([({"cpu": 1}, {"cpu": 1})], QoS.BURSTABLE, id="cpu-only-is-burstable"),
        pytest.param([({"cpu": 1, "memory": 1}, {"cpu": 2, "memory": 1})], QoS.BURSTABLE, id="limit-above-request"),
        pytest.param([({"cpu": 1, "memory": 1}, {"cpu": 1, "memory": 1}), ({}, {})], QoS.BURSTABLE, id="guaranteed-plus-besteffort"),
        pytest.param([({"example.com/gpu": 1}, {"example.com/gpu": 1})], QoS.BEST_EFFORT, id="extended-resources-ignored"),
        pytest.param([], QoS.BEST_EFFORT, id="no-containers"),
    ],
)
def test_qos(containers, expected):
    assert compute_qos(containers=containers) is expected


def test_pod_level_resources_decide_alone():
    assert compute_qos(containers=[({}, {})], pod_level=({"cpu": 1, "memory": 1}, {"cpu": 1, "memory": 1})) is QoS.GUARANTEED
