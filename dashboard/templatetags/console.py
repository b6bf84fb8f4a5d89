"""Small filters for times and durations (the browser ticks them; these are the first render) and for text
from the keyspace."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Final

from django import template
from django.urls import reverse
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString

from dashboard.actions.access import acts_at_all
from dashboard.deployments import QUERY, current, deployment_allows, many, visible_to
from dashboard.monitoring.eviction import eviction_banner as monitoring_eviction_banner
from dashboard.permissions import permission_for
from queues.keys import job_id_token, parse_job_id_token
from queues.operator_moves import JOB_MOVES
from queues.visible import INVISIBLE, escape_char, has_invisible, visible as visible_text

register = template.Library()
ESCAPED_TITLE = "holds invisible or bidi characters, shown here as escapes"


@dataclass(frozen=True, slots=True)
class MoveButton:
    move: str
    verb: str
    title: str
    css_class: str
    permission: str  # what it needs (dashboard.permissions): the page hides a button the user may not press


@register.simple_tag
def move_buttons(state: str, delayed: bool = True, lapsed: bool = True) -> list[MoveButton]:
    """The buttons of the moves offered for a job shown in ``state``, read from the table of operator moves
    (``delayed``: a pending job due later; ``lapsed``: an active job whose lease has lapsed)."""
    return [MoveButton(move.name, move.verb, move.summary + ("; asks to confirm" if move.always_asks else ""),
                       "danger" if move.always_asks else "quiet" if move.quiet_unless == "lapsed" and not lapsed else "",
                       permission_for(move.name))
            for move in JOB_MOVES if move.on_button and move.offered(state, delayed=delayed)]


@register.filter
def duration(ms: int | float | None) -> str:
    """``1.2 s``, ``45 s``, ``3m 05s``, ``2h 10m``, ``3d 4h`` (the same as console.js writes)."""
    if ms is None:
        return ""
    ms = abs(float(ms))
    seconds = ms / 1000
    if seconds < 10:
        # As toFixed(1) rounds: a tie goes up (0.25 s is 0.3 s), where Python's format rounds it to even.
        return f"{Decimal(seconds).quantize(Decimal('0.1'), ROUND_HALF_UP)} s"
    if seconds < 60:
        return f"{int(seconds)} s"
    minutes, seconds = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


@register.filter
def server_time(ms: int | None) -> str:
    """A server time in ms as UTC, to the millisecond."""
    if ms is None:
        return ""
    try:
        moment = datetime.fromtimestamp(int(ms) / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"


@register.filter
def minus(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else int(a) - int(b)


@register.filter
def visible(value: object) -> SafeString:
    """Text from the keyspace as the console shows it: invisible and bidi characters as escapes
    (``\\u202e``), in a span that says so, so two names that differ only by them look different."""
    text = "" if value is None else str(value)
    if not has_invisible(text):
        return conditional_escape(text)
    return format_html('<span class="escaped" title="{}">{}</span>', ESCAPED_TITLE,
                       visible_text(text, backslashes=False))


@register.filter
def visible_plain(value: object) -> str:
    """The same escapes without the span, where no markup may go (a title, an attribute)."""
    return visible_text("" if value is None else str(value), backslashes=False)


@register.filter
def id_token(job_id: object) -> str:
    """A job id as a link or a form carries it: the id, or ``{HEX}`` of its bytes when they are not UTF-8."""
    return job_id_token("" if job_id is None else str(job_id))


@register.filter
def job_id_shown(token: object) -> SafeString:
    """A job id that a link or an audit row carries as :func:`id_token` wrote it, shown as :func:`visible` shows it."""
    return visible(parse_job_id_token("" if token is None else str(token)))


# A payload's own line breaks and tabs are its layout (pretty-printed JSON): every other invisible or bidi
# character is shown as its escape, as in ids and names.
_PAYLOAD_HIDDEN: Final = re.compile(INVISIBLE.pattern.replace("\x00-\x1f", "\x00-\x08\x0b-\x1f"))


@register.filter
def payload_escaped(value: object) -> bool:
    """Whether a payload shown as text holds characters the page shows as escapes."""
    return _PAYLOAD_HIDDEN.search("" if value is None else str(value)) is not None


@register.filter
def visible_payload(value: object) -> str:
    """A payload shown as text, with its invisible and bidi characters (not its line breaks) as escapes."""
    return _PAYLOAD_HIDDEN.sub(escape_char, "" if value is None else str(value))


@register.simple_tag
def console_socket(path: str) -> str:
    """The path of the console's WebSocket ``path`` (``"queue/"``) under the prefix its pages are served at: the
    host's ASGI router mounts the console's sockets under the same prefix as its URLs."""
    return f"{reverse('overview')}ws/{path}"


@register.simple_tag
def deployment_param(lead: str = "&") -> str:
    """``&d=staging``, the deployment a page shows, for the query of its sockets (which carry no htmx header);
    nothing while the console has one deployment."""
    return f"{lead}{QUERY}={current().name}" if many() else ""


@register.simple_tag(takes_context=True)
def acting_here(context: template.Context) -> bool:
    """Whether the page's user may act on the deployment it shows: the role and the deployment's grant (the
    server checks both again on every action; this only hides the buttons)."""
    user = context.get("user")
    return bool(user is not None and acts_at_all(user) and deployment_allows(user, current(), acting=True))


@register.simple_tag
def many_deployments() -> bool:
    """Whether the console has several deployments (a page may then offer to look in every one)."""
    return many()


@register.simple_tag
def deployment_name() -> str:
    """The name of the deployment a page shows, which its htmx requests send back (``X-EMQ-Deployment``)."""
    return current().name


@register.simple_tag(takes_context=True)
def eviction_banner(context: template.Context) -> str:
    """The warning of the eviction banner for this page's signed-in user (dashboard.monitoring.eviction)."""
    return monitoring_eviction_banner(context.get("request"))


@dataclass(frozen=True, slots=True)
class DeploymentLink:
    name: str
    href: str
    production: bool
    colour: int
    current: bool


@register.inclusion_tag("dashboard/_deployment_switch.html", takes_context=True)
def deployment_switch(context: template.Context) -> dict[str, object]:
    """The badge of the deployment this page shows, and links to this same page on each other one the user may
    see; nothing while the console has one deployment."""
    request = context.get("request")
    user = context.get("user")
    if request is None or user is None or not many() or not user.is_authenticated:
        return {"shown": None}
    shown = current()
    query = request.GET.copy()
    links = []
    for deployment in visible_to(user):
        query[QUERY] = deployment.name
        links.append(DeploymentLink(deployment.name, f"{request.path}?{query.urlencode()}", deployment.production,
                                    deployment.colour, deployment == shown))
    return {"shown": shown, "links": links, "overview": reverse("deployments")}
