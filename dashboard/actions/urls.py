from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("actions/job/", views.job_action, name="action_job"),
    path("actions/edit/", views.edit_action, name="action_edit"),
    path("actions/restore/", views.restore_action, name="action_restore"),
    path("actions/clone/", views.clone_action, name="action_clone"),
    path("actions/schema/", views.schema_action, name="action_schema"),
    path("actions/redaction/", views.redaction_action, name="action_redaction"),
    path("actions/queue/", views.queue_action, name="action_queue"),
    path("actions/selection/", views.selection_action, name="action_selection"),
    path("actions/search/", views.search_action, name="action_search"),
    path("actions/pause/", views.pause_action, name="action_pause"),
    path("actions/deploy/", views.deploy_action, name="action_deploy"),
    path("actions/remove-key/", views.remove_key_action, name="action_remove_key"),
    path("actions/runs/<int:pk>/", views.run_detail, name="action_run"),
    path("actions/runs/<int:pk>/cancel/", views.run_cancel, name="action_run_cancel"),
    path("audit/", views.audit_log, name="audit_log"),
]
