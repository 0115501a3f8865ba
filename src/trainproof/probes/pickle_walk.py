"""The tensor table of a replayed pickle: every TensorRef in the structure that
pickle_scan built, with its dotted name. The memo lets a tiny pickle share one
container many times (x1 = (x0, x0), forty levels, is 2**40 paths to the bottom), so
the walk is iterative, counts the ways each container is reached before naming
anything, skips containers that hold no tensor, and charges every further walk
through a shared container to a budget; both limits are the caller's (rules/env_checkpoint.py,
max_pickle_nodes)."""

from __future__ import annotations

from typing import Any

from trainproof.probes.pickle_scan import TensorRef, gc_paused

KEY_CHARS = 200  # a dict key as it appears in a tensor's dotted name
NAME_CHARS = 400  # a whole dotted name: real ones are under 150


class WalkLimit(Exception):
    """More of the structure would be walked again than the caller's budget allows."""


def walk_tensors(root: Any, max_nodes: int, max_depth: int = 64) -> list[tuple[str, TensorRef]]:
    """Every TensorRef in the structure with a dotted path (`model.fc.weight`), in the
    order torch.save wrote them, under every name that reaches it (tied weights, a dict
    saved under two keys). Containers that hold no tensor are skipped; the first walk
    through each container is free (it is bounded by the pickle's size), and every
    further walk through a shared one is charged to a budget: more than `max_nodes`
    items walked again raises WalkLimit, so a memo DAG that names one tensor 2**40 ways
    stops there while a real checkpoint, which shares almost nothing, never gets near."""
    with gc_paused():
        return _walk(root, max_nodes, max_depth)


def _walk(root: Any, max_nodes: int, max_depth: int) -> list[tuple[str, TensorRef]]:
    bearing, order = _bearing(root)
    _count_ways(root, order, max_nodes)
    walked: set[int] = set()
    budget = max_nodes
    out: list[tuple[str, TensorRef]] = []
    stack: list[tuple[Any, Any, int]] = [(None, root, 0)]  # (path link, node, depth)
    while stack:
        link, node, depth = stack.pop()
        if isinstance(node, TensorRef):
            out.append((_dotted(link), node))
            continue
        if id(node) not in bearing or depth >= max_depth:
            continue
        if id(node) in walked:
            budget -= len(node) + 1
            if budget < 0:
                raise WalkLimit(f"more than {max_nodes} objects walked again through shared parts "
                                "of the pickle's structure")
        walked.add(id(node))
        items = list(node.items() if isinstance(node, dict) else enumerate(node))
        stack.extend(((link, k), v, depth + 1) for k, v in reversed(items))
    return out


def _count_ways(root: Any, order: list[Any], max_nodes: int) -> None:
    """How many ways the structure reaches each container, summed over its parents in
    topological order (the reverse of `order`, a post-order): more than `max_nodes` ways
    to one container raises WalkLimit, tensors or not. torch.save shares a container
    once or twice at most (a dict saved under two keys); x1 = (x0, x0) forty levels deep
    reaches x0 2**40 ways, whatever it holds."""
    ways = {id(root): 1}
    for node in reversed(order):
        n = ways.get(id(node), 0)
        for v in node.values() if isinstance(node, dict) else node:
            if n and isinstance(v, (dict, list, tuple)):
                w = ways[id(v)] = ways.get(id(v), 0) + n
                if w > max_nodes:
                    raise WalkLimit(f"one object is reached more than {max_nodes} ways through shared "
                                    "parts of the pickle's structure")


def _bearing(root: Any) -> tuple[set[int], list[Any]]:
    """ids of the containers that hold a TensorRef at any depth, and every container in
    post-order; each container visited once (by identity; the memo keeps every one
    alive, so ids are stable)."""
    bearing: set[int] = set()
    order: list[Any] = []
    entered: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        if not isinstance(node, (dict, list, tuple)):
            continue
        values = node.values() if isinstance(node, dict) else node
        if leaving:
            order.append(node)
            if any(isinstance(v, TensorRef) or id(v) in bearing for v in values):
                bearing.add(id(node))
        elif id(node) not in entered:
            entered.add(id(node))
            stack.append((node, True))
            stack.extend((v, False) for v in values)
    return bearing, order


def _dotted(link: Any) -> str:
    """`a.b.c` from the (parent link, key) chain, at most NAME_CHARS long."""
    keys: list[str] = []
    while link is not None:
        link, k = link
        keys.append(str(k)[:KEY_CHARS])
    return ".".join(reversed(keys))[:NAME_CHARS]
