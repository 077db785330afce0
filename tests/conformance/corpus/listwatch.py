"""Lists and watches: paging, resourceVersion semantics, selectors, watch event sequences,
bookmarks, expired resourceVersions and streaming lists (sendInitialEvents)."""

from __future__ import annotations

from ..crd import WIDGETS, widget
from ..runner import Watch, probe
from .objects import CMS, PODS, cm, delete, event_view, get, merge, names, pod, post, setup

L = "labelSelector=l%3Dx"
THREE = tuple(setup(post(CMS, cm(n, labels={"l": "x"}))) for n in ("a", "b", "c"))

PROBES = [
    # -- lists
    probe(
        "list.limit-and-continue",
        *THREE,
        get(f"{CMS}?{L}&limit=2", capture={"cont": "metadata.continue"}, view=names),
        get(f"{CMS}?{L}&limit=2&continue=$cont", view=names),
    ),
    probe("list.limit-covers-all", *THREE, get(f"{CMS}?{L}&limit=3", view=names)),
    probe("list.bad-continue", get(f"{CMS}?limit=1&continue=garbage")),
    probe(
        "list.continue-with-resourceversion",
        *THREE,
        get(f"{CMS}?{L}&limit=1", capture={"cont": "metadata.continue"}, view=names),
        get(f"{CMS}?{L}&limit=1&continue=$cont&resourceVersion=0"),
    ),
    probe("list.negative-limit", *THREE, get(f"{CMS}?{L}&limit=-1", view=names)),
    probe(
        "list.resourceversion-0-with-limit",
        *THREE,
        get(f"{CMS}?{L}&limit=1&resourceVersion=0", view=names),
    ),
    probe(
        "list.resourceversion-match-exact",
        post(CMS, cm("a"), capture={"rv": "metadata.resourceVersion"}, compare=False),
        setup(post(CMS, cm("b"))),
        get(f"{CMS}?resourceVersion=$rv&resourceVersionMatch=Exact", view=names),
    ),
    probe(
        "list.resourceversion-match-not-older-than",
        post(CMS, cm("a"), capture={"rv": "metadata.resourceVersion"}, compare=False),
        setup(post(CMS, cm("b"))),
        get(f"{CMS}?resourceVersion=$rv&resourceVersionMatch=NotOlderThan", view=names),
    ),
    probe(
        "list.resourceversion-match-without-resourceversion",
        get(f"{CMS}?resourceVersionMatch=Exact"),
    ),
    probe(
        "list.resourceversion-match-bad", get(f"{CMS}?resourceVersion=1&resourceVersionMatch=Often")
    ),
    probe(
        "list.resourceversion-match-exact-zero",
        get(f"{CMS}?resourceVersion=0&resourceVersionMatch=Exact"),
    ),
    probe("list.resourceversion-not-a-number", get(f"{CMS}?resourceVersion=abc")),
    probe("list.resourceversion-in-future", get(f"{CMS}?resourceVersion=99999999")),
    probe(
        "list.label-selector-set-based",
        *THREE,
        setup(post(CMS, cm("d", labels={"l": "y"}))),
        get(f"{CMS}?labelSelector=l%20in%20(x,y),l!%3Dx", view=names),
    ),
    probe("list.label-selector-bad", get(f"{CMS}?labelSelector=a%20in%20(")),
    probe(
        "list.field-selector-name",
        *THREE,
        get(f"{CMS}?fieldSelector=metadata.name%3Db", view=names),
    ),
    probe("list.field-selector-unsupported", get(f"{CMS}?fieldSelector=data.a%3D1")),
    probe(
        "list.field-selector-pod-node",
        setup(post(PODS, pod("p1", nodeName="n1"))),
        setup(post(PODS, pod("p2"))),
        get(f"{PODS}?fieldSelector=spec.nodeName%3Dn1", view=names),
        get(f"{PODS}?fieldSelector=spec.nodeName%3D", view=names),
        setup(delete(f"{PODS}/p1?gracePeriodSeconds=0")),
    ),
    probe(
        "list.all-namespaces",
        setup(post(CMS, cm("a", labels={"probe": "$ns"}))),
        get("/api/v1/configmaps?labelSelector=probe%3D$ns", view=names),
    ),
    probe("list.empty", get(f"{CMS}?{L}")),
    probe("list.items", *THREE[:2], get(f"{CMS}?{L}")),
    probe(
        "list.get-with-resourceversion-0",
        setup(post(CMS, cm("a"))),
        get(f"{CMS}/a?resourceVersion=0"),
    ),
    # -- watches
    probe(
        "watch.event-sequence",
        post(CMS, cm("a"), capture={"rv": "metadata.resourceVersion"}, compare=False),
        Watch(
            f"{CMS}?watch=1&resourceVersion=$rv",
            then=(
                setup(post(CMS, cm("b"))),
                setup(merge(f"{CMS}/b", {"data": {"a": "2"}})),
                setup(delete(f"{CMS}/b")),
            ),
            events=3,
        ),
    ),
    probe(
        "watch.resourceversion-0-replays-state",
        setup(post(CMS, cm("a"))),
        setup(post(CMS, cm("b"))),
        Watch(f"{CMS}?watch=1&resourceVersion=0", events=2, view=event_view),
    ),
    probe(
        "watch.no-resourceversion-replays-state",
        setup(post(CMS, cm("a"))),
        Watch(f"{CMS}?watch=1", events=1, view=event_view),
    ),
    probe(
        "watch.label-selector-enter-and-leave",
        post(
            CMS,
            cm("a", labels={"l": "x"}),
            capture={"rv": "metadata.resourceVersion"},
            compare=False,
        ),
        Watch(
            f"{CMS}?watch=1&{L}&resourceVersion=$rv",
            then=(
                setup(merge(f"{CMS}/a", {"metadata": {"labels": {"l": "y"}}})),
                setup(merge(f"{CMS}/a", {"metadata": {"labels": {"l": "x"}}})),
            ),
            events=2,
            view=event_view,
        ),
    ),
    probe(
        "watch.field-selector",
        post(CMS, cm("z"), capture={"rv": "metadata.resourceVersion"}, compare=False),
        Watch(
            f"{CMS}?watch=1&fieldSelector=metadata.name%3Db&resourceVersion=$rv",
            then=(setup(post(CMS, cm("a"))), setup(post(CMS, cm("b")))),
            events=1,
            view=event_view,
        ),
    ),
    probe(
        "watch.timeout-ends-stream",
        Watch(f"{CMS}?watch=1&timeoutSeconds=1", events=1, timeout=10),
    ),
    probe(
        # A cluster sends a bookmark 2 s before a watch times out, once its cache has moved on
        # (the unlabelled write does that without an event for this watch).
        "watch.bookmarks",
        post(
            CMS,
            cm("a", labels={"l": "x"}),
            capture={"rv": "metadata.resourceVersion"},
            compare=False,
        ),
        Watch(
            f"{CMS}?watch=1&allowWatchBookmarks=true&{L}&resourceVersion=$rv&timeoutSeconds=3",
            then=(setup(post(CMS, cm("b"))),),
            events=1,
            timeout=10,
            view=event_view,
        ),
    ),
    probe(
        "watch.too-old-resourceversion",
        Watch(f"{WIDGETS}?watch=1&resourceVersion=2", events=1),
        crd=True,
    ),
    probe(
        "watch.send-initial-events",
        setup(post(CMS, cm("a"))),
        setup(post(CMS, cm("b"))),
        Watch(
            f"{CMS}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
            "&resourceVersionMatch=NotOlderThan",
            events=3,
            view=event_view,
        ),
    ),
    probe(
        "watch.send-initial-events-then-changes",
        setup(post(CMS, cm("a"))),
        Watch(
            f"{CMS}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
            "&resourceVersionMatch=NotOlderThan",
            then=(setup(post(CMS, cm("b"))),),
            events=3,
            view=event_view,
        ),
    ),
    probe(
        "watch.send-initial-events-without-bookmarks",
        Watch(f"{CMS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"),
    ),
    probe(
        "watch.send-initial-events-without-match",
        Watch(f"{CMS}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"),
    ),
    probe(
        "watch.send-initial-events-on-list",
        get(
            f"{CMS}?sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"
        ),
    ),
    probe(
        "watch.resourceversion-match-on-watch",
        Watch(f"{CMS}?watch=1&resourceVersion=0&resourceVersionMatch=Exact"),
    ),
    probe(
        "watch.custom-resource-events",
        post(WIDGETS, widget("a"), capture={"rv": "metadata.resourceVersion"}, compare=False),
        Watch(
            f"{WIDGETS}?watch=1&resourceVersion=$rv",
            then=(
                setup(merge(f"{WIDGETS}/a", {"spec": {"size": 5}})),
                setup(delete(f"{WIDGETS}/a")),
            ),
            events=2,
        ),
        crd=True,
    ),
    probe(
        "watch.single-object-by-name",
        post(CMS, cm("a"), capture={"rv": "metadata.resourceVersion"}, compare=False),
        Watch(
            f"{CMS}?watch=1&fieldSelector=metadata.name%3Da&resourceVersion=$rv",
            then=(setup(merge(f"{CMS}/a", {"data": {"x": "y"}})),),
            events=1,
            view=event_view,
        ),
    ),
    probe(
        "watch.list-with-watch-param",
        setup(post(CMS, cm("a"))),
        Watch(f"{CMS}?watch=true&resourceVersion=0", events=1, view=event_view),
    ),
    probe(
        "list.resourceversion-in-future-exact",
        get(f"{CMS}?resourceVersion=99999999&resourceVersionMatch=Exact"),
    ),
    probe(
        "list.resourceversion-in-future-paged",
        get(f"{CMS}?resourceVersion=99999999&limit=1"),
    ),
    probe(
        "list.resourceversion-match-with-continue",
        *THREE,
        get(f"{CMS}?{L}&limit=1", capture={"cont": "metadata.continue"}, view=names),
        get(
            f"{CMS}?{L}&limit=1&continue=$cont&resourceVersion=0&resourceVersionMatch=NotOlderThan"
        ),
    ),
    probe(
        "list.custom-resource-resourceversion-0-with-limit",
        setup(post(WIDGETS, widget("a"))),
        setup(post(WIDGETS, widget("b"))),
        get(f"{WIDGETS}?limit=1&resourceVersion=0", view=names),
        crd=True,
    ),
    probe(
        "watch.send-initial-events-exact",
        Watch(
            f"{CMS}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
            "&resourceVersionMatch=Exact"
        ),
    ),
    probe(
        "watch.send-initial-events-labelled",
        *THREE,
        setup(post(CMS, cm("d"))),
        Watch(
            f"{CMS}?watch=1&{L}&sendInitialEvents=true&allowWatchBookmarks=true"
            "&resourceVersionMatch=NotOlderThan",
            events=4,
            view=event_view,
        ),
    ),
]
