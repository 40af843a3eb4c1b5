"""A pod resized in place (InPlacePodVerticalScaling, GA since 1.35) counts as the scheduler
counts it: per resource, the largest of what its spec asks, what the kubelet has allocated and
what it has actuated, each summed over the containers as the spec is (component-helpers'
resource.PodRequests with UseStatusResources, as kube-scheduler v1.37.2 calls it)."""

from __future__ import annotations

from extender.state import kube, translate


def container(name: str, cpu: str, *, restart: str | None = None) -> dict:
    c = {"name": name, "resources": {"requests": {"cpu": cpu}}}
    if restart:
        c["restartPolicy"] = restart
    return c


def status(name: str, allocated: str | None = None, actuated: str | None = None) -> dict:
    s = {"name": name, "restartCount": 0, "ready": True}
    if allocated is not None:
        s["allocatedResources"] = {"cpu": allocated}
    if actuated is not None:
        s["resources"] = {"requests": {"cpu": actuated}, "limits": {"cpu": "8"}}
    return s


def cpu(containers: list[dict], statuses: list[dict], *, inits=(), init_statuses=(), spec_extra=None, status_extra=None) -> int:
    raw = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
        "spec": {"nodeName": "n1", "containers": containers, "initContainers": list(inits), **(spec_extra or {})},
        "status": {"phase": "Running", "containerStatuses": statuses, "initContainerStatuses": list(init_statuses),
                   **(status_extra or {})},
    }
    return translate.pod_record(kube.Pod.model_validate(raw), {}).requests.get("cpu", 0)


def test_a_pod_not_being_resized_counts_its_spec():
    assert cpu([container("a", "1")], [status("a", "1", "1")]) == 1000
    assert cpu([container("a", "1")], [status("a")]) == 1000  # a kubelet before 1.33 writes neither


def test_a_resize_down_counts_what_is_held_until_actuated():
    assert cpu([container("a", "1")], [status("a", "2", "2")]) == 2000  # neither allocated nor actuated yet
    assert cpu([container("a", "1")], [status("a", "1", "2")]) == 2000  # allocated, not actuated
    assert cpu([container("a", "1")], [status("a", "1", "1")]) == 1000  # done


def test_a_resize_up_counts_the_spec_from_the_start():
    assert cpu([container("a", "2")], [status("a", "1", "1")]) == 2000
    assert cpu([container("a", "2")], [status("a", "2", "1")]) == 2000


def test_actuated_requests_missing_are_the_allocated_ones():
    assert cpu([container("a", "1")], [status("a", "3")]) == 3000


def test_each_source_is_summed_over_the_containers_before_the_largest_is_taken():
    # The spec sums to 3 and so does what is allocated: 3, not the 4 a largest per container gives.
    assert cpu([container("a", "2"), container("b", "1")], [status("a", "1"), status("b", "2")]) == 3000


def test_init_containers_statuses_count_as_their_spec_does():
    # A plain init container allocated 4 needs 4 alone while it runs: more than the running 1.
    assert cpu([container("a", "1")], [status("a", "1", "1")], inits=[container("i", "1")],
               init_statuses=[status("i", "4", "4")]) == 4000
    # A sidecar allocated 2 runs beside the container: 1 + 2.
    assert cpu([container("a", "1")], [status("a", "1", "1")], inits=[container("s", "1", restart="Always")],
               init_statuses=[status("s", "2", "2")]) == 3000


def test_a_status_of_no_container_in_the_spec_is_not_read():
    assert cpu([container("a", "1")], [status("a", "1", "1"), status("gone", "9", "9")]) == 1000


def test_pod_level_resources_count_the_pods_own_status():
    # spec.resources asks 2 for the pod; the kubelet holds 3 for it until the resize down is done.
    held = {"allocatedResources": {"cpu": "3"}, "resources": {"requests": {"cpu": "3"}}}
    assert cpu([container("a", "1")], [status("a", "1", "1")], spec_extra={"resources": {"requests": {"cpu": "2"}}},
               status_extra=held) == 3000
    done = {"allocatedResources": {"cpu": "2"}, "resources": {"requests": {"cpu": "2"}}}
    assert cpu([container("a", "1")], [status("a", "1", "1")], spec_extra={"resources": {"requests": {"cpu": "2"}}},
               status_extra=done) == 2000


INFEASIBLE = {"conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]}
DEFERRED = {"conditions": [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}]}


def test_an_infeasible_resize_leaves_the_spec_out():
    # Asked up to 4 on a node that can never hold it: upstream counts what the kubelet holds.
    assert cpu([container("a", "4")], [status("a", "1", "1")], status_extra=INFEASIBLE) == 1000
    assert cpu([container("a", "4")], [status("a", "1", "1")], status_extra=DEFERRED) == 4000  # may yet come
    assert cpu([container("a", "4")], [status("a", "1", "1")]) == 4000
    # A container without a status counts nothing while the resize is infeasible.
    assert cpu([container("a", "4"), container("b", "2")], [status("a", "1", "1")], status_extra=INFEASIBLE) == 1000


def test_an_infeasible_pod_level_resize_leaves_the_spec_out():
    held = {"allocatedResources": {"cpu": "1"}, "resources": {"requests": {"cpu": "1"}}}
    assert cpu([container("a", "1")], [status("a", "1", "1")], spec_extra={"resources": {"requests": {"cpu": "6"}}},
               status_extra={**held, **INFEASIBLE}) == 1000
    assert cpu([container("a", "1")], [status("a", "1", "1")], spec_extra={"resources": {"requests": {"cpu": "6"}}},
               status_extra=held) == 6000


def test_only_cpu_memory_and_hugepages_of_the_pods_own_status_stand_for_the_containers():
    # The pod's own status names a GPU below its container's (a kubelet adds DRA allocations
    # there): only its cpu replaces the containers' sum, as upstream's applyPodLevelResources.
    raw = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
        "spec": {"nodeName": "n1", "resources": {"requests": {"cpu": "2"}},
                 "containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "example.com/gpu": "4"}}}]},
        "status": {"phase": "Running", "allocatedResources": {"cpu": "3", "example.com/gpu": "1"},
                   "resources": {"requests": {"cpu": "3", "example.com/gpu": "1"}}},
    }
    requests = translate.pod_record(kube.Pod.model_validate(raw), {}).requests
    assert requests["cpu"] == 3000
    assert requests["example.com/gpu"] == 4


def test_a_negative_held_quantity_is_read_as_nothing_held():
    # The API server checks no sign in what a kubelet reports; the pod is not refused for it.
    assert cpu([container("a", "1")], [status("a", "-2", "-2")]) == 1000
    assert cpu([container("a", "1")], [status("a", "-2", "-2")], status_extra=INFEASIBLE) == 0


def test_pod_level_requests_stand_where_the_pods_own_status_has_no_resources():
    assert cpu([container("a", "1")], [status("a", "1", "1")], spec_extra={"resources": {"requests": {"cpu": "6"}}},
               status_extra=INFEASIBLE) == 6000


def test_the_pods_own_status_stands_for_its_containers_where_it_has_both():
    # A kubelet of 1.36 or later writes them for every pod (InPlacePodLevelResourcesVerticalScaling).
    both = {"allocatedResources": {"cpu": "3"}, "resources": {"requests": {"cpu": "3"}}}
    assert cpu([container("a", "1")], [status("a")], status_extra=both) == 3000
    assert cpu([container("a", "1")], [status("a", "5", "5")], status_extra=both) == 3000  # the pod's, not the containers'
    # Allocated without actuated: upstream reads the containers' statuses instead.
    assert cpu([container("a", "1")], [status("a")], status_extra={"allocatedResources": {"cpu": "3"}}) == 1000


def test_a_container_without_a_status_counts_at_its_spec():
    assert cpu([container("a", "1"), container("b", "1")], [status("a", "3")]) == 4000


def test_the_first_status_of_a_name_is_read():
    # As upstream's findContainerStatus: containerStatuses before initContainerStatuses.
    assert cpu([container("a", "1")], [status("a", "2")], init_statuses=[status("a")]) == 2000
    assert cpu([container("a", "1")], [status("a"), status("a", "2")]) == 1000


def test_two_containers_of_one_name_each_read_its_status():
    # Refused by the API server, possible in a hand-written dump: each reads the status of its name.
    assert cpu([container("a", "1"), container("a", "2")], [status("a", "2")]) == 4000
