"""Alerts the console sends: rules, their firings, signed webhooks and e-mail, silences."""
