"""Issue 28's third mechanism, measured: a bounded lookahead as reprieve's tie-break, in the
pressure sweep (bench/pressure.py's shapes, levels and measures), beside stock and plain reprieve.

    python bench/lookahead.py [--shapes 1 2 3] [--seeds 10] [--levels ...] [--horizon 10]
                              [--width 3] [--pending-weight 1]

Where reprieve preempts, each node's victims (every node solved) whose cost ties with the
cheapest on every criterion before the pending pods left without room (the same budgets, Jobs,
gangs, priorities, managers, retries, QoS, homes and number of victims) are the options, its own
choice first and at most ``--width`` of them. Each option is played out: the preemption, then the next ``--horizon`` pods
of the queue through plain reprieve (policy.replay). The option whose horizon loses least wins,
reprieve's own choice on a tie. Loss is the sweep's priority-weighted loss, ``priority - floor + 1``
a victim, and ``--pending-weight`` times the same for each pod of the horizon left pending.

The horizon's replays start from the view as it stands: a budget the run has already pushed below
its healthy count is taken at that count there (policy.replay fixes the desired count when a
replay starts), so on the mixed CPU shape a horizon may evict a pod that budget still covers
without counting the violation. The GPU shapes' budgets cover only priority-1000 pods, never
victims.

It is not reprieve's: the preempt verb would run ``width x horizon`` whole decisions (the
scheduler's dry run and reprieve's, over every node) for one preemption, where the issue allows
15 ms for one (docs/policy.md, "Under pressure", has the results and the cost). It knows the
queue's order, which the replays take as the scheduler's.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import pressure  # noqa: E402
from extender.commands.simulate import generated  # noqa: E402
from policy import ranking, replay, stock, workload  # noqa: E402
from policy.model import Pod  # noqa: E402
from policy.preempt import decide  # noqa: E402
from policy.scoring import Placement  # noqa: E402
from policy.view import ClusterView  # noqa: E402

# The options tie with the best set on every criterion before this one.
TIED_BEFORE = ranking.DEFAULT.position(ranking.PENDING_ROOM)


class Lookahead:
    """A replay.Decider: plain reprieve, but where it preempts and sets tie up to the pending
    room, the option whose next ``horizon`` pods lose least. Counts what it did."""

    def __init__(self, pending: Sequence[Pod], *, horizon: int, width: int, floor: int, now: float,
                 pending_weight: float) -> None:
        self._queue = list(pending)
        self._at = {p.uid: i for i, p in enumerate(pending)}
        self._horizon, self._width, self._floor, self._now = horizon, width, floor, now
        self._pending_weight = pending_weight
        self._plain = replay.reprieve_with(now=now)
        self.preemptions = self.with_options = self.changed = 0
        self.seconds = 0.0  # spent on the preemptions with options, choosing among them

    def __call__(self, view: ClusterView, pod: Pod, placement: Placement) -> replay.Choice:
        choice = self._plain(view, pod, placement)
        if choice.node is None or not choice.victims:
            return choice
        self.preemptions += 1
        started = time.perf_counter()
        options = self._options(view, pod, choice)
        if len(options) < 2:
            return choice
        self.with_options += 1
        losses = [self._loss(view, pod, option, placement) for option in options]
        best = min(range(len(options)), key=lambda i: (losses[i], i))  # reprieve's own first on a tie
        self.seconds += time.perf_counter() - started  # the preemptions with options only
        if best == 0:
            return choice
        self.changed += 1
        picked = options[best]
        why = f"the lookahead's pick: {picked.node} over reprieve's {choice.node} ({losses[best]:g} lost against {losses[0]:g})"
        return replay.Choice(picked.node, picked.victims, why=why)

    def _options(self, view: ClusterView, pod: Pod, choice: replay.Choice) -> list[replay.Choice]:
        """reprieve's own choice, then the other nodes' sets tied with the best before TIED_BEFORE."""
        dry = stock.decide(view=view, preemptor=pod, node_names=sorted(view.nodes))
        decision = decide(view=view, preemptor=pod, proposals=dry.proposals, now=self._now, exhaustive=True)
        costed = sorted((o.cost.key, o.node, o.victims) for o in decision.outcomes if o.cost is not None and o.victims)
        if not costed or all(node != choice.node for _, node, _ in costed):
            return [choice]
        best = costed[0][0][:TIED_BEFORE]
        others = [replay.Choice(node, victims) for key, node, victims in costed
                  if key[:TIED_BEFORE] == best and node != choice.node]
        return [choice, *others[: self._width - 1]]

    def _loss(self, view: ClusterView, pod: Pod, option: replay.Choice, placement: Placement) -> float:
        """The option's victims' loss, and that of the next ``horizon`` pods through plain reprieve."""
        at = self._at.get(pod.uid)
        ahead = self._queue[at + 1 : at + 1 + self._horizon] if at is not None else []

        def forced(v: ClusterView, p: Pod, where: Placement) -> replay.Choice:
            return option if p.uid == pod.uid else self._plain(v, p, where)

        run = replay.replay(view, [pod, *ahead], side=replay.REPRIEVE, floor=self._floor, placement=placement,
                            decider=forced, now=self._now)
        weight = {p.key: p.priority - self._floor + 1 for p in ahead}
        left = sum(weight.get(s.pod, 0) for s in run.steps if s.node is None)
        return run.totals.priority_loss + self._pending_weight * left


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Stock, reprieve and reprieve with a bounded lookahead, per level.")
    parser.add_argument("--shapes", type=int, nargs="+", default=range(1, len(pressure.SHAPES) + 1), metavar="N")
    parser.add_argument("--seeds", type=int, default=len(pressure.SEEDS), help="seeds 0..N-1 per level")
    parser.add_argument("--levels", type=float, nargs="+", default=pressure.LEVELS, metavar="PRESSURE")
    parser.add_argument("--horizon", type=int, default=10, help="pods of the queue played out after the preemption")
    parser.add_argument("--width", type=int, default=3, help="options weighed, reprieve's own among them")
    parser.add_argument("--pending-weight", type=float, default=1.0,
                        help="a pod of the horizon left pending counts as this many victims of its priority")
    args = parser.parse_args(argv)
    if args.horizon < 1 or args.width < 2:
        parser.error("--horizon at least 1, --width at least 2")
    if args.seeds < 1:
        parser.error("--seeds: at least 1")
    if any(not 1 <= n <= len(pressure.SHAPES) for n in args.shapes):
        parser.error(f"--shapes: each from 1 to {len(pressure.SHAPES)}")
    measures = ("priority_loss", "victims", "high_pending")
    for n in args.shapes:
        shape = pressure.SHAPES[n - 1]
        print(f"### {shape.title}: horizon {args.horizon}, width {args.width}, pending weight {args.pending_weight:g}\n")
        print("| pressure | priority-weighted loss: stock / reprieve / lookahead | victims: the same | high-priority pods "
              "left pending: the same | seeds with the lookahead's loss at most stock's | preemptions: with options, "
              "changed | ms a preemption with options |")
        print("|---:|---:|---:|---:|---:|---:|---:|", flush=True)
        for level in args.levels:
            sums = {m: [0, 0, 0] for m in measures}
            at_most = preempting = with_options = changed = 0
            seconds = 0.0
            for seed in range(args.seeds):
                made = generated(shape.count, seed=seed, shape=shape.shape, pressure=level)
                floor = replay.floor_priority(made.view, made.pending)
                ahead = Lookahead(made.pending, horizon=args.horizon, width=args.width, floor=floor, now=workload.END,
                                  pending_weight=args.pending_weight)
                runs = replay.compare(made.view, made.pending, placement=shape.placement, now=workload.END)
                looked = replay.replay(made.view, made.pending, side=replay.REPRIEVE, floor=floor,
                                       placement=shape.placement, decider=ahead, now=workload.END)
                got = [pressure.measure(r, made.view, made.pending, shape.high)
                       for r in (runs[replay.STOCK], runs[replay.REPRIEVE], looked)]
                for m in measures:
                    for i, values in enumerate(got):
                        sums[m][i] += values[m]
                at_most += got[2]["priority_loss"] <= got[0]["priority_loss"]
                preempting += ahead.preemptions
                with_options += ahead.with_options
                changed += ahead.changed
                seconds += ahead.seconds
            cells = [" / ".join(str(v) for v in sums[m]) for m in measures]
            per = f"{seconds * 1000 / with_options:.0f}" if with_options else ""
            print(f"| {level:.0%} | {' | '.join(cells)} | {at_most} of {args.seeds} | {preempting}: {with_options}, "
                  f"{changed} | {per} |", flush=True)
        print(flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
