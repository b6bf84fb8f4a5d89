"""The page over every deployment: each one's totals, and a job id looked for in all of them at once.

Each deployment is asked within EMQ_DEPLOYMENT_BUDGET_S (all at once); one that does not answer is named on the
page with why, and the others' answers are shown without it: never a partial answer that looks whole.
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
from .fan_out import FIND_QUEUES, TOTAL_STATES, TOTALS_QUEUES, deployment_totals, fan_out, job_finder
from .http import HtmxHttpRequest
from .roles import can_view
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
    finder = None
    if token:
        try:
            finder = job_finder(parse_job_id_token(token))
        except InvalidInput as error:
            context["message"] = str(error)
    totals = fan_out(shown, deployment_totals, budget_s=budget_s)
    context["totals"] = totals
    if finder is not None:
        found = fan_out(shown, finder, budget_s=budget_s)
        context.update(found=found, found_any=any(answer.value for answer in found))
    missing = [answer.error for answer in totals if not answer.answered]
    if finder is not None:
        missing += [answer.error for answer in context["found"] if not answer.answered and answer.error not in missing]
    context["missing"] = missing
    return render(request, "dashboard/deployments.html", context, status=400 if context.get("message") else 200)
