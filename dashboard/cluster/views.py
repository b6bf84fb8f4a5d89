"""The cluster page and the sweeper-lock fragment. Viewers may see both; nothing here changes anything.

With a master down the page still answers 200 and names the queues that
cannot be reached; only when no node answers at all is it a 503 with the
Redis banner, as on every other page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.viewing import viewers_only
from queues import Unavailable
from queues.cluster import ClusterView, Node, cluster_report

from ..http import HtmxHttpRequest
from ..services import read
from ..sweeper import sweeper_status


@dataclass(frozen=True, slots=True)
class NodeRow:
    node: Node
    master: str  # a replica's master, by address
    slots: str  # "0-5460, 10923"


def _node_rows(view: ClusterView) -> list[NodeRow]:
    addresses = {n.id: n.address for n in view.nodes}
    return [NodeRow(n, addresses.get(n.master_id, n.master_id) if n.master_id else "",
                    ", ".join(f"{a}-{b}" if b != a else str(a) for a, b in n.slots)) for n in view.nodes]


@require_GET
@viewers_only
def cluster_page(request: HtmxHttpRequest) -> HttpResponse:
    context: dict[str, Any] = {"sweeper": sweeper_status(), "now_ms": 0}
    try:
        report = read(cluster_report)
    except Unavailable as error:
        context.update(redis_down=True, redis_error=str(error))
        return render(request, "dashboard/cluster.html", context, status=503)
    down = report.view.state == "unknown"
    context.update(report=report, nodes=_node_rows(report.view), redis_down=down, redis_error=report.view.error)
    template = "dashboard/_cluster_body.html" if request.htmx and request.htmx.target == "cluster-body" \
        else "dashboard/cluster.html"
    return render(request, template, context, status=503 if down else 200)


@require_GET
@viewers_only
def sweeper_fragment(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/_sweeper_status.html", {"sweeper": sweeper_status()})
