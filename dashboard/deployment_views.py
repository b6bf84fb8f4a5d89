"""The page over every deployment: each one's totals, a job id looked for in all of them at once, and a job search
run on all of them at once.

Each deployment is asked within EMQ_DEPLOYMENT_BUDGET_S (all at once), and searched within
EMQ_DEPLOYMENT_SEARCH_BUDGET_S; one that does not answer is named on the page with why, one whose search did not
finish says how far it got, and the others' answers are shown without it: never a partial answer that looks whole.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from queues import InvalidInput
from queues.keys import parse_job_id_token

from .deployments import visible_to
from .fan_out import FIND_QUEUES, TOTAL_STATES, TOTALS_QUEUES, every_deployment
from .fan_out_search import SHOWN_PER_DEPLOYMENT, SearchBusy, readers_on, search_every_deployment
from .http import HtmxHttpRequest
from .roles import can_view
from .search.requests import search_form
from .viewing import no_role_answer

NO_DEPLOYMENT = "Your account may see none of the console's deployments. Ask an admin for a grant."


@require_GET
def deployments_page(request: HtmxHttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    if not can_view(request.user):
        return no_role_answer(request)
    shown = visible_to(request.user)
    if not shown:
        return no_role_answer(request, NO_DEPLOYMENT)
    budget_s = float(settings.EMQ_DEPLOYMENT_BUDGET_S)
    token = request.GET.get("id", "").strip()
    context: dict[str, Any] = {"states": TOTAL_STATES, "totals_queues": TOTALS_QUEUES, "find_queues": FIND_QUEUES,
                               "budget_s": budget_s, "job_id": token, "now_ms": 0}
    try:
        every = every_deployment(shown, job_id=parse_job_id_token(token), budget_s=budget_s)
    except InvalidInput as error:
        every = every_deployment(shown, job_id="", budget_s=budget_s)
        context["message"] = str(error)
    context.update(totals=every.totals, found=every.found, missing=every.missing, partial=every.partial)
    status = 400 if context.get("message") else 200
    form = search_form(request.GET)
    context.update(form=form, searched=None, shown=SHOWN_PER_DEPLOYMENT,
                   search_budget_s=float(settings.EMQ_DEPLOYMENT_SEARCH_BUDGET_S))
    # The search form always sends a state; the find-a-job form never does.
    if "state" in request.GET:
        try:
            context["searched"] = search_every_deployment(shown, form, readers=readers_on(request.user, shown),
                                                          user_key=request.user.pk)
        except SearchBusy as busy:
            context["search_message"], status = str(busy), 429
        except InvalidInput as error:
            context["search_message"], status = f"not searched: {error}", 400
    return render(request, "dashboard/deployments.html", context, status=status)
