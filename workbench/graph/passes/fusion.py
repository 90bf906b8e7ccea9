"""Operator fusion: elementwise consumers join their producer's group.

A group starts at any operator and grows along a chain: an ``elementwise`` consumer joins
the group of the producer of one of its inputs when

- the producer's group is an ``anchor`` (conv2d, matmul: conv+bn+relu, matmul+bias+gelu),
  a ``reduction`` (softmax, layer_norm, pools: reductions with elementwise consumers),
  ``elementwise`` (elementwise chains) or ``gather`` group (take, embedding: token plus
  position embeddings; ``rotate_half``: the rotary embedding; other layout operators host
  nothing, ``fold_views`` folds them),
- the producer's value has this consumer as its only user and is not a graph output
  (otherwise it must be materialised anyway),
- the consumer does not broadcast the producer's value to a larger shape.

Every producer -> consumer edge that is not fused gets a reason (``plan_fusion``). The fused
graph has one ``fused`` node per group of two or more; its ``attrs["graph"]`` is the group
as a graph whose first input is the anchor's first input.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.graph.ir import Graph, Node
from workbench.graph.ops import kind
from workbench.ir.names import fresh_name

_EPILOGUE_HOSTS = ("anchor", "reduction", "elementwise", "gather")

_GATHERS = ("take", "gather", "embedding", "rotate_half")
"""Layout operators whose groups host an elementwise epilogue all the same (group kind
``"gather"``): their kernel reads one element of the input per output element (a gather's
row, ``rotate_half``'s partner in the other half), so an epilogue (GPT-2's and BERT's
position embeddings added to the token embeddings; the rotary ``* sin + q * cos``) costs no
extra pass over memory."""


def _group_kind(op: str) -> str:
    """The kind of a group headed by ``op``: its operator's kind, ``"gather"`` for a gather."""
    return "gather" if op in _GATHERS else kind(op)


@dataclass(frozen=True)
class NotFused:
    """A producer -> consumer edge left unfused, and why."""

    producer: str
    consumer: str
    reason: str

    def __str__(self) -> str:
        return f"{self.producer} -> {self.consumer}: {self.reason}"


@dataclass(frozen=True)
class FusionPlan:
    """Groups (lists of node names, in order) and the reasons for every unfused edge."""

    groups: tuple[tuple[str, ...], ...]
    not_fused: tuple[NotFused, ...]

    def group_of(self, name: str) -> tuple[str, ...]:
        for group in self.groups:
            if name in group:
                return group
        raise KeyError(name)


def _refusal(graph: Graph, producer: Node, consumer: Node, group_kind: str, users: dict,
             is_tail: bool) -> str | None:
    """Why ``consumer`` cannot join ``producer``'s group (None when it can)."""
    if kind(consumer.op) != "elementwise":
        return (f"the consumer {consumer.op} is {kind(consumer.op)}; only elementwise "
                "consumers are fused into their producer")
    if group_kind not in _EPILOGUE_HOSTS:
        return f"the producer {producer.op} is {group_kind}; it takes no elementwise epilogue"
    if producer.name in graph.outputs:
        return f"{producer.name} is a graph output, so it is written to memory anyway"
    count = len(users.get(producer.name, []))
    if count != 1:
        return f"{producer.name} has {count} consumers; fusing would recompute or re-read it"
    if not is_tail:
        return f"{producer.name} is inside a group that already continues elsewhere"
    if consumer.type.shape != producer.type.shape:
        return f"{consumer.op} broadcasts {producer.name} to a larger shape"
    return None


def plan_fusion(graph: Graph) -> FusionPlan:
    """Decide the groups, recording the reason for each edge that is not fused."""
    users = graph.consumers()
    group_id: dict[str, int] = {}
    groups: list[list[str]] = []
    kinds: list[str] = []
    reasons: list[NotFused] = []
    for node in graph.nodes:
        joined = None
        for name in dict.fromkeys(node.inputs):
            producer = graph.producer(name)
            if producer is None:
                continue
            gid = group_id[producer.name]
            if joined is not None:
                if gid != joined:
                    reasons.append(NotFused(producer.name, node.name,
                                            "the consumer already joined another producer's group"))
                continue
            is_tail = groups[gid][-1] == producer.name
            reason = _refusal(graph, producer, node, kinds[gid], users, is_tail)
            if reason is None:
                joined = gid
            else:
                reasons.append(NotFused(producer.name, node.name, reason))
        if joined is None:
            joined = len(groups)
            groups.append([])
            kinds.append(_group_kind(node.op))
        groups[joined].append(node.name)
        group_id[node.name] = joined
    return FusionPlan(tuple(tuple(g) for g in groups), tuple(reasons))


def _group_graph(graph: Graph, members: list[Node]) -> tuple[Graph, tuple[str, ...]]:
    """The group as its own graph, and the outer values it reads (its inputs, in order)."""
    inside = {m.name for m in members}
    outer: list[str] = []
    constants = {}
    for member in members:
        for name in member.inputs:
            if name in inside or name in outer:
                continue
            if name in graph.constants and graph.constants[name].ndim == 0:
                constants[name] = graph.constants[name]  # scalars stay inside the kernel
                continue
            outer.append(name)
    inputs = {name: graph.type_of(name) for name in outer}
    body = Graph(inputs=inputs, constants=constants, nodes=tuple(members),
                 outputs=(members[-1].name,))
    return body, tuple(outer)


def fuse(graph: Graph, plan: FusionPlan | None = None) -> Graph:
    """Replace every planned group of two or more nodes by one ``fused`` node.

    The fused node is placed where the group's last node (its output) was, is described by
    ``attrs["pattern"]`` (``conv2d+add+relu``) and is named after the group's main operator,
    its first (``matmul``, ``matmul_1``... for ``matmul+add+add``; a name already used gets
    the next free number): its value, every use of it included, is renamed from the last
    node's name, which named a kernel ``add`` for a matmul with a residual add.
    """
    plan = plan_fusion(graph) if plan is None else plan
    by_name = {node.name: node for node in graph.nodes}
    last_of = {group[-1]: group for group in plan.groups if len(group) > 1}
    in_group = {name for group in last_of.values() for name in group}
    taken = set(graph.inputs) | set(graph.constants) | set(by_name)
    renamed = {node.name: fresh_name(by_name[last_of[node.name][0]].op, taken)
               for node in graph.nodes if node.name in last_of}
    nodes: list[Node] = []
    for node in graph.nodes:
        if node.name in last_of:
            members = [by_name[name] for name in last_of[node.name]]
            body, outer = _group_graph(graph, members)
            # the values it reads from other groups under their new names (its own output
            # keeps its name inside the body)
            outside = {old: new for old, new in renamed.items() if old != node.name}
            body = body.replace(inputs={outside.get(k, k): t for k, t in body.inputs.items()})
            body = body.renamed_uses(outside)
            outer = tuple(outside.get(name, name) for name in outer)
            pattern = "+".join(m.op for m in members)
            nodes.append(Node(renamed[node.name], "fused", outer,
                              {"graph": body, "pattern": pattern}, node.type,
                              members[0].source))
        elif node.name not in in_group:
            nodes.append(node)
    return graph.replace(nodes=tuple(nodes)).renamed_uses(renamed)
