"""The Redis deployments one console shows: ``EMQ_DEPLOYMENTS``, or the one ``EMQ_REDIS_URL`` names.

``EMQ_DEPLOYMENTS`` is a JSON object (README, "Many deployments")::

    {"staging": {"url": "redis://staging:6379/0", "act": ["operators"]},
     "production": {"url": "redis://prod-1:6379/0", "production": true, "act": ["sre"]}}

Each request shows one deployment: the one an ``X-EMQ-Deployment`` header or a ``?d=`` names (a page sends its
own with every htmx request, so a tab keeps showing what its badge says), else the one the person last chose
(kept in their session), else the first. Every read the console makes goes to the current deployment's Redis
(``dashboard.services.redis_url``), so each page works on whichever one is chosen.
"""

from __future__ import annotations

import json
import re
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any, Final

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

DEFAULT_NAME: Final = "default"
SESSION_KEY: Final = "emq_deployment"
HEADER: Final = "X-EMQ-Deployment"
QUERY: Final = "d"
# Short, in a URL, a header and a CSS class unchanged.
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
_SCHEMES: Final = ("redis://", "rediss://", "unix://")
# Badge colours (console.css .deployment-colour-N), given in order to the deployments that are not production.
COLOURS: Final = 6
_FIELDS: Final = {"url", "production", "view", "act"}


@dataclass(frozen=True)
class Deployment:
    name: str
    url: str
    production: bool = False
    colour: int = 0
    # Group names whose members may see (act on) this deployment; None: every account the console's roles let.
    view_groups: frozenset[str] | None = None
    act_groups: frozenset[str] | None = None


class UnknownDeployment(Exception):
    """A request named a deployment the console does not have."""


def _groups(name: str, entry: dict[str, Any], key: str) -> frozenset[str] | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(group, str) and group for group in value):
        raise ImproperlyConfigured(f"EMQ_DEPLOYMENTS: {name}.{key} must be a list of group names, not {value!r}")
    return frozenset(value)


def parse_deployments(text: Any, default_url: str) -> tuple[Deployment, ...]:
    """The deployments a setting names (a JSON text or an object already parsed); raises ImproperlyConfigured,
    saying what is wrong, for anything else."""
    if text in (None, "", {}):
        return (Deployment(DEFAULT_NAME, str(default_url)),)
    if isinstance(text, str):
        try:
            text = json.loads(text)
        except ValueError as error:
            raise ImproperlyConfigured(f"EMQ_DEPLOYMENTS is not JSON: {error}") from None
    if not isinstance(text, dict) or not text:
        raise ImproperlyConfigured('EMQ_DEPLOYMENTS must be a JSON object of deployments, '
                                   'such as {"staging": {"url": "redis://host:6379/0"}}')
    found: list[Deployment] = []
    for name, entry in text.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ImproperlyConfigured(f"EMQ_DEPLOYMENTS: the name {name!r} must be 1 to 32 of a-z, 0-9, '-' "
                                       "and '_', starting with a letter or digit")
        if not isinstance(entry, dict):
            raise ImproperlyConfigured(f'EMQ_DEPLOYMENTS: {name} must be an object such as {{"url": "redis://..."}}')
        unknown = sorted(set(entry) - _FIELDS)
        if unknown:
            raise ImproperlyConfigured(f"EMQ_DEPLOYMENTS: {name} has unknown fields {', '.join(unknown)} "
                                       f"(known: {', '.join(sorted(_FIELDS))})")
        url = entry.get("url")
        if not isinstance(url, str) or not url.startswith(_SCHEMES) or len(url) <= len("redis://"):
            raise ImproperlyConfigured(f"EMQ_DEPLOYMENTS: {name}.url must be a redis://, rediss:// or unix:// URL, "
                                       f"not {url!r}")
        production = entry.get("production", False)
        if not isinstance(production, bool):
            raise ImproperlyConfigured(f"EMQ_DEPLOYMENTS: {name}.production must be true or false")
        found.append(Deployment(name, url, production, colour=len(found) % COLOURS,
                                view_groups=_groups(name, entry, "view"), act_groups=_groups(name, entry, "act")))
    return tuple(found)


_parsed: dict[str, tuple[Deployment, ...]] = {}


def deployments() -> tuple[Deployment, ...]:
    """The console's deployments, in the order the setting lists them (the first is the default)."""
    configured = getattr(settings, "EMQ_DEPLOYMENTS", None)
    key = json.dumps([configured, str(settings.EMQ_REDIS_URL)], sort_keys=True, default=str)
    found = _parsed.get(key)
    if found is None:
        found = _parsed[key] = parse_deployments(configured, settings.EMQ_REDIS_URL)
    return found


def many() -> bool:
    """Whether the console shows more than one deployment (with one, no badge or switcher is shown)."""
    return len(deployments()) > 1


def deployment_named(name: str) -> Deployment:
    for deployment in deployments():
        if deployment.name == name:
            return deployment
    raise UnknownDeployment(f"there is no deployment named {name[:40]!r} (the console has "
                            f"{', '.join(d.name for d in deployments())})")


_current: ContextVar[Deployment | None] = ContextVar("emq_deployment", default=None)


def current() -> Deployment:
    """The deployment the running request or socket shows; the first one outside of any."""
    chosen = _current.get()
    known = deployments()
    return chosen if chosen is not None and chosen in known else known[0]


def use(deployment: Deployment) -> Token[Deployment | None]:
    """Makes ``deployment`` the current one for the rest of this request, socket or task (or until the token
    is given back to :func:`forget`)."""
    return _current.set(deployment)


def forget(token: Token[Deployment | None]) -> None:
    _current.reset(token)


def chosen_name(*, header: str, query: str, session: Any) -> str:
    """The deployment a request names: its header, else its ``?d=``, else its session's, else ""."""
    if header:
        return header
    if query:
        return query
    stored = session.get(SESSION_KEY, "") if session is not None else ""
    return stored if isinstance(stored, str) else ""


def deployment_allows(user: Any, deployment: Deployment, acting: bool) -> bool:
    """Whether the deployment's grants let ``user`` see it (or, ``acting``, act on it).

    Composes with the console's roles, which are checked beside it: a grant never lets a viewer act.
    A deployment that lists no groups leaves the decision to the roles.
    """
    if not getattr(user, "is_authenticated", False):
        return False
    if getattr(user, "is_superuser", False):
        return True
    wanted = [deployment.view_groups, deployment.act_groups] if acting else [deployment.view_groups]
    if all(groups is None for groups in wanted):
        return True
    held = set(user.groups.values_list("name", flat=True))
    return all(groups is None or bool(held & groups) for groups in wanted)


def deployment_refusal(user: Any, deployment: Deployment, acting: bool) -> str | None:
    """Why ``user`` may not see (act on) ``deployment``, in words; None when they may."""
    if deployment_allows(user, deployment, acting=False):
        if not acting or deployment_allows(user, deployment, acting=True):
            return None
        return f"You may look at the deployment {deployment.name} but not act on it. Ask an admin for a grant."
    return f"Your account may not see the deployment {deployment.name}. Ask an admin for a grant."


def visible_to(user: Any) -> list[Deployment]:
    return [deployment for deployment in deployments() if deployment_allows(user, deployment, acting=False)]


def first_visible(user: Any) -> Deployment:
    """The deployment a request or socket that names none shows: the first ``user`` may see, else the first."""
    shown = visible_to(user) if user is not None and many() else []
    return shown[0] if shown else deployments()[0]
